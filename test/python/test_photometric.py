"""gpuaug::photometric and gpuaug.transforms' photometric transforms against torchvision.transforms.v2
.functional applied image by image with the same (replayed) per-sample draws."""
import itertools
import math
import os
import re
import subprocess
import sys

import pytest
import torch
try:  # the newest PyTorch may have no torchvision released for it yet
    import torchvision.transforms.v2.functional as F
except ImportError:
    F = None

import gpuaug
from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import (DEVICES, IMAGE_DTYPES, assert_exported_draws,
                            assert_matches_torchvision, captured_replays, make_image,
                            requires_cuda, requires_two_gpus)

requires_torchvision = pytest.mark.skipif(
    F is None, reason="torchvision is not installed (none may be released for this PyTorch yet)")

def torchvision_program(image, stages, factors, order, apply):
    """One image through its program with torchvision's functional API."""
    out = image.clone()
    for slot in order.tolist():
        if not apply[slot]:
            continue
        kind, v = stages[slot], float(factors[slot])
        if kind == Stage.BRIGHTNESS:
            out = F.adjust_brightness(out, v)
        elif kind == Stage.CONTRAST:
            out = F.adjust_contrast(out, v)
        elif kind == Stage.SATURATION:
            out = F.adjust_saturation(out, v)
        elif kind == Stage.HUE:
            out = F.adjust_hue(out, v)
        elif kind == Stage.GRAYSCALE:
            out = F.rgb_to_grayscale(out, num_output_channels=out.shape[-3])
        elif kind == Stage.SOLARIZE:
            out = F.solarize(out, v)
        elif kind == Stage.POSTERIZE:
            out = F.posterize(out, int(v))
        elif kind == Stage.INVERT:
            out = F.invert(out)
        elif kind == Stage.AUTOCONTRAST:
            out = F.autocontrast(out)
        elif kind == Stage.EQUALIZE:
            out = equalize_saturating(out)
        elif kind == Stage.PERMUTE_CHANNELS:
            code = int(v)
            out = F.permute_channels(out, [code % 3, code // 3 % 3, code // 9][:out.shape[-3]])
        elif kind == Stage.COLOR_AUGMENT:  # gpuaug's own op, its values tested in its tests
            gains, brightness, contrast, gamma = factors[slot:slot + 6].split([3, 1, 1, 1])
            out = gpuaug.color_transform(out, gains[:out.shape[-3]].float(), brightness.item(),
                                         contrast.item(), gamma.item())
    return out


def equalize_saturating(image):
    """F.equalize, but where a half type's x * 255.999 rounds to 256 (near 1) its uint8 value
    saturates at 255 as gpuaug's does, rather than wrapping to 0 as torchvision's cast does."""
    if image.dtype not in (torch.float16, torch.bfloat16):
        return F.equalize(image)
    as_uint8 = image.mul(255.999).clamp(0, 255).to(torch.uint8)
    return F.to_dtype(F.equalize(as_uint8), image.dtype, scale=True)


def torchvision_batch(image, stages, params):
    """Per sample (frames of a [N, T, C, H, W] video share their sample's draws)."""
    batched = image if image.dim() > 3 else image.unsqueeze(0)
    out = torch.stack([
        torchvision_program(batched[n].cpu(), stages, params["factors"][n].cpu(),
                            params["order"][n].cpu(), params["apply"][n].cpu())
        for n in range(batched.shape[0])])
    return out if image.dim() > 3 else out[0]


def solarize_threshold(dtype):
    return 128.0 if dtype == torch.uint8 else 0.5


def every_transform(dtype):
    return {
        "ColorJitter": T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        "RandomPhotometricDistort": T.RandomPhotometricDistort(p=0.7),
        "Compose": T.Compose([
            T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomSolarize(solarize_threshold(dtype)),
            T.RandomPosterize(5), T.RandomInvert(), T.RandomGrayscale(0.3),
            T.RandomAutocontrast(0.7), T.RandomEqualize(0.6), T.RandomChannelPermutation()]),
        "RandomGrayscale": T.RandomGrayscale(0.5),
        "RandomSolarize": T.RandomSolarize(solarize_threshold(dtype)),
        "RandomPosterize": T.RandomPosterize(3),
        "RandomInvert": T.RandomInvert(),
        "RandomAutocontrast": T.RandomAutocontrast(),
        "RandomEqualize": T.RandomEqualize(0.7),
        "RandomChannelPermutation": T.RandomChannelPermutation(),
        "ColorAugment": T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ColorAugment(p=0.8),
                                   T.RandomInvert()]),
        # uint8 steps that are bitwise operations (the CPU's byte loops), and steps that map each
        # channel apart (the CPU's tables of uint8 values)
        "bitwise Compose": T.Compose([
            T.RandomInvert(0.6), T.RandomPosterize(4, 0.7),
            T.RandomSolarize(solarize_threshold(dtype) * 0.9, 0.7), T.RandomInvert(0.5)]),
        "channel-wise Compose": T.Compose([
            T.RandomAutocontrast(0.7), T.ColorJitter(0.4, 0.4), T.RandomInvert(0.5),
            T.RandomEqualize(0.6)]),
        # steps that treat every channel alike around channel permutations (the CPU's planes,
        # each read from the input plane its output takes)
        "permuting Compose": T.Compose([
            T.RandomChannelPermutation(), T.ColorJitter(0.4, 0.4), T.RandomInvert(0.5),
            T.RandomChannelPermutation(), T.RandomSolarize(solarize_threshold(dtype), 0.6)]),
        "RandomApply": T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                      T.RandomChannelPermutation(), T.RandomInvert(1.0)], p=0.6),
        # transforms with coins of their own, flipped where RandomApply's falls for the sample
        "RandomApply, own coins": T.RandomApply([
            T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.5),
            T.RandomSolarize(solarize_threshold(dtype), 0.7)], p=0.6),
        # three reduction stages: three calls of the op, the coin shared
        "RandomApply, reductions": T.RandomApply([
            T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomAutocontrast(0.7), T.RandomEqualize(0.6)],
            p=0.8),
        # a transform per sample (their own coins nested in the choice), a call per reduction
        "RandomChoice": T.RandomChoice([
            T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.5), T.RandomInvert(1.0),
            T.RandomSolarize(solarize_threshold(dtype), 0.7), T.RandomEqualize()],
            p=[3, 1, 1, 1, 1]),
        # an order per sample, each transform's own kept, in one call
        "RandomOrder": T.RandomOrder([
            T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomPosterize(4, 0.7), T.RandomInvert(0.5),
            T.RandomChannelPermutation(), T.RandomSolarize(solarize_threshold(dtype), 0.6)]),
        # containers and Composes inside containers: coins nested over three levels, an order
        # inside a choice, a call per reduction
        "nested containers": T.RandomApply([
            T.RandomChoice([
                T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(0.5)]),
                T.RandomOrder([T.RandomGrayscale(0.5),
                               T.RandomSolarize(solarize_threshold(dtype), 0.7),
                               T.RandomPosterize(4)])], p=[2, 1]),
            T.RandomApply([T.RandomEqualize(0.6), T.RandomChannelPermutation()], p=0.7)], p=0.8),
        # the self-supervised recipes' colour augmentation (SimCLR, BYOL, DINO), one call
        "self-supervised Compose": T.Compose([
            T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8), T.RandomGrayscale(0.2),
            T.RandomSolarize(solarize_threshold(dtype), 0.2)]),
    }


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


COLOR_AUGMENT = [Stage.COLOR_AUGMENT] + [Stage.COLOR_PARAMETER] * 5


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


@pytest.mark.parametrize("make", [lambda: T.ColorJitter(0.4, 0.4), lambda: T.Compose(
    [T.ColorAugment(), T.RandomInvert()]), lambda: T.ColorAugment()])
