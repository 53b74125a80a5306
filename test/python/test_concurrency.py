"""Concurrency: 8 Python threads, each on its own CUDA stream, calling every op (forward and
backward, torch.autograd.grad) on different inputs at once give bit for bit the results of a
serial run of the same inputs; among them a run-time compiled operator whose first use is in the
threads, compiled once. The same with 8 threads calling the CPU kernels. Two processes sharing a
GPU (and a kernel disk cache) both run every op correctly. The CPU kernels' same bits on 1 and N
intra-op threads: test_modes.py.
"""
import contextlib
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from gpuaug_testing import (EVERY_OP, as_bits, assert_same_bits, forward_backward, jit_fma,
                            on_device, op_case, requires_cuda)

THREADS = 8
SETS = 2   # distinct inputs per thread and op, used in turn


def run_threads(device, names, iterations, jit_op=None):
    """Every thread calls every op of `names` `iterations` times on its own inputs (on its own
    stream on CUDA), all starting together; returns the first results of each (thread, set, op)
    after checking on the device that every later call gave the same bits."""
    cases = {(t, r, name): op_case(name, seed=SETS * t + r) for t in range(THREADS)
             for r in range(SETS) for name in names}
    barrier = threading.Barrier(THREADS)
    first, mismatches, errors = {}, {}, []

    def work(t):
        try:
            stream = torch.cuda.Stream() if device == "cuda" else None
            # Each thread starts with a different op, but with the run-time compiled one on CUDA, so
            # that its first use is a race.
            order = names[t % len(names):] + names[:t % len(names)]
            if jit_op is not None:
                order = ["jit_elementwise"] + [n for n in order if n != "jit_elementwise"]
            with torch.cuda.stream(stream) if stream else contextlib.nullcontext():
                barrier.wait(timeout=120)
                for k in range(iterations):
                    for name in order:
                        key = (t, k % SETS, name)
                        results = forward_backward(name, *on_device(cases[key], device), jit_op)
                        if k < SETS:
                            first[key] = results
                        else:   # counted on the stream: no synchronisation in the loop
                            diff = sum((as_bits(a) != as_bits(b)).sum()
                                       for a, b in zip(results, first[key]))
                            mismatches[t, name] = mismatches.get((t, name), 0) + diff
            if stream:
                stream.synchronize()
        except BaseException as e:   # the test fails with it below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 600
    for thread in threads:
        thread.join(timeout=max(deadline - time.monotonic(), 0))
    assert not any(thread.is_alive() for thread in threads), "a thread hangs"
    if errors:
        raise errors[0]
    different = {key: int(n) for key, n in mismatches.items() if int(n)}
    assert not different, f"(thread, op): elements unlike the thread's first call's: {different}"
    assert len(first) == len(cases)
    return cases, first


def check_against_serial(device, cases, first, jit_op=None):
    for (t, r, name), case in cases.items():
        serial = forward_backward(name, *on_device(case, device), jit_op)
        assert_same_bits(first[t, r, name], serial, f"{name}, thread {t}, inputs {r}")


@requires_cuda
def test_threads_on_their_own_streams_match_a_serial_run():
    # relu's CUDA kernels are run-time compiled too: compiled here first, so that the counters below
    # count the new operator's kernels alone (their float32 forward and backward, 16-byte vectors).
    x = torch.ones(4, device="cuda", requires_grad=True)
    torch.autograd.grad(torch.ops.gpuaug.relu(x), x, torch.ones_like(x))
    op = jit_fma("concurrency_fma")
    before = torch.ops.gpuaug._jit_cache_info()
    cases, first = run_threads("cuda", EVERY_OP, iterations=40, jit_op=op)
    after = torch.ops.gpuaug._jit_cache_info()
    compiled, from_disk, loaded = (a - b for a, b in zip(after, before))
    assert (compiled + from_disk, loaded) == (2, 2), "each kernel once, however many threads ask"
    check_against_serial("cuda", cases, first, op)


def test_cpu_threads_match_a_serial_run():
    names = [n for n in EVERY_OP if n != "jit_elementwise"]
    cases, first = run_threads("cpu", names, iterations=4)
    check_against_serial("cpu", cases, first)


# Every op on the GPU, many times: the first results compared with the CPU's, every later one bit
# for bit with the first. Both children start their loops together (files in the folder they
# share), each keeping the GPU busy while the other runs.
CHILD = textwrap.dedent("""
    import os, sys, time, torch
    sys.path.insert(0, {testdir!r})
    import gpuaug
    from gpuaug_testing import EVERY_OP, as_bits, forward_backward, on_device, op_case

    me, folder = sys.argv[1], sys.argv[2]
    fma = gpuaug.jit.elementwise("two_processes_fma", "x * y + y", inputs=("x", "y"),
                                 grads=("grad * y", "grad * (x + 1)"),
                                 cpu_fallback=lambda x, y: x * y + y)
    cases = [(name, op_case(name, seed=10 * int(me) + r)) for name in EVERY_OP for r in range(2)]
    first = []
    try:
        for name, case in cases:
            results = forward_backward(name, *on_device(case, "cuda"), fma)
            expected = forward_backward(name, *on_device(case, "cpu"), fma)
            for i, (a, b) in enumerate(zip(results, expected)):
                torch.testing.assert_close(a.cpu(), b, rtol=1e-3, atol=1e-3,
                                           msg=lambda m: f"{{name}} result {{i}}, CPU: {{m}}")
            first.append(results)
    finally:   # a failure here must not keep the other process waiting
        open(os.path.join(folder, me + ".ready"), "w").close()
    deadline = time.monotonic() + 120
    while len([f for f in os.listdir(folder) if f.endswith(".ready")]) < 2:
        assert time.monotonic() < deadline, "the other process did not start"
        time.sleep(0.01)
    for iteration in range({iterations}):
        for (name, case), expected in zip(cases, first):
            results = forward_backward(name, *on_device(case, "cuda"), fma)
            for i, (a, b) in enumerate(zip(results, expected)):
                assert torch.equal(as_bits(a), as_bits(b)), f"{{name}} result {{i}}, {{iteration}}"
    print("ok", me)
""")


@requires_cuda
def test_two_processes_share_a_gpu(tmp_path):
    script = CHILD.format(testdir=os.path.dirname(os.path.abspath(__file__)), iterations=100)
    # A disk cache of run-time compiled kernels of their own, which both write at once.
    env = dict(os.environ, GPUAUG_CACHE_DIR=str(tmp_path / "cache"))
    children = [subprocess.Popen([sys.executable, "-c", script, str(i), str(tmp_path)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for i in range(2)]
    outcomes = []
    for child in children:
        try:
            outcomes.append(child.communicate(timeout=300))
        except subprocess.TimeoutExpired:
            for c in children:
                c.kill()
            raise
    for i, (child, (out, err)) in enumerate(zip(children, outcomes)):
        assert child.returncode == 0 and out.split() == ["ok", str(i)], f"process {i}: {err[-3000:]}"
    assert not [p for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".gpuaug-kernel")]
