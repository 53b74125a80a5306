"""Helpers shared by the gpuaug pytest suites (import them: `from gpuaug_testing import ...`).

References are computed in float64 from the (already rounded) low-precision inputs and rounded
once to the op's dtype: for relu, mul and round_ste that is exactly what the kernels must return
(half types are computed in float32, where a product of two half/bfloat16 values is exact).
"""
import math
import os
import sys

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]

# Absolute/relative tolerance per dtype for ops that are NOT a single correctly rounded step
# (composites, reductions in backward with broadcasting, fused compiled code). The element-wise
# gpuaug ops themselves are compared exactly (see assert_exact).
TOLERANCES = {
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}

CUDA = torch.cuda.is_available()
MULTI_GPU = CUDA and torch.cuda.device_count() >= 2
requires_cuda = pytest.mark.skipif(not CUDA, reason="CUDA is not available")
requires_two_gpus = pytest.mark.skipif(not MULTI_GPU, reason="needs two CUDA devices")

# Use as @pytest.mark.parametrize("device", DEVICES): the CUDA case is reported as skipped
# (not silently missing) on machines without a GPU.
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


def make_input(shape, dtype=torch.float32, device="cpu", seed=0, scale=4.0, requires_grad=False):
    """Random values of both signs, about a quarter of them exact halves (ties of round_ste),
    none of them zero. Generated on the CPU so every device sees the same numbers."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    ties = torch.rand(shape, generator=g) < 0.25
    x = torch.where(ties, torch.round(x * 2) / 2 + 0.5, x)   # k + 0.5, never 0
    x = torch.where(x == 0, torch.full_like(x, 0.75), x)
    return x.to(dtype).to(device).requires_grad_(requires_grad)


def relu_ref(x):
    x64 = x.detach().double()
    # x < 0 -> 0; NaN stays NaN (a comparison with NaN is false).
    return torch.where(x64 < 0, torch.zeros_like(x64), x64).to(x.dtype)


def relu_grad_ref(grad, x):
    return torch.where(x.detach().double() > 0, grad.detach().double(), 0.0).to(grad.dtype)


def mul_ref(a, b):
    return (a.detach().double() * b.detach().double()).to(a.dtype)


def round_ste_ref(x):
    # floor(x + 0.5) in float64 is exact for float32/half inputs of moderate size; float64 inputs
    # are random (never within an ulp of a tie), the hard cases have explicit tests.
    return torch.floor(x.detach().double() + 0.5).to(x.dtype)


def sum_to(t, shape):
    """Sum a broadcast result back to `shape` (reference for the mul gradients)."""
    lead = t.dim() - len(shape)
    t = t.sum(dim=tuple(range(lead))) if lead else t
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1)
    return t.sum(dim=dims, keepdim=True) if dims else t


def assert_sum_close(actual, terms):
    """actual == sum_to(terms, actual.shape) up to a float reduction's error: terms are float64
    values (each already rounded to actual's dtype, as the kernels round their products), and
    an accurate sum of n of them rounded to the dtype may be off by about
    eps * log2(n) * sum(|terms|)."""
    expected = sum_to(terms, actual.shape)
    n = max(terms.numel() // max(actual.numel(), 1), 1)
    eps = torch.finfo(actual.dtype).eps
    bound = eps * (2 + math.log2(n)) * sum_to(terms.abs(), actual.shape)
    error = (actual.double() - expected).abs()
    assert (error <= bound).all(), (
        f"reduction of {n} terms off by {error.max().item():.3g} "
        f"(allowed {bound.flatten()[error.flatten().argmax()].item():.3g})")


def assert_exact(actual, expected):
    """Same dtype, device, shape and values, bit for bit up to the sign of zero; NaN == NaN."""
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def assert_close(actual, expected):
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOLERANCES[expected.dtype])


def build_environment():
    """The environment for building C++ against the installed gpuaug: `python` and the tools pip
    installed (cmake, ninja) are this interpreter's."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    return env


# --- Every op, forward and backward (test_modes, test_concurrency, test_leaks) -----------------

EVERY_OP = ["relu", "mul", "round_ste", "color_transform", "lltm", "jit_elementwise"]

# name -> one (shape, scale, offset) per input: uniform values in [offset, offset + scale).
# Big enough that two CPU threads split the work (TensorIterator's grain: 32768 elements).
_OP_INPUTS = {
    "relu": [((256, 257), 1, -0.5)],
    "mul": [((256, 257), 1, 0), ((257,), 1, 0)],
    "round_ste": [((256, 257), 8, 0)],
    # image, color, brightness, contrast, gamma
    "color_transform": [((8, 3, 65, 67), 1, 0), ((8, 3), 1, 0.5), ((8,), 0.2, 0), ((8,), 1, 0.5),
                        ((8,), 1, 0.5)],
    # input [B, I], weights [3S, S + I], bias [3S], old_h and old_cell [B, S]
    "lltm": [((300, 9), 1, -0.5), ((99, 42), 1, -0.5), ((99,), 1, 0), ((300, 33), 1, 0),
             ((300, 33), 1, 0)],
    "jit_elementwise": [((256, 257), 2, -1), ((256, 257), 2, -1)],
}
# Tens of elements: calls that cost the host's time only (test_leaks).
_SMALL_OP_INPUTS = {
    "relu": [((4, 33), 1, -0.5)],
    "mul": [((4, 33), 1, 0), ((33,), 1, 0)],
    "round_ste": [((4, 33), 8, 0)],
    "color_transform": [((2, 3, 5, 7), 1, 0), ((2, 3), 1, 0.5), ((2,), 0.2, 0), ((2,), 1, 0.5),
                        ((2,), 1, 0.5)],
    "lltm": [((4, 3), 1, -0.5), ((15, 8), 1, -0.5), ((15,), 1, 0), ((4, 5), 1, 0), ((4, 5), 1, 0)],
    "jit_elementwise": [((4, 33), 2, -1), ((4, 33), 2, -1)],
}


def jit_fma(name="testing_fma"):
    """x * y + y, run-time compiled and differentiable in both inputs. A name not used before is a
    kernel not compiled before: its first call compiles it."""
    import gpuaug.jit
    return gpuaug.jit.elementwise(name, "x * y + y", inputs=("x", "y"),
                                  grads=("grad * y", "grad * (x + 1)"))


JIT_FMA = jit_fma()


def op_device_params():
    """(name, device) for @pytest.mark.parametrize("name, device", ...): every op on the CPU and on
    CUDA (skipped without a GPU), jit_elementwise on CUDA only (no run-time CPU compiler)."""
    return [pytest.param(name, device, id=f"{name}-{device}",
                         marks=[requires_cuda] if device == "cuda" else [])
            for device in ("cpu", "cuda") for name in EVERY_OP
            if not (device == "cpu" and name == "jit_elementwise")]


def _uniform(shape, seed, scale=1.0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * scale + offset


def op_case(name, seed=0, small=False):
    """CPU float32 inputs of op `name` and gradients for its outputs, from `seed`: move them to a
    device with `on_device`."""
    specs = (_SMALL_OP_INPUTS if small else _OP_INPUTS)[name]
    inputs = [_uniform(shape, 1000 * seed + i, scale, offset)
              for i, (shape, scale, offset) in enumerate(specs)]
    # The outputs have the first input's shape (lltm: two of old_cell's).
    out_shapes = [specs[4][0]] * 2 if name == "lltm" else [specs[0][0]]
    grads = [_uniform(shape, 1000 * seed + 100 + i, 2, -1) for i, shape in enumerate(out_shapes)]
    return inputs, grads


def on_device(case, device):
    """op_case's tensors on `device`: the inputs as leaves that require grad."""
    inputs, grads = case
    return [x.to(device).requires_grad_() for x in inputs], [g.to(device) for g in grads]


def call_op(name, inputs, jit_op=None):
    """The outputs of op `name` (a list); jit_elementwise is `jit_op`, by default JIT_FMA."""
    ops = torch.ops.gpuaug
    if name == "lltm":
        return list(ops.lltm(*inputs))
    if name == "jit_elementwise":
        return [(jit_op or JIT_FMA)(*inputs)]
    return [getattr(ops, name)(*inputs)]


def forward_backward(name, inputs, grads, jit_op=None):
    """Outputs (detached) and the gradients of every input, by torch.autograd.grad."""
    outputs = call_op(name, inputs, jit_op)
    return [o.detach() for o in outputs] + list(torch.autograd.grad(outputs, inputs, grads))


def as_bits(t):
    """`t` viewed as integers of its width: equal bits compare equal, NaN and -0.0 included."""
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def assert_same_bits(actual, expected, what=""):
    assert len(actual) == len(expected), what
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape and a.dtype == e.dtype, f"{what}: result {i}"
        assert torch.equal(as_bits(a), as_bits(e)), (
            f"{what}: result {i} differs in {(as_bits(a) != as_bits(e)).sum().item()} of "
            f"{a.numel()} elements")


def uint8_image(shape, device, seed):
    """Random uint8 images, the same for a seed on every device."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g).to(device)


def assert_fresh_draws_replay(make, device):
    """A photometric transform's fresh draws (the op making the parameters of its uniforms)
    equal its ``sample_params`` replayed; ``make`` builds it anew, its generator's state alike."""
    image = uint8_image([32, 3, 5, 7], device, seed=1)
    params = make().sample_params(image)
    assert torch.equal(make()(image), make()(image, params))


def assert_exported_draws(transform, device, seed, channels=3):
    """torch.export of a transform drawing fresh parameters, with a dynamic batch: the same
    draws and values as eager for the same generator state, at two batch sizes. Returns the
    exported program."""
    image = make_image([4, channels, 9, 11], torch.uint8, device, seed=seed)
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(transform, (image,), dynamic_shapes=({0: batch},))
    for n in (4, 6):
        image = make_image([n, channels, 9, 11], torch.uint8, device, seed=seed + 1 + n)
        torch.manual_seed(n)
        drawn = program.module()(image)
        torch.manual_seed(n)
        assert torch.equal(drawn, transform(image))
    return program


def captured_replays(fn, replays=2, before_replay=None):
    """``fn()`` (a tensor, on CUDA) captured in a CUDA graph after a warm-up outside it: its
    output after each of ``replays`` replays (``before_replay(k)`` called before replay k)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    outputs = []
    for k in range(replays):
        if before_replay is not None:
            before_replay(k)
        graph.replay()
        outputs.append(out.clone())
    return outputs


IMAGE_DTYPES = [torch.uint8, torch.float32, torch.float64, torch.float16, torch.bfloat16]


def make_image(shape, dtype, device, seed):
    """Random images of ``dtype``: uint8 values, over 255 for floating dtypes; the same for a seed
    on every device."""
    g = torch.Generator().manual_seed(seed)
    image = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
    if dtype != torch.uint8:
        image = (image.double() / 255).to(dtype)
    return image.to(device)


def assert_matches_torchvision(out, expected, dtype, differentiable_chain=True):
    """float32 within 1e-5; uint8 equal but for at most 1 where a rounding falls differently (and
    in under 0.1% of the values); float64 within 1e-5 (torchvision runs hue in float32); the half
    types within a few of their units in the last place, except where a threshold (solarize,
    posterize) sees a value one unit off."""
    assert out.shape == expected.shape and out.dtype == expected.dtype
    diff = (out.cpu().double() - expected.double()).abs()
    if dtype == torch.uint8:
        assert diff.max().item() <= 1
        assert (diff > 0).double().mean().item() < 1e-3
    elif dtype in (torch.float32, torch.float64):
        assert diff.max().item() <= 1e-5
    else:
        ulp = 2.0 ** (-10 if dtype == torch.float16 else -7)
        close = diff <= 4 * ulp
        if differentiable_chain:
            assert close.all()
        else:
            assert close.double().mean().item() > 0.97
