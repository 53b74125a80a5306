"""gpuaug::color_transform, gpuaug.color_transform and gpuaug.transforms.ColorAugment: values
against a float64 reference (dtypes, ranks, channels, layouts, masks, fused dtype/mean/std),
gradients, opcheck, torch.compile, TorchScript, CUDA graphs, errors and determinism."""
import io
import math
import re

import pytest
import torch
import torch._dynamo.testing

from gpuaug.color import color_transform
from gpuaug.transforms import ColorAugment
from gpuaug_testing import DEVICES, requires_cuda, requires_two_gpus

op = torch.ops.gpuaug.color_transform
op_backward = torch.ops.gpuaug._color_transform_backward

IMAGE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8]
NAMES = ("color", "brightness", "contrast", "gamma")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# ---------------------------------------------------------------------------------------------
# Inputs and the float64 reference.

# Spatial sizes: 35 pixels take the GPU's per-pixel kernels; 48 (a multiple of 16) the
# vectorised ones when C = 3.
ODD, ALIGNED = (5, 7), (4, 12)


def shape_of(dim, channels, n=3, size=ODD):
    return {3: (channels, *size), 4: (n, channels, *size), 5: (n, 2, channels, *size)}[dim]


def interleaved(x):
    """x with its channels adjacent in memory (channels_last; [N, T, H, W, C] order for 5-D)."""
    return x.movedim(-3, -1).contiguous().movedim(-1, -3)


def is_interleaved(x):
    return x.movedim(-3, -1).is_contiguous()


def make_image(shape, dtype=torch.float32, device="cpu", seed=0, channels_last=False):
    """Uniform on [0, 1] (every uint8 level), generated on the CPU so every device agrees."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    else:
        x = torch.rand(shape, generator=g, dtype=torch.float64).to(dtype)
    x = x.to(device)
    return interleaved(x) if channels_last else x


def make_params(n, channels, device="cpu", per_sample=True, seed=1, dtype=torch.float32):
    """Random parameters, color [N, C] and the others [N] (or [C] and [] when shared)."""
    g = torch.Generator().manual_seed(seed)

    def uniform(shape, low, high):
        u = torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low
        return u.to(dtype).to(device)

    scalar = [n] if per_sample else []
    return {"color": uniform([n, channels] if per_sample else [channels], 0.6, 1.4),
            "brightness": uniform(scalar, -0.15, 0.15),
            "contrast": uniform(scalar, 0.7, 1.3),
            "gamma": uniform(scalar, 0.7, 1.4)}


def samples(image):
    return 1 if image.dim() == 3 else image.shape[0]


def safe_pow(z, gamma):
    """z ** gamma for z in [0, 1] whose derivative in z is 0 where torch's is infinite (z == 0,
    gamma < 1): what the op promises. Elsewhere it is torch's pow, derivatives included."""
    positive = z > 0
    powered = torch.where(positive, z, torch.ones_like(z)) ** gamma
    return torch.where(positive, powered, z * (gamma == 1))


def clamp01(v):
    """clamp(v, 0, 1) whose gradient passes where v lies in [0, 1], bounds included, as the op's
    does (torch.clamp's own rule changed in PyTorch 2.15: it passes none at the bounds)."""
    return torch.where((v >= 0) & (v <= 1), v, v.clamp(0, 1).detach())


def reference(image, color, brightness, contrast, gamma, apply=None, mean=None, std=None,
              pow=safe_pow):
    """The formula in plain float64 torch (differentiable): values on [0, 1], any output dtype is
    rounded by the caller."""
    x = image.double() / 255 if image.dtype == torch.uint8 else image.double()
    shape = x.shape
    x = x.reshape(samples(x), 1 if x.dim() < 5 else x.shape[1], *x.shape[-3:])   # [N, T, C, H, W]
    channels = x.shape[2]

    def param(p, per_channel=False):
        p = p.to(x.device).double()
        if per_channel:
            return p.reshape(-1, 1, channels, 1, 1)
        return p.reshape(-1, 1, 1, 1, 1) if p.dim() else p

    s_in = x.sum(2, keepdim=True)
    y = x * param(color, per_channel=True)
    s_out = y.sum(2, keepdim=True)
    y = clamp01(y * (s_in / (s_out + 0.01)))
    y = pow(y, param(gamma))
    y = y + param(brightness)
    y = 0.5 + (y - 0.5) * param(contrast)
    out = clamp01(y)
    if apply is not None:
        out = torch.where(apply.reshape(-1, 1, 1, 1, 1), out, x)
    if mean is not None:
        out = out - torch.tensor(mean, dtype=torch.float64, device=x.device).view(-1, 1, 1)
    if std is not None:
        out = out / torch.tensor(std, dtype=torch.float64, device=x.device).view(-1, 1, 1)
    return out.reshape(shape)


def reference_grads(grad, image, params, **kwargs):
    """The float64 gradients of sum(grad * reference) for the image and the parameters."""
    leaves = [t.detach().double().requires_grad_() for t in (image, *params.values())]
    out = reference(leaves[0], *leaves[1:], **kwargs)
    return torch.autograd.grad(out, leaves, grad.double().to(out.device))


def ulp(v, dtype):
    """The spacing of `dtype` at the values v (float64)."""
    info = torch.finfo(dtype)
    exponent = torch.floor(torch.log2(v.abs().clamp_min(info.smallest_normal)))
    return torch.exp2(exponent) * info.eps


