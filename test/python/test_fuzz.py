"""Property-based (hypothesis) tests of every gpuaug op against its float64 reference: random
shapes (0-d where the op allows it, empty, size-1, odd and prime sizes), random layouts (any
dimension order, channels-last, slices with steps, expanded zero-stride dimensions, storage
offsets that break 16-byte alignment; the gaps of every buffer hold a sentinel, NaN for floats,
so reading outside the view shows), every dtype the op takes and random parameters with their
edges, on the CPU and (when there is one) the GPU.

The references and tolerances are those of the ops' own test files (gpuaug_testing.py,
test_color_transform.py, test_lltm.py). Hypothesis prints the falsifying example (its seed, shapes,
layouts and parameters) and a `@reproduce_failure` blob on failure. Profiles (environment variable
HYPOTHESIS_PROFILE): "ci", the default (CI_EXAMPLES examples for a test of share 1.0, per
device), and "thorough" (ten times as many).
"""
import importlib.util
import math
import os
from typing import NamedTuple

import pytest
import torch

from gpuaug_testing import (DEVICES, DTYPES, assert_exact, assert_sum_close, make_input,
                            mul_ref, relu_grad_ref, relu_ref, round_ste_ref, sum_to)
from test_color_transform import (IMAGE_DTYPES, assert_matches, is_interleaved, make_image,
                                  reference as color_reference, reference_grads as color_grads)
from test_lltm import (TOLERANCES as LLTM_TOLERANCES, close as lltm_close, float64, lltm_ref,
                       make_args as lltm_args)

# In .ci/requirements.txt; a machine without it (the offline GPU machine, unless a wheel is
# carried there) reports this file as skipped.
pytest.importorskip("hypothesis", reason="the fuzz tests need hypothesis (pip install hypothesis)")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CI_EXAMPLES = 500   # examples of a test of share 1.0 in the "ci" profile, per device

# The tests draw their values from torch generators seeded by a drawn seed, so conftest's
# per-test torch.manual_seed (a function-scoped fixture) does not matter between examples.
_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])
settings.register_profile("ci", max_examples=CI_EXAMPLES, **_COMMON)
settings.register_profile("thorough", max_examples=10 * CI_EXAMPLES, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def examples(share):
    """A test's number of examples: `share` of the profile's max_examples (CI_EXAMPLES in
    "ci"), so that a profile scales every test."""
    return settings(max_examples=max(1, round(settings.default.max_examples * share)))


def note_layout(name, t):
    """Records the kind of t's layout in hypothesis' statistics (--hypothesis-show-statistics)."""
    if t.dim() == 0 or t.numel() == 0:
        kind = "0-d" if t.dim() == 0 else "empty"
    elif t.is_contiguous():
        kind = "contiguous"
    elif t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        kind = "channels_last"
    elif torch.empty_like(t).stride() == t.stride():
        kind = "dense, permuted"
    elif any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape)):
        kind = "zero stride"
    else:
        kind = "gaps"
    event(f"{name}: {kind}, {'' if t.data_ptr() % 16 == 0 else 'not '}16-byte aligned")


ops = torch.ops.gpuaug
SEEDS = st.integers(0, 2**31 - 1)

# ---------------------------------------------------------------------------------------------
# Shapes and layouts.

# Sizes: empty, 1, small odd and prime, powers of two and one past them (vector widths, blocks).
SIZES = [1, 0, 2, 3, 5, 7, 8, 11, 13, 16, 17, 31, 64, 127, 257, 1031]


