"""What all gpuaug element-wise ops share: layouts, empty and 0-d tensors, fresh outputs, subnormals,
torch.compile, TorchScript, torch.export and the Python package's API. Each op's schema and
opcheck samples are in its own test file."""
import glob
import io
import os

import pytest
import torch
import torch._dynamo.testing  # CompileCounterWithBackend

import gpuaug
from gpuaug_testing import (CUDA, DEVICES, DTYPES, assert_close, assert_exact, make_input,
                            mul_ref, relu_grad_ref, relu_ref, requires_cuda, round_ste_ref)

ops = torch.ops.gpuaug
OPS = ["relu", "mul", "round_ste"]


def is_dense(t):
    """ATen's is_non_overlapping_and_dense: some permutation of t is contiguous. The ops keep the
    strides of such inputs."""
    expected = 1
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def same_layout(shape, stride, dtype, device, seed):
    """A random tensor with exactly the given (dense) strides."""
    size = sum((n - 1) * s for n, s in zip(shape, stride)) + 1 if all(shape) else 0
    return make_input((size,), dtype, device, seed).as_strided(shape, stride)


def run(op, x):
    """Calls op on x (mul: times a random operand of x's layout when x is dense, else a contiguous
    one); returns the output and its float64 reference rounded to the dtype."""
    if op == "mul":
        b = (same_layout(x.shape, x.stride(), x.dtype, x.device, 99)
             if is_dense(x) else make_input(x.shape, x.dtype, x.device, 99))
        return ops.mul(x, b), mul_ref(x, b)
    ref = {"relu": relu_ref, "round_ste": round_ste_ref}[op]
    return getattr(ops, op)(x), ref(x)


LAYOUTS = {
    "transposed": lambda dt, dev: make_input((5, 7), dt, dev, 1).t(),
    "step_slice": lambda dt, dev: make_input((6, 10), dt, dev, 1)[:, ::3],
    "expanded": lambda dt, dev: make_input((1, 7), dt, dev, 1).expand(4, 7),
    "channels_last": lambda dt, dev: make_input((2, 3, 4, 5), dt, dev, 1).contiguous(
        memory_format=torch.channels_last),
    "permuted": lambda dt, dev: make_input((2, 3, 4), dt, dev, 1).permute(2, 0, 1),
    "offset": lambda dt, dev: make_input((1030,), dt, dev, 1)[3:],
    "expanded_sliced": lambda dt, dev: make_input((3, 1, 4), dt, dev, 1).expand(3, 5, 4)[:, :, 1:],
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", OPS)
def test_layouts(op, layout, dtype, device):
    x = LAYOUTS[layout](dtype, device)
    y, ref = run(op, x)
    assert_exact(y, ref)
    if is_dense(x):
        assert y.stride() == x.stride()          # channels_last stays channels_last, etc.
    else:
        assert y.is_contiguous()
    if layout == "channels_last":
        assert y.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("device", DEVICES)
def test_mul_mixed_layouts_is_contiguous(device):
    a = make_input((2, 3, 4, 5), torch.float32, device, 1).contiguous(memory_format=torch.channels_last)
    b = make_input((2, 3, 4, 5), torch.float32, device, 2)
    for x, y in [(a, b), (b, a), (a, make_input((5,), torch.float32, device, 3))]:
        out = ops.mul(x, y)
        assert_exact(out, mul_ref(x, y))
        assert out.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2)])
@pytest.mark.parametrize("op", OPS)
def test_empty_and_0d(op, shape, dtype, device):
    x = make_input(shape, dtype, device, seed=4)
    y, ref = run(op, x)
    assert y.shape == torch.Size(shape)
    assert_exact(y, ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS + ["_relu_backward", "_mul_backward"])
def test_outputs_are_new_tensors(op, device):
    x = make_input((4, 6), torch.float32, device, seed=5)
    args = {"relu": (x,), "round_ste": (x,), "mul": (x, x), "_relu_backward": (x, x),
            "_mul_backward": (x, x, x)}[op]
    outs = getattr(ops, op)(*args)
    before = x.clone()
    for out in outs if isinstance(outs, tuple) else (outs,):
        assert out._base is None
        assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
        out.fill_(123.0)
    assert_exact(x, before)
    if isinstance(outs, tuple):
        assert outs[0].untyped_storage().data_ptr() != outs[1].untyped_storage().data_ptr()


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_and_inference_mode(device):
    x = make_input((3, 4), torch.float32, device, seed=7, requires_grad=True)
    with torch.no_grad():
        y = ops.mul(ops.relu(x), x)
    assert not y.requires_grad
    assert_exact(y, mul_ref(relu_ref(x), x))
    with torch.inference_mode():
        z = ops.round_ste(x.detach())
    assert z.is_inference()
    assert_exact(z, round_ste_ref(x))


def test_meta_tensors():
    # The Meta kernels alone: shapes, layouts and errors without data (what tracing sees).
    m = torch.empty(2, 3, 4, 5, device="meta").contiguous(memory_format=torch.channels_last)
    for out in (ops.relu(m), ops.round_ste(m), ops.mul(m, m), ops._relu_backward(m, m)):
        assert out.device.type == "meta" and out.shape == m.shape and out.stride() == m.stride()
    assert ops.mul(m, torch.empty(5, device="meta")).is_contiguous()
    ga, gb = ops._mul_backward(torch.empty(2, 3, 4, 5, device="meta"), m, torch.empty(5, device="meta"))
    assert ga.shape == m.shape and gb.shape == (5,)
    with pytest.raises(RuntimeError, match=r"gpuaug::mul: shapes of 'a' \[2, 3, 4, 5\] and 'b' \[4\]"):
        ops.mul(m, torch.empty(4, device="meta"))