def assert_matches(out, want, dtype, scale=1.0):
    """out (of `dtype`) against the unrounded float64 reference `want`: float32 within 2e-5 (the
    GPU's fast pow), float64 1e-12, half types one ulp, uint8 one level; `scale` is the largest
    factor a normalisation multiplies by."""
    assert out.dtype == dtype and out.shape == want.shape
    got, want = out.double(), want.to(out.device)
    if dtype == torch.uint8:
        levels = torch.round(want * 255).clamp(0, 255)
        assert (got - levels).abs().max().item() <= 1
    elif dtype in (torch.float16, torch.bfloat16):
        error = (got - want).abs()
        limit = ulp(want, dtype) + 1e-6 * scale
        assert (error <= limit).all(), f"max error {error.max().item():.3g}"
    else:
        atol = {torch.float32: 2e-5, torch.float64: 1e-12}[dtype] * scale
        torch.testing.assert_close(got, want, atol=atol, rtol=0)


# ---------------------------------------------------------------------------------------------
# Values.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("dim", [3, 4, 5])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("size", [ODD, ALIGNED])
def test_values(size, per_sample, channels_last, channels, dim, dtype, device):
    x = make_image(shape_of(dim, channels, size=size), dtype, device, seed=dim * 10 + channels,
                   channels_last=channels_last)
    p = make_params(samples(x), channels, device, per_sample, seed=channels)
    out = op(x, **p)
    assert_matches(out, reference(x, **p), dtype)
    assert is_interleaved(out) if channels_last else out.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("dim", [3, 4, 5])
def test_apply_mask(dim, dtype, device):
    x = make_image(shape_of(dim, 3, n=6, size=ALIGNED), dtype, device, seed=2,
                   channels_last=dim == 4)
    n = samples(x)
    apply = torch.tensor([True, False, False, True, True, False][:n], device=device)
    p = make_params(n, 3, device, seed=3)
    out = op(x, **p, apply=apply)
    assert_matches(out, reference(x, **p, apply=apply), dtype)
    if dim > 3:   # skipped samples are the input, exactly
        assert torch.equal(out[~apply], x[~apply])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_dtype,out_dtype,normalize", [
    (torch.uint8, torch.float32, True), (torch.uint8, torch.bfloat16, True),
    (torch.uint8, torch.float16, True), (torch.uint8, torch.float32, False),
    (torch.float32, torch.uint8, False), (torch.float16, torch.float32, True),
    (torch.bfloat16, torch.float32, False), (torch.float32, torch.bfloat16, True),
    (torch.float64, torch.float32, True)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_fused_dtype_and_normalization(channels_last, in_dtype, out_dtype, normalize, device):
    x = make_image((4, 3, 6, 8), in_dtype, device, seed=4, channels_last=channels_last)
    p = make_params(4, 3, device, seed=5)
    apply = torch.tensor([True, True, False, True], device=device)
    norm = {"mean": MEAN, "std": STD} if normalize else {}
    out = op(x, **p, apply=apply, dtype=out_dtype, **norm)
    scale = 1 / min(STD) if normalize else 1.0
    assert_matches(out, reference(x, **p, apply=apply, **norm), out_dtype, scale)
    assert is_interleaved(out) if channels_last else out.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
def test_mean_and_std_go_together(device):
    x = make_image((2, 3, 4, 4), torch.uint8, device, seed=6)
    p = make_params(2, 3, device, per_sample=False, seed=7)
    for given, alone in (({"mean": MEAN}, "mean"), ({"std": STD}, "std")):
        with pytest.raises(RuntimeError, match=re.escape(
                "'mean' and 'std' normalise together: pass both or neither, but got only "
                f"'{alone}'")):
            op(x, **p, dtype=torch.float32, **given)


@pytest.mark.parametrize("device", DEVICES)
def test_default_parameters(device):
    # color 1, brightness 0, contrast 1, gamma 1: the image scaled by sum / (sum + 0.01).
    x = make_image((2, 3, 8, 8), torch.uint8, device, seed=8)
    out = color_transform(x)
    assert_matches(out, reference(x, *(torch.tensor(v) for v in ([1.0] * 3, 0.0, 1.0, 1.0))),
                   torch.uint8)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_input_becomes_planar(device):
    x = make_image((3, 3, 6, 10), torch.float32, device, seed=9)[..., ::2]
    p = make_params(3, 3, device, seed=10)
    out = op(x, **p)
    assert out.is_contiguous()
    assert_matches(out, reference(x, **p), torch.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint8])