@st.composite
def shapes(draw, min_rank=0, max_rank=4, max_numel=70000):
    rank = draw(st.sampled_from(range(min_rank, max_rank + 1)))   # uniform, unlike st.lists
    shape = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    while math.prod(shape) > max_numel:   # shrink the largest size until it fits
        i = shape.index(max(shape))
        shape[i] = max(n for n in SIZES if n <= shape[i] // 4)
    return tuple(shape)


class Layout(NamedTuple):
    """How a tensor of some shape sits in memory: its dimensions in `order` from the outermost
    in storage; every `steps[d]`-th element of a dense buffer along d; the buffer starting
    `offset` elements into its allocation; the dimensions in `expand` broadcast from one
    element (stride 0)."""
    order: tuple
    steps: tuple
    offset: int
    expand: tuple


@st.composite
def layouts(draw, rank, orders=None):
    """Layouts for tensors of `rank` dimensions; `orders`: storage orders to favour (default:
    torch's channels_last for 4 and 5 dimensions)."""
    if orders is None:
        orders = {4: [(0, 2, 3, 1)], 5: [(0, 2, 3, 4, 1)]}.get(rank, [])
    identity = tuple(range(rank))
    permuted = st.permutations(identity).map(tuple)
    # Favoured orders (identity included) half the time, a random permutation otherwise.
    order = draw(st.one_of(st.sampled_from([identity, *orders]), permuted))
    # Half of them dense (some order of a contiguous tensor: the layouts outputs keep).
    dense = not draw(st.booleans())
    steps = tuple(1 if dense else draw(st.sampled_from([1, 2, 3])) for _ in range(rank))
    # One element in: misaligned for every dtype's 16-byte (and 8-, 4-, 2-byte) accesses.
    offset = draw(st.sampled_from([0, 1, 3]))
    expand = () if dense else tuple(d for d in range(rank)
                                    if draw(st.sampled_from([False, False, True])))
    return Layout(order, steps, offset, expand)


# Channels-last storage orders for [C, H, W], [N, C, H, W] and [N, T, C, H, W] images.
CHANNELS_LAST = {3: (1, 2, 0), 4: (0, 2, 3, 1), 5: (0, 1, 3, 4, 2)}

SENTINEL = {torch.uint8: 165, torch.bool: True}


def arrange(t, layout):
    """t's values (broadcast from index 0 along the expanded dimensions) in `layout`, on t's
    device; the elements of the allocation outside the view hold a sentinel (NaN for floats)."""
    shape = t.shape
    for d in layout.expand:
        if shape[d] > 1:
            t = t.narrow(d, 0, 1)
    big = [t.shape[d] * layout.steps[d] for d in layout.order]
    flat = torch.full((layout.offset + math.prod(big),), SENTINEL.get(t.dtype, math.nan),
                      dtype=t.dtype, device=t.device)
    buffer = flat[layout.offset:].view(big)
    view = buffer[tuple(slice(None, None, layout.steps[d]) for d in layout.order)]
    view.copy_(t.permute(layout.order))
    inverse = sorted(range(len(layout.order)), key=layout.order.__getitem__)
    out = view.permute(inverse).expand(shape)
    assert out.shape == shape and out.storage_offset() == layout.offset
    return out


def leaf(t):
    """t (same strides) as a leaf that requires grad."""
    return t.detach().requires_grad_()


def dense_strides(x):
    """The strides of the element-wise ops' outputs: x's own when x is non-overlapping and dense
    (empty_like keeps those, and only those), else contiguous ones."""
    kept = torch.empty_like(x).stride()
    return x.stride() if kept == x.stride() else torch.empty(x.shape).stride()


# ---------------------------------------------------------------------------------------------
# relu, mul, round_ste.

# Edge values: NaN, infinities, signed zeros, ties of round_ste, subnormals of float32 and
# bfloat16, values past float16's range. All exact in float64, so the references stay exact.
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -1.5, 1e-40, -1e-40,
            1e5, -3e38]


def values(shape, dtype, seed, scale, specials):
    """make_input's values (both signs, a quarter of them ties), with `specials` (a fraction) of
    them replaced by SPECIALS, rounded to dtype; on the CPU."""
    x = make_input(shape, torch.float64, seed=seed, scale=scale)
    if specials:
        g = torch.Generator().manual_seed(seed + 1)
        pick = torch.randint(len(SPECIALS), shape, generator=g)
        x = torch.where(torch.rand(shape, generator=g) < specials,
                        torch.tensor(SPECIALS, dtype=torch.float64)[pick], x)
    return x.to(dtype)


class Unary(NamedTuple):
    dtype: torch.dtype
    shape: tuple
    layout: Layout
    grad_layout: Layout
    seed: int
    scale: float
    specials: float


@st.composite
def unary_cases(draw):
    shape = draw(shapes())
    return Unary(draw(st.sampled_from(DTYPES)), shape, draw(layouts(len(shape))),
                 draw(layouts(len(shape))), draw(SEEDS), draw(st.sampled_from([4.0, 0.5, 300.0])),
                 draw(st.sampled_from([0.0, 0.1, 0.5])))


def unary_inputs(case, device):
    x = arrange(values(case.shape, case.dtype, case.seed, case.scale, case.specials).to(device),
                case.layout)
    grad = arrange(values(case.shape, case.dtype, case.seed + 2, 4.0, case.specials).to(device),
                   case.grad_layout)
    return x, grad


