"""Every op under torch.autocast (CUDA float16 and bfloat16, CPU bfloat16 and float16): which
ops have Autocast kernels, output dtypes, values against float64 on the inputs as the op sees them
(after autocast's casts), and gradients in their leaves' dtypes. The policy is docs/precision.md's
"Mixed precision (autocast)"; the kernels are ops/autocast/*.cpp."""
import math

import pytest
import torch
import torch.nn.functional as F

import gpuaug
from gpuaug_testing import (TOLERANCES, assert_exact, assert_sum_close, make_input, mul_ref,
                            relu_grad_ref, relu_ref, requires_cuda, round_ste_ref)

ops = torch.ops.gpuaug

# (device, autocast dtype): float16 is CUDA's default, bfloat16 the CPU's.
AUTOCASTS = [
    pytest.param("cuda", torch.float16, marks=requires_cuda, id="cuda-float16"),
    pytest.param("cuda", torch.bfloat16, marks=requires_cuda, id="cuda-bfloat16"),
    pytest.param("cpu", torch.bfloat16, id="cpu-bfloat16"),
    pytest.param("cpu", torch.float16, id="cpu-float16"),
]

# op -> the Autocast kernels it has: a cast policy where autocast must change something.
POLICY = {"relu": False, "round_ste": False, "color_transform": False,
          "mul": True, "jit_elementwise": True, "lltm": True}


def other_half(dtype):
    return torch.bfloat16 if dtype == torch.float16 else torch.float16


@pytest.mark.parametrize("op", sorted(POLICY))
def test_kernels_registered_where_the_policy_casts(op):
    for key in ["AutocastCUDA", "AutocastCPU"]:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"gpuaug::{op}", key) == POLICY[op]
    # The private backward ops run on what the forward was given: never cast.
    backward = f"gpuaug::_{op}_backward"
    if torch._C._dispatch_has_kernel(backward):
        for key in ["AutocastCUDA", "AutocastCPU"]:
            assert not torch._C._dispatch_has_kernel_for_dispatch_key(backward, key)
    # No kernel: the fallthrough autocast registers for every operator, down to Autograd.
    if not POLICY[op]:
        table = torch._C._dispatch_dump_table(f"gpuaug::{op}")
        assert "AutocastCPU: fallthrough" in table and "AutocastCUDA: fallthrough" in table


# --- relu and round_ste: no kernel, they run in their input's dtype -----------------------------

@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
@pytest.mark.parametrize("name", ["relu", "round_ste"])
def test_unary_ops_run_in_the_input_dtype(name, device, autocast_dtype):
    ref = {"relu": relu_ref, "round_ste": round_ste_ref}[name]
    for dtype in [torch.float32, torch.float64, autocast_dtype, other_half(autocast_dtype)]:
        x = make_input((37, 65), dtype, device, seed=3, requires_grad=True)
        grad = make_input((37, 65), dtype, device, seed=4)
        with torch.autocast(device, autocast_dtype):
            y = getattr(ops, name)(x)
        assert y.dtype == dtype
        assert_exact(y, ref(x))
        (gx,) = torch.autograd.grad(y, x, grad)
        assert gx.dtype == dtype
        assert_exact(gx, relu_grad_ref(grad, x) if name == "relu" else grad)


# --- mul: promote to the widest operand ---------------------------------------------------------