def test_unaligned_data(dtype, device):
    # One element past an aligned allocation: the GPU cannot use 16-byte accesses.
    shape = (3, 3, 4, 12)
    flat = make_image((math.prod(shape) + 1,), dtype, device, seed=16)
    x = flat[1:].view(shape)
    p = make_params(3, 3, device, seed=17)
    assert_matches(op(x, **p), reference(x, **p), dtype)
    if dtype.is_floating_point:
        grad = torch.randn(shape, dtype=torch.float64).to(device)
        got = op_backward(grad.to(dtype), x, *p.values(), None, None)
        for g, w in zip(got, reference_grads(grad.to(dtype), x, p)):
            scale = max(1.0, w.abs().max().item())
            torch.testing.assert_close(g.double(), w, atol=2e-2 * scale, rtol=2e-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("channels_last", [False, True])
def test_uint8_with_parameters_of_any_sign(channels_last, out_dtype, device):
    # The GPU computes uint8 samples whose colours and gamma are all positive and finite in the
    # log domain, extreme ones included (colours of 1e-20 and 1e20 with gamma 3, whose pow
    # leaves float32's range, and a contrast of 1e30); the others (a zero or negative colour,
    # gamma 0 or negative) by the formula itself. pow(0, gamma < 0) is inf, so the output
    # saturates there: plain torch.pow.
    # A gamma on the CPU is checked instead (test_gamma_on_the_cpu_must_be_positive).
    x = make_image((9, 3, 4, 16), torch.uint8, device, seed=18, channels_last=channels_last)
    p = make_params(9, 3, device, seed=19)
    p["color"][1, 0] = 0.0
    p["color"][2] = torch.tensor([1.4, 1.3, -0.05])
    if device != "cpu":
        p["gamma"][3] = 0.0
        p["gamma"][4] = -0.5
    p["gamma"][5] = 40.0
    p["color"][6, 1], p["gamma"][6] = 1e-20, 3.0
    p["color"][7, 2], p["gamma"][7] = 1e20, 3.0
    p["color"][8, 0], p["gamma"][8], p["contrast"][8] = 1e5, 2.0, 1e30
    out = op(x, **p, dtype=out_dtype)
    assert_matches(out, reference(x, **p, pow=torch.pow), out_dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_more_images_than_a_grid_row(device):
    # 66000 images: more than CUDA's 65535 blocks along y, so the kernels loop over images.
    x = make_image((33000, 2, 3, 2, 2), torch.float32, device, seed=18).requires_grad_()
    p = make_params(33000, 3, device, seed=19)
    p = {k: v.requires_grad_() for k, v in p.items()}
    apply = torch.rand(33000, generator=torch.Generator().manual_seed(20)).lt(0.8).to(device)
    out = op(x, **p, apply=apply)
    assert_matches(out.detach(), reference(x, **p, apply=apply).detach(), torch.float32)
    grad = torch.randn(x.shape, dtype=torch.float64).to(device)
    got = torch.autograd.grad(out, [x, *p.values()], grad.float())
    for g, w in zip(got, reference_grads(grad, x, p, apply=apply)):
        torch.testing.assert_close(g.double(), w, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 3, 4, 5), (0, 2, 3, 4, 5), (2, 0, 3, 4, 5), (2, 3, 0, 5),
                                   (4, 3, 1, 1), (3, 1, 1), (2, 2, 4, 1, 1)])
@pytest.mark.parametrize("per_sample", [False, True])
def test_empty_and_1x1(per_sample, shape, device):
    x = make_image(shape, torch.float32, device, seed=11).requires_grad_()
    p = make_params(samples(x), shape[-3], device, per_sample, seed=12)
    p = {k: v.requires_grad_() for k, v in p.items()}
    out = op(x, **p)
    assert out.shape == x.shape
    assert_matches(out.detach(), reference(x.detach(), **p).detach(), torch.float32)
    grad = torch.rand_like(out)
    grads = torch.autograd.grad(out, [x, *p.values()], grad)
    for got, want in zip(grads, reference_grads(grad, x, p)):
        torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)


def test_python_wrapper_parameters():
    x = make_image((2, 3, 5, 5), torch.float32, seed=13)
    p = make_params(2, 3, per_sample=False, seed=14)
    want = op(x, **p)
    # Floats and sequences become the same float32 CPU tensors.
    floats = {"color": p["color"].tolist(), **{k: p[k].item() for k in NAMES[1:]}}
    assert torch.equal(color_transform(x, **floats), want)
    assert torch.equal(color_transform(x, **p), want)
    # A float colour gain applies to every channel.
    assert torch.equal(color_transform(x, 1.25, 0.1), color_transform(x, [1.25] * 3, 0.1))
    # Tensors pass through, so per-sample parameters work.
    q = make_params(2, 3, seed=15)
    torch.testing.assert_close(color_transform(x, q["color"], q["brightness"], 1.1, 0.9,
                                               mean=MEAN, std=STD),
                               reference(x, q["color"], q["brightness"], torch.tensor(1.1),
                                         torch.tensor(0.9), mean=MEAN, std=STD).float(),
                               atol=1e-4, rtol=0)


# ---------------------------------------------------------------------------------------------
# Gradients.

def grad_inputs(shape, per_sample, device="cpu", seed=20, dtype=torch.float64):
    """An image and parameters that require grad; values away from the clamps' corners."""
    x = (make_image(shape, torch.float64, device, seed) * 0.9 + 0.05).to(dtype)
    p = make_params(1 if len(shape) == 3 else shape[0], shape[-3], device, per_sample, seed + 1,
                    dtype)
    return x.requires_grad_(), {k: v.requires_grad_() for k, v in p.items()}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(3, 3, 4), (2, 3, 3, 4), (2, 2, 4, 2, 3), (2, 1, 3, 3)])
@pytest.mark.parametrize("per_sample", [False, True])
def test_gradcheck(per_sample, shape, device):
    x, p = grad_inputs(shape, per_sample, device)
    assert torch.autograd.gradcheck(op, (x, *p.values()))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_with_apply_and_std(device):
    x, p = grad_inputs((3, 3, 3, 4), True, device, seed=22)
    x_cl = interleaved(x.detach()).requires_grad_()
    apply = torch.tensor([True, False, True], device=device)
    assert torch.autograd.gradcheck(
        lambda *a: op(*a, apply=apply, mean=MEAN, std=STD), (x_cl, *p.values()))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [3, 4, 5])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("size", [ODD, ALIGNED])
def test_grads_match_reference(size, per_sample, channels_last, dim, device):
    x, p = grad_inputs(shape_of(dim, 3, size=size), per_sample, device, seed=dim,
                       dtype=torch.float32)
    if channels_last:
        x = interleaved(x.detach()).requires_grad_()
    apply = torch.tensor([True, False, True], device=device)[:samples(x)]
    grad = torch.randn(x.shape, dtype=torch.float64).to(device)
    got = torch.autograd.grad(op(x, **p, apply=apply, mean=MEAN, std=STD), [x, *p.values()], grad.float())
    want = reference_grads(grad, x, p, apply=apply, mean=MEAN, std=STD)
    for g, w in zip(got, want):
        assert g.dtype == torch.float32 and g.device == w.device
        scale = max(1.0, w.abs().max().item())   # parameter gradients are sums over pixels
        torch.testing.assert_close(g.double(), w, atol=2e-5 * scale, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,out_dtype", [(torch.float16, None), (torch.bfloat16, None),
                                             (torch.bfloat16, torch.float32),
                                             (torch.float32, torch.bfloat16)])
