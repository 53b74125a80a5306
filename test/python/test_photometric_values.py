"""gpuaug::photometric and the photometric transforms' values: against
torchvision.transforms.v2.functional applied image by image with the same (replayed) per-sample
draws, against the formulas in float64, in every layout, conversion and normalisation."""

import itertools
import math
import os
import subprocess
import sys

import pytest
import torch

import gpuaug
from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import (DEVICES, IMAGE_DTYPES, assert_matches_torchvision, make_image)
from photometric_testing import (COLOR_AUGMENT, F, PLANE_LAYOUTS, every_transform,
                                 requires_torchvision, strided_plane_transforms, strided_planes,
                                 torchvision_batch)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("name", list(every_transform(torch.uint8)))
def test_matches_torchvision(name, channels, dtype, device):
    image = make_image([5, channels, 13, 29], dtype, device, seed=channels)
    transform = every_transform(dtype)[name]
    # seeded draws: in a half type, a value one unit off before posterize, then autocontrast,
    # can move an image's minimum and so every value of it, which the fraction below counts
    torch.manual_seed(channels)
    params = transform.sample_params(image)
    out = transform(image, params)
    expected = torchvision_batch(image, transform.stages, params)
    thresholds = name in ("Compose", "RandomSolarize", "RandomPosterize", "RandomEqualize",
                          "bitwise Compose", "channel-wise Compose", "permuting Compose",
                          "RandomApply, own coins", "RandomApply, reductions", "RandomChoice",
                          "RandomOrder", "nested containers")
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=not thresholds)