def test_params_without_a_key(make):
    """A params dict missing a key is a clear error, not a KeyError nor fresh draws, in eager and
    scripted modules; scripted, a target beside the image lands there too."""
    image = make_image([2, 3, 4, 4], torch.uint8, "cpu", seed=59)
    params = make().sample_params(image)
    del params["apply"]
    target = {"boxes": torch.zeros(1, 4), "labels": torch.zeros(1, dtype=torch.long)}
    message = (r"gpuaug.transforms: expected 'params' as sample_params returns them, a dict with "
               r"the keys \[.*\], but it has no '(apply|factors|color)' \(scripted, a transform "
               r"takes an image tensor and its params alone\)")
    for transform in (make(), torch.jit.script(make())):
        with pytest.raises(Exception, match=message):
            transform(image, params)
    with pytest.raises(Exception, match=message):
        torch.jit.script(make())(image, target)


def test_repr():
    """Printed, a transform shows its arguments as torchvision's does, and a Compose its
    conversion."""
    compose = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                         T.RandomSolarize(128.0), T.RandomPosterize(4, p=0.3),
                         T.RandomPhotometricDistort(), T.ColorAugment(p=0.5)],
                        dtype=torch.float32, mean=[0.5], std=[0.25])
    text = repr(compose)
    for part in ["Compose(\n  dtype=torch.float32, mean=[0.5], std=[0.25]\n",
                 "RandomApply(\n      p=0.8\n",
                 "ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.8, 1.2), "
                 "hue=(-0.1, 0.1))",
                 "RandomSolarize(threshold=128.0, p=0.5)", "RandomPosterize(bits=4, p=0.3)",
                 "RandomPhotometricDistort(brightness=(0.875, 1.125), contrast=(0.5, 1.5), "
                 "saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5)",
                 "ColorAugment(color=(0.8, 1.2), brightness=(-0.1, 0.1), contrast=(0.8, 1.2), "
                 "gamma=(0.8, 1.25), p=0.5)"]:
        assert part in text, (part, text)
    assert repr(T.RandomInvert()) == "RandomInvert(p=0.5)"
    assert repr(T.ColorJitter(hue=0.2, dtype=torch.float16)) == (
        "ColorJitter(hue=(-0.2, 0.2), dtype=torch.float16)")


def test_color_augment_compose_errors():
    with pytest.raises(ValueError, match="the output conversion is the Compose's own"):
        T.Compose([T.ColorAugment(dtype=torch.float32)])
    with pytest.raises(ValueError, match="one colour range, or one per channel of a 3-channel "
                                         "image, but got 2 ranges"):
        T.Compose([T.ColorAugment(color=[(0.9, 1.1), (0.8, 1.2)])])
    with pytest.raises(ValueError, match="ColorAugment: 3 colour ranges for an image of 1"):
        T.Compose([T.ColorAugment(color=[(0.9, 1.1)] * 3)])(torch.zeros(2, 1, 4, 4))


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


def strided_planes(layout, shape, dtype, device):
    """A [N, C, H, W] image (shape) whose planes, and images, lie at strides of their own, each
    plane's pixels one after the other: the op reads them in place."""
    n, c, h, w = shape
    if layout == "channel slice":  # RGBA's first three channels
        return make_image([n, c + 1, h, w], dtype, device, seed=3)[:, :c]
    if layout == "plane of three":  # a plane of a 3-channel batch
        return make_image([n, 3, h, w], dtype, device, seed=3)[:, 1:2]
    if layout == "expanded plane":  # one plane as three channels, stride 0
        return make_image([n, 1, h, w], dtype, device, seed=3).expand(n, c, h, w)
    if layout == "expanded sample":  # one image for every sample, stride 0
        return make_image([1, c, h, w], dtype, device, seed=3).expand(n, c, h, w)
    if layout == "channels first":  # [C, N, H, W] transposed
        return make_image([c, n, h, w], dtype, device, seed=3).transpose(0, 1)
    assert layout == "one channel"
    return make_image([n, 1, h, w], dtype, device, seed=3)


PLANE_LAYOUTS = ["channel slice", "plane of three", "expanded plane", "expanded sample",
                 "channels first", "one channel"]