def test_half_grads(dtype, out_dtype, device):
    x, p = grad_inputs((2, 3, 6, 6), True, device, seed=23, dtype=dtype)
    p = {k: v.detach().float().requires_grad_() for k, v in p.items()}
    out = op(x, **p, dtype=out_dtype)
    grad = torch.randn(out.shape).to(device, out.dtype)
    got = torch.autograd.grad(out, [x, *p.values()], grad)
    want = reference_grads(grad, x, p)
    assert got[0].dtype == dtype and all(g.dtype == torch.float32 for g in got[1:])
    for g, w in zip(got, want):
        scale = max(1.0, w.abs().max().item())
        torch.testing.assert_close(g.double(), w, atol=2e-2 * scale, rtol=2e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_grads_with_exact_zeros_and_gamma_below_one(device):
    """Where z ** gamma has an infinite derivative (z == 0, gamma < 1), the op takes it as 0:
    gradients stay finite, equal torch's where those are finite, and are 0 on all-black pixels
    (whose torch gradients are all NaN)."""
    x, p = grad_inputs((4, 3, 6, 6), True, device, seed=24)
    x = x.detach()
    x[:, :, :2] = 0                       # all-black pixels: every z is 0
    x[:, 1, 3] = 0                        # one channel black
    x.requires_grad_()
    with torch.no_grad():
        p["gamma"].copy_(torch.tensor([0.5, 0.8, 1.0, 1.3]))
    grad = torch.randn(x.shape, dtype=torch.float64).to(device)
    inputs = [x, *p.values()]
    got = torch.autograd.grad(op(x, **p), inputs, grad)
    safe = torch.autograd.grad(reference(x, **p), inputs, grad)
    plain = torch.autograd.grad(reference(x, **p, pow=torch.pow), inputs, grad)
    assert not torch.isfinite(plain[0]).all()   # the case really arises
    for g, s, t in zip(got, safe, plain):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g, s, atol=1e-10, rtol=1e-10)
        finite = torch.isfinite(t)
        torch.testing.assert_close(g[finite], t[finite], atol=1e-10, rtol=1e-10)
    black = torch.zeros_like(x, dtype=torch.bool)
    black[:2, :, :2] = True                     # gamma < 1
    assert (got[0][black] == 0).all() and not torch.isfinite(plain[0][black]).any()


@pytest.mark.parametrize("device", DEVICES)
def test_backward_op(device):
    x, p = grad_inputs((2, 3, 4, 5), True, device, seed=25)
    grad = torch.randn(x.shape, dtype=torch.float64).to(device)
    apply = torch.tensor([False, True], device=device)
    got = op_backward(grad, x, *p.values(), apply, STD)
    for g, w in zip(got, reference_grads(grad, x, p, apply=apply, mean=MEAN, std=STD)):
        torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_backward_is_deterministic(device):
    # Several 4096-pixel runs per image on the CPU, many blocks on the GPU: the parameter
    # gradients are sums of many partial sums, added in a fixed order.
    x, p = grad_inputs((3, 3, 90, 70), True, device, seed=26, dtype=torch.float32)
    grad = torch.randn(x.shape).to(device)

    def grads():
        return torch.autograd.grad(op(x, **p), [x, *p.values()], grad)

    first = grads()
    for other in [grads(), grads()]:
        assert all(torch.equal(a, b) for a, b in zip(first, other))
    if device == "cpu":   # and whatever the number of threads
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            assert all(torch.equal(a, b) for a, b in zip(first, grads()))
        finally:
            torch.set_num_threads(threads)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 256, 256), (600, 3, 4, 8), (3, 5, 3, 64, 64)])