def formula(stage, x, v):
    """A stage on a float64 image [C, H, W] in [0, 1], written from its definition (no
    torchvision), v its factor."""
    gray = (0.2989 * x[0] + 0.587 * x[1] + 0.114 * x[2]).expand_as(x) if x.shape[0] == 3 else x
    if stage == Stage.BRIGHTNESS:
        return (x * v).clamp(0, 1)
    if stage == Stage.CONTRAST:
        return (v * x + (1 - v) * gray.mean()).clamp(0, 1)
    if stage == Stage.SATURATION:
        return (v * x + (1 - v) * gray).clamp(0, 1)
    if stage == Stage.GRAYSCALE:
        return gray.clone()
    if stage == Stage.SOLARIZE:
        return torch.where(x >= v, 1 - x, x)
    if stage == Stage.POSTERIZE:
        levels = 2 ** int(v)
        return (x * levels).floor().clamp(0, levels - 1) / levels
    if stage == Stage.INVERT:
        return 1 - x
    if stage == Stage.AUTOCONTRAST:
        low = x.amin(dim=(1, 2), keepdim=True)
        high = x.amax(dim=(1, 2), keepdim=True)
        return ((x - low) / (high - low)).clamp(0, 1)
    if stage == Stage.EQUALIZE:
        return equalize_formula(x)
    code = int(v)
    return x[[code % 3, code // 3 % 3, code // 9]]


def color_augment_formula(x, gains, brightness, contrast, gamma):
    """gpuaug.color_transform's formula on a float64 image [C, H, W] in [0, 1], as its docstring
    writes it."""
    gains = gains[:x.shape[0]].view(-1, 1, 1)
    y = (x * gains * x.sum(0) / ((x * gains).sum(0) + 0.01)).clamp(0, 1)
    return (0.5 + (y ** gamma + brightness - 0.5) * contrast).clamp(0, 1)


def equalize_formula(x):
    """PIL's histogram equalisation of each channel of x in [0, 1], through uint8: the table
    maps a value to the count of smaller values plus half a step, over the step (the pixels not
    of the channel's largest value, / 255); a step of 0 leaves the channel."""
    q = (x * 255.999).floor().long()
    out = torch.empty_like(x)
    for c in range(x.shape[0]):
        hist = torch.bincount(q[c].flatten(), minlength=256)
        step = (hist.sum() - hist[q[c].max()]).item() // 255
        if step == 0:
            table = torch.arange(256)
        else:
            table = ((torch.cumsum(hist, 0) - hist + step // 2) // step).clamp(max=255)
        out[c] = table[q[c]].double() / 255
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stage, low, high", [
    (Stage.BRIGHTNESS, 0.2, 1.8), (Stage.CONTRAST, 0.2, 1.8), (Stage.SATURATION, 0.0, 2.0),
    (Stage.GRAYSCALE, 0, 0), (Stage.SOLARIZE, 0.1, 0.9), (Stage.POSTERIZE, 1, 8),
    (Stage.INVERT, 0, 0), (Stage.PERMUTE_CHANNELS, 0, 0), (Stage.AUTOCONTRAST, 0, 0),
    (Stage.EQUALIZE, 0, 0)])
def test_stage_formulas_float64(stage, low, high, device):
    """Each stage with its own factor per sample against its definition in float64."""
    # equalize: sizes whose step (pixels not of the largest value / 255) is 0 for some images
    shape = [6, 3, 30, 19] if stage == Stage.EQUALIZE else [6, 3, 11, 7]
    image = make_image(shape, torch.float64, device, seed=int(stage))
    if stage == Stage.EQUALIZE:
        image[1] = image[1] * 0.2  # a narrow histogram
        image[2, :, 10:] = 1.0     # most pixels of the largest value: step 0, left as it is
    g = torch.Generator().manual_seed(int(stage))
    factors = low + (high - low) * torch.rand(6, 1, generator=g, dtype=torch.float64)
    if stage == Stage.POSTERIZE:
        factors = factors.round()
    elif stage == Stage.PERMUTE_CHANNELS:
        factors = torch.tensor([21.0, 5, 7, 11, 15, 19]).view(6, 1)
    out = gpuaug.photometric(image, [stage], factors.to(device))
    expected = torch.stack([formula(stage, image[n].cpu(), factors[n, 0].item())
                            for n in range(6)])
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [3, 1])
def test_color_augment_formula_float64(channels, device):
    """The color_augment stage, its six slots drawn per sample and in a per-sample order among
    two other stages, against color_transform's formula in float64."""
    n = 6
    image = make_image([n, channels, 11, 7], torch.float64, device, seed=50 + channels)
    g = torch.Generator().manual_seed(51)
    low = torch.tensor([0.6, 0.6, 0.6, -0.2, 0.6, 0.5, 0.5, 0])
    high = torch.tensor([1.4, 1.4, 1.4, 0.2, 1.4, 2.0, 1.5, 0])
    factors = low + (high - low) * torch.rand(n, 8, generator=g, dtype=torch.float64)
    order = torch.stack([torch.randperm(8, generator=g) for _ in range(n)])
    stages = COLOR_AUGMENT + [Stage.BRIGHTNESS, Stage.INVERT]
    out = gpuaug.photometric(image, stages, factors.to(device), order=order.to(device))
    expected = []
    for i in range(n):
        x = image[i].cpu()
        for slot in order[i].tolist():
            if slot == 0:
                x = color_augment_formula(x, factors[i, :3], *factors[i, 3:6])
            elif slot == 6:
                x = formula(Stage.BRIGHTNESS, x, factors[i, 6].item())
            elif slot == 7:
                x = formula(Stage.INVERT, x, 0)
        expected.append(x)
    torch.testing.assert_close(out.cpu(), torch.stack(expected), rtol=0, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_color_augment_in_compose(device):
    """A ColorAugment joins a Compose's one op call (no color_transform call): the same values
    as ColorAugment's own op on each image with the Compose's draws, which follow the
    ColorAugment's ranges, p and generator."""
    image = make_image([64, 3, 6, 5], torch.uint8, device, seed=53)
    g = torch.Generator(device=device).manual_seed(54)
    augment = T.ColorAugment(color=[(0.7, 0.8), (1.0, 1.1), (1.2, 1.3)], brightness=(-0.2, -0.1),
                             contrast=(1.1, 1.2), gamma=(0.5, 0.6), p=0.5, generator=g)
    transform = T.Compose([augment, T.RandomInvert()], dtype=torch.float32, mean=[0.5] * 3,
                          std=[0.2] * 3)
    params = transform.sample_params(image)
    f, apply = params["factors"].cpu(), params["apply"].cpu()
    assert f.shape == (64, 7) and torch.equal(apply[:, :6], apply[:, :1].expand(64, 6))
    for column, (lo, hi) in enumerate([(0.7, 0.8), (1.0, 1.1), (1.2, 1.3), (-0.2, -0.1),
                                       (1.1, 1.2), (0.5, 0.6)]):
        assert lo - 1e-6 <= f[:, column].min() and f[:, column].max() <= hi + 1e-6
    assert 0.3 < apply[:, 0].double().mean() < 0.7
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = transform(image, params)
    ops = [e.name for e in prof.events() if e.name.startswith("gpuaug::")]
    assert ops.count("gpuaug::photometric") == 1 and "gpuaug::color_transform" not in ops
    expected = []
    for n in range(image.shape[0]):
        x = image[n].cpu()
        if apply[n, 0]:
            x = gpuaug.color_transform(x, f[n, :3], f[n, 3].item(), f[n, 4].item(),
                                       f[n, 5].item())
        if apply[n, 6]:
            x = 255 - x
        expected.append(x)
    expected = (torch.stack(expected).double() / 255 - 0.5) / 0.2
    diff = (out.cpu().double() - expected).abs()  # a uint8 value may round the other way
    assert diff.max() <= 1 / 255 / 0.2 + 1e-5 and (diff > 1e-5).double().mean() < 1e-3
    torch.manual_seed(55)
    fresh = transform(image)
    assert fresh.shape == image.shape and fresh.dtype == torch.float32


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_color_augment_before_contrast(dtype):
    """ColorAugment ahead of ColorJitter: contrast's mean is taken of the pixels as the stage
    leaves them, in the reduction pass (CPU: uint8 equal to the reference, whose colour step is
    color_transform's own op)."""
    image = make_image([6, 3, 13, 29], dtype, "cpu", seed=57)
    transform = T.Compose([T.ColorAugment(p=0.8), T.ColorJitter(0.4, 0.4, 0.4, 0.1)])
    params = transform.sample_params(image)
    expected = torchvision_batch(image, transform.stages, params)
    out = transform(image, params)
    if dtype == torch.uint8:
        assert torch.equal(out, expected)
    else:
        assert_matches_torchvision(out, expected, dtype)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["channels_last", "strided", "3d", "video", "odd", "narrow",
                                    "narrow_channels_last"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("name", ["Compose", "bitwise Compose", "channel-wise Compose",
                                  "permuting Compose", "self-supervised Compose"])
def test_layouts(name, layout, dtype, device):
    # narrow: 60 pixels a plane, whose uint8 planes the GPU reads in runs of 4 pixels, not 8
    shape = {"3d": [3, 31, 17], "video": [3, 4, 3, 8, 16], "odd": [7, 3, 1, 97],
             "narrow": [4, 3, 6, 10], "narrow_channels_last": [4, 3, 6, 10]}.get(
        layout, [4, 3, 16, 24])
    image = make_image(shape, dtype, device, seed=7)
    if layout.endswith("channels_last"):
        image = image.contiguous(memory_format=torch.channels_last)
    elif layout == "strided":
        image = make_image([4, 3, 16, 48], dtype, device, seed=7)[..., ::2]
    transform = every_transform(dtype)[name]
    params = transform.sample_params(image)
    out = transform(image, params)
    if layout.endswith("channels_last"):
        assert out.is_contiguous(memory_format=torch.channels_last)
    expected = torchvision_batch(image, transform.stages, params)
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=False)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [(16, 24), (6, 10), (7, 9)])  # runs of 8, 4; element by element
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("layout", PLANE_LAYOUTS + ["video channel slice"])
@pytest.mark.parametrize("name", list(strided_plane_transforms()))
def test_planes_at_strides_of_their_own(name, layout, dtype, size, device):
    """An image whose planes lie apart at any stride (a channel slice, a plane expanded to three
    channels) is read in place, with the values of its copy: torchvision's."""
    if layout == "video channel slice":  # [N, T, C, H, W]: images n T + t at one stride
        image = make_image([2, 3, 4, *size], dtype, device, seed=5)[:, :, 1:]
    else:
        image = strided_planes(layout, [4, 3, *size], dtype, device)
    transform = strided_plane_transforms()[name]
    params = transform.sample_params(image)
    out = transform(image, params)
    assert torch.equal(out, transform(image.contiguous(), params))
    expected = torchvision_batch(image, transform.stages, params)
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=False)
    normalized = T.Compose([transform], dtype=torch.float64, mean=[0.5], std=[0.25])
    if dtype == torch.uint8:  # to float64: torchvision's arithmetic, the same values
        assert torch.equal(normalized(image, params), normalized(image.contiguous(), params))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_conversion_and_normalize(out_dtype, channels_last, device):
    """uint8 in, ColorJitter, ToDtype(scale=True) and Normalize: one call. 24x40: 120 runs of 8
    pixels, the last warp's lanes in part (interleaved, a warp stages its stores together)."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    image = make_image([6, 3, 24, 40], torch.uint8, device, seed=3)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    transform = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=out_dtype, mean=mean, std=std)
    params = transform.sample_params(image)
    out = transform(image, params)
    assert torch.equal(out, transform(image.contiguous(), params))
    jittered = torchvision_batch(image, transform.stages, params)
    expected = F.normalize(F.to_dtype(jittered, out_dtype, scale=True), mean, std)
    assert out.dtype == out_dtype
    tol = 1e-5 if out_dtype != torch.float16 else 4e-3
    # a uint8 value torchvision truncates differently moves the output by 1/255/std
    diff = (out.cpu().double() - expected.double()).abs()
    assert (diff > tol).double().mean().item() < 1e-3
    assert diff.max().item() <= 1 / 255 / min(std) + tol


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("mean, std", [(None, None), ([0.4] * 3, [0.3] * 3),
                                       ([0.4, 0.5, 0.4], [0.3] * 3), ([0.4] * 3, [0.3, 0.3, 0.2])])
def test_steps_alike_for_every_channel(mean, std, channels_last, channels, dtype, device):
    """Floating images through steps that do the same to every channel (brightness, contrast,
    solarize, posterize, invert), which the CPU takes as runs of values whatever the layout, with
    a normalisation alike for every channel or not (then pixel by pixel). 17x19 pixels: runs in
    part."""
    image = make_image([4, channels, 17, 19], dtype, device, seed=channels)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    mean, std = (mean[:channels], std[:channels]) if mean else (mean, std)
    transform = T.Compose([T.ColorJitter(0.4, 0.4), T.RandomSolarize(0.6), T.RandomPosterize(5),
                           T.RandomInvert()], mean=mean, std=std)
    torch.manual_seed(channels)
    params = transform.sample_params(image)
    out = transform(image, params)
    expected = torchvision_batch(image, transform.stages, params)
    if mean is None:
        assert_matches_torchvision(out, expected, dtype, differentiable_chain=False)
        return
    column = {"dtype": torch.float64}
    expected = ((expected.double() - torch.tensor(mean, **column).view(-1, 1, 1))
                / torch.tensor(std, **column).view(-1, 1, 1))
    ulp = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}.get(dtype, 1e-6)
    close = (out.cpu().double() - expected).abs() <= 4 * ulp / min(std)
    assert close.double().mean().item() > (0.97 if ulp > 1e-6 else 1 - 1e-12)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("mean, std", [(None, None), ([0.4, 0.5, 0.4], [0.3, 0.3, 0.2])])
def test_steps_apart_per_channel(mean, std, channels_last, dtype, device):
    """Floating images through steps that map each channel apart with statistics of their own
    (autocontrast, equalize) beside steps alike for every channel, which the CPU takes planar
    images' planes as runs of values with each plane's statistics and normalisation. 61x70
    pixels: more than one task (4096 pixels) an image, the last in part."""
    image = make_image([3, 3, 61, 70], dtype, device, seed=5)
    # each channel its own range, so that autocontrast's statistics differ between channels
    image = (image * torch.tensor([1.0, 0.5, 0.3]).view(3, 1, 1).to(image)
             + torch.tensor([0.0, 0.25, 0.6]).view(3, 1, 1).to(image))
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    transform = T.Compose([T.RandomAutocontrast(0.8), T.RandomInvert(), T.RandomEqualize(0.8),
                           T.RandomSolarize(0.6)], mean=mean, std=std)
    torch.manual_seed(5)
    params = transform.sample_params(image)
    out = transform(image, params)
    expected = torchvision_batch(image, transform.stages, params)
    if mean is not None:
        column = {"dtype": torch.float64}
        expected = ((expected.double() - torch.tensor(mean, **column).view(-1, 1, 1))
                    / torch.tensor(std, **column).view(-1, 1, 1)).to(dtype)
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=False)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_float_to_uint8(dtype, device):
    """to_dtype(uint8, scale=True): x * 255.999 in the image's dtype, truncated; where bfloat16's
    product rounds to 256, torchvision's cast wraps to 0 and gpuaug saturates at 255."""
    image = torch.rand([2, 3, 16, 16], generator=torch.Generator().manual_seed(4)).to(dtype)
    image[0, 0, 0, :4] = torch.tensor([0.0, 1.0, 0.999, 0.5])
    out = gpuaug.photometric(image.to(device), [Stage.INVERT], torch.ones(1, device=device),
                             dtype=torch.uint8)
    expected = F.to_dtype(F.invert(image), torch.uint8, scale=True)
    wraps = F.invert(image).mul(255.999) >= 256
    assert torch.equal(out.cpu(), torch.where(wraps, 255, expected).to(torch.uint8))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
