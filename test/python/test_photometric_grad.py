"""gpuaug::photometric's gradients: gradcheck, against torchvision's float path, half types, opcheck
and torch.compile."""

import pytest
import torch

import gpuaug
from gpuaug import Stage
from gpuaug_testing import DEVICES
from photometric_testing import (requires_torchvision, torchvision_program)


GRAD_PROGRAMS = {  # stages, two rows of factors (samples take them in turn)
    "jitter": ([1, 2, 3, 4], [[1.3, 0.7, 1.4, 0.2], [0.8, 1.3, 0.6, -0.3]]),
    "distort": ([1, 2, 3, 9, 4], [[1.1, 0.9, 1.2, 5, 0.1], [0.7, 1.2, 0.5, 19, -0.4]]),
    "thresholds": ([8, 6, 5, 7, 1], [[0, 0.6, 0, 5, 1.2], [0, 0.3, 0, 2, 0.9]]),
    # nine stages, two of them hue: past kRecomputedSteps (the GPU's backward keeps its inputs)
    "long": ([1, 2, 3, 4, 8, 1, 3, 4, 9], [[1.2, 0.8, 1.3, 0.1, 0, 0.9, 0.7, -0.2, 5],
                                           [0.8, 1.2, 0.6, -0.3, 0, 1.1, 1.4, 0.4, 19]]),
    "color_augment": ([12, 13, 13, 13, 13, 13, 1, 3],  # its parameter slots anywhere in the order
                      [[1.2, 0.9, 1.1, 0.05, 1.1, 0.8, 1.3, 0.7],
                       [0.8, 1.15, 1.0, -0.05, 0.9, 1.3, 0.9, 1.2]]),
}