MUL_SHAPES = [((9, 33), (9, 33)), ((9, 33), (33,)), ((4, 1, 7), (5, 1))]


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
@pytest.mark.parametrize("shapes", MUL_SHAPES, ids=str)
def test_mul_promotes_to_the_widest_operand(shapes, device, autocast_dtype):
    low = autocast_dtype
    # (dtype of a, dtype of b) -> the dtype both run in, that of torch.mul's type promotion.
    cases = {(torch.float32, torch.float32): torch.float32, (low, low): low,
             (low, torch.float32): torch.float32, (torch.float32, low): torch.float32,
             (low, other_half(low)): torch.float32, (torch.float64, torch.float64): torch.float64}
    for (dtype_a, dtype_b), dtype in cases.items():
        a = make_input(shapes[0], dtype_a, device, seed=1, requires_grad=True)
        b = make_input(shapes[1], dtype_b, device, seed=2, requires_grad=True)
        with torch.autocast(device, autocast_dtype):
            out = ops.mul(a, b)
        assert out.dtype == dtype == torch.result_type(a, b), (dtype_a, dtype_b)
        # A product of two half values is exact in float32: the op's value is exact too.
        assert_exact(out, mul_ref(a.to(dtype), b.to(dtype)))
        grad = make_input(out.shape, dtype, device, seed=5)
        grad_a, grad_b = torch.autograd.grad(out, (a, b), grad)
        assert (grad_a.dtype, grad_b.dtype) == (dtype_a, dtype_b)
        for g, other, leaf in [(grad_a, b, a), (grad_b, a, b)]:
            # The op's gradient in `dtype`, then the cast's backward to the leaf's dtype.
            terms = (grad.double() * other.detach().to(dtype).double()).to(dtype).double()
            if g.numel() == grad.numel():   # one product each: exact
                assert_exact(g, terms.to(leaf.dtype))
            else:                           # summed over the broadcast dimensions
                assert_sum_close(g, terms)


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
def test_mul_leaves_float64_alone(device, autocast_dtype):
    a = make_input((5, 6), torch.float64, device)
    b = make_input((5, 6), torch.float32, device)
    with torch.autocast(device, autocast_dtype):
        with pytest.raises(RuntimeError, match="gpuaug::mul: expected 'b' to have the dtype"):
            ops.mul(a, b)


def test_mul_mixed_dtypes_stay_an_error_outside_autocast():
    a, b = make_input((5, 6), torch.bfloat16), make_input((5, 6), torch.float32)
    with pytest.raises(RuntimeError, match="gpuaug::mul: expected 'b' to have the dtype of 'a'"):
        ops.mul(a, b)
    with torch.autocast("cpu", torch.bfloat16), torch.autocast("cpu", enabled=False):
        with pytest.raises(RuntimeError, match="gpuaug::mul: expected 'b'"):
            ops.mul(a, b)


# --- lltm: the autocast dtype ---------------------------------------------------------------------

# Relative to float64 on the same (cast) inputs: the gates are a matrix product rounded once to the
# dtype, the cell computes in float32 (as in test_lltm).
LLTM_TOLERANCES = {torch.float16: dict(rtol=5e-3, atol=5e-3),
                   torch.bfloat16: dict(rtol=4e-2, atol=4e-2)}


def lltm_ref(input, weights, bias, old_h, old_cell):
    gates = torch.cat([old_h, input], dim=1) @ weights.t() + bias
    i, o, c = gates.chunk(3, dim=1)
    new_cell = old_cell + F.elu(c) * torch.sigmoid(i)
    return torch.tanh(new_cell) * torch.sigmoid(o), new_cell


def lltm_args(b, i, s, dtypes, device, seed=0):
    """Leaves requiring grad; gates of both signs and some saturation."""
    g = torch.Generator().manual_seed(seed)
    scale = 1.5 / math.sqrt(s + i)
    shapes = [((b, i), 1.0), ((3 * s, s + i), 2 * scale * math.sqrt(3)), ((3 * s,), 0.5),
              ((b, s), 0.8), ((b, s), 1.0)]
    return [(torch.randn(shape, generator=g, dtype=torch.float64) * k).to(dtype).to(device)
            .requires_grad_() for (shape, k), dtype in zip(shapes, dtypes)]