@pytest.mark.parametrize("device", DEVICES)
@examples(1.0)
@given(case=unary_cases())
def test_relu(device, case):
    x, grad = unary_inputs(case, device)
    event(f"dtype: {case.dtype}")
    note_layout("x", x)
    y = ops.relu(x)
    assert y.stride() == dense_strides(x)
    assert_exact(y, relu_ref(x))
    xg = leaf(x)
    (gx,) = torch.autograd.grad(ops.relu(xg), xg, grad)
    assert_exact(gx, relu_grad_ref(grad, x))


@pytest.mark.parametrize("device", DEVICES)
@examples(1.0)
@given(case=unary_cases())
def test_round_ste(device, case):
    x, grad = unary_inputs(case, device)
    event(f"dtype: {case.dtype}")
    note_layout("x", x)
    y = ops.round_ste(x)
    assert y.stride() == dense_strides(x)
    assert_exact(y, round_ste_ref(x))
    xg = leaf(x)
    (gx,) = torch.autograd.grad(ops.round_ste(xg), xg, grad)   # straight through
    assert_exact(gx, grad)


class Binary(NamedTuple):
    dtype: torch.dtype
    shape_a: tuple
    shape_b: tuple
    layout_a: Layout
    layout_b: Layout
    grad_layout: Layout
    seed: int
    scale: float
    specials: float


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast: each drops leading dimensions of a common shape and has some
    of the others at 1."""
    out = draw(shapes())

    def operand():
        lead = draw(st.sampled_from([0, 0, *range(1, len(out) + 1)]))
        return tuple(1 if draw(st.sampled_from([False, False, False, True])) else n
                     for n in out[lead:])

    return operand(), operand()


@st.composite
def binary_cases(draw):
    shape_a, shape_b = draw(broadcast_shapes())
    layout_a = draw(layouts(len(shape_a)))
    if draw(st.booleans()):   # one shape and one layout (which the output keeps)
        shape_b, layout_b = shape_a, layout_a
    else:
        layout_b = draw(layouts(len(shape_b)))
    return Binary(draw(st.sampled_from(DTYPES)), shape_a, shape_b, layout_a, layout_b,
                  draw(layouts(len(torch.broadcast_shapes(shape_a, shape_b)))), draw(SEEDS),
                  draw(st.sampled_from([4.0, 0.5, 300.0])), draw(st.sampled_from([0.0, 0.1, 0.5])))


@pytest.mark.parametrize("device", DEVICES)
@examples(1.0)
@given(case=binary_cases())
def test_mul(device, case):
    a = arrange(values(case.shape_a, case.dtype, case.seed, case.scale, case.specials).to(device),
                case.layout_a)
    b = arrange(values(case.shape_b, case.dtype, case.seed + 3, case.scale, case.specials)
                .to(device), case.layout_b)
    event(f"dtype: {case.dtype}")
    event("broadcast" if a.shape != b.shape else "one shape")
    note_layout("a", a)
    note_layout("b", b)
    y = ops.mul(a, b)
    shape = torch.broadcast_shapes(a.shape, b.shape)
    assert y.shape == shape
    # One shape and one layout keep it; anything else is contiguous.
    same = a.shape == b.shape and a.stride() == b.stride()
    assert y.stride() == (dense_strides(a) if same else torch.empty(shape).stride())
    assert_exact(y, mul_ref(a, b))

    grad = arrange(values(shape, case.dtype, case.seed + 5, 4.0, case.specials).to(device),
                   case.grad_layout)
    ag, bg = leaf(a), leaf(b)
    ga, gb = torch.autograd.grad(ops.mul(ag, bg), (ag, bg), grad)
    for g, x, other in ((ga, a, b), (gb, b, a)):
        assert g.shape == x.shape and g.dtype == x.dtype
        if x.shape == shape:    # no reduction: one rounding, exact
            assert_exact(g, mul_ref(grad, other))
            continue
        terms = mul_ref(grad, other).double()   # each product rounded, as the kernel's are
        # A sum of finite terms that stays well inside the dtype's range has a bounded error.
        bound = sum_to(terms.abs(), x.shape)
        if torch.isfinite(terms).all() and (bound < torch.finfo(x.dtype).max / 4).all():
            assert_sum_close(g, terms)


# ---------------------------------------------------------------------------------------------
# color_transform.

# Parameter edges: a colour gain of 0 (greys the channel out), gamma near 0 and large, contrast 0
# (flat grey), saturating brightness.
COLORS = st.one_of(st.floats(0.5, 1.5), st.sampled_from([0.0, 1.0, 1e-3, 4.0]))
BRIGHTNESS = st.one_of(st.floats(-0.5, 0.5), st.sampled_from([0.0, -1.0, 1.0]))
CONTRAST = st.one_of(st.floats(0.0, 2.0), st.sampled_from([0.0, 1.0, 3.0]))
GAMMA = st.one_of(st.floats(0.3, 3.0), st.sampled_from([1.0, 1e-4, 1e-2, 10.0, 40.0]))
STDS = st.sampled_from([0.229, 0.1, 0.5, 1.0, 2.0])


class Color(NamedTuple):
    shape: tuple
    dtype: torch.dtype
    out_dtype: torch.dtype       # None: the image's
    layout: Layout
    value_range: float           # float images: uniform on [0, value_range]
    non_finite: int              # NaN / inf channels put into random pixels (float images)
    seed: int
    params: dict                 # name -> (values, per sample, on the image's device)
    param_dtype: torch.dtype
    apply: tuple                 # None or one bool per sample
    apply_layout: Layout
    mean: tuple
    std: tuple


@st.composite
def color_cases(draw, dtypes=tuple(IMAGE_DTYPES), floating_out=False, max_numel=40000,
                brightness=BRIGHTNESS):
    dim = draw(st.sampled_from([4, 3, 5]))
    channels = draw(st.sampled_from([3, 1, 2, 4, 5, 8, 32]))
    n = draw(st.sampled_from([2, 1, 3, 4, 5, 7])) if dim > 3 else 1
    size = st.sampled_from([5, 1, 2, 3, 4, 7, 13, 16, 17, 32, 48, 64, 97])
    shape = [*{3: (), 4: (n,), 5: (n, draw(st.sampled_from([1, 2, 3])))}[dim], channels,
             draw(size), draw(size)]
    if draw(st.sampled_from([False] * 9 + [True])):   # empty: no samples, frames or pixels
        shape[draw(st.sampled_from([d for d in range(dim) if d != dim - 3]))] = 0
        n = shape[0] if dim > 3 else 1
    shape = tuple(shape)
    if math.prod(shape) > max_numel:   # keep it small: shrink the spatial size
        shape = (*shape[:-2], 3, 5)
    dtype = draw(st.sampled_from(dtypes))
    out_dtypes = [d for d in IMAGE_DTYPES if d.is_floating_point or not floating_out]
    out_dtype = draw(st.sampled_from([None, *out_dtypes]))
    floating_output = (out_dtype or dtype).is_floating_point
    layout = draw(layouts(dim, orders=(CHANNELS_LAST[dim],)))

    def param(strategy, per_channel=False):
        """(values, per_sample, on the image's device); read by color_inputs."""
        per_sample = draw(st.booleans())
        count = (n if per_sample else 1) * (channels if per_channel else 1)
        # Shared parameters may also be CPU tensors beside a CUDA image (read by value).
        return (tuple(draw(strategy) for _ in range(count)), per_sample,
                per_sample or draw(st.booleans()))

    params = {"color": param(COLORS, per_channel=True), "brightness": param(brightness),
              "contrast": param(CONTRAST), "gamma": param(GAMMA)}
    apply = tuple(draw(st.booleans()) for _ in range(n)) if draw(st.booleans()) else None
    normalize = floating_output and draw(st.booleans())
    mean = tuple(draw(st.floats(0.0, 1.0)) for _ in range(channels)) if normalize else None
    std = tuple(draw(STDS) for _ in range(channels)) if normalize else None
    return Color(shape, dtype, out_dtype, layout, draw(st.sampled_from([1.0, 3.0])),
                 draw(st.sampled_from([0, 0, 1, 3])) if dtype.is_floating_point else 0,
                 draw(SEEDS), params, draw(st.sampled_from([torch.float32, torch.float64])),
                 apply, draw(layouts(1)), mean, std)


def per_sample(mask, image):
    """A per-sample bool [N] broadcast against an image ([C, H, W] images are one sample)."""
    return mask.view(-1, *[1] * (image.dim() - 1))


def color_inputs(case, device):
    """The image (in its layout), the parameters, the apply mask (or None) and the mask of
    pixels with a non-finite channel (or None)."""
    x = make_image(case.shape, case.dtype, seed=case.seed)
    if case.dtype.is_floating_point:
        x = x * case.value_range
        if case.non_finite and x.numel():
            g = torch.Generator().manual_seed(case.seed + 1)
            where = torch.randint(x.numel(), (case.non_finite,), generator=g)
            pick = torch.randint(3, (case.non_finite,), generator=g)
            x.view(-1)[where] = torch.tensor([math.nan, math.inf, -math.inf],
                                             dtype=x.dtype)[pick]
    x = arrange(x.to(device), case.layout)
    # (After arrange: an expanded dimension repeats index 0's values, non-finite ones included.)
    bad = (~torch.isfinite(x).all(dim=-3, keepdim=True) if case.non_finite and x.numel()
           else None)
    n, channels = (x.shape[0] if x.dim() > 3 else 1), x.shape[-3]
    params = {}
    for name, (values, per_sample_, on_device) in case.params.items():
        shape = ([n] if per_sample_ else []) + ([channels] if name == "color" else [])
        params[name] = torch.tensor(values, dtype=case.param_dtype).reshape(shape).to(
            device if on_device else "cpu")
    apply = None
    if case.apply is not None:
        apply = arrange(torch.tensor(case.apply, dtype=torch.bool, device=device),
                        case.apply_layout)
        if bad is not None and case.out_dtype == torch.uint8:
            # What uint8 makes of a skipped sample's NaN is not documented: apply those samples.
            has_bad = bad.reshape(n, -1).any(dim=1)
            apply = arrange(apply | has_bad, case.apply_layout._replace(expand=()))
    norm = dict(mean=case.mean and list(case.mean), std=case.std and list(case.std))
    return x, params, apply, bad, norm


def color_want(x, params, apply, bad, norm):
    """The float64 reference; a pixel with a non-finite channel is transformed as a black one in
    the samples that are applied (documented), and only converted (NaN stays NaN) elsewhere."""
    want = color_reference(x, **params, apply=apply, **norm)
    if bad is not None:
        black = torch.where(bad.to(x.device), 0.0, x.double())
        as_black = color_reference(black, **params, apply=apply, **norm)
        want = as_black if apply is None else torch.where(per_sample(apply, x), as_black, want)
    return want


def tolerance_scale(params, norm, image, out_dtype, device="cpu"):
    """assert_matches' `scale` (its tolerances are 2e-5 * scale for float32, 1e-6 * scale plus
    an ulp for the half types), from an error analysis of the documented arithmetic: z carries
    the rounding of two sums of C products, about (C + 2) * eps relative, which z ** gamma
    multiplies by gamma (on the GPU, the fast exp2(gamma * log2(z)) adds about 1.2e-7 * gamma);
    the contrast and 1 / std multiply what comes out. With the existing tests' parameters
    (C = 3, gamma and contrast about 1) it is about 1, or 1 / min(std) when normalising."""
    def largest(name):
        return params[name].abs().max().item() if params[name].numel() else 1.0
    stretch = max(1.0, largest("contrast")) * (1 / min(norm["std"]) if norm["std"] else 1.0)
    if image.dtype == torch.float64:   # float64 arithmetic
        return stretch
    gamma = max(1.0, largest("gamma"))
    error = gamma * ((image.shape[-3] + 2) * torch.finfo(torch.float32).eps
                     + (1.2e-7 if device != "cpu" else 0.0))
    unit = 1e-6 if out_dtype in (torch.float16, torch.bfloat16) else 2e-5
    return stretch * max(1.0, error / unit)


@pytest.mark.parametrize("device", DEVICES)
@examples(1.5)
@given(case=color_cases())
def test_color_transform(device, case):
    x, params, apply, bad, norm = color_inputs(case, device)
    out = ops.color_transform(x, **params, apply=apply, dtype=case.out_dtype, **norm)
    out_dtype = case.out_dtype or case.dtype
    event(f"dtype: {case.dtype} -> {out_dtype}")
    event(f"{x.dim()}-d image, {x.shape[-3]} channels")
    note_layout("image", x)
    event("planar" if x.is_contiguous() else "interleaved" if is_interleaved(x) else
          "other layout (copied)")
    if bad is not None:
        event("non-finite pixels")
    assert out.shape == x.shape and out.dtype == out_dtype and out.device == x.device
    # Planar and interleaved images keep their layout; any other becomes planar.
    if not x.is_contiguous() and is_interleaved(x):
        assert is_interleaved(out)
    else:
        assert out.is_contiguous()
    want = color_want(x, params, apply, bad, norm)
    finite = torch.isfinite(want)
    if not finite.all():   # skipped samples' NaN and inf pass through, converted
        assert out_dtype.is_floating_point and apply is not None
        got, expected = out[~finite].double(), want[~finite]
        assert torch.equal(got.isnan(), expected.isnan())
        assert torch.equal(got[~got.isnan()], expected[~expected.isnan()])
    scale = tolerance_scale(params, norm, x, out_dtype, device)
    if out_dtype == torch.float64 and case.dtype != torch.float64:
        # The arithmetic is float32's (documented): float32's tolerance, in float64.
        torch.testing.assert_close(out[finite], want[finite], atol=2e-5 * scale, rtol=0)
    elif finite.any():   # (assert_matches takes no empty uint8 tensors)
        assert_matches(out[finite], want[finite], out_dtype, scale)
    if out_dtype.is_floating_point:
        # Every pixel of an applied sample, a non-finite one included, comes out finite.
        applied = torch.ones_like(out, dtype=torch.bool)
        if apply is not None:
            applied = applied & per_sample(apply, x)
        assert torch.isfinite(out[applied]).all()


# Brightness without the edges that put the final clamp's input on its bound (v = 1 or 0
# exactly), where float rounding decides whether a gradient passes.
@pytest.mark.parametrize("device", DEVICES)
@examples(0.6)
@given(case=color_cases(dtypes=(torch.float64,), floating_out=True, max_numel=4000,
                        brightness=st.one_of(st.just(0.0), st.floats(-0.4, 0.4))),
       grad_seed=SEEDS)
def test_color_transform_gradients(device, case, grad_seed):
    """The image's and every parameter's gradient against the float64 reference's, to 1e-9
    (float64 images: in float32 the clamps' kinks fall by rounding, in a fuzzed image sometimes
    on the other side than in float64; test_color_transform.py checks float32 gradients)."""
    case = case._replace(non_finite=0, out_dtype=None)
    x, params, apply, _, norm = color_inputs(case, device)
    note_layout("image", x)
    leaves = [leaf(x), *(leaf(p) for p in params.values())]
    out = ops.color_transform(leaves[0], **dict(zip(params, leaves[1:])), apply=apply, **norm)
    g = torch.Generator().manual_seed(grad_seed)
    grad = torch.randn(x.shape, generator=g, dtype=torch.float64).to(device)
    got = torch.autograd.grad(out, leaves, grad)
    want = color_grads(grad, x, params, apply=apply, **norm)
    contrast = tolerance_scale(params, norm, x, x.dtype)   # float64: the stretch alone
    for name, actual, expected, input in zip(["image", *params], got, want, leaves):
        assert actual.shape == input.shape and actual.dtype == input.dtype, name
        assert actual.device == input.device, name
        # Parameter gradients are sums over pixels.
        largest = expected.abs().max().item() if expected.numel() else 0.0
        scale = max(1.0, largest) * contrast
        tol = 1e-9 if actual.dtype == torch.float64 else 1e-6   # float32 parameters: rounded
        torch.testing.assert_close(actual.double(), expected.to(actual.device), atol=tol * scale,
                                   rtol=tol, msg=lambda m: f"gradient of {name}: {m}")


# ---------------------------------------------------------------------------------------------
# lltm.

class Lltm(NamedTuple):
    dtype: torch.dtype
    batch: int
    inputs: int
    state: int
    layouts: tuple   # input, weights, bias, old_h, old_cell
    seed: int


@st.composite
def lltm_cases(draw):
    batch = draw(st.sampled_from([1, 0, 2, 3, 5, 7, 13, 17, 32]))
    inputs = draw(st.sampled_from([1, 2, 3, 5, 8, 13, 31]))
    state = draw(st.sampled_from([1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 33, 64]))
    return Lltm(draw(st.sampled_from(DTYPES)), batch, inputs, state,
                tuple(draw(layouts(r)) for r in (2, 2, 1, 2, 2)), draw(SEEDS))


@pytest.mark.parametrize("device", DEVICES)
@examples(0.8)
@given(case=lltm_cases())
def test_lltm(device, case):
    """Both outputs and all five gradients, with test_lltm's tolerances (the gradients' grown
    with the length of their sums)."""
    args = [arrange(a, l) for a, l in zip(
        lltm_args(case.batch, case.inputs, case.state, case.dtype, device, case.seed),
        case.layouts)]
    event(f"dtype: {case.dtype}")
    for name, a in zip(["input", "weights", "bias", "old_h", "old_cell"], args):
        note_layout(name, a)
    leaves = [leaf(a) for a in args]
    new_h, new_cell = ops.lltm(*leaves)
    ref_args = float64(args, requires_grad=True)
    ref_h, ref_cell = lltm_ref(*ref_args)
    assert new_h.shape == new_cell.shape == (case.batch, case.state)
    assert new_h.dtype == new_cell.dtype == case.dtype
    lltm_close(new_h, ref_h, case.dtype)
    lltm_close(new_cell, ref_cell, case.dtype)

    g = torch.Generator().manual_seed(case.seed + 1)
    grad_h, grad_cell = (torch.randn(new_h.shape, generator=g, dtype=torch.float64)
                         .to(case.dtype) for _ in range(2))
    grads = torch.autograd.grad((new_h, new_cell), leaves,
                                (grad_h.to(device), grad_cell.to(device)))
    ref_grads = torch.autograd.grad((ref_h, ref_cell), ref_args,
                                    (grad_h.double(), grad_cell.double()))
    reduction = math.sqrt(max(case.batch, 3 * case.state, 1))
    tol = {k: v * reduction for k, v in LLTM_TOLERANCES[case.dtype].items()}
    for name, actual, expected in zip(["input", "weights", "bias", "old_h", "old_cell"], grads,
                                      ref_grads):
        assert actual.shape == expected.shape and actual.dtype == case.dtype, name
        torch.testing.assert_close(actual.cpu().double(), expected, **tol,
                                   msg=lambda m: f"gradient of {name}: {m}")


@st.composite
def photometric_cases(draw):
    """A random program of stages (at most one reduction: contrast, autocontrast or equalize),
    per-sample factors in their ranges, orders and apply masks, on a random image in a random
    layout."""
    dim = draw(st.sampled_from([4, 3, 5]))
    channels = draw(st.sampled_from([3, 1]))
    n = draw(st.sampled_from([2, 1, 3, 5])) if dim > 3 else 1
    size = st.sampled_from([5, 1, 2, 3, 7, 13, 16, 17, 32, 33])
    shape = (*{3: (), 4: (n,), 5: (n, draw(st.sampled_from([1, 2])))}[dim], channels,
             draw(size), draw(size))
    dtype = draw(st.sampled_from([torch.uint8, torch.float32]))
    kinds = draw(st.lists(st.sampled_from(range(1, 12)), min_size=1, max_size=6))
    reductions = {2, 10, 11}
    kinds = [k for i, k in enumerate(kinds) if k not in reductions or not reductions & set(kinds[:i])]
    bound = 255.0 if dtype == torch.uint8 else 1.0
    ranges = {1: st.floats(0.0, 2.0), 2: st.floats(0.0, 2.0), 3: st.floats(0.0, 2.0),
              4: st.floats(-0.5, 0.5), 5: st.just(0.0), 6: st.floats(0.0, bound),
              7: st.sampled_from(range(9)).map(float), 8: st.just(0.0),
              9: st.sampled_from([21, 5, 7, 11, 15, 19]).map(float),  # the 6 permutations
              10: st.just(0.0), 11: st.just(0.0)}
    factors = [[draw(ranges[k]) if k != 9 or channels == 3 else 0.0 for k in kinds]
               for _ in range(n)]
    orders = [draw(st.permutations(range(len(kinds)))) for _ in range(n)]
    apply = [[draw(st.booleans()) for _ in kinds] for _ in range(n)]
    layout = draw(layouts(dim, orders=(CHANNELS_LAST[dim],)))
    return shape, dtype, kinds, factors, orders, apply, layout, draw(SEEDS)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                    reason="torchvision is not installed (none may be released for this PyTorch yet)")