def strided_plane_transforms():
    return {"ColorJitter": T.ColorJitter(0.4, 0.4, 0.4, 0.1),  # contrast: a reduction pass
            "RandomEqualize": T.Compose([T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomEqualize(0.8)]),
            "one pass": T.Compose([T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomInvert()])}


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
@requires_cuda
@pytest.mark.parametrize("out_dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("layout", PLANE_LAYOUTS)
@pytest.mark.parametrize("name", ["ColorJitter", "RandomEqualize"])
def test_resident_planes_at_strides_of_their_own(name, layout, out_dtype):
    """Resident images (see test_resident_images) copy their planes from where they lie."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    image = strided_planes(layout, [4 * sms, 3, 144, 160], torch.uint8, "cuda")
    normalize = {} if out_dtype == torch.uint8 else dict(dtype=out_dtype, mean=[0.5], std=[0.25])
    transform = T.Compose([strided_plane_transforms()[name]], **normalize)
    params = transform.sample_params(image)
    dense = image.contiguous()
    names = kernel_names(lambda: transform(image, params))
    assert any("resident_transform" in k for k in names)
    assert names == kernel_names(lambda: transform(dense, params))  # no copy first
    out = transform(image, params)
    assert torch.equal(out, transform(dense, params))
    assert_first_samples_match(out, image, transform, params, 4, normalize)


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


@pytest.mark.parametrize("device", DEVICES)
def test_per_sample_draws(device):
    """Samples draw their own factors and orders; a generator makes the draws reproducible."""
    image = make_image([64, 3, 4, 4], torch.uint8, device, seed=5)
    g1 = torch.Generator(device=device).manual_seed(11)
    g2 = torch.Generator(device=device).manual_seed(11)
    p1 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g1).sample_params(image)
    p2 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g2).sample_params(image)
    for key in p1:
        assert torch.equal(p1[key], p2[key])
    assert p1["factors"][:, 0].unique().numel() == 64
    assert p1["order"].unique(dim=0).shape[0] > 10
    f = p1["factors"]
    assert (f[:, :3] >= 0.6).all() and (f[:, :3] <= 1.4).all()
    assert (f[:, 3].abs() <= 0.1).all()
    distort = T.RandomPhotometricDistort(p=0.5).sample_params(image)
    rate = distort["apply"].double().mean().item()
    assert 0.35 < rate < 0.65


class _CudaGenerator:
    """Stands in for a CUDA generator where there is no GPU: the check reads its device alone."""
    device = torch.device("cuda")


@pytest.mark.parametrize("device", DEVICES)
def test_generator_of_another_device(device):
    """A generator of another device type than the image's: the transform's own message, before
    torch.rand's (which names neither); meta images take any generator, as torch.rand does; and
    the check stays out of TorchScript, which has no Generator.device."""
    image = make_image([2, 3, 4, 4], torch.uint8, device, seed=1)
    other = torch.Generator() if device == "cuda" else _CudaGenerator()
    other_type = "cpu" if device == "cuda" else "cuda"
    inner = T.RandomInvert()
    transforms = {"ColorJitter": T.ColorJitter(0.4),
                  "RandomApply": T.RandomApply([T.RandomInvert()]),
                  "RandomInvert": T.Compose([inner]),  # a Compose's transform, its own generator
                  "ColorAugment": T.ColorAugment()}
    for name, transform in transforms.items():
        (inner if name == "RandomInvert" else transform).generator = other
        message = rf"gpuaug.transforms.{name}: generator is a {other_type} generator and the image"
        with pytest.raises(ValueError, match=rf"{message} is on {device}"):
            transform(image)
    meta = torch.empty([2, 3, 4, 4], dtype=torch.uint8, device="meta")
    params = T.ColorJitter(0.4, generator=torch.Generator()).sample_params(meta)
    assert params["factors"].device.type == "meta"
    scripted = torch.jit.script(T.ColorJitter(0.4, generator=torch.Generator(device=device)))
    assert scripted(image).shape == image.shape


@pytest.mark.parametrize("device", DEVICES)
def test_compose_draws(device):
    """A Compose draws its transforms' uniforms in one call, unless they have generators of their
    own: then each draws with its own, reproducibly."""
    image = make_image([32, 3, 4, 4], torch.uint8, device, seed=7)

    def compose(seed):
        g = torch.Generator(device=device).manual_seed(seed)
        return T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g),
                          T.RandomInvert(generator=g), T.RandomSolarize(128.0, generator=g)])
    p1, p2 = compose(3).sample_params(image), compose(3).sample_params(image)
    for key in p1:
        assert torch.equal(p1[key], p2[key])
    torch.manual_seed(5)
    shared = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(0.5)])
    params = shared.sample_params(image)
    assert params["factors"].shape == (32, 5) and params["order"].shape == (32, 5)
    rate = params["apply"][:, 4].double().mean().item()
    assert 0.2 < rate < 0.8 and params["apply"][:, :4].all()
    assert sorted(params["order"][0, :4].tolist()) == [0, 1, 2, 3] and params["order"][0, 4] == 4
    # a generator given to a transform after the Compose was made is used
    shared.transforms[0].generator = torch.Generator(device=device).manual_seed(9)
    alone = T.ColorJitter(0.4, 0.4, 0.4, 0.1,
                          generator=torch.Generator(device=device).manual_seed(9))
    assert torch.equal(shared.sample_params(image)["factors"][:, :4],
                       alone.sample_params(image)["factors"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key_dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_order_as_keys(key_dtype, device):
    """Floating keys order a sample's slots as argsort(keys, stable=True): NaN last, ties (-0.0
    and 0.0 among them) by slot; one row of keys serves every sample."""
    image = make_image([6, 3, 5, 7], torch.uint8, device, seed=12)
    stages = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SOLARIZE, Stage.INVERT, Stage.POSTERIZE]
    factors = torch.tensor([1.3, 0.6, 100.0, 0.0, 3.0], device=device)
    nan = float("nan")
    keys = torch.tensor([[0.5, 0.25, 0.75, 0.1, 0.9],
                         [0.5, 0.5, 0.5, 0.5, 0.5],
                         [nan, 0.2, nan, -1.0, 3.0],
                         [-0.0, 0.0, 0.1, -0.0, -0.1],
                         [float("inf"), nan, 0.3, float("-inf"), 0.3],
                         [0.9, 0.7, 0.5, 0.3, 0.1]]).to(key_dtype)
    order = torch.argsort(keys.double(), dim=1, stable=True)
    for given, expected in [(keys, order), (keys[5], order[5])]:
        out = gpuaug.photometric(image, stages, factors, order=given.to(device))
        assert torch.equal(out, gpuaug.photometric(image, stages, factors,
                                                   order=expected.to(device)))


@pytest.mark.parametrize("device", DEVICES)
def test_broadcast_and_sliced_rows(device):
    """Parameters as one row expanded over the samples, or as columns of a wider tensor: read in
    place, with the results of contiguous copies."""
    image = make_image([4, 3, 6, 5], torch.uint8, device, seed=13)
    stages = [Stage.BRIGHTNESS, Stage.SATURATION, Stage.HUE]
    wide = torch.rand([4, 9], generator=torch.Generator().manual_seed(2)).to(device)
    factors = wide[:, 2:5] * torch.tensor([1.0, 1.0, 0.2], device=device)
    keys = wide[:, 5:8]
    apply = torch.tensor([True, False, True], device=device).expand(4, 3)
    out = gpuaug.photometric(image, stages, factors, order=keys, apply=apply)
    expected = gpuaug.photometric(image, stages, factors.contiguous(), order=keys.contiguous(),
                                  apply=apply.contiguous())
    assert not keys.is_contiguous() and apply.stride(0) == 0
    assert torch.equal(out, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float64])
@pytest.mark.parametrize("enabled", [(0.4, 0.4, 0.4, 0.1), (0.4, None, 0.4, 0.1),
                                     (None, 0.3, None, 0.2), (None, None, None, 0.1)])
def test_jitter_fresh_draws_replay(enabled, dtype, device):
    """ColorJitter's own draws (its uniforms given to the op with their ranges, its order as
    keys) are sample_params' with the same generator state: the two calls agree exactly."""
    image = make_image([16, 3, 7, 9], dtype, device, seed=14)

    def jitter():
        return T.ColorJitter(*enabled, generator=torch.Generator(device=device).manual_seed(4),
                             dtype=torch.float32 if dtype == torch.uint8 else None,
                             mean=[0.5] * 3, std=[0.25] * 3)
    params = jitter().sample_params(image)
    assert params["order"].dtype == torch.int64 and params["apply"].shape == (16, 4)
    assert torch.equal(jitter()(image), jitter()(image, params))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("jitter", [(0.4, 0.4, 0.4, 0.1), (0.4, 0.0, 0.4)])
def test_compose_fresh_draws_replay(jitter, device):
    """A Compose's fresh draws are its uniforms alone, of which the op makes every call's
    factors, coins and order keys (factor_ranges' long form): sample_params' values for the same
    generator state, a transform's own generator drawing that transform's columns."""
    image = make_image([24, 3, 6, 5], torch.uint8, device, seed=18)

    def draws_alike(compose):
        torch.manual_seed(21)
        params = compose.sample_params(image)
        replayed = compose(image, params)
        torch.manual_seed(21)
        assert torch.equal(compose(image), replayed)

    affine = T.Compose([T.ColorJitter(*jitter), T.RandomSolarize(100.0, 0.6),
                        T.RandomGrayscale(0.3), T.RandomAutocontrast(0.5), T.RandomInvert()],
                       dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)
    assert len(affine.bounds) - 1 == (2 if jitter[1] else 1)
    draws_alike(affine)
    augment = T.Compose([T.ColorAugment(gamma=(0.7, 1.6), p=0.6), T.ColorJitter(*jitter),
                         T.RandomInvert(0.4)], dtype=torch.float32)
    # gamma as exp of its log's range, in the op
    draws_alike(augment)
    every = T.Compose([T.ColorJitter(*jitter), T.RandomChannelPermutation(),
                       T.RandomPhotometricDistort(p=0.6), T.RandomEqualize(0.5)])
    # a permutation as the floor of six times a uniform, in the op
    draws_alike(every)
    # a generator of a transform's own: its columns, the same values
    own = T.Compose([T.ColorJitter(*jitter), T.RandomChannelPermutation(
        generator=torch.Generator(device=device))])
    assert own._own_generators()
    own.transforms[1].generator.manual_seed(8)
    torch.manual_seed(21)
    params = own.sample_params(image)
    own.transforms[1].generator.manual_seed(8)
    torch.manual_seed(21)
    assert torch.equal(own(image), own(image, params))
    with pytest.raises(TypeError, match="Threshold should be less or equal"):
        T.Compose([T.RandomSolarize(300.0)])(make_image([2, 3, 4, 4], torch.float32, device, 1))


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


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_jitter_program_without_disabled(device):
    """A disabled adjustment is left out of the program fresh draws run and a Compose takes: no
    contrast, no reduction pass (a Compose with autocontrast after it is one call); sample_params
    still covers all four, the disabled last in the order and never applied."""
    jitter = T.ColorJitter(0.4, 0.0, 0.4, 0.1)
    assert jitter.program == [Stage.BRIGHTNESS, Stage.SATURATION, Stage.HUE]
    assert jitter.uniforms == 6
    image = make_image([32, 3, 6, 7], torch.uint8, device, seed=15)
    params = jitter.sample_params(image)
    assert not params["apply"][:, 1].any() and params["apply"][:, [0, 2, 3]].all()
    assert (params["order"][:, 3] == 1).all()
    assert params["order"][:, 0].unique().numel() == 3  # each enabled one first somewhere
    compose = T.Compose([jitter, T.RandomAutocontrast(0.7)])
    assert compose.bounds == [0, 4]
    assert T.Compose([T.ColorJitter(0.4, 0.4), T.RandomAutocontrast()]).bounds == [0, 2, 3]
    params = compose.sample_params(image)
    assert params["factors"].shape == (32, 4)
    expected = torchvision_batch(image, compose.stages, params)
    assert_matches_torchvision(compose(image, params), expected, torch.uint8)