def check_lltm(args, outputs, dtype):
    """outputs (new_h, new_cell) against float64 on args cast to `dtype`, and the gradients of the
    leaves `args` against float64's, in the leaves' dtypes."""
    new_h, new_cell = outputs
    assert new_h.dtype == new_cell.dtype == dtype
    ref_args = [a.detach().to(dtype).double().cpu().requires_grad_() for a in args]
    ref = lltm_ref(*ref_args)
    tol = LLTM_TOLERANCES.get(dtype, TOLERANCES[dtype])
    for actual, expected in zip(outputs, ref):
        torch.testing.assert_close(actual.detach().cpu().double(), expected.detach(), **tol)
    g = torch.Generator().manual_seed(7)
    grads_out = [torch.randn(new_h.shape, generator=g, dtype=torch.float64).to(dtype)
                 for _ in range(2)]
    grads = torch.autograd.grad(outputs, args, [t.to(new_h.device) for t in grads_out])
    ref_grads = torch.autograd.grad(ref, ref_args, [t.double() for t in grads_out])
    reduction = math.sqrt(max(new_h.shape[0], 3 * new_h.shape[1]))
    for name, leaf, actual, expected in zip(["input", "weights", "bias", "old_h", "old_cell"], args,
                                            grads, ref_grads):
        assert actual.dtype == leaf.dtype, name
        torch.testing.assert_close(actual.cpu().double(), expected,
                                   **{k: v * reduction for k, v in tol.items()},
                                   msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
@pytest.mark.parametrize("size", [(1, 5, 7), (8, 12, 32)], ids=lambda s: "B%d-I%d-S%d" % s)
def test_lltm_runs_in_the_autocast_dtype(size, device, autocast_dtype):
    # float32 parameters and state, and an input that is already low precision (the output of a
    # linear layer under autocast): all five run in the autocast dtype.
    for dtypes in [[torch.float32] * 5, [autocast_dtype] + [torch.float32] * 4,
                   [other_half(autocast_dtype)] * 5]:
        args = lltm_args(*size, dtypes, device, seed=sum(size))
        with torch.autocast(device, autocast_dtype):
            outputs = ops.lltm(*args)
        check_lltm(args, outputs, autocast_dtype)


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
def test_lltm_two_steps_share_the_cached_weight_cast(device, autocast_dtype):
    # Autocast casts a float32 parameter once per region; both steps' gradients reach it.
    args = lltm_args(4, 6, 16, [torch.float32] * 5, device, seed=11)
    x, weights, bias, h, c = args
    with torch.autocast(device, autocast_dtype):
        h1, c1 = ops.lltm(x, weights, bias, h, c)
        h2, c2 = ops.lltm(x, weights, bias, h1, c1)
    assert h2.dtype == c2.dtype == autocast_dtype
    ref_args = [a.detach().to(autocast_dtype).double().cpu().requires_grad_() for a in args]
    rx, rw, rb, rh, rc = ref_args
    rh1, rc1 = lltm_ref(rx, rw, rb, rh, rc)
    # The first step's state is rounded to the autocast dtype before the second step uses it.
    rh2, rc2 = lltm_ref(rx, rw, rb, *[t.to(autocast_dtype).double() for t in (rh1, rc1)])
    tol = LLTM_TOLERANCES[autocast_dtype]
    torch.testing.assert_close(h2.detach().cpu().double(), rh2.detach(), **tol)
    grad_w, grad_b = torch.autograd.grad(h2.float().sum() + c2.float().sum(), (weights, bias))
    ref_w, ref_b = torch.autograd.grad(rh2.sum() + rc2.sum(), (rw, rb))
    assert grad_w.dtype == grad_b.dtype == torch.float32
    # As in check_lltm, for the length of the sums, twice over for the two steps.
    reduction = 2 * math.sqrt(3 * 16)
    for actual, expected in [(grad_w, ref_w), (grad_b, ref_b)]:
        torch.testing.assert_close(actual.cpu().double(), expected,
                                   **{k: v * reduction for k, v in tol.items()})


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
def test_lltm_leaves_float64_and_disabled_autocast_alone(device, autocast_dtype):
    args = lltm_args(3, 4, 8, [torch.float64] * 5, device)
    expected = ops.lltm(*args)
    with torch.autocast(device, autocast_dtype):
        outputs = ops.lltm(*args)
    for actual, want in zip(outputs, expected):
        assert_exact(actual, want)
    args = lltm_args(3, 4, 8, [torch.float32] * 5, device)
    with torch.autocast(device, autocast_dtype), torch.autocast(device, enabled=False):
        outputs = ops.lltm(*args)
    check_lltm(args, outputs, torch.float32)


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
def test_lltm_module_parameters_get_float32_gradients(device, autocast_dtype):
    cell = gpuaug.nn.LLTM(6, 16, device=device)
    x = torch.randn(4, 6, device=device)
    state = (torch.zeros(4, 16, device=device), torch.zeros(4, 16, device=device))
    with torch.autocast(device, autocast_dtype):
        h, c = cell(x, state)
        loss = (h.float() ** 2).sum()
    loss.backward()
    assert h.dtype == autocast_dtype
    assert cell.weights.grad.dtype == cell.bias.grad.dtype == torch.float32
    assert cell.weights.grad.abs().sum() > 0


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
def test_lltm_compiled_under_autocast(device, autocast_dtype, fresh_dynamo):
    def step(*args):
        with torch.autocast(device, autocast_dtype):
            return ops.lltm(*args)

    args = lltm_args(4, 6, 16, [torch.float32] * 5, device, seed=5)
    compiled = torch.compile(step, fullgraph=True)
    outputs = compiled(*args)
    expected = step(*args)
    for actual, want in zip(outputs, expected):
        assert actual.dtype == autocast_dtype
        torch.testing.assert_close(actual, want, **LLTM_TOLERANCES[autocast_dtype])
    check_lltm(args, outputs, autocast_dtype)


# --- color_transform: no kernel, the dtypes it is given -----------------------------------------

def color_ref(image, color, brightness, contrast, gamma):
    """The formula in float64 for [N, C, H, W] images on [0, 1] and per-sample parameters."""
    x = image.double() / 255 if image.dtype == torch.uint8 else image.double()
    color = color.double()[:, :, None, None]
    brightness, contrast, gamma = [p.double()[:, None, None, None]
                                   for p in (brightness, contrast, gamma)]
    y = x * color * (x.sum(1, keepdim=True) / ((x * color).sum(1, keepdim=True) + 0.01))
    y = y.clamp(0, 1) ** gamma + brightness
    return (0.5 + (y - 0.5) * contrast).clamp(0, 1)


def color_args(device, image_dtype, param_dtype):
    g = torch.Generator().manual_seed(3)
    image = torch.rand(4, 3, 9, 11, generator=g, dtype=torch.float64)
    params = [torch.rand(4, 3, generator=g) + 0.5, torch.rand(4, generator=g) * 0.2 - 0.1,
              torch.rand(4, generator=g) + 0.5, torch.rand(4, generator=g) + 0.5]
    if image_dtype == torch.uint8:
        image = (image * 255).round()
    image = image.to(image_dtype)
    return [image.to(device)] + [p.to(param_dtype).to(device) for p in params]


@pytest.mark.parametrize("device, autocast_dtype", AUTOCASTS)
@pytest.mark.parametrize("out_dtype", [None, torch.float16, torch.uint8], ids=str)
def test_color_transform_keeps_its_dtypes(out_dtype, device, autocast_dtype):
    low = autocast_dtype
    for image_dtype, param_dtype in [(torch.float32, torch.float32), (low, torch.float32),
                                     (torch.uint8, torch.float32), (torch.float32, low)]:
        args = color_args(device, image_dtype, param_dtype)
        differentiable = image_dtype != torch.uint8 and out_dtype != torch.uint8
        if differentiable:
            for a in args:
                a.requires_grad_()
        with torch.autocast(device, autocast_dtype):
            out = ops.color_transform(*args, dtype=out_dtype)
        assert out.dtype == (out_dtype or image_dtype)
        # Exactly the call outside autocast: nothing is cast.
        expected = ops.color_transform(*args, dtype=out_dtype)
        assert_exact(out, expected)
        ref = color_ref(*[a.detach() for a in args])
        if out.dtype == torch.uint8:
            torch.testing.assert_close(out.double(), (ref * 255).round(), rtol=0, atol=1)
        else:
            # Computed in float32 (CUDA's fast pow: 2e-5, as test_color_transform allows), rounded
            # once to the output dtype.
            tol = TOLERANCES[out.dtype] if out.dtype != torch.float32 else dict(rtol=0, atol=2e-5)
            torch.testing.assert_close(out.double(), ref.to(out.device), **tol)
        if differentiable:
            grad = torch.rand(out.shape, device=device).to(out.dtype)
            grads = torch.autograd.grad(out, args, grad)
            assert [g.dtype for g in grads] == [a.dtype for a in args]
            for actual, want in zip(grads, torch.autograd.grad(expected, args, grad)):
                assert_exact(actual, want)


# --- jit_elementwise: promote, as mul ------------------------------------------------------------

AXPY = gpuaug.jit.elementwise("autocast_axpy", "a * x + y", inputs=("a", "x", "y"),
                              grads=("grad * x", "grad * a", "grad"))


@pytest.mark.parametrize("device, autocast_dtype", [p for p in AUTOCASTS if p.values[0] == "cuda"])
def test_jit_elementwise_promotes_to_the_widest_input(device, autocast_dtype):
    low = autocast_dtype
    cases = {(torch.float32, low, torch.float32): torch.float32, (low, low, low): low,
             (torch.float32,) * 3: torch.float32, (low, other_half(low), low): torch.float32}
    for dtypes, dtype in cases.items():
        a = make_input((33,), dtypes[0], device, seed=1, requires_grad=True)
        x = make_input((7, 33), dtypes[1], device, seed=2, requires_grad=True)
        y = make_input((7, 33), dtypes[2], device, seed=3, requires_grad=True)
        with torch.autocast(device, autocast_dtype):
            out = AXPY(a, x, y)
        assert out.dtype == dtype, dtypes
        # a * x is exact in float32 for half inputs; + y rounds once (fused or not: the float64
        # value rounded to float32 and then to the dtype is within one ulp of the kernel's).
        want = (a.detach().to(dtype).double() * x.detach().to(dtype).double()
                + y.detach().to(dtype).double())
        torch.testing.assert_close(out.double(), want.to(dtype).double(), **TOLERANCES[dtype])
        grad = make_input(out.shape, dtype, device, seed=4)
        grads = torch.autograd.grad(out, (a, x, y), grad)
        assert [g.dtype for g in grads] == list(dtypes)
        torch.testing.assert_close(grads[2], grad.to(dtypes[2]), rtol=0, atol=0)
        want_x = (grad.double() * a.detach().to(dtype).double()).to(dtype).to(dtypes[1])
        torch.testing.assert_close(grads[1], want_x, rtol=0, atol=0)
        products = (grad.double() * x.detach().to(dtype).double()).to(dtype).double()
        assert_sum_close(grads[0], products)   # summed over the broadcast rows


@pytest.mark.parametrize("autocast_dtype", [torch.bfloat16, torch.float16])
def test_jit_elementwise_cpu_promotes_before_refusing_the_cpu(autocast_dtype):
    # There is no run-time compiler for the CPU; under CPU autocast the inputs are promoted first,
    # so the error is the CPU one, not the dtype mismatch of the same call outside autocast.
    args = [make_input((4, 5), torch.float32), make_input((4, 5), autocast_dtype)]
    call = lambda: ops.jit_elementwise("autocast_cpu", "x * y", ["x", "y"], args)  # noqa: E731
    with pytest.raises(RuntimeError, match="'y' to have the dtype of 'x'"):
        call()
    with torch.autocast("cpu", autocast_dtype):
        with pytest.raises(RuntimeError, match="'x' is a CPU tensor"):
            call()
