"""Autograd modes and determinism for every op, on the CPU and on CUDA (jit_elementwise: CUDA only):
nothing is saved for backward under no_grad or inference_mode; forward and backward give the same
bits twice under torch.use_deterministic_algorithms(True), and write every element of their
outputs (that mode fills fresh memory with NaN); the CPU kernels give the same bits on 1 and N
intra-op threads (lltm's CPU matrix products, MKL's, only nearly: see BLAS_RESULTS; mul's gradient
of a broadcast operand sums fixed chunks, combined in order, for this), and do use several.

lltm's CUDA matrix products are cuBLAS's. PyTorch used to raise for them under deterministic
algorithms unless CUBLAS_WORKSPACE_CONFIG=:4096:8 (or :16:8) was set before the run; PyTorch 2.11,
the oldest gpuaug builds against, no longer has that check (pytorch/pytorch#161749 removed it:
PyTorch gives each cuBLAS handle and stream a workspace of its own, which is what cuBLAS needs to
be reproducible). So nothing is set here, and test_deterministic_algorithms unsets it (the old
check read it at each call).
"""
import os
import threading
import time

import pytest
import torch

import gpuaug
import gpuaug.transforms
from gpuaug_testing import (as_bits, assert_close, assert_same_bits, call_op, forward_backward,
                            on_device, op_case, op_device_params)

CASES = op_device_params()
CPU_OPS = [p.values[0] for p in CASES if p.values[1] == "cpu"]


def run(name, device):
    return forward_backward(name, *on_device(op_case(name), device))


@pytest.mark.parametrize("name, device", CASES)
def test_nothing_saved_without_grad(name, device):
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        inputs, _ = on_device(op_case(name), device)
        outputs = call_op(name, inputs)
        # The hooks see what grad mode saves (round_ste's identity gradient needs nothing).
        assert bool(packed) == (name != "round_ste")
        assert all(o.grad_fn is not None for o in outputs)
        packed.clear()
        with torch.no_grad():
            outputs = call_op(name, inputs)
        assert not packed and all(o.grad_fn is None and not o.requires_grad for o in outputs)
        with torch.inference_mode():
            outputs = call_op(name, inputs)
        assert not packed and all(o.is_inference() and o.grad_fn is None for o in outputs)


@pytest.mark.parametrize("name, device", CASES)
def test_deterministic_algorithms(name, device, monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    torch.use_deterministic_algorithms(True)
    try:
        assert torch.utils.deterministic.fill_uninitialized_memory
        first, second = run(name, device), run(name, device)
    finally:
        torch.use_deterministic_algorithms(False)
    assert_same_bits(second, first, f"{name} on {device}")
    # Finite inputs give finite results: an element the kernels left unwritten would be NaN.
    for i, t in enumerate(first):
        assert t.device.type == device and torch.isfinite(t).all(), f"{name}: result {i}"
    # The mode changes nothing in what gpuaug computes (lltm: cuBLAS may choose other kernels).
    if name != "lltm":
        assert_same_bits(run(name, device), first, f"{name} on {device}, without the mode")


# torch.mm on the CPU (MKL's sgemm) splits its sums by the thread count: torch.mm alone gives other
# bits on 1 and 3 threads. So lltm's gradients that are such products (of input, weights and
# old_h; the indices in forward_backward's list) are compared to float32's tolerance, the rest
# bit for bit.
BLAS_RESULTS = {"lltm": {2, 3, 5}}


@pytest.mark.parametrize("name", CPU_OPS)
@pytest.mark.parametrize("threads", [2, 3, 4])
def test_same_bits_on_one_and_n_threads(name, threads):
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = run(name, "cpu")
        torch.set_num_threads(threads)
        n = run(name, "cpu")
    finally:
        torch.set_num_threads(previous)
    blas = BLAS_RESULTS.get(name, set())
    for i in blas:
        assert_close(n[i], one[i])
    keep = [i for i in range(len(one)) if i not in blas]
    assert_same_bits([n[i] for i in keep], [one[i] for i in keep], f"{name} on {threads} threads")


def thread_cpu_ticks():
    """Each of this process's threads' CPU time so far, in clock ticks (Linux's /proc)."""
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:   # the thread has ended
            continue
        ticks[int(tid)] = int(fields[11]) + int(fields[12])   # utime, stime
    return ticks


BIG_CPU_CALLS = {
    "photometric": lambda x: gpuaug.transforms.ColorJitter(0.4, 0.4, 0.4, 0.1)(x),
    "color_transform": lambda x: gpuaug.color_transform(x, contrast=torch.full((len(x),), 1.2)),
}


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
@pytest.mark.parametrize("name", sorted(BIG_CPU_CALLS))
def test_cpu_kernels_run_on_several_threads(name):
    # The same-bits tests above pass on one thread too, which is how the CPU kernels ran while
    # the library was built without OpenMP (at::parallel_for's body then runs serially): here
    # the work of the op's own loops (no ATen kernel of any size in these calls) must also land
    # on a thread other than the caller's.
    assert gpuaug._build_info.cpu_threads
    x = torch.randint(0, 256, (8, 3, 224, 224), dtype=torch.uint8,
                      generator=torch.Generator().manual_seed(0))
    call = BIG_CPU_CALLS[name]
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        call(x)
        time.sleep(0.05)   # OpenMP's idle threads stop spinning
        before, start = thread_cpu_ticks(), time.monotonic()
        while time.monotonic() - start < 0.5:
            call(x)
        after = thread_cpu_ticks()
    finally:
        torch.set_num_threads(previous)
    caller = threading.get_native_id()
    worked = {tid: ticks - before.get(tid, 0) for tid, ticks in after.items()}
    others = sum(ticks for tid, ticks in worked.items() if tid != caller)
    assert others >= 0.25 * worked[caller], f"{name}: other threads {others}, caller {worked}"


def test_mul_gradient_of_one_element_on_one_and_two_threads():
    # The gradient of a one-element b is one sum over all of a's 65,792 elements.
    previous = torch.get_num_threads()
    try:
        for seed in range(4):
            (a, _), (grad,) = on_device(op_case("mul", seed=seed), "cpu")
            b = torch.tensor([0.75], requires_grad=True)
            torch.set_num_threads(1)
            one = forward_backward("mul", [a, b], [grad])
            torch.set_num_threads(2)
            two = forward_backward("mul", [a, b], [grad])
            assert_same_bits(two, one, f"mul with a one-element b on 2 threads, seed {seed}")
    finally:
        torch.set_num_threads(previous)


def test_as_bits_tells_apart_what_equal_does_not():
    # The comparisons above are of bits: -0.0 and 0.0 differ, NaN equals itself.
    assert not torch.equal(as_bits(torch.tensor([0.0])), as_bits(torch.tensor([-0.0])))
    assert torch.equal(as_bits(torch.tensor([float("nan")])), as_bits(torch.tensor([float("nan")])))