def fma_reference(width, u, low):
    """fma(width, u, low) rounded once to float64, from exact rationals."""
    from fractions import Fraction
    return float(Fraction(width) * Fraction(u) + Fraction(low))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("u_dtype", [torch.float32, torch.float64])
def test_factor_ranges(u_dtype, dtype, device):
    """With factor_ranges the factors are uniforms, slot k's factor fma(width, u, low) in float64
    (from u as the compute type holds it: float32, float64 for float64 images), then rounded to
    float32: the op's output and gradient are those of the factors so made. Widths of 53 bits
    make the single rounding matter."""
    stages = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE]
    image = make_image([6, 3, 5, 7], dtype, device, seed=31)
    g = torch.Generator().manual_seed(32)
    u = torch.rand([6, 4], generator=g, dtype=u_dtype)
    order = torch.rand([6, 4], generator=g).to(device)
    lows, widths = [0.6, 0.55, 0.7, -0.1], [0.8, 0.9 + 2.0 ** -40, 0.3 / 7, 0.2]
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    u_seen = u.to(compute).double().tolist()
    factors = torch.tensor([[fma_reference(widths[k], row[k], lows[k]) for k in range(4)]
                            for row in u_seen], dtype=torch.float64).float()
    ranged = gpuaug.photometric(image, stages, u.to(device), order=order,
                                factor_ranges=lows + widths)
    assert torch.equal(ranged, gpuaug.photometric(image, stages, factors.to(device), order=order))
    if dtype == torch.float64:
        x = image.clone().requires_grad_()
        gpuaug.photometric(x, stages, u.to(device), order=order,
                           factor_ranges=lows + widths).sum().backward()
        y = image.clone().requires_grad_()
        gpuaug.photometric(y, stages, factors.to(device), order=order).sum().backward()
        assert torch.equal(x.grad, y.grad)
    with pytest.raises(RuntimeError, match=r"gpuaug::photometric: expected 'factor_ranges' of "
                       r"length 8 \(each slot's low, then each slot's width\) or 32 \(those, "
                       r"then each slot's factor column, coin column, coin bound, key column, "
                       r"key low and key width\), but got 3"):
        gpuaug.photometric(image, stages, u.to(device), factor_ranges=[0.5, 1.0, 2.0])
    if device == "cpu":  # the made factors' values are checked where they are on the CPU
        with pytest.raises(RuntimeError, match=r"expected the hue factor \(slot 3\) in "
                           r"\[-0.5, 0.5\], but got"):
            gpuaug.photometric(image, stages, u, factor_ranges=lows[:3] + [0.4] + widths)


@pytest.mark.parametrize("device", DEVICES)
def test_factor_ranges_gamma(device):
    """A color_augment stage's gamma slot, ranged, is exp of its value in the range (log gamma's,
    as ColorAugment draws it); its other slots are affine."""
    stages = [Stage.COLOR_AUGMENT] + [Stage.COLOR_PARAMETER] * 5
    image = make_image([8, 3, 5, 6], torch.uint8, device, seed=33)
    u = torch.rand([8, 6], generator=torch.Generator().manual_seed(34))
    lows = [0.8, 0.9, 1.0, -0.1, 0.9, math.log(0.6)]
    widths = [0.4, 0.2, 0.3, 0.2, 0.3, math.log(1.7) - math.log(0.6)]
    factors = torch.tensor([[fma_reference(widths[k], row[k], lows[k]) for k in range(6)]
                            for row in u.double().tolist()], dtype=torch.float64)
    factors[:, 5] = factors[:, 5].exp()
    assert (factors[:, 5] > 0.6 - 1e-6).all() and (factors[:, 5] < 1.7 + 1e-6).all()
    ranged = gpuaug.photometric(image, stages, u.to(device), factor_ranges=lows + widths)
    explicit = gpuaug.photometric(image, stages, factors.float().to(device))
    assert torch.equal(ranged, explicit) and not torch.equal(ranged, image)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [1, 3])
def test_factor_ranges_permutation(channels, device):
    """A ranged permutation slot takes permutation floor(float32(fma)) of the six, clamped, in
    lexicographic order (an independent list here): its boundaries, the clamp above, and a
    1-channel image, which any permutation leaves as it is."""
    image = make_image([10, channels, 5, 6], torch.uint8, device, seed=36)
    u = torch.tensor([0.0, 1 / 6 - 2 ** -26, 1 / 6, 0.34, 0.5, 0.51, 0.7, 5 / 6,
                      1 - 2 ** -24, 1.0]).view(10, 1)
    numbers = [min(5, math.floor(v)) for v in (u * 6).flatten().tolist()]
    assert numbers == [0, 0, 1, 2, 3, 3, 4, 5, 5, 5]
    permutations = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    expected = image if channels == 1 else torch.stack(
        [image[n, list(permutations[k])] for n, k in enumerate(numbers)])
    ranged = gpuaug.photometric(image, [Stage.PERMUTE_CHANNELS], u.to(device),
                                factor_ranges=[0.0, 6.0])
    assert torch.equal(ranged, expected)
    assert channels == 1 or not torch.equal(ranged, image)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float64])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("name", ["RandomPhotometricDistort", "RandomChannelPermutation"])
def test_permuting_fresh_draws_replay(name, channels, dtype, device):
    """RandomPhotometricDistort's and RandomChannelPermutation's own draws (the uniforms with
    their ranges, Distort's order as keys) are sample_params' for the same generator state."""
    image = make_image([32, channels, 7, 9], dtype, device, seed=15)

    def transform():
        g = torch.Generator(device=device).manual_seed(6)
        if name == "RandomChannelPermutation":
            return T.RandomChannelPermutation(generator=g)
        return T.RandomPhotometricDistort(p=0.7, generator=g)
    params = transform().sample_params(image)
    assert torch.equal(transform()(image), transform()(image, params))


# Six slots of the long form (low, width, factor column, coin column, coin bound, key column,
# key low, key width): columns shared and unused, no coin (-1), no factor column (invert's),
# coins never and always taken, key widths negative and 0, a 53-bit key width.
DRAWN_STAGES = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE, Stage.INVERT,
                Stage.PERMUTE_CHANNELS]
DRAWN_TERMS = [[0.6, 0.5, 0.6, -0.1, 0.0, 0.0], [0.8, 1.0, 0.8, 0.2, 0.0, 6.0],
               [0, 1, 2, 3, -1, 4], [-1, 5, 6, 7, 8, 5], [2.0, 0.7, 0.5, 0.0, 0.4, 1.5],
               [5, 8, 2, -1, 0, 1], [0.0, 0.2, -1.0, 0.5, 0.25, 0.0],
               [1.0, 0.5, 3.0 + 2.0 ** -45, 0.0, 1.0, -2.0]]


