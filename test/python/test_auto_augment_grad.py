"""The gradient of gpuaug::auto_augment's floating image (gpuaug::_auto_augment_backward):
against autograd through torchvision's own operations where torchvision's float path is
differentiable, against finite differences (gradcheck) for every operation, chains, AugMix's
mixture and the normalisation; opcheck, compile and the errors."""

import pytest
import torch

import gpuaug.auto_augment as A
from gpuaug_testing import DEVICES
from geometric_testing import F
from test_auto_augment import drawn_magnitudes, make_images, torchvision_op

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

# torchvision's float path cannot be differentiated here: it modifies tensors autograd saved
NOT_IN_TORCHVISION = {"Sharpness", "AutoContrast"}
WARPS = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}
FILL = [0.1, 0.5, 0.9]
# (operation, interpolation, fill): the interpolation and the fill move warps alone
TORCHVISION_CASES = [(name, 0, fill) for name in A.NAMES if name not in NOT_IN_TORCHVISION
                     for fill in (None, FILL)] + [(name, 1, None) for name in sorted(WARPS)]
GRADCHECK_CASES = [(name, 0, None) for name in A.NAMES] + [
    (name, 1, FILL) for name in sorted(WARPS | {"Sharpness"})]


def single(name, n, generator):
    operations = torch.full([n, 1, 1], A.NAMES.index(name))
    return operations, drawn_magnitudes(name, n, generator).view(n, 1, 1)


def torchvision_grad(images, operations, magnitudes, grad, interpolation, fill):
    """Each sample's gradient by autograd through torchvision's operations (zeros where its
    result does not depend on the image: equalize)."""
    out = []
    for i in range(images.shape[0]):
        x = images[i].clone().requires_grad_()
        y = x
        for d in range(operations.shape[2]):
            y = torchvision_op(y, A.NAMES[int(operations[i, 0, d])], float(magnitudes[i, 0, d]),
                               interpolation, fill)
        out.append(torch.autograd.grad(y, x, grad[i])[0] if y.requires_grad
                   else torch.zeros_like(x))
    return torch.stack(out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, interpolation, fill", TORCHVISION_CASES)
def test_operation_matches_torchvision_autograd(device, name, interpolation, fill):
    g = torch.Generator().manual_seed(A.NAMES.index(name))
    images = make_images([5, 3, 13, 17], torch.float32, device, seed=2)
    operations, magnitudes = single(name, 5, g)
    grad = torch.randn(images.shape, generator=g).to(device)
    x = images.clone().requires_grad_()
    out = A.auto_augment(x, operations.to(device), magnitudes.to(device),
                         interpolation=interpolation, fill=fill)
    actual, = torch.autograd.grad(out, x, grad)
    expected = torchvision_grad(images, operations, magnitudes, grad, interpolation, fill)
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)


def gradcheck(images, operations, magnitudes, **kwargs):
    x = images.clone().requires_grad_()
    operations, magnitudes = operations.to(images.device), magnitudes.to(images.device)
    assert torch.autograd.gradcheck(
        lambda t: A.auto_augment(t, operations, magnitudes, **kwargs), (x,), atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, interpolation, fill", GRADCHECK_CASES)
def test_operation_gradcheck(device, name, interpolation, fill):
    g = torch.Generator().manual_seed(7 + A.NAMES.index(name))
    images = make_images([2, 3, 6, 7], torch.float64, device, seed=3)
    operations, magnitudes = single(name, 2, g)
    gradcheck(images, operations, magnitudes, interpolation=interpolation, fill=fill)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [1, 3])
def test_chains_and_mixture_gradcheck(device, channels):
    """AugMix's shape: three chains of three operations a sample (warps, sharpness and the
    reductions between others), the mixture, then the normalisation."""
    g = torch.Generator().manual_seed(channels)
    n, width, depth = 3, 3, 3
    images = make_images([n, channels, 6, 7], torch.float64, device, seed=channels)
    operations = torch.randint(0, len(A.NAMES), [n, width, depth], generator=g)
    operations[0, 0] = torch.tensor([A.NAMES.index(k) for k in ("Rotate", "Contrast", "Sharpness")])
    operations[1, 1] = torch.tensor([A.NAMES.index(k) for k in ("AutoContrast", "ShearX", "Color")])
    magnitudes = torch.stack([drawn_magnitudes(A.NAMES[int(o)], 1, g)[0]
                              for o in operations.flatten()]).view(n, width, depth)
    m = torch._sample_dirichlet(torch.ones(n, width + 1), generator=g).float().to(device)
    std = [0.2, 0.25, 0.3][:channels]
    gradcheck(images, operations, magnitudes, weights=m, interpolation=1, fill=FILL[:channels],
              mean=[0.5] * channels, std=std)


def test_backward_opcheck():
    g = torch.Generator().manual_seed(0)
    images = make_images([3, 3, 9, 11], torch.float32, "cpu", seed=0)
    operations = torch.tensor([[[1, 9]], [[8, 5]], [[12, 0]]])
    magnitudes = torch.tensor([[[0.3, 0.5]], [[0.4, -20.0]], [[0.0, 0.0]]], dtype=torch.float64)
    grad = torch.randn(images.shape, generator=g)
    torch.library.opcheck(torch.ops.gpuaug._auto_augment_backward.default,
                          (grad, images, operations, magnitudes),
                          {"interpolation": 1, "fill": FILL, "std": [0.2] * 3})
    torch.library.opcheck(torch.ops.gpuaug.auto_augment.default,
                          (images.requires_grad_(), operations, magnitudes), {"interpolation": 1})


def test_compiled_gradient():
    g = torch.Generator().manual_seed(1)
    images = make_images([4, 3, 10, 12], torch.float32, "cpu", seed=1)
    operations = torch.randint(0, len(A.NAMES), [4, 1, 2], generator=g)
    magnitudes = torch.rand([4, 1, 2], generator=g, dtype=torch.float64) * 0.5

    def loss(x):
        return (A.auto_augment(x, operations, magnitudes) ** 2).sum()

    x = images.clone().requires_grad_()
    expected, = torch.autograd.grad(loss(x), x)
    compiled = torch.compile(loss, fullgraph=True, dynamic=True, backend="aot_eager")
    actual, = torch.autograd.grad(compiled(x), x)
    torch.testing.assert_close(actual, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("make, message", [
    (lambda x, o, m: A.auto_augment(x, o, m.requires_grad_()), "'magnitudes' has no gradient"),
    (lambda x, o, m: torch.ops.gpuaug._auto_augment_backward(x[:, :1], x, o, m),
     r"expected 'grad' of shape \[2, 3, 5, 6\]"),
    (lambda x, o, m: torch.ops.gpuaug._auto_augment_backward(
        x.to(torch.uint8), x.to(torch.uint8), o, m), "gradients need a floating image"),
    (lambda x, o, m: torch.autograd.grad(
        torch.autograd.grad(A.auto_augment(x, o, m).sum(), x, create_graph=True)[0].sum(), x),
     "double backward is not supported"),
])
def test_errors(make, message):
    x = torch.rand(2, 3, 5, 6, requires_grad=True)
    operations = torch.full([2, 1, 1], A.NAMES.index("Brightness"))
    magnitudes = torch.full([2, 1, 1], 0.3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=message):
        make(x, operations, magnitudes)