# float32 and bfloat16 subnormals must be honoured as on the CPU (torch.mul and torch.relu keep
# them); float16 is computed in float32, where its subnormals are normal numbers.
@pytest.mark.parametrize("device,dtype", [
    ("cpu", torch.float32), ("cpu", torch.bfloat16), ("cpu", torch.float16), ("cpu", torch.float64),
    pytest.param("cuda", torch.float32, marks=requires_cuda),
    pytest.param("cuda", torch.bfloat16, marks=requires_cuda),
    pytest.param("cuda", torch.float16, marks=requires_cuda),
    pytest.param("cuda", torch.float64, marks=requires_cuda)])
def test_subnormals(device, dtype):
    tiny = torch.finfo(dtype).smallest_normal
    x = torch.tensor([tiny / 4, -tiny / 4, tiny / 2, -tiny / 8], dtype=dtype, device=device)
    assert (x != 0).all() and (x.abs() < tiny).all()   # really subnormal
    two = torch.full_like(x, 2.0)
    half = torch.full_like(x, 0.5)
    assert_exact(ops.relu(x), relu_ref(x))                    # -tiny/4 -> 0, not -tiny/4
    assert_exact(ops._relu_backward(two, x), relu_grad_ref(two, x))   # x > 0 for tiny/4
    assert_exact(ops.mul(x, two), mul_ref(x, two))            # not flushed to 0
    assert_exact(ops.mul(x, half), mul_ref(x, half))
    assert_exact(ops.round_ste(x), round_ste_ref(x))


# ---------------------------------------------------------------------------------------------
# Tracing and compilation.

def pipeline(x, b):
    return ops.round_ste(ops.mul(ops.relu(x), b))


def pipeline_ref(x, b):
    return round_ste_ref(mul_ref(relu_ref(x), b))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # raised inside Inductor
@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_no_recompiles(device, fresh_dynamo):
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(pipeline, backend=counter, fullgraph=True, dynamic=True)
    for rows, cols in [(3, 5), (6, 4), (9, 7)]:
        x = make_input((rows, cols), torch.float32, device, seed=rows, requires_grad=True)
        b = make_input((cols,), torch.float32, device, seed=cols, requires_grad=True)
        y = compiled(x, b)
        assert_exact(y.detach(), pipeline_ref(x, b))
        w = make_input((rows, cols), torch.float32, device, seed=rows + cols)
        y.backward(w)
        # round_ste passes w through; relu masks it; mul scales by the other operand.
        x_pos = x.detach() > 0
        assert_close(x.grad, torch.where(x_pos, w * b.detach(), torch.zeros_like(w)))
        assert_close(b.grad, (w * ops.relu(x.detach())).sum(0))
    assert counter.frame_count == 1, "dynamic shapes must not recompile"


@requires_cuda
def test_compile_reduce_overhead_cuda(fresh_dynamo):
    compiled = torch.compile(pipeline, mode="reduce-overhead", fullgraph=True)
    for seed in range(4):   # warm-up, record, then replays of the CUDA graph
        x = make_input((64, 33), torch.float32, "cuda", seed=seed)
        b = make_input((33,), torch.float32, "cuda", seed=seed + 10)
        assert_exact(compiled(x, b).clone(), pipeline_ref(x, b))


class Pipeline(torch.nn.Module):
    def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.gpuaug.round_ste(torch.ops.gpuaug.mul(torch.ops.gpuaug.relu(x), b))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # TorchScript is deprecated
@pytest.mark.parametrize("device", DEVICES)
def test_torchscript_save_load(device):
    scripted = torch.jit.script(Pipeline())
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer, map_location=device)
    assert "gpuaug::relu" in loaded.graph.str() or "gpuaug::relu" in loaded.code
    x = make_input((4, 9), torch.float32, device, seed=1)
    b = make_input((4, 9), torch.float32, device, seed=2)
    assert_exact(loaded(x, b), pipeline_ref(x, b))

    @torch.jit.script
    def grads(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.ops.gpuaug._relu_backward(w, x)
    assert_exact(grads(x, b), relu_grad_ref(b, x))


@pytest.mark.parametrize("device", DEVICES)
def test_export(device):
    x = make_input((4, 6), torch.float32, device, seed=3)
    b = make_input((6,), torch.float32, device, seed=4)
    rows = torch.export.Dim("rows", min=2)
    program = torch.export.export(Pipeline(), (x, b), dynamic_shapes=({0: rows}, None))
    targets = {node.target for node in program.graph.nodes}
    assert {ops.relu.default, ops.mul.default, ops.round_ste.default} <= targets
    module = program.module()
    for n in (4, 11):
        x2 = make_input((n, 6), torch.float32, device, seed=n)
        assert_exact(module(x2, b), pipeline_ref(x2, b))


# ---------------------------------------------------------------------------------------------
# The Python package.

def test_package_api():
    assert os.path.isfile(gpuaug.library_path)
    x = make_input((3, 4), torch.float32, "cpu", seed=5)
    b = make_input((4,), torch.float32, "cpu", seed=6)
    assert_exact(gpuaug.relu(x), relu_ref(x))
    assert_exact(gpuaug.mul(x, b), mul_ref(x, b))
    assert_exact(gpuaug.round_ste(x), round_ste_ref(x))
    # gpuaug.cmake_prefix_path lets CMake find the installed gpuaugConfig.cmake.
    configs = glob.glob(os.path.join(gpuaug.cmake_prefix_path, "**", "gpuaugConfig.cmake"),
                        recursive=True)
    assert configs, f"no gpuaugConfig.cmake under {gpuaug.cmake_prefix_path}"