def drawn_params(u, terms):
    """The factors' uniforms (for the short form), the order keys and apply that the long form
    makes of the uniforms u ([N, U], or [U]), computed here: keys from exact rationals."""
    rows = u.reshape(-1, u.shape[-1])
    k = len(terms[0])
    column = [[int(c) for c in terms[t]] for t in (2, 3, 5)]
    ut = rows.double().tolist()
    factors = torch.tensor([[0.0 if column[0][j] < 0 else row[column[0][j]] for j in range(k)]
                            for row in ut], dtype=torch.float64).to(u.dtype)
    keys = torch.tensor([[terms[6][j] if column[2][j] < 0 else
                          fma_reference(terms[7][j], row[column[2][j]], terms[6][j])
                          for j in range(k)] for row in ut], dtype=torch.float64)
    below = torch.tensor(terms[4], dtype=torch.float64).float()
    coins = torch.stack([rows[:, c].float() if c >= 0 else torch.zeros(rows.shape[0])
                         for c in column[1]], 1)
    apply = (coins < below) | (torch.tensor(column[1]) < 0)
    return factors, keys, apply


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("per_sample", [True, False])
def test_drawn_factor_ranges(per_sample, dtype, device):
    """factor_ranges' long form takes each slot's factor, coin and order key from columns of the
    uniforms: the output and gradient of the short form given the factors' uniforms, and the
    order and apply computed here (keys as exact fma in float64, coins as float32 compares)."""
    image = make_image([16, 3, 5, 7], dtype, device, seed=33)
    g = torch.Generator().manual_seed(34)
    u = torch.rand([16, 9] if per_sample else [9], generator=g)
    u[..., 6] = 0.5  # a coin equal to its bound: not applied
    factors, keys, apply = drawn_params(u, DRAWN_TERMS)
    assert 0 < apply[:, 1].sum() < 16 and not apply[:, 2].any() and apply[:, 0].all()
    if not per_sample:
        factors, keys, apply = factors[0], keys[0], apply[0]
    long_form = [v for row in DRAWN_TERMS for v in row]
    short_form = long_form[:12]
    drawn = gpuaug.photometric(image, DRAWN_STAGES, u.to(device), factor_ranges=long_form)
    given = gpuaug.photometric(image, DRAWN_STAGES, factors.to(device), order=keys.to(device),
                               apply=apply.to(device), factor_ranges=short_form)
    assert torch.equal(drawn, given)
    if dtype == torch.float64:
        x = image.clone().requires_grad_()
        gpuaug.photometric(x, DRAWN_STAGES, u.to(device),
                           factor_ranges=long_form).square().sum().backward()
        y = image.clone().requires_grad_()
        gpuaug.photometric(y, DRAWN_STAGES, factors.to(device), order=keys.to(device),
                           apply=apply.to(device),
                           factor_ranges=short_form).square().sum().backward()
        assert torch.equal(x.grad, y.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_drawn_factor_ranges_errors(device):
    image = make_image([4, 3, 5, 5], torch.uint8, device, seed=35)
    long_form = [v for row in DRAWN_TERMS for v in row]
    u = torch.rand([4, 9], device=device)
    with pytest.raises(RuntimeError, match=r"gpuaug::photometric: expected 'factors' \(uniforms\) "
                       r"of shape \[U\] or \[4, U\] with U >= 9 \(the columns 'factor_ranges' "
                       r"reads\) for an image of shape \[4, 3, 5, 5\], but got \[4, 8\]"):
        gpuaug.photometric(image, DRAWN_STAGES, u[:, :8], factor_ranges=long_form)
    with pytest.raises(RuntimeError, match=r"'factor_ranges' of length 48 draws the order and "
                       r"the coins from 'factors': expected no 'apply'"):
        gpuaug.photometric(image, DRAWN_STAGES, u, apply=torch.ones(6, dtype=torch.bool,
                                                                    device=device),
                           factor_ranges=long_form)
    bad = list(long_form)
    bad[3 * 6 + 1] = 2.5  # slot 1's coin column
    with pytest.raises(RuntimeError, match=r"expected slot 1's coin column in 'factor_ranges' to "
                       r"be an index of a column of 'factors', or -1 for none, but got 2.5"):
        gpuaug.photometric(image, DRAWN_STAGES, u, factor_ranges=bad)
    with pytest.raises(RuntimeError, match=r"expected 'factors' \(uniforms\) of dtype float32"):
        gpuaug.photometric(image, DRAWN_STAGES, u.long(), factor_ranges=long_form)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_drawn(device):
    image = make_image([3, 3, 5, 4], torch.float32, device, seed=36)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default,
                          (image, DRAWN_STAGES, torch.rand([3, 9], device=device)),
                          {"factor_ranges": [v for row in DRAWN_TERMS for v in row]})


def test_permutation_and_order_draws():
    """Distort's permutations cover the six evenly, contrast runs second about half the time,
    and the 1-channel permutation is none."""
    image = torch.zeros([6000, 3, 1, 1], dtype=torch.uint8)
    params = T.RandomPhotometricDistort(generator=torch.Generator().manual_seed(2)) \
        .sample_params(image)
    counts = torch.stack([(params["factors"][:, 4] == c).sum() for c in (21, 15, 19, 7, 11, 5)])
    assert counts.sum() == 6000 and (counts > 880).all() and (counts < 1120).all()
    second = (params["order"][:, 1] == 1).double().mean().item()
    assert 0.46 < second < 0.54
    gray = T.RandomChannelPermutation().sample_params(image[:, :1])
    assert (gray["factors"] == 0).all()


def test_jitter_ranges_as_torchvision():
    j = T.ColorJitter(brightness=(0.5, 0.9), contrast=0.0, hue=0.2)
    assert j.enabled == [True, False, False, True]
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="must be non negative"):
        T.ColorJitter(brightness=-1)


def test_image_shape_errors():
    """An image without three dimensions, or past five, is refused by name before its channels
    are read (an [H, W] image has no dimension -3), by every kind of transform, drawing or
    replaying, scripted too."""
    transforms = [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(),
                  T.RandomPhotometricDistort(), T.Grayscale(3), T.RGB(),
                  T.ToDtype(torch.float32, scale=True),
                  T.Normalize([0.5], [0.25]), T.RandomApply([T.RandomEqualize()]),
                  T.RandomChoice([T.RandomSolarize(100.0), T.RandomPosterize(4)]),
                  T.RandomOrder([T.RandomInvert(), T.ColorJitter(0.2)]),
                  T.Compose([T.RandomAutocontrast(), T.RandomGrayscale()], dtype=torch.float32,
                            mean=[0.5], std=[0.25])]
    params = T.RandomInvert().sample_params(make_image([1, 3, 4, 4], torch.uint8, "cpu", seed=18))
    for shape in ([4, 5], [5], [1, 1, 2, 3, 4, 5]):
        image = torch.zeros(shape, dtype=torch.uint8)
        message = re.escape("gpuaug.transforms: expected an image of shape [C, H, W], "
                            f"[N, C, H, W] or [N, T, C, H, W], got {shape}")
        for t in transforms:
            with pytest.raises(ValueError, match=message):
                t(image)
            with pytest.raises(ValueError, match=message):
                t.sample_params(image)
        with pytest.raises(ValueError, match=message):
            T.RandomInvert()(image, params)
        with pytest.raises(torch.jit.Error, match=message):
            torch.jit.script(T.ColorJitter(0.4))(image)


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


def opcheck_args(device):
    image = make_image([2, 3, 5, 7], torch.uint8, device, seed=8)
    params = T.ColorJitter(0.4, 0.4, 0.4, 0.1).sample_params(image)
    return (image, [1, 2, 3, 4], params["factors"]), {
        "order": params["order"], "apply": params["apply"], "dtype": torch.float32,
        "mean": [0.5, 0.5, 0.5], "std": [0.2, 0.2, 0.2]}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keys", [False, True])