def test_param_grads_of_many_pixels_and_samples(shape, per_sample, device):
    # On the GPU: dozens of blocks' partial sums per image, several images per sample, and more
    # samples than a block has threads.
    x, p = grad_inputs(shape, per_sample, device, seed=27)
    grad = torch.randn(x.shape, dtype=torch.float64).to(device)
    got = torch.autograd.grad(op(x, **p), [x, *p.values()], grad)
    for g, w in zip(got, reference_grads(grad, x, p)):
        torch.testing.assert_close(g, w, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_raises(device):
    x, p = grad_inputs((2, 3, 3, 3), True, device, seed=27)
    gx, = torch.autograd.grad(op(x, **p).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        gx.sum().backward()


# ---------------------------------------------------------------------------------------------
# opcheck (schema, autograd registration, fake tensors, AOT dispatch with dynamic shapes).

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(requires_grad, device):
    for per_sample, channels_last, kwargs in [
            (True, False, {}),
            (False, True, {"apply": torch.tensor([True, False, True], device=device),
                           "mean": MEAN, "std": STD}),
            (True, True, {"dtype": torch.bfloat16})]:
        x = make_image((3, 3, 4, 5), torch.float32, device, seed=30, channels_last=channels_last)
        p = make_params(3, 3, device, per_sample, seed=31)
        args = [t.requires_grad_(requires_grad) for t in (x, *p.values())]
        torch.library.opcheck(op.default, tuple(args), kwargs)
    if not requires_grad:   # uint8 images have no gradients
        x = make_image((2, 3, 4, 5), torch.uint8, device, seed=32)
        p = make_params(2, 3, device, seed=33)
        torch.library.opcheck(op.default, (x, *p.values()),
                              {"dtype": torch.float16, "mean": MEAN, "std": STD})


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_backward(device):
    x = make_image((3, 2, 3, 4, 5), torch.float32, device, seed=34)
    p = make_params(3, 3, device, seed=35)
    grad = torch.randn(x.shape).to(device)
    apply = torch.tensor([True, False, True], device=device)
    torch.library.opcheck(op_backward.default, (grad, x, *p.values(), apply, STD))
    torch.library.opcheck(op_backward.default,
                          (grad.to(torch.bfloat16), x, *p.values(), None, None))


# ---------------------------------------------------------------------------------------------
# torch.compile, TorchScript and CUDA graphs.

@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_no_recompiles(device, fresh_dynamo):
    def augment(x, color, brightness):
        return color_transform(x, color, brightness, 1.1, 0.9, mean=MEAN, std=STD)

    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(augment, backend=counter, fullgraph=True, dynamic=True)
    frames = 0
    for n in (2, 3, 5):
        x = make_image((n, 3, 6, 5), torch.float32, device, seed=n).requires_grad_()
        p = make_params(n, 3, device, seed=n)
        out = compiled(x, p["color"], p["brightness"])
        p.update(contrast=torch.tensor(1.1), gamma=torch.tensor(0.9))
        want = reference(x, **p, mean=MEAN, std=STD)
        assert_matches(out.detach(), want.detach(), torch.float32, 1 / min(STD))
        out.sum().backward()
        want_grad = reference_grads(torch.ones(x.shape), x, p, mean=MEAN, std=STD)[0]
        torch.testing.assert_close(x.grad.double(), want_grad, atol=1e-4, rtol=1e-4)
        # Compiling the first size may take more than one attempt; later sizes take none.
        frames = frames or counter.frame_count
    assert counter.frame_count == frames, "dynamic shapes must not recompile"


@pytest.mark.parametrize("device", DEVICES)
def test_color_augment_compile(device, fresh_dynamo):
    augment = ColorAugment(p=0.5, dtype=torch.float16, mean=MEAN, std=STD)
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(augment, backend=counter, fullgraph=True, dynamic=True)
    frames = 0
    for n in (2, 3, 5):
        x = make_image((n, 3, 8, 6), torch.uint8, device, seed=n)
        # Inductor's own random numbers differ from eager's; this makes them the same.
        with torch._inductor.config.patch(fallback_random=True):
            torch.manual_seed(n)
            got = compiled(x)
        torch.manual_seed(n)
        want = augment(x)
        # The parameters' arithmetic may be fused differently: one float16 ulp apart at most.
        assert ((got.double() - want.double()).abs() <= ulp(want.double(), torch.float16)).all()
        frames = frames or counter.frame_count
    assert counter.frame_count == frames


def test_color_augment_script_save_load():
    augment = ColorAugment(color=[(0.9, 1.1), (1.0, 1.0), (0.7, 1.3)], p=0.8,
                           dtype=torch.bfloat16, mean=MEAN, std=STD)
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(augment), buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    x = make_image((4, 3, 7, 5), torch.uint8, seed=40)
    torch.manual_seed(1)
    got = loaded(x)
    torch.manual_seed(1)
    assert torch.equal(got, augment(x))
    params = augment.sample_params(x)
    assert torch.equal(loaded(x, params), augment(x, params))
    assert torch.equal(loaded.sample_params(x[:1])["color"][:, 1], torch.ones(1))


@requires_cuda
def test_color_augment_cuda_graph():
    augment = ColorAugment(p=0.7)
    x = make_image((8, 3, 32, 32), torch.float32, "cuda", seed=41, channels_last=True)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):   # warm-up off the default stream, as capture wants
        augment(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        params = augment.sample_params(x)
        out = augment(x, params)
    outputs = []
    for seed in range(2):
        x.copy_(make_image(x.shape, torch.float32, "cuda", seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, op(x, **params))   # the replayed draws, applied
        outputs.append({k: v.clone() for k, v in params.items()})
    assert not torch.equal(outputs[0]["color"], outputs[1]["color"])   # fresh draws per replay


@requires_cuda
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_back_to_back_calls_see_each_others_results(dtype, channels_last):
    # The vectorised kernel starts while the one before it finishes (programmatic dependent
    # launch) and must not read its input, nor write memory the caching allocator hands back,
    # before that kernel is done. A chain whose every call reads the last one's output, freed
    # as it goes, queued behind a sleep so that the GPU meets the calls back to back, must equal
    # the same chain run one synchronised call at a time.
    x = make_image((128, 3, 224, 224), dtype, "cuda", seed=70, channels_last=channels_last)
    steps = [make_params(128, 3, "cuda", seed=71 + k) for k in range(12)]

    def chain(synchronize):
        y = x
        for p in steps:
            y = op(y, **p)
            if synchronize:
                torch.cuda.synchronize()
        return y

    want = chain(synchronize=True)
    for _ in range(3):
        torch.cuda._sleep(10**7)
        assert torch.equal(chain(synchronize=False), want)


# ---------------------------------------------------------------------------------------------
# ColorAugment's parameters.

@pytest.mark.parametrize("dim", [3, 4, 5])
def test_color_augment_shapes_and_replay(dim):
    augment = ColorAugment(p=0.5)
    x = make_image(shape_of(dim, 3), torch.float32, seed=42, channels_last=dim == 5)
    params = augment.sample_params(x)
    n = samples(x)
    assert params["color"].shape == (n, 3) and params["apply"].dtype == torch.bool
    assert all(params[k].shape == (n,) for k in NAMES[1:] + ("apply",))
    out = augment(x, params)
    assert is_interleaved(out) if dim == 5 else out.is_contiguous()
    assert torch.equal(out, op(x, **{k: params[k] for k in NAMES}, apply=params["apply"]))
    assert_matches(out, reference(x, **{k: params[k] for k in NAMES}, apply=params["apply"]),
                   torch.float32)


def test_color_augment_distributions():
    augment = ColorAugment(color=(0.8, 1.2), brightness=(-0.1, 0.2), contrast=(0.5, 1.5),
                           gamma=(0.5, 2.0), p=0.3)
    params = augment.sample_params(torch.zeros(20000, 4, 1, 1))
    color, gamma = params["color"], params["gamma"]
    assert 0.8 <= color.min() and color.max() <= 1.2 and color.std(0).min() > 0.1
    assert -0.1 <= params["brightness"].min() and params["brightness"].max() <= 0.2
    assert 0.5 <= params["contrast"].min() and params["contrast"].max() <= 1.5
    assert 0.5 <= gamma.min() * (1 + 1e-6) and gamma.max() <= 2.0 * (1 + 1e-6)
    assert abs(gamma.log().mean().item()) < 0.02              # log-uniform about 1
    assert abs((gamma < 1).float().mean().item() - 0.5) < 0.02
    assert abs(params["apply"].float().mean().item() - 0.3) < 0.02
    # The channels are drawn independently.
    assert torch.corrcoef(color.T)[0, 1].abs() < 0.05


def test_color_augment_generator_and_fixed_ranges():
    x = make_image((3, 3, 5, 5), torch.float32, seed=43)
    a = ColorAugment(generator=torch.Generator().manual_seed(7))(x)
    b = ColorAugment(generator=torch.Generator().manual_seed(7))(x)
    assert torch.equal(a, b)
    fixed = ColorAugment(color=[(1.1, 1.1), (1.0, 1.0), (0.9, 0.9)], brightness=(0.05, 0.05),
                         contrast=(1.2, 1.2), gamma=(0.9, 0.9))
    want = color_transform(x, [1.1, 1.0, 0.9], 0.05, 1.2, fixed.sample_params(x)["gamma"][0])
    torch.testing.assert_close(fixed(x), want, atol=0, rtol=0)
    assert torch.equal(ColorAugment(p=0.0)(x), x)   # nothing applied: x itself, converted
    assert torch.equal(ColorAugment(p=0.0, dtype=torch.float64)(x), x.double())


def test_color_augment_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("expected 'contrast' = (low, high) with low "
                                                   "<= high, got (1.2, 0.8)")):
        ColorAugment(contrast=(1.2, 0.8))
    with pytest.raises(ValueError, match=re.escape("'gamma' = (low, high) with 0 < low")):
        ColorAugment(gamma=(0.0, 2.0))
    with pytest.raises(ValueError, match=re.escape("'mean' and 'std' normalise together")):
        ColorAugment(mean=MEAN)
    with pytest.raises(ValueError, match=re.escape("expected 0 <= p <= 1, got 1.5")):
        ColorAugment(p=1.5)
    with pytest.raises(ValueError, match=re.escape("2 colour ranges for an image of 3 channels")):
        ColorAugment(color=[(0.9, 1.1), (0.9, 1.1)])(torch.zeros(1, 3, 2, 2))
    with pytest.raises(ValueError, match=re.escape("expected an image of shape [C, H, W]")):
        ColorAugment()(torch.zeros(3, 2))


# ---------------------------------------------------------------------------------------------
# Errors.

def test_bad_inputs():
    x = torch.rand(2, 3, 4, 4)
    p = make_params(2, 3)
    p0 = make_params(2, 3, per_sample=False)
    prefix = "^gpuaug::color_transform: "
    cases = [
        ({"color": torch.ones(4)},
         "expected 'color' of shape [3] or [2, 3] for an image of shape [2, 3, 4, 4], but got [4]"),
        ({"color": torch.ones(3, 3)}, "expected 'color' of shape [3] or [2, 3]"),
        ({"color": torch.tensor(1.0)}, "expected 'color' of shape [3] or [2, 3]"),
        ({"brightness": torch.zeros(3)},
         "expected 'brightness' of shape [] or [2] for an image of shape [2, 3, 4, 4], but got [3]"),
        ({"contrast": torch.ones(2, 1)}, "expected 'contrast' of shape [] or [2]"),
        ({"gamma": torch.ones(1)}, "expected 'gamma' of shape [] or [2]"),
        ({"gamma": torch.ones(2, dtype=torch.int32)},
         "expected 'gamma' to be a floating tensor, but got Int"),
    ]
    for change, message in cases:
        with pytest.raises(RuntimeError, match=prefix + re.escape(message)):
            op(x, **{**p, **change})

    def raises(message, *args, **kwargs):
        with pytest.raises(RuntimeError, match=prefix + re.escape(message)):
            op(*args, **kwargs)

    raises("expected 'image' of shape [C, H, W], [N, C, H, W] or [N, T, C, H, W], but got 2-d "
           "shape [4, 4]", torch.rand(4, 4), *p0.values())
    raises("expected 'image' of shape [C, H, W], [N, C, H, W] or [N, T, C, H, W], but got 6-d",
           torch.rand(1, 2, 1, 3, 4, 4), *p0.values())
    raises("expected 'image' of dtype float32, float64, float16, bfloat16 or uint8, but got Int",
           torch.zeros(2, 3, 4, 4, dtype=torch.int32), *p0.values())
    raises("expected 'image' of dtype float32, float64, float16, bfloat16 or uint8, but got Char",
           torch.zeros(2, 3, 4, 4, dtype=torch.int8), *p0.values())
    raises("expected 'image' to have 1 to 32 channels (dimension 1), but got 33",
           torch.rand(2, 33, 2, 2), torch.ones(33), *list(p0.values())[1:])
    raises("expected 'apply' to be a bool tensor of shape [2], but got Float of shape [2]",
           x, *p.values(), apply=torch.ones(2))
    raises("expected 'apply' to be a bool tensor of shape [2], but got Bool of shape [3]",
           x, *p.values(), apply=torch.ones(3, dtype=torch.bool))
    raises("'mean' and 'std' need a floating output dtype, but the output is Byte",
           x, *p.values(), dtype=torch.uint8, mean=MEAN, std=STD)
    raises("'mean' and 'std' need a floating output dtype, but the output is Byte",
           torch.zeros(2, 3, 4, 4, dtype=torch.uint8), *p.values(), std=STD)
    raises("expected 'mean' of length 3 (one value per channel), but got 2", x, *p.values(),
           mean=[0.5, 0.5])
    raises("'std' must not contain 0", x, *p.values(), mean=MEAN, std=[0.2, 0.0, 0.2])
    raises("expected 'dtype' float32, float64, float16, bfloat16 or uint8, but got Int",
           x, *p.values(), dtype=torch.int32)
    image_u8 = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    raises("gradients need a floating image, but 'image' is Byte and 'color' requires grad",
           image_u8, p["color"].requires_grad_(), *list(p.values())[1:])
    raises("a Byte output has no gradient, but 'image' requires grad: ask for a floating 'dtype', "
           "or compute it under torch.no_grad()", x.requires_grad_(), *p0.values(),
           dtype=torch.uint8)
    raises("a Byte output has no gradient, but 'image', 'gamma' require grad",
           x, *list(p0.values())[:3], p0["gamma"].requires_grad_(), dtype=torch.uint8)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [0.0, -0.5, math.nan])
def test_gamma_on_the_cpu_must_be_positive(bad, device):
    # Shared (a Python float, or a 0-d CPU tensor beside any image) and per-sample on the CPU:
    # checked on the host. The backward op checks too.
    x = make_image((3, 3, 4, 4), torch.float32, device, seed=53)
    p = make_params(3, 3, device, per_sample=False, seed=54)
    message = re.escape(f"gpuaug::color_transform: expected 'gamma' > 0 (it is an exponent on "
                        f"[0, 1]), but got {bad:g}")
    with pytest.raises(RuntimeError, match=message):
        color_transform(x, gamma=bad)
    with pytest.raises(RuntimeError, match=message):
        op(x, **{**p, "gamma": torch.tensor(bad)})
    with pytest.raises(RuntimeError, match=message):
        op_backward(torch.ones_like(x), x, *list(p.values())[:3], torch.tensor(bad), None, None)
    if device == "cpu":
        with pytest.raises(RuntimeError, match=message):
            op(x, **{**make_params(3, 3, seed=55), "gamma": torch.tensor([1.0, bad, 2.0])})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [None, torch.uint8])
