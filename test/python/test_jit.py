"""gpuaug.jit: user-defined element-wise operators compiled at run time by NVRTC.

NVRTC needs no GPU: the compile tests (PTX for every dtype, a compile error's log) run everywhere.
The rest runs on CUDA: values against float64 references for every dtype, layouts that take each
kernel variant, broadcasting, gradients, opcheck, torch.compile, CUDA graphs, the disk cache
shared by two processes and refusing unsafe directories, and concurrent first use.
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import torch.nn.functional as F

import gpuaug
from gpuaug_testing import (DTYPES, TOLERANCES, assert_close, assert_exact, make_input,
                            requires_cuda)

jit_elementwise = torch.ops.gpuaug.jit_elementwise.default

leaky_relu = gpuaug.jit.elementwise(
    "leaky_relu", "x > 0 ? x : x * opmath_t(0.01)",
    grads=["x > 0 ? grad : grad * opmath_t(0.01)"])
# x * y + y: a two-input multiply-add, differentiable in both.
fma = gpuaug.jit.elementwise("fma", "x * y + y", inputs=("x", "y"),
                             grads=("grad * y", "grad * (x + 1)"))
# SiLU with its derivative: exp through CUDA's overloads (float or double as the inputs are).
silu = gpuaug.jit.elementwise(
    "silu", "x / (1 + exp(-x))",
    grads=["grad / (1 + exp(-x)) * (1 + x * (1 - 1 / (1 + exp(-x))))"])


def fma_ref(x, y):
    x, y = x.detach().double(), y.detach().double()
    return x * y + y


def silu_ref(x):
    return F.silu(x.detach().double())


def cache_info():
    compiled, from_disk, loaded = torch.ops.gpuaug._jit_cache_info()
    return dict(compiled=compiled, from_disk=from_disk, loaded=loaded)


# --- NVRTC without a GPU ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("arch", [80, 90])
def test_ptx_for_every_dtype(dtype, arch):
    ptx = fma.ptx(dtype, arch)
    assert f".target sm_{arch}" in ptx
    assert ".entry gpuaug_fma_vectorized(" in ptx
    # 16-byte loads on the hot path, whatever the dtype.
    assert re.search(r"ld\.global(\.nc)?\.v(4\.(f|b|u)32|2\.(f|b|u)64)", ptx), ptx[-2000:]
    for layout in ("vectorized", "contiguous", "strided32", "strided64"):
        code = fma.ptx(dtype, arch, layout)
        assert f".entry gpuaug_fma_{layout}(" in code
        assert "ld.local" not in code and "st.local" not in code, layout   # all in registers


def test_ptx_of_a_compile_error_shows_log_and_source():
    bad = gpuaug.jit.elementwise("bad", "x +* 2")
    with pytest.raises(RuntimeError) as info:
        bad.ptx()
    message = str(info.value)
    assert message.startswith("gpuaug::jit_elementwise 'bad': NVRTC")
    assert "NVRTC log:" in message and "error" in message
    assert re.search(r"^\s*\d+  x \+\* 2$", message, re.MULTILINE)   # the numbered source line


def test_unknown_function_is_a_compile_error():
    with pytest.raises(RuntimeError, match="undefined"):
        gpuaug.jit.elementwise("unknown", "no_such_function(x)").ptx()


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="1x", expression="x"), "expected 'name' to be a C identifier, but got '1x'"),
    (dict(name="f", expression=" "), "'expression' must be a non-empty string"),
    (dict(name="f", expression="x", inputs=("x", "x")), "input names repeat"),
    (dict(name="f", expression="x", inputs=("grad",)), "the input name 'grad' is reserved"),
    (dict(name="f", expression="x", inputs=("gpuaug_x",)), "is reserved"),
    (dict(name="f", expression="x", inputs=("a-b",)), "expected each input name to be a C identifier"),
    (dict(name="f", expression="x", inputs=tuple("abcdefghi")), "expected 1 to 8 inputs, but got 9"),
    (dict(name="f", expression="x", grads=("1", "2")), "one non-empty expression per input"),
])
def test_bad_definitions(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        gpuaug.jit.elementwise(**kwargs)


def test_bad_calls():
    with pytest.raises(TypeError, match=r"'fma' takes 2 tensors \(x, y\), but got 1"):
        fma(torch.ones(2))
    with pytest.raises(TypeError, match="expected 'y' to be a torch.Tensor, but got float"):
        fma(torch.ones(2), 1.0)


@pytest.mark.parametrize("args, message", [
    (("f", "x", ["x", "y"], [torch.ones(2, device="meta")]),
     "expected one name in 'names' per tensor of 'inputs', but got 2 names for 1 tensors"),
    (("f", "x + y", ["x", "y"], [torch.ones(2, device="meta"), torch.ones(2, device="meta", dtype=torch.float64)]),
     "gpuaug::jit_elementwise 'f': expected 'y' to have the dtype of 'x' (Float), but got Double"),
    (("f", "x", ["x"], [torch.ones(2, device="meta", dtype=torch.int32)]),
     "'x'"),
    (("f", "x + y", ["x", "y"], [torch.ones(2, 3, device="meta"), torch.ones(4, device="meta")]),
     "the shape of 'y' [4] does not broadcast with [2, 3] (from 'x')"),
    (("f", "x", ["x"], [torch.ones(2, device="meta")], ["1", "2"]),
     "expected one expression in 'grads' per input, but got 2 for 1 inputs"),
    (("f", "x", ["grad"], [torch.ones(2, device="meta")]), "the input name 'grad' is reserved"),
])
def test_bad_op_calls(args, message):
    # The op checks for itself, for C++ and TorchScript callers (meta tensors: no GPU needed).
    with pytest.raises(RuntimeError, match=re.escape(message)):
        jit_elementwise(*args)


def test_cpu_tensor_names_the_operator():
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::jit_elementwise 'fma': 'x' is a CPU tensor, but run-time compiled operators "
            "run on CUDA tensors only")):
        fma(torch.ones(2), torch.ones(2))


def test_cpu_fallback():
    op = gpuaug.jit.elementwise("softsign", "x / (1 + fabs(x))", grads=["grad / ((1 + fabs(x)) * (1 + fabs(x)))"],
                                cpu_fallback=lambda x: x / (1 + x.abs()))
    x = make_input((5, 3), torch.float64, seed=1, requires_grad=True)
    y = op(x)
    torch.testing.assert_close(y, x / (1 + x.abs()))
    y.sum().backward()
    torch.testing.assert_close(x.grad, 1 / (1 + x.detach().abs()) ** 2)


def test_cpu_fallback_without_grads_fails_at_backward():
    # as the operator on CUDA does: the fallback's own PyTorch ops are not its gradient
    op = gpuaug.jit.elementwise("square", "x * x", cpu_fallback=lambda x: x * x)
    x = make_input((5, 3), torch.float64, seed=2, requires_grad=True)
    y = op(x)
    torch.testing.assert_close(y, x.detach() * x.detach())
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="'square': no gradient is defined"):
        y.sum().backward()
    assert x.grad is None
    # without autograd the fallback's result is returned as it is
    with torch.no_grad():
        torch.testing.assert_close(op(x), x.detach() * x.detach())
    assert not op(x.detach()).requires_grad


def test_meta_shapes_are_broadcast_and_dense():
    x = torch.empty(4, 1, 5, device="meta")
    y = torch.empty(3, 1, device="meta")
    assert jit_elementwise("f", "x * y", ["x", "y"], [x, y]).shape == (4, 3, 5)
    image = torch.empty(2, 3, 4, 5, device="meta").to(memory_format=torch.channels_last)
    out = jit_elementwise("f", "x", ["x"], [image])
    assert out.is_contiguous(memory_format=torch.channels_last)


def test_library_does_not_link_nvrtc_or_libcuda():
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf is not installed")
    dynamic = subprocess.run([readelf, "-d", gpuaug.library_path], capture_output=True, text=True,
                             check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic)
    assert needed, dynamic
    assert not [lib for lib in needed if lib.startswith(("libnvrtc", "libcuda."))], needed


# --- On the GPU ------------------------------------------------------------------------------

def make_cuda(shape, dtype, seed, **kwargs):
    return make_input(shape, dtype, "cuda", seed=seed, scale=2.0, **kwargs)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5, 11), (4099,), (2, 4096)])
def test_leaky_relu_matches_torch_exactly(shape, dtype):
    x = make_cuda(shape, dtype, seed=1)
    y = leaky_relu(x)
    assert_exact(y, F.leaky_relu(x, 0.01))
    assert_close(y, F.leaky_relu(x.double(), 0.01).to(dtype))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_fma_and_silu_values(dtype):
    x = make_cuda((37, 129), dtype, seed=2)
    y = make_cuda((37, 129), dtype, seed=3)
    assert_close(fma(x, y), fma_ref(x, y).to(dtype))
    assert_close(silu(x), silu_ref(x).to(dtype))


def layouts(dtype):
    """(name, x, y) pairs that take every kernel variant: 16-byte vectors, unaligned contiguous,
    strided with 32-bit offsets (transposed, stepped, expanded, channels_last with a broadcast)."""
    base = make_cuda((4100,), dtype, seed=4)
    other = make_cuda((4100,), dtype, seed=5)
    matrix = make_cuda((33, 70), dtype, seed=6)
    image = make_cuda((2, 3, 9, 7), dtype, seed=7).to(memory_format=torch.channels_last)
    return [
        ("contiguous", base, other),
        ("unaligned", base[1:], other[1:]),
        ("transposed", matrix.t(), make_cuda((70, 33), dtype, seed=8)),
        ("stepped", base[::3], other[1::3]),
        ("expanded", make_cuda((33, 1), dtype, seed=9).expand(33, 70), matrix),
        ("channels_last", image, make_cuda((3, 1, 1), dtype, seed=10)),
    ]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_and_broadcasting(dtype):
    for name, x, y in layouts(dtype):
        assert_close(fma(x, y), fma_ref(x, y).to(dtype)), name


@requires_cuda
def test_offsets_past_32_bits():
    # 2^31 + 5 outputs from expanded inputs: the 64-bit strided kernel.
    n = 2**31 + 5
    x = torch.tensor([1.5], dtype=torch.float16, device="cuda").expand(n)
    y = torch.tensor([-2.0], dtype=torch.float16, device="cuda").expand(n)
    out = fma(x, y)
    assert out.shape == (n,)
    assert (out == -5.0).all()
    del out


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_with_broadcasting(dtype):
    x = make_cuda((4, 1, 6), dtype, seed=11, requires_grad=True)
    y = make_cuda((3, 1), dtype, seed=12, requires_grad=True)
    w = make_cuda((4, 3, 6), dtype, seed=13)
    fma(x, y).backward(w)
    x64, y64, w64 = x.detach().double(), y.detach().double(), w.double()
    expected_x = (w64 * y64).sum(dim=1, keepdim=True)
    expected_y = (w64 * (x64 + 1)).sum(dim=(0, 2)).reshape(3, 1)
    tolerance = {k: v * 10 for k, v in TOLERANCES[dtype].items()}   # sums of 6 to 24 terms
    torch.testing.assert_close(x.grad.double(), expected_x, **tolerance)
    torch.testing.assert_close(y.grad.double(), expected_y, **tolerance)


@requires_cuda
def test_only_requested_gradients_are_computed():
    x = make_cuda((8,), torch.float32, seed=14, requires_grad=True)
    y = make_cuda((8,), torch.float32, seed=15)
    fma(x, y).sum().backward()
    assert_close(x.grad, y)
    assert y.grad is None


@requires_cuda
def test_gradcheck_float64():
    x = make_cuda((5, 4), torch.float64, seed=16, requires_grad=True)
    y = make_cuda((1, 4), torch.float64, seed=17, requires_grad=True)
    assert torch.autograd.gradcheck(fma, (x, y))
    assert torch.autograd.gradcheck(silu, (x,))
    assert torch.autograd.gradcheck(leaky_relu, (x,))


@requires_cuda
def test_no_grads_defined_fails_at_backward():
    op = gpuaug.jit.elementwise("square", "x * x")
    x = make_cuda((3,), torch.float32, seed=18, requires_grad=True)
    y = op(x)
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="'square': no gradient is defined"):
        y.sum().backward()


@requires_cuda
def test_double_backward_is_refused():
    x = make_cuda((3,), torch.float64, seed=19, requires_grad=True)
    (g,) = torch.autograd.grad(silu(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        g.sum().backward()


@requires_cuda
def test_opcheck():
    x = make_cuda((6, 5), torch.float32, seed=20, requires_grad=True)
    y = make_cuda((5,), torch.float32, seed=21, requires_grad=True)
    torch.library.opcheck(jit_elementwise, ("fma", "x * y + y", ["x", "y"], [x, y], ["grad * y", "grad * (x + 1)"]))
    torch.library.opcheck(jit_elementwise, ("fma", "x * y + y", ["x", "y"], [x.detach(), y.detach()], None))
    grad = make_cuda((6, 5), torch.float32, seed=22)
    torch.library.opcheck(torch.ops.gpuaug._jit_elementwise_backward.default,
                          ("fma", ["grad * y", ""], ["x", "y"], grad, [x.detach(), y.detach()]))


@requires_cuda
def test_compile_fullgraph_dynamic():
    def step(x, y):
        return silu(fma(x, y)) * 2

    compiled = torch.compile(step, fullgraph=True, dynamic=True)
    for rows in (3, 8, 17):
        x = make_cuda((rows, 9), torch.float32, seed=rows, requires_grad=True)
        y = make_cuda((9,), torch.float32, seed=rows + 1, requires_grad=True)
        out = compiled(x, y)
        assert_close(out, step(x, y))
        gx, gy = torch.autograd.grad(out.sum(), (x, y))
        ex, ey = torch.autograd.grad(step(x, y).sum(), (x, y))
        assert_close(gx, ex)
        assert_close(gy, ey)


@requires_cuda
def test_cuda_graph_capture_and_replay():
    x = make_cuda((1000,), torch.float32, seed=23)
    y = make_cuda((1000,), torch.float32, seed=24)
    capture_op = gpuaug.jit.elementwise("captured_first_use", "x * y - x", inputs=("x", "y"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):   # first use inside the capture: compiles and loads there
        out = capture_op(x, y)
    x.copy_(make_cuda((1000,), torch.float32, seed=25))
    graph.replay()
    torch.testing.assert_close(out, x * y - x)


@requires_cuda
def test_concurrent_first_use_compiles_once():
    op = gpuaug.jit.elementwise("concurrent_first_use", "x * x + opmath_t(3)")
    inputs = [make_cuda((1000 + i,), torch.float32, seed=30 + i) for i in range(8)]
    before = cache_info()
    barrier = threading.Barrier(len(inputs))
    results = [None] * len(inputs)

    def work(i):
        with torch.cuda.stream(torch.cuda.Stream()):
            barrier.wait()
            results[i] = op(inputs[i])
            torch.cuda.current_stream().synchronize()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, y in zip(inputs, results):
        assert_close(y, x * x + 3)
    after = cache_info()
    assert after["compiled"] + after["from_disk"] - before["compiled"] - before["from_disk"] == 1
    assert after["loaded"] - before["loaded"] == 1


@requires_cuda
def test_repeated_calls_do_not_grow_the_cache():
    x = make_cuda((64,), torch.float32, seed=40)
    leaky_relu(x)
    before = cache_info()
    for _ in range(100):
        gpuaug.jit.elementwise("leaky_relu", leaky_relu.expression)(x)
    assert cache_info() == before


CACHE_CHILD = textwrap.dedent("""
    import json, sys, torch, gpuaug
    op = gpuaug.jit.elementwise("disk_cached", "x * opmath_t(2) + opmath_t(1)")
    x = torch.arange(10, dtype=torch.float32, device="cuda")
    assert torch.equal(op(x), x * 2 + 1)
    print(json.dumps(torch.ops.gpuaug._jit_cache_info()))