def test_solarize_nan_threshold(device, dtype):
    """A NaN threshold leaves the image as it is, as torchvision's comparison does, whichever
    device draws and checks the factors."""
    image = make_image([3, 3, 5, 6], dtype, device, seed=4)
    nan = float("nan")
    expected = F.solarize(image[0].cpu(), nan)
    assert torch.equal(expected, image[0].cpu())
    assert torch.equal(T.RandomSolarize(nan, p=1.0)(image), image)
    out = gpuaug.photometric(image, [Stage.SOLARIZE], torch.full([3, 1], nan, device=device))
    assert torch.equal(out, image)


@pytest.mark.parametrize("device", DEVICES)
def test_disabled_and_identity(device):
    image = make_image([3, 3, 9, 9], torch.uint8, device, seed=6)
    assert torch.equal(T.ColorJitter()(image), image)
    assert torch.equal(T.RandomInvert(p=0.0)(image), image)
    assert torch.equal(T.RandomInvert(p=1.0)(image), 255 - image)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_no_stages_converts_alone(channels_last, device):
    """An empty program is the output conversion alone: to_dtype(scale=True), then Normalize;
    its gradient is the normalisation's."""
    image = make_image([3, 3, 5, 8], torch.uint8, device, seed=16)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    none = torch.empty(0, device=device)
    out = gpuaug.photometric(image, [], none, dtype=torch.float32, mean=mean, std=std)
    column = {"dtype": torch.float64, "device": device}
    expected = ((image.double() / 255 - torch.tensor(mean, **column).view(3, 1, 1))
                / torch.tensor(std, **column).view(3, 1, 1))
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=1e-5)
    assert torch.equal(gpuaug.photometric(image, [], none.expand(3, 0)), image)
    floats = make_image([2, 3, 4, 5], torch.float64, device, seed=17).requires_grad_()
    torch.autograd.gradcheck(
        lambda x: gpuaug.photometric(x, [], none.double(), mean=[0.5] * 3, std=[0.2, 0.3, 0.4]),
        (floats,), eps=1e-7, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_empty(device):
    image = torch.empty([0, 3, 8, 8], dtype=torch.uint8, device=device)
    assert T.ColorJitter(0.4, 0.4, 0.4, 0.1)(image).shape == image.shape
    image = torch.empty([2, 3, 0, 8], dtype=torch.float32, device=device)
    assert T.RandomPhotometricDistort()(image).shape == image.shape


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_autocontrast_of_nan(dtype, channels_last, device):
    """A NaN makes its channel's extremes NaN, as torch.amin and amax do (the CPU takes a first
    autocontrast's extremes in vectorised lanes, each keeping its own NaN)."""
    image = make_image([2, 3, 9, 37], dtype, device, seed=4)
    image[0, 1, 4, 30] = float("nan")
    image[1, 2, 0, 0] = float("inf")
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    transform = T.RandomAutocontrast(p=1.0)
    params = transform.sample_params(image)
    expected = torchvision_batch(image, transform.stages, params)
    torch.testing.assert_close(transform(image, params).cpu(), expected, equal_nan=True,
                               atol=1e-6, rtol=0)
    assert expected[0, 1].isnan().all() and not expected[0, 0].isnan().any()


CPU_LOOPS_CHILD = """
import sys, torch
from gpuaug import transforms as T
torch.manual_seed(0)
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
out = {}
for dtype in (torch.uint8, torch.float32):
    for channels_last in (False, True):
        for channels in (3, 1):
            image = torch.randint(0, 256, (3, channels, 67, 131), dtype=torch.uint8)
            if dtype == torch.float32:
                image = image / 255
            if channels_last:
                image = image.contiguous(memory_format=torch.channels_last)
            for name, transform in [
                    ("equalize", T.RandomEqualize(1.0)),
                    ("autocontrast", T.RandomAutocontrast(1.0)),
                    ("jitter", T.ColorJitter(0.4, 0.4)),
                    ("gray", T.RandomGrayscale(1.0)),
                    ("permute", T.RandomChannelPermutation()),
                    ("distort", T.RandomPhotometricDistort(p=0.7)),
                    ("normalized", T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
                                             dtype=torch.float32, mean=mean[:channels],
                                             std=std[:channels])),
                    ("table normalized", T.Compose([T.RandomInvert(1.0)], dtype=torch.float32,
                                                   mean=mean[:channels], std=std[:channels]))]:
                if dtype == torch.float32 and name == "equalize":
                    continue
                torch.manual_seed(1)
                out[name, dtype, channels, channels_last] = transform(image)
torch.save(out, sys.argv[1])
"""


def test_cpu_vector_loops_agree(tmp_path):
    """The CPU's loops take vector shortcuts by the CPU's instruction set, which
    ATEN_CPU_CAPABILITY turns off as it does PyTorch's: AVX2 runs of pixels (uint8, float32
    planes, float32 stores of interleaved pixels) and gathers from float32 tables (interleaved
    uint8) unless it is "default", AVX-512 VBMI table lookups (uint8) where PyTorch uses
    AVX-512. Every choice gives the same values (test_matches_torchvision checks the one this
    process makes against torchvision)."""
    cpu_flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    capabilities = ["default"]
    if "avx2" in cpu_flags:
        capabilities.append("avx2")
    if "avx512vbmi" in cpu_flags and torch.backends.cpu.get_cpu_capability() == "AVX512":
        capabilities.append("avx512")
    if len(capabilities) == 1:
        pytest.skip("needs an x86-64 CPU with AVX2")
    results = []
    for capability in capabilities:
        path = tmp_path / f"{capability}.pt"
        env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
        subprocess.run([sys.executable, "-c", CPU_LOOPS_CHILD, str(path)], env=env, check=True,
                       timeout=300)
        results.append(torch.load(path))
    for capability, result in zip(capabilities[1:], results[1:]):
        assert result.keys() == results[0].keys()
        for key, portable in results[0].items():
            assert torch.equal(portable, result[key]), (capability, key)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_hue_every_uint8_color(device):
    """adjust_hue of each of the 2^24 uint8 colours equals torchvision's exactly: the kernels
    compute in the pixel's units, with an approximate reciprocal on the GPU, and take
    torchvision's float path only where a truncation is close to an integer."""
    code = torch.arange(1 << 24, dtype=torch.int32)
    colors = torch.stack([code & 255, code >> 8 & 255, code >> 16]).to(torch.uint8)
    colors = colors.view(3, 4096, 4096)
    hues = [-0.5, -0.3, 0.0, 0.0625, 0.1, 0.2576, 0.5]
    factors = torch.tensor(hues, device=device).view(-1, 1)
    out = gpuaug.photometric(colors.to(device).expand(len(hues), -1, -1, -1), [Stage.HUE], factors)
    for n, hue in enumerate(hues):
        assert torch.equal(out[n].cpu(), F.adjust_hue(colors, hue)), f"hue {hue}"


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_hue_of_extreme_float_values(device):
    """Float hue equals torchvision's where values are huge (ranges up to 3e38), tiny (denormal)
    or outside [0, 1], and at the shift's bounds: the CPU's runs take the remainders with one add,
    which needs their operands in (-1, 2)."""
    torch.manual_seed(5)
    hues = [0.3, -0.45, 0.5, -0.5]
    image = torch.rand(len(hues), 3, 9, 21) * 3 - 1  # [-1, 2): outside [0, 1]
    flat = image.view(len(hues), 3, -1)
    flat[:, 0, 3] = 3e35
    flat[:, 1, 40] = -2e30
    flat[:, 0, 100] = 3e38
    flat[:, 2, 150] = -1e38
    # the GPU's quick divisions (hue_divides_quickly) leave out a denormal range and largest
    # value, whose reciprocal (rcp.approx.ftz) would be infinite, and a range below 2^-40
    flat[:, :, 170] = torch.tensor([1e-39, 0.0, 0.0]).view(1, 3)
    flat[:, :, 171] = torch.tensor([2.0 ** -20 + 2.0 ** -43, 2.0 ** -20, 2.0 ** -21]).view(1, 3)
    flat[:, :, 172] = torch.tensor([2.0 ** -20 + 2.0 ** -43, 2.0 ** -20, 2.0 ** -20]).view(1, 3)
    factors = torch.tensor(hues).view(-1, 1).to(device)
    out = gpuaug.photometric(image.to(device), [Stage.HUE], factors)
    for n, hue in enumerate(hues):
        torch.testing.assert_close(out[n].cpu(), F.adjust_hue(image[n], hue), atol=1e-5, rtol=0,
                                   equal_nan=True)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_hue_of_nonfinite_pixels(device, dtype):
    """Pixels with NaN or infinite values, or whose range overflows, take torchvision's results on
    the same device (NaN where its masked terms or extremes make one; a NaN hue's sector is its
    device's conversion of NaN to an integer), in both layouts. A float64 image's hue is
    computed in float64 here and in float32 by torchvision, whose results for huge values differ
    (its products overflow, its ranges lose the smaller values): float64 has none."""
    huge = [] if dtype == torch.float64 else [3e38, -3e38]
    values = [math.nan, math.inf, -math.inf, 0.0, 0.25, 0.5, 1.0, -1.0, 2.0] + huge
    pixels = torch.tensor(list(itertools.product(values, repeat=3)), dtype=dtype)
    image = pixels.t().reshape(3, len(values), -1)
    torch.manual_seed(6)
    image = torch.stack([image, image[:, torch.randperm(len(values))].flip(-1)]).to(device)
    hues = [0.1, -0.45]  # away from sectors' bounds, where float64 and float32 round apart
    factors = torch.tensor(hues, dtype=torch.float64 if dtype == torch.float64 else torch.float32,
                           device=device).view(-1, 1)
    for layout in [torch.contiguous_format, torch.channels_last]:
        out = gpuaug.photometric(image.contiguous(memory_format=layout), [Stage.HUE], factors)
        for n, hue in enumerate(hues):
            expected = F.adjust_hue(image[n], hue)
            assert expected.isnan().any() and expected.isinf().any()
            torch.testing.assert_close(out[n], expected, atol=1e-5, rtol=0, equal_nan=True)