@pytest.mark.parametrize("channels_last", [False, True])
def test_non_finite_pixels(channels_last, out_dtype, dtype, device):
    # A pixel with a NaN or infinite channel comes out as a black pixel would, in every channel,
    # on every device, dtype and kernel path (48 pixels: the vectorised CUDA kernels for C = 3).
    x = make_image((3, 3, 4, 12), dtype, "cpu", seed=56)
    bad = [(0, 0, 1, 1, math.nan), (0, 2, 2, 5, math.inf), (1, 1, 0, 0, -math.inf),
           (1, 0, 3, 11, math.nan)]
    black = x.clone()
    for n, c, h, w, value in bad:
        x[n, c, h, w] = value
        black[n, :, h, w] = 0
    x, black = x.to(device), black.to(device)
    if channels_last:
        x = interleaved(x)
    p = make_params(3, 3, device, seed=57)
    out = op(x, **p, dtype=out_dtype)
    out_dtype = out_dtype or dtype
    assert_matches(out, reference(black, **p), out_dtype)
    if out_dtype != torch.uint8:
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("device", DEVICES)
def test_non_finite_pixel_gradients(device):
    # The pixel's image gradient and its sample's colour gradient are NaN; everything else is
    # the gradient of the image with that pixel black.
    x = make_image((2, 3, 4, 12), torch.float64, "cpu", seed=58)
    black = x.clone()
    x[0, 1, 2, 3], black[0, :, 2, 3] = math.nan, 0
    x, black = x.to(device).requires_grad_(), black.to(device)
    p = {k: v.requires_grad_() for k, v in make_params(2, 3, device, dtype=torch.float64,
                                                        seed=59).items()}
    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(60),
                       dtype=torch.float64).to(device)
    got = dict(zip(["image", *p], torch.autograd.grad(op(x, **p), [x, *p.values()], grad)))
    want = dict(zip(["image", *p], reference_grads(grad, black, p)))
    assert got["image"][0, :, 2, 3].isnan().all() and got["color"][0].isnan().all()
    got["image"][0, :, 2, 3] = want["image"][0, :, 2, 3]
    got["color"][0] = want["color"][0]
    for name in got:
        torch.testing.assert_close(got[name], want[name], atol=1e-10, rtol=1e-10, msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_float_image_on_a_255_scale_saturates(device):
    # Floating images are read on [0, 1]: one on a 0-255 scale comes out white (documented).
    x = make_image((2, 3, 4, 4), torch.float32, device, seed=61) * 254 + 1
    out = color_transform(x)
    assert_matches(out, reference(x, *(torch.tensor(v) for v in ([1.0] * 3, 0.0, 1.0, 1.0))),
                   torch.float32)
    assert (out == 1).all()


def test_python_wrapper_type_errors():
    x = torch.rand(2, 3, 4, 4)
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.color_transform: expected 'image' to be a torch.Tensor, but got list")):
        color_transform([[[0.5]]])
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.color_transform: expected 'apply' to be None or a bool tensor of shape [N] "
            "on the image's device, but got list")):
        color_transform(x, apply=[True, False])
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.color_transform: expected 'color' to be a float, a sequence of floats or a "
            "tensor, but got 'red'")):
        color_transform(x, color="red")