def test_opcheck(keys, device):
    args, kwargs = opcheck_args(device)
    if keys:  # the order as floating keys, one apply row for every sample, uniforms in ranges
        kwargs["order"], kwargs["apply"] = torch.rand_like(args[2]), kwargs["apply"][0]
        args = (args[0], args[1], torch.rand_like(args[2]))
        kwargs["factor_ranges"] = [0.6, 0.6, 0.6, -0.1, 0.8, 0.8, 0.8, 0.2]
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, args, kwargs,
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_no_stages(device):
    """An empty program (the conversion alone), floating in and out so its gradient is checked."""
    image = make_image([2, 3, 5, 4], torch.float32, device, seed=20)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default,
                          (image, [], torch.empty(2, 0, device=device)),
                          {"mean": [0.5] * 3, "std": [0.2] * 3})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stage", [Stage.AUTOCONTRAST, Stage.EQUALIZE])
def test_opcheck_other_reductions(stage, device):
    """The reduction passes other than contrast's: autocontrast's and equalize's histograms."""
    image = make_image([3, 3, 6, 5], torch.uint8, device, seed=int(stage))
    args = (image, [Stage.BRIGHTNESS, stage], torch.tensor([1.2, 0.0], device=device))
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, args,
                          {"order": torch.tensor([[1, 0], [0, 1], [1, 0]], device=device)},
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_color_augment(device):
    """The color_augment stage on a floating image, its gradient (autograd registration)
    included, per-sample factors and orders."""
    image = make_image([3, 3, 6, 5], torch.float32, device, seed=58).requires_grad_()
    stages = COLOR_AUGMENT + [Stage.SATURATION]
    factors = torch.tensor([1.1, 0.9, 1.2, 0.05, 1.1, 0.8, 1.3], device=device).repeat(3, 1)
    order = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [6, 0, 1, 2, 3, 4, 5], [3, 6, 0, 1, 2, 4, 5]],
                         device=device)
    torch.library.opcheck(torch.ops.gpuaug.photometric.default, (image, stages, factors),
                          {"order": order, "mean": [0.5] * 3, "std": [0.2] * 3})


@pytest.mark.parametrize("device", DEVICES)
def test_export_dynamic_batch(device):
    """torch.export of ColorJitter + Normalize replaying given parameters, with a dynamic batch."""
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=[0.5] * 3,
                           std=[0.25] * 3)

    class Replay(torch.nn.Module):
        def forward(self, image, factors, order, apply):
            return jitter(image, {"factors": factors, "order": order, "apply": apply})

    image = make_image([4, 3, 9, 11], torch.uint8, device, seed=40)
    batch = torch.export.Dim("batch", min=2)
    params = jitter.sample_params(image)
    program = torch.export.export(
        Replay(), (image, params["factors"], params["order"], params["apply"]),
        dynamic_shapes=({0: batch}, {0: batch}, {0: batch}, {0: batch}))
    assert torch.ops.gpuaug.photometric.default in {n.target for n in program.graph.nodes}
    for n in (4, 7):
        image = make_image([n, 3, 9, 11], torch.uint8, device, seed=41 + n)
        params = jitter.sample_params(image)
        assert torch.equal(program.module()(image, params["factors"], params["order"],
                                            params["apply"]), jitter(image, params))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_dynamic_batch(device, fresh_dynamo):
    # two calls of the op: contrast's reduction, then equalize's histograms
    transform = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(),
                           T.RandomEqualize(0.7)],
                          dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)

    def run(image, params):
        return transform(image, params)

    compiled = torch.compile(run, fullgraph=True, dynamic=True)
    for n in (3, 5, 8):
        image = make_image([n, 3, 12, 10], torch.uint8, device, seed=n)
        params = transform.sample_params(image)
        torch.testing.assert_close(compiled(image, params), run(image, params), rtol=0, atol=0)


def fresh_draw_transforms():
    return {"RandomPhotometricDistort": T.RandomPhotometricDistort(),
            "ColorJitter": T.ColorJitter(0.4, 0.0, 0.4, 0.1),
            "Compose": T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(),
                                  T.RandomAutocontrast()]),
            "ColorAugment": T.Compose([T.ColorAugment(), T.ColorJitter(0.4, 0.0, 0.4, 0.1)]),
            "RandomApply": T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                                      T.RandomGrayscale(0.2)]),
            "RandomApply, own coins": T.Compose([
                T.RandomInvert(0.3), T.RandomApply([T.RandomPhotometricDistort(),
                                                    T.RandomGrayscale(0.5)], p=0.7)]),
            "RandomApply, reductions": T.RandomApply([T.ColorJitter(0.4, 0.4),
                                                      T.RandomEqualize(0.5)], p=0.7),
            "RandomChoice": T.Compose([T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.2, 0.1),
                                                       T.RandomSolarize(100.0, 0.5),
                                                       T.RandomEqualize()], p=[2, 1, 1])]),
            "RandomOrder": T.Compose([T.RandomInvert(0.3), T.RandomOrder([
                T.ColorJitter(0.4, 0.4, 0.2, 0.1), T.RandomGrayscale(0.5),
                T.RandomPosterize(3)])]),
            "nested containers": T.Compose([
                T.RandomApply([T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.2, 0.1),
                                               T.RandomOrder([T.RandomInvert(0.5),
                                                              T.RandomGrayscale(0.5)])])], p=0.8),
                T.Compose([T.RandomSolarize(100.0, 0.5), T.RandomEqualize(0.5)])])}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_compile_draws_inside(name, device, fresh_dynamo):
    transform = fresh_draw_transforms()[name]
    compiled = torch.compile(transform, fullgraph=True)
    out = compiled(make_image([4, 3, 8, 8], torch.uint8, device, seed=9))
    assert out.shape == (4, 3, 8, 8) and out.dtype == torch.uint8


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_export_draws_inside(name, device):
    """torch.export of a transform drawing fresh parameters (torch.rand, then the op, given the
    uniforms' factor_ranges where the transform has them): the same draws and values as eager
    for the same generator state, at another batch size too."""
    program = assert_exported_draws(fresh_draw_transforms()[name], device, seed=45)
    assert torch.ops.gpuaug.photometric.default in {n.target for n in program.graph.nodes}


@requires_cuda
@pytest.mark.parametrize("name", list(fresh_draw_transforms()))
def test_cuda_graph_fresh_draws(name):
    """forward's own draws captured with it: each replay draws anew."""
    transform = fresh_draw_transforms()[name]
    image = make_image([8, 3, 16, 16], torch.uint8, "cuda", seed=19)
    outputs = captured_replays(lambda: transform(image))
    assert not torch.equal(outputs[0], outputs[1])


def assert_first_samples_match(out, image, transform, params, samples, normalize):
    """The first samples of a uint8 batch's result against torchvision's; converted (normalize:
    the Compose's dtype, mean and std), within a uint8 value torchvision truncates differently,
    which moves the output by 1 / 255 / std."""
    few = slice(0, samples)
    expected = torchvision_batch(image[few], transform.stages,
                                 {k: v[few] for k, v in params.items()})
    if not normalize:
        assert_matches_torchvision(out[few], expected, torch.uint8)
        return
    expected = F.normalize(F.to_dtype(expected, normalize["dtype"], scale=True),
                           normalize["mean"], normalize["std"])
    diff = (out[few].cpu().double() - expected.double()).abs()
    assert (diff > 1e-5).double().mean().item() < 1e-3
    assert diff.max().item() <= 1 / 255 / min(normalize["std"]) + 1e-5


def kernel_names(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [event.name for event in prof.events() if event.device_type.name == "CUDA"]


def transform_builds(names):
    """The last template argument (JitterKinds) of each two-pass element-wise kernel launched."""
    return [k.split("::transform<")[1].split(">")[0].rsplit(", ", 1)[1] for k in names
            if "::transform<" in k]


@requires_torchvision
@requires_cuda
@pytest.mark.parametrize("size", [(150, 156), (144, 160)])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["ColorJitter", "ColorJitter alone", "RandomPhotometricDistort",
                                  "RandomAutocontrast", "RandomEqualize"])