""")


def run_child(cache_dir):
    env = dict(os.environ, GPUAUG_CACHE_DIR=str(cache_dir))
    done = subprocess.run([sys.executable, "-c", CACHE_CHILD], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [int(v) for v in done.stdout.strip().splitlines()[-1].strip("[]").split(",")], done.stderr


def entries(cache_dir):
    return sorted(p for p in cache_dir.iterdir() if p.suffix == ".gpuaug-kernel")


@requires_cuda
def test_disk_cache_is_reused_by_a_second_process(tmp_path):
    cache_dir = tmp_path / "new" / "cache"
    (compiled, from_disk, _), _ = run_child(cache_dir)
    assert (compiled, from_disk) == (1, 0)
    assert (cache_dir.stat().st_mode & 0o777) == 0o700
    [entry] = entries(cache_dir)
    assert (entry.stat().st_mode & 0o077) == 0
    inode = entry.stat().st_ino
    (compiled, from_disk, _), _ = run_child(cache_dir)
    assert (compiled, from_disk) == (0, 1)
    assert entry.stat().st_ino == inode   # read, not rewritten


@requires_cuda
@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_damaged_entry_is_recompiled_not_loaded(tmp_path, damage):
    run_child(tmp_path)
    [entry] = entries(tmp_path)
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) - 7]
    elif damage == "flip":
        data[-100] ^= 0x40
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    (compiled, from_disk, _), _ = run_child(tmp_path)
    assert (compiled, from_disk) == (1, 0)
    (compiled, from_disk, _), _ = run_child(tmp_path)   # the rewritten entry is good again
    assert (compiled, from_disk) == (0, 1)


@requires_cuda
def test_unsafe_cache_directories_are_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    (compiled, from_disk, _), stderr = run_child(link)
    assert (compiled, from_disk) == (1, 0)
    assert "is refused" in stderr
    assert not list(real.iterdir())
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (compiled, _, _), stderr = run_child(shared)
    assert compiled == 1 and "is refused" in stderr
    assert not list(shared.iterdir())
    # A symlinked entry is not followed.
    run_child(real)
    [entry] = entries(real)
    target = tmp_path / "elsewhere"
    entry.rename(target)
    entry.symlink_to(target)
    (compiled, from_disk, _), _ = run_child(real)
    assert (compiled, from_disk) == (1, 0)