@requires_cuda
def test_parameters_on_the_cpu_beside_a_cuda_image():
    x = make_image((3, 3, 9, 9), torch.float32, "cuda", seed=50)
    shared = make_params(3, 3, "cpu", per_sample=False, seed=51)
    on_gpu = {k: v.cuda() for k, v in shared.items()}
    assert torch.equal(op(x, **shared), op(x, **on_gpu))
    # Mixed: per-sample ones on the GPU, shared ones on the CPU; gradients go to each device.
    per_sample = make_params(3, 3, "cuda", seed=52)
    mixed = {"color": shared["color"], "brightness": per_sample["brightness"],
             "contrast": shared["contrast"], "gamma": per_sample["gamma"]}
    mixed = {k: v.clone().requires_grad_() for k, v in mixed.items()}
    out = op(x, **mixed)
    assert_matches(out.detach(), reference(x, **mixed).detach(), torch.float32)
    grads = torch.autograd.grad(out.sum(), list(mixed.values()))
    assert [g.device.type for g in grads] == ["cpu", "cuda", "cpu", "cuda"]


@requires_two_gpus
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_second_gpu(dtype):
    # An image on either GPU while cuda:0 is current runs on its own GPU. The uint8 kernel's
    # shared-memory opt-in and occupancy are set up once per device: the first call on each
    # device does it. 16x32 pixels take the vectorised kernels, 5x7 the per-pixel ones.
    for size in [(16, 32), ODD]:
        x = make_image((4, 3, *size), dtype, seed=80)
        p = make_params(4, 3, seed=81)
        want = op(x, **p)
        for device in ["cuda:1", "cuda:0", "cuda:1"]:
            with torch.cuda.device(0):
                out = op(x.to(device), **{k: v.to(device) for k, v in p.items()})
            assert out.device == torch.device(device)
            if dtype == torch.uint8:
                assert (out.cpu().int() - want.int()).abs().max() <= 1
            else:
                torch.testing.assert_close(out.cpu(), want, atol=2e-5, rtol=0)
    if dtype.is_floating_point:
        grad = torch.randn(x.shape)
        want = torch.autograd.grad(op(x.requires_grad_(), **p), [x], grad)[0]
        x1 = x.detach().to("cuda:1").requires_grad_()
        with torch.cuda.device(0):
            got = torch.autograd.grad(op(x1, **{k: v.to("cuda:1") for k, v in p.items()}), [x1],
                                      grad.to("cuda:1"))[0]
        assert got.device == torch.device("cuda:1")
        torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::color_transform: expected 'color' on cuda:1 like 'image', but got cuda:0")):
        op(x.detach().to("cuda:1"), **{**{k: v.to("cuda:1") for k, v in p.items()},
                                        "color": p["color"].to("cuda:0")})