def test_resident_images(name, out_dtype, channels_last, size):
    """A uint8 batch with a reduction stage that fills the GPU runs with each image in shared
    memory (on Hopper, in two halves, a cluster of two blocks); the same samples a few at a time
    take the two-pass kernels. Both give the same values, torchvision's. Blocks large enough that
    two images an SM fill it. 150x156: an odd number of runs of 8 pixels (the halves differ).
    144x160: each half a whole number of warps' runs, so that the resident kernel takes float
    planes' runs in halves (kRunHalves), and interleaved float32 ones in pairs (kRunPairs).
    ColorJitter alone and RandomPhotometricDistort: programs of jitter kinds alone, which take the
    resident kernel built for those (without the other steps' code); the others the general one."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    image = make_image([2 * sms, 3, *size], torch.uint8, "cuda", seed=31)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    normalize = {} if out_dtype == torch.uint8 else dict(dtype=out_dtype, mean=[0.5, 0.4, 0.3],
                                                         std=[0.2, 0.25, 0.3])
    jitter_kinds = name in ("ColorJitter alone", "RandomPhotometricDistort")
    prefix = [] if jitter_kinds else [T.RandomSolarize(100.0), T.RandomPosterize(6)]
    transform = T.Compose([*prefix, *{
        "ColorJitter": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
        "ColorJitter alone": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
        "RandomPhotometricDistort": [T.RandomPhotometricDistort(p=0.7)],
        "RandomAutocontrast": [T.RandomGrayscale(0.3), T.RandomAutocontrast(0.8),
                               T.ColorJitter(0.4, 0, 0.4, 0.1)],
        "RandomEqualize": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomEqualize(0.8),
                           T.RandomInvert()],
    }[name]], **normalize)
    params = transform.sample_params(image)
    whole = transform(image, params)
    names = kernel_names(lambda: transform(image, params))
    assert any("resident_transform" in k for k in names)
    # planar float outputs take runs in halves, interleaved float32 ones pairs (kRunPairs)
    halves = size == (144, 160) and (out_dtype == torch.float32 if channels_last
                                     else out_dtype != torch.uint8)
    layout = "8, true, true," if channels_last else "8, false, true,"
    assert any("resident_transform" in k and layout in k for k in names) == halves
    assert all(k.split("resident_transform<")[1].split(">")[0].endswith(
        f", {str(jitter_kinds).lower()}") for k in names if "resident_transform" in k)
    pieces = torch.cat([transform(image[n:n + 4], {k: v[n:n + 4] for k, v in params.items()})
                        for n in range(0, image.shape[0], 4)])
    few = kernel_names(lambda: transform(image[:4], {k: v[:4] for k, v in params.items()}))
    assert not any("resident_transform" in k for k in few)
    assert transform_builds(few) == [str(jitter_kinds).lower()]
    assert torch.equal(whole, pieces)
    torch.manual_seed(33)  # fresh draws: the uniforms with their ranges (factor_ranges)
    fresh = transform(image)
    torch.manual_seed(33)
    assert torch.equal(fresh, transform(image, transform.sample_params(image)))
    assert_first_samples_match(whole, image, transform, params, 6, normalize)


@requires_torchvision
@requires_cuda
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("name", ["one pass", "two passes", "other kinds", "unaligned"])
def test_jitter_kinds_transform(name, dtype, channels_last):
    """Programs of jitter kinds alone (is_jitter_kind) on RGB images in 16-byte runs take the
    element-wise kernel built for those kinds (without the other steps' code), with or without
    contrast's reduction pass; other programs, and images not in runs (33x35), the general one.
    Both give torchvision's values."""
    size = [33, 35] if name == "unaligned" else [32, 40]
    image = make_image([4, 3, *size], dtype, "cuda", seed=51)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    transform = T.Compose({
        "one pass": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomChannelPermutation()],
        "two passes": [T.RandomPhotometricDistort(p=0.7)],
        "other kinds": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomInvert()],
        "unaligned": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
    }[name])
    params = transform.sample_params(image)
    out = transform(image, params)
    builds = transform_builds(kernel_names(lambda: transform(image, params)))
    assert builds == [str(name in ("one pass", "two passes")).lower()]
    expected = torchvision_batch(image, transform.stages, params)
    assert_matches_torchvision(out, expected, dtype)


@requires_torchvision
@requires_two_gpus
@pytest.mark.parametrize("name", ["ColorJitter", "RandomAutocontrast", "RandomEqualize"])
def test_second_gpu(name):
    """A batch on cuda:1 while cuda:0 is current runs on cuda:1, on its current stream (a side
    stream here), drawing from a cuda:1 generator. The resident kernel's shared-memory opt-in,
    Hopper check and occupancy are set up per device (cuda:1's first call may come before
    cuda:0's): the whole batch takes it on both GPUs, four images the two-pass kernels, all with
    the same values (uint8 sums are exact in any order), torchvision's."""
    sms = min(torch.cuda.get_device_properties(d).multi_processor_count for d in (0, 1))
    image = make_image([2 * sms, 3, 150, 156], torch.uint8, "cpu", seed=41)
    g = torch.Generator(device="cuda:1").manual_seed(43)
    jitter = T.ColorJitter(0.4, 0.4 if name == "ColorJitter" else 0, 0.4, 0.1, generator=g)
    transform = T.Compose([T.RandomSolarize(100.0, generator=g), jitter, *{
        "ColorJitter": [], "RandomAutocontrast": [T.RandomAutocontrast(0.8, generator=g)],
        "RandomEqualize": [T.RandomEqualize(0.8, generator=g)]}[name]])
    on = {d: image.to(d) for d in ("cuda:1", "cuda:0")}
    with torch.cuda.device(0):
        params = transform.sample_params(on["cuda:1"])
        assert {p.device for p in params.values()} == {torch.device("cuda:1")}
        side = torch.cuda.Stream(device="cuda:1")  # cuda:1's current stream: busy, not default
        side.wait_stream(torch.cuda.current_stream("cuda:1"))
        with torch.cuda.stream(side):
            names = kernel_names(lambda: (transform(on["cuda:1"], params),
                                          torch.cuda.synchronize("cuda:1")))
            whole = transform(on["cuda:1"], params)
        torch.cuda.current_stream("cuda:1").wait_stream(side)
        assert whole.device == torch.device("cuda:1")
        assert any("resident_transform" in k for k in names)
        pieces = transform(on["cuda:1"][:4], {k: v[:4] for k, v in params.items()})
        on_first = transform(on["cuda:0"], {k: v.to("cuda:0") for k, v in params.items()})
    assert torch.equal(pieces, whole[:4])
    assert torch.equal(on_first.cpu(), whole.cpu())
    expected = torchvision_batch(image[:6], transform.stages, {k: v[:6] for k, v in params.items()})
    assert_matches_torchvision(whole[:6], expected, torch.uint8)
    with pytest.raises(RuntimeError,
                       match="expected 'factors' on cuda:1 like 'image', but got cuda:0"):
        gpuaug.photometric(on["cuda:1"], [1], torch.ones(1, device="cuda:0"))


@requires_two_gpus
def test_second_gpu_backward():
    """The float32 backward on cuda:1 (cuda:0 current) gives the CPU kernel's gradient."""
    image = make_image([4, 3, 16, 24], torch.float32, "cpu", seed=45)
    transform = T.ColorJitter(0.4, 0.4, 0.4, 0.0)
    params = transform.sample_params(image)
    grad = torch.randn(image.shape, generator=torch.Generator().manual_seed(46))

    def image_grad(device):
        x = image.to(device).requires_grad_()
        out = transform(x, {k: v.to(device) for k, v in params.items()})
        return torch.autograd.grad(out, [x], grad.to(device))[0]
    with torch.cuda.device(0):
        got = image_grad("cuda:1")
    assert got.device == torch.device("cuda:1")
    torch.testing.assert_close(got.cpu(), image_grad("cpu"), atol=1e-4, rtol=1e-4)


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