def grad_case(program, channels, device, dtype=torch.float64, seed=0, shape=(2, 5, 7)):
    stages, rows = GRAD_PROGRAMS[program]
    factors = torch.tensor(rows, dtype=torch.float64).repeat(shape[0], 1)[:shape[0]]
    if channels == 1:
        factors[:, [i for i, s in enumerate(stages) if s == Stage.PERMUTE_CHANNELS]] = 0
    g = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(len(stages), generator=g) for _ in range(shape[0])])
    apply = torch.rand(shape[0], len(stages), generator=g) < 0.8
    image = torch.rand(shape[0], channels, *shape[1:], generator=g, dtype=torch.float64)
    return (image.to(dtype).to(device), stages, factors.to(device), order.to(device),
            apply.to(device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("program", list(GRAD_PROGRAMS))
def test_gradcheck(program, channels, device):
    """Every stage's gradient (hue's included), per-sample orders and masks, normalisation."""
    image, stages, factors, order, apply = grad_case(program, channels, device)
    image.requires_grad_()
    std = [0.2, 0.3, 0.4][:channels]

    def run(x):
        return gpuaug.photometric(x, stages, factors, order=order, apply=apply,
                                  mean=[0.5] * channels, std=std)

    torch.autograd.gradcheck(run, (image,), eps=1e-7, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["channels_last", "video", "strided"])
def test_gradcheck_layouts(layout, device):
    image, stages, factors, order, apply = grad_case("jitter", 3, device, shape=(2, 4, 6))
    if layout == "channels_last":
        image = image.contiguous(memory_format=torch.channels_last)
    elif layout == "video":
        image = image.reshape(2, 1, 3, 4, 6).repeat(1, 2, 1, 1, 1) * 0.9
    else:
        image = image[..., ::2]
    image.requires_grad_()
    torch.autograd.gradcheck(
        lambda x: gpuaug.photometric(x, stages, factors, order=order, apply=apply),
        (image,), eps=1e-7, atol=1e-6)


def torchvision_grad(image, stages, factors, order, apply, grad):
    """The image's gradient through torchvision, image by image (hue is not differentiable there:
    its float code modifies views in place)."""
    x = image.detach().cpu().requires_grad_()
    out = torch.stack([torchvision_program(x[n], stages, factors[n].cpu(), order[n].cpu(),
                                           apply[n].cpu()) for n in range(x.shape[0])])
    out.backward(grad.cpu())
    return x.grad


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("program", ["thresholds", "jitter-without-hue", "distort-without-hue"])
def test_grad_matches_torchvision(program, channels, dtype, device):
    name = program.replace("-without-hue", "")
    image, stages, factors, order, apply = grad_case(name, channels, device, dtype, seed=1)
    keep = [i for i, s in enumerate(stages) if s != Stage.HUE]
    if len(keep) < len(stages):  # drop hue's slot: renumber the orders without it
        hue = stages.index(Stage.HUE)
        order = order[order != hue].view(order.shape[0], -1)
        order = order - (order > hue).long()
        stages, factors, apply = [stages[i] for i in keep], factors[:, keep], apply[:, keep]
    grad = torch.randn(image.shape, dtype=dtype, generator=torch.Generator().manual_seed(2))
    x = image.clone().requires_grad_()
    gpuaug.photometric(x, stages, factors.to(dtype), order=order, apply=apply).backward(
        grad.to(device))
    expected = torchvision_grad(image, stages, factors.to(dtype), order, apply, grad)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(x.grad.cpu(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_grad_half_types(dtype, device):
    """The gradient in the image's dtype, close to float64's where no clamp or threshold sits
    within a rounding of the value (all but a few elements)."""
    image, stages, factors, order, apply = grad_case("jitter", 3, device, seed=3, shape=(4, 8, 8))
    grad = torch.randn(image.shape, dtype=torch.float64, device=device)
    grads = []
    for t in (torch.float64, dtype):
        x = image.detach().to(t).requires_grad_()
        gpuaug.photometric(x, stages, factors, order=order, apply=apply).backward(grad.to(t))
        assert x.grad.dtype == t
        grads.append(x.grad.double())
    close = torch.isclose(grads[1], grads[0], rtol=0.05, atol=0.05)
    assert close.double().mean().item() > 0.97


@pytest.mark.parametrize("device", DEVICES)
def test_grad_float32(device):
    """float32's gradient (on the GPU hue's quick divisions among it) close to float64's for the
    same values, ties and flat pixels among them, but where a clamp or a sector's edge lies within
    a rounding of the value; float64's own is gradcheck's."""
    image, stages, factors, order, apply = grad_case("jitter", 3, device, seed=4,
                                                     shape=(4, 24, 24))
    image = image.float().double()
    image[0, 1, :6] = image[0, 0, :6]  # red and green the largest or the smallest
    image[1, :, :6] = image[1, 0, :6]  # flat
    image[2, 2, :6] = image[2, 0, :6]
    grad = torch.randn(image.shape, dtype=torch.float64, device=device)
    grads = []
    for dtype in (torch.float64, torch.float32):
        x = image.to(dtype, copy=True).requires_grad_()
        gpuaug.photometric(x, stages, factors, order=order, apply=apply).backward(grad.to(dtype))
        grads.append(x.grad.double())
    close = torch.isclose(grads[1], grads[0], rtol=1e-4, atol=1e-5)
    assert close.double().mean().item() > 0.999
    assert close[:3, :, :6].all()


@pytest.mark.parametrize("device", DEVICES)
def test_grad_opcheck(device):
    image, stages, factors, order, apply = grad_case("distort", 3, device, dtype=torch.float32)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default,
                          (image.requires_grad_(), stages, factors.float()),
                          {"order": order, "apply": apply, "mean": [0.5] * 3, "std": [0.2] * 3})
    grad = torch.randn_like(image)
    torch.library.opcheck(torch.ops.gpuaug._photometric_backward.default,
                          (grad, image.detach(), stages, factors.float()),
                          {"order": order, "apply": apply, "std": [0.2] * 3},
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_grad_compile(device, fresh_dynamo):
    image, stages, factors, order, apply = grad_case("jitter", 3, device, dtype=torch.float32)

    def step(x):
        return (gpuaug.photometric(x, stages, factors, order=order, apply=apply) ** 2).sum()

    grads = []
    for fn in (step, torch.compile(step, fullgraph=True)):
        x = image.clone().requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=0)


def test_grad_errors():
    image = torch.rand(2, 3, 4, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="gpuaug::photometric: a Byte output has no gradient"):
        gpuaug.photometric(image, [Stage.BRIGHTNESS], torch.ones(1), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="'factors' has no gradient"):
        gpuaug.photometric(image.detach(), [Stage.BRIGHTNESS], torch.ones(1, requires_grad=True))
    out = gpuaug.photometric(image, [Stage.BRIGHTNESS], torch.ones(1))
    (grad,) = torch.autograd.grad(out.sum(), image, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        grad.sum().backward()
    with pytest.raises(RuntimeError, match="autocontrast has no gradient"):
        gpuaug.photometric(image, [Stage.AUTOCONTRAST], torch.zeros(1))
    with pytest.raises(RuntimeError, match="gpuaug::photometric: equalize has no gradient"):
        gpuaug.photometric(image, [Stage.BRIGHTNESS, Stage.EQUALIZE], torch.ones(2))
    with pytest.raises(RuntimeError,
                       match="gpuaug::_photometric_backward: equalize has no gradient"):
        torch.ops.gpuaug._photometric_backward(image.detach(), image.detach(), [Stage.EQUALIZE],
                                               torch.zeros(1))
    with torch.no_grad():  # no graph: uint8 outputs and factors requiring grad are fine
        gpuaug.photometric(image, [Stage.BRIGHTNESS], torch.ones(1, requires_grad=True),
                           dtype=torch.uint8)