@requires_cuda
def test_parameters_on_another_device():
    x = torch.rand(2, 3, 4, 4, device="cuda")
    p = make_params(2, 3, "cuda")
    prefix = "^gpuaug::color_transform: "
    for name in NAMES:
        with pytest.raises(RuntimeError, match=prefix + re.escape(
                f"expected '{name}' on cuda:0 like 'image', but got cpu")):
            op(x, **{**p, name: p[name].cpu()})
    with pytest.raises(RuntimeError, match=prefix + re.escape(
            "expected 'apply' on cuda:0 like 'image', but got cpu")):
        op(x, **p, apply=torch.ones(2, dtype=torch.bool))
    with pytest.raises(RuntimeError, match=prefix + re.escape(
            "expected 'color' on cpu like 'image', but got cuda:0")):
        op(x.cpu(), **{**make_params(2, 3), "color": p["color"]})


# ---------------------------------------------------------------------------------------------
# CPU and CUDA agree.

@requires_cuda
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("channels", [1, 3, 5])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("size", [(33, 47), (32, 48)])
def test_cpu_and_cuda_agree(size, channels_last, channels, dtype):
    x = make_image((5, 2, channels, *size), dtype, seed=60, channels_last=channels_last)
    p = make_params(5, channels, seed=61)
    apply = torch.tensor([True, True, False, True, True])
    cpu = op(x, **p, apply=apply)
    cuda = op(x.cuda(), **{k: v.cuda() for k, v in p.items()}, apply=apply.cuda()).cpu()
    assert cuda.stride() == cpu.stride()
    if dtype == torch.uint8:
        assert (cuda.int() - cpu.int()).abs().max() <= 1
    elif dtype in (torch.float16, torch.bfloat16):
        assert ((cuda.double() - cpu.double()).abs() <= ulp(cpu.double(), dtype) + 1e-6).all()
    else:
        torch.testing.assert_close(cuda, cpu, atol=2e-5 if dtype == torch.float32 else 1e-12,
                                   rtol=0)
    if dtype.is_floating_point:
        x = x.requires_grad_()
        grad = torch.randn(x.shape).to(dtype)
        cpu_grads = torch.autograd.grad(op(x, **p), [x], grad)[0]
        xc = x.detach().cuda().requires_grad_()
        pc = {k: v.cuda().requires_grad_() for k, v in p.items()}
        cuda_grads = torch.autograd.grad(op(xc, **pc), [xc, *pc.values()], grad.cuda())
        tol = {torch.float64: 1e-10, torch.float32: 1e-4}.get(dtype, 2e-2)
        torch.testing.assert_close(cuda_grads[0].cpu().double(), cpu_grads.double(), atol=tol,
                                   rtol=tol)
        # The parameters are float32, and so are their gradients, whatever the image dtype.
        param_tol = max(tol, 1e-6)
        for g, w in zip(cuda_grads[1:], reference_grads(grad, x, p)[1:]):
            scale = max(1.0, w.abs().max().item())
            torch.testing.assert_close(g.cpu().double(), w, atol=param_tol * scale, rtol=param_tol)