@pytest.mark.parametrize("device", DEVICES)
@examples(0.3)
@given(case=photometric_cases())
def test_photometric(device, case):
    from photometric_testing import make_image, torchvision_program
    shape, dtype, kinds, factors, orders, apply, layout, seed = case
    image = arrange(make_image(list(shape), dtype, device, seed), layout)
    note_layout("image", image)
    factors, order = torch.tensor(factors), torch.tensor(orders)
    apply = torch.tensor(apply)
    out = ops.photometric(image, kinds, factors.to(device), order=order.to(device),
                          apply=apply.to(device))
    batched = image.cpu() if image.dim() > 3 else image.cpu().unsqueeze(0)
    want = torch.stack([torchvision_program(batched[i], kinds, factors[i], order[i], apply[i])
                        for i in range(batched.shape[0])])
    want = want if image.dim() > 3 else want[0]
    diff = (out.cpu().double() - want.double()).abs()
    assert diff.max().item() <= (1 if dtype == torch.uint8 else 1e-5), (kinds, diff.max())


MEANS = [([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), ([0.5], [0.25]),
         ([0.1, 0.2, 0.3], [2.0, 0.5, 1.0])]


@st.composite
def compose_cases(draw):
    """A random deterministic pipeline of torchvision's photometric transforms (each applied:
    p=1, one-valued ranges), ToDtype and Normalize anywhere, Grayscale(3) and RGB; a part of it
    nested in a Compose of its own; on a uint8 image of 1 or 3 channels, planar or channels_last.
    As (name, kwargs) pairs that build torchvision's and gpuaug's alike."""
    dtype, normalized, spec = torch.uint8, False, []
    for _ in range(draw(st.integers(1, 6))):
        floating = dtype.is_floating_point
        kind = draw(st.sampled_from(
            ["invert", "jitter", "autocontrast", "posterize", "solarize", "to_dtype", "three"]
            + ([] if normalized else ["equalize"]) + (["normalize"] if floating else [])))
        if kind == "jitter":
            name = draw(st.sampled_from(["brightness", "contrast", "saturation", "hue"]))
            value = draw(st.floats(-0.25, 0.25, width=32) if name == "hue"
                         else st.floats(0.25, 1.75, width=32))
            spec.append(("ColorJitter", {name: (value, value)}))
        elif kind == "posterize":
            spec.append(("RandomPosterize", {"bits": draw(st.integers(1, 8)), "p": 1.0}))
        elif kind == "solarize":
            # float32 values: the transforms' factors are (docs/transforms.md), also for float64 images
            threshold = (draw(st.floats(0, 1, width=32)) if floating
                         else float(draw(st.integers(0, 255))))
            spec.append(("RandomSolarize", {"threshold": threshold, "p": 1.0}))
        elif kind == "to_dtype":
            dtype = draw(st.sampled_from(([] if normalized else [torch.uint8])
                                         + [torch.float32, torch.float64]))
            spec.append(("ToDtype", {"dtype": dtype, "scale": True}))
        elif kind == "three":
            spec.append(draw(st.sampled_from([("Grayscale", {"num_output_channels": 3}),
                                              ("RGB", {}), ("RandomGrayscale", {"p": 1.0})])))
        elif kind == "normalize":
            mean, std = draw(st.sampled_from(MEANS))
            spec.append(("Normalize", {"mean": mean, "std": std}))
            normalized = True
        else:
            spec.append(({"invert": "RandomInvert", "autocontrast": "RandomAutocontrast",
                          "equalize": "RandomEqualize"}[kind], {"p": 1.0}))
    if draw(st.booleans()):  # Grayscale(1), then conversions alone
        spec.append(("Grayscale", {"num_output_channels": 1}))
        if draw(st.booleans()):
            mean, std = draw(st.sampled_from(MEANS))
            spec += [("ToDtype", {"dtype": torch.float32, "scale": True}),
                     ("Normalize", {"mean": mean, "std": std})]
    first = draw(st.integers(0, len(spec)))
    nested = (first, draw(st.integers(first, len(spec))))
    size = st.sampled_from([1, 2, 5, 7, 16])
    shape = [draw(st.integers(1, 3)), draw(st.sampled_from([3, 1])), draw(size), draw(size)]
    return spec, nested, shape, draw(st.booleans()), draw(SEEDS)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                    reason="torchvision is not installed (none may be released for this PyTorch yet)")
@pytest.mark.parametrize("device", DEVICES)
@examples(0.1)
@given(case=compose_cases())
def test_compose_pipelines(device, case):
    """gpuaug's Compose against torchvision's on the whole batch: every call boundary, dtype
    and channel change in place."""
    import gpuaug.transforms as T
    from torchvision.transforms import v2
    spec, (first, end), shape, channels_last, seed = case

    def built(module):
        transforms = [getattr(module, name)(**arguments) for name, arguments in spec]
        if end > first:
            transforms[first:end] = [module.Compose(transforms[first:end])]
        return module.Compose(transforms)

    image = torch.randint(0, 256, shape, dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(seed))
    expected = built(v2)(image)
    on_device = image.to(device)
    if channels_last:
        on_device = on_device.contiguous(memory_format=torch.channels_last)
    out = built(T)(on_device)
    assert out.shape == expected.shape and out.dtype == expected.dtype, spec
    diff = (out.cpu().double() - expected.double()).abs().max().item()
    # uint8: the same values (off by one where a rounding fell differently is what the issue
    # allows; none did in thousands of these)
    assert diff <= (0 if out.dtype == torch.uint8 else 1e-4), (spec, diff)