@pytest.mark.parametrize("name", ["ColorJitter", "RandomPhotometricDistort", "Compose",
                                  "RandomChannelPermutation", "RandomSolarize", "RandomEqualize",
                                  "ColorAugment", "RandomApply", "RandomApply, own coins",
                                  "RandomChoice", "RandomOrder", "nested containers",
                                  "self-supervised Compose"])
def test_torchscript(name, tmp_path):
    transform = every_transform(torch.uint8)[name]
    scripted = torch.jit.script(transform)
    path = tmp_path / "t.pt"
    scripted.save(str(path))
    loaded = torch.jit.load(str(path))
    image = make_image([3, 3, 8, 8], torch.uint8, "cpu", seed=10)
    params = transform.sample_params(image)
    assert torch.equal(loaded(image, params), transform(image, params))
    assert loaded(image).shape == image.shape


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


@requires_cuda
def test_cuda_graph():
    """Draws and transform captured together: each replay draws anew, as eager would."""
    transform = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomPhotometricDistort()][:1],
                          dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)
    image = make_image([8, 3, 32, 32], torch.uint8, "cuda", seed=12)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        params = transform.sample_params(image)
        transform(image, params)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        params = transform.sample_params(image)
        out = transform(image, params)
    outputs = []
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, transform(image, params))
        outputs.append(out.clone())
    assert not torch.equal(outputs[0], outputs[1])


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


def meta_image():
    return torch.empty([2, 3, 4, 4], dtype=torch.uint8, device="meta")


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("call, message", [
    (lambda i, d: gpuaug.photometric(i[0, 0], [1], torch.ones(1, device=d)),
     r"expected 'image' of shape \[C, H, W\], \[N, C, H, W\] or \[N, T, C, H, W\], but got 2-d"),
    (lambda i, d: gpuaug.photometric(i.int(), [1], torch.ones(1, device=d)),
     "expected 'image' of dtype float32, float64, float16, bfloat16 or uint8, but got Int"),
    (lambda i, d: gpuaug.photometric(i[:, :2], [1], torch.ones(1, device=d)),
     "expected 'image' with 1 or 3 channels .*but got 2"),
    (lambda i, d: gpuaug.photometric(i, [1] * 17, torch.ones(17, device=d)),
     "expected at most 16 'stages', but got 17"),
    (lambda i, d: gpuaug.photometric(i, [14], torch.ones(1, device=d)),
     "expected 'stages' of codes 1 to 13 .*but got 14 at index 0"),
    (lambda i, d: gpuaug.photometric(i, [12, 13, 13, 13, 13, 1], torch.ones(6, device=d)),
     "expected the color_augment slot at index 0 followed by 5 parameter slots .*but got 4"),
    (lambda i, d: gpuaug.photometric(i, [1, 13], torch.ones(2, device=d)),
     r"expected each color_augment parameter slot \(code 13\) among the 5 after a "
     r"color_augment slot \(code 12\), but got one at index 1"),
    (lambda i, d: gpuaug.photometric(i, [2, 11], torch.ones(2, device=d)),
     r"expected at most one reduction stage \(contrast, autocontrast or equalize\) per call, "
     "but got 2"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(2, device=d)),
     r"expected 'factors' of shape \[1\] or \[2, 1\] .*but got \[2\]"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, dtype=torch.int64, device=d)),
     "expected 'factors' of dtype float32, float64, float16 or bfloat16, but got Long"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d),
                                     order=torch.zeros(1, dtype=torch.int32, device=d)),
     r"expected 'order' of dtype int64 \(permutations\) or floating \(keys\), but got Int"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d),
                                     apply=torch.ones(3, 1, dtype=torch.bool, device=d)),
     r"expected 'apply' of shape \[1\] or \[2, 1\]"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d), dtype=torch.int32),
     "expected 'dtype' to be the image's dtype, a floating dtype for a uint8 image or uint8 "
     "for a floating one, but got Int for a Byte image"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d), mean=[0.5] * 3,
                                     std=[1.0] * 3),
     "'mean' and 'std' need a floating output dtype, but the output is Byte"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d), dtype=torch.float32,
                                     mean=[0.5] * 3),
     "'mean' and 'std' normalise together"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d), dtype=torch.float32,
                                     mean=[0.5] * 2, std=[1.0] * 2),
     "expected 'mean' of length 3 .*but got 2"),
    (lambda i, d: gpuaug.photometric(i, [1], torch.ones(1, device=d), dtype=torch.float32,
                                     mean=[0.5] * 3, std=[1.0, 0.0, 1.0]),
     "'std' must not contain 0"),
])
def test_bad_inputs(call, message, device):
    image = meta_image() if device == "meta" else torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="gpuaug::photometric: " + message):
        call(image, device)


@pytest.mark.parametrize("stage, factor, message", [
    (Stage.BRIGHTNESS, -0.5, r"the brightness factor \(slot 0\) >= 0, but got -0.5"),
    (Stage.HUE, 0.7, r"the hue factor \(slot 0\) in \[-0.5, 0.5\], but got 0.7"),
    (Stage.SOLARIZE, 300.0, r"the solarize factor \(slot 0\) <= 255"),
    (Stage.POSTERIZE, 2.5, r"the posterize factor \(slot 0\) an integer in \[0, 8\]"),
    (Stage.PERMUTE_CHANNELS, 4.0, r"the permute_channels factor \(slot 0\) .* a permutation"),
])
def test_bad_factor_values(stage, factor, message):
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="gpuaug::photometric: expected " + message):
        gpuaug.photometric(image, [stage], torch.tensor([factor]))


@pytest.mark.parametrize("gamma", [0.0, -1.0, float("nan")])
def test_bad_color_augment_gamma(gamma):
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match=r"gpuaug::photometric: expected the color_augment "
                                           r"gamma factor \(slot 5\) > 0, but got"):
        gpuaug.photometric(image, COLOR_AUGMENT, torch.tensor([1, 1, 1, 0, 1, gamma]))


def test_bad_order_values():
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    order = torch.tensor([[0, 1], [1, 1]])
    with pytest.raises(RuntimeError, match=r"row 1 is \[1, 1\]"):
        gpuaug.photometric(image, [1, 8], torch.ones(2), order=order)


@pytest.mark.parametrize("name, call", [
    ("factors", lambda i: gpuaug.photometric(i, [Stage.BRIGHTNESS], torch.ones(1, device="meta"))),
    ("order", lambda i: gpuaug.photometric(i, [Stage.BRIGHTNESS], torch.ones(1),
                                           order=torch.zeros(1, dtype=torch.int64, device="meta"))),
    ("apply", lambda i: gpuaug.photometric(i, [Stage.BRIGHTNESS], torch.ones(1),
                                           apply=torch.ones(1, dtype=torch.bool, device="meta"))),
    ("factors", lambda i: gpuaug.photometric(  # drawn: uniforms
        i, DRAWN_STAGES, torch.rand(9, device="meta"),
        factor_ranges=[v for row in DRAWN_TERMS for v in row])),
])
def test_argument_on_another_device(name, call):
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match=f"gpuaug::photometric: expected '{name}' on cpu like "
                                           "'image', but got meta"):
        call(image)


@requires_cuda
def test_device_mix():
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8, device="cuda")
    with pytest.raises(RuntimeError, match="expected 'factors' on cuda:0 like 'image', but got cpu"):
        gpuaug.photometric(image, [1], torch.ones(1))
