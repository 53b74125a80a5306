"""Helpers of the test_photometric_*.py suites: torchvision's programs image by image, the
transforms of every kind, strided planes, the long form's slots."""

import pytest
import torch
try:  # the newest PyTorch may have no torchvision released for it yet
    import torchvision.transforms.v2.functional as F
except ImportError:
    F = None

import gpuaug
from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import make_image

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


COLOR_AUGMENT = [Stage.COLOR_AUGMENT] + [Stage.COLOR_PARAMETER] * 5


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


# Six slots of the long form (low, width, factor column, coin column, coin bound, key column,
# key low, key width): columns shared and unused, no coin (-1), no factor column (invert's),
# coins never and always taken, key widths negative and 0, a 53-bit key width.
DRAWN_STAGES = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE, Stage.INVERT,
                Stage.PERMUTE_CHANNELS]


DRAWN_TERMS = [[0.6, 0.5, 0.6, -0.1, 0.0, 0.0], [0.8, 1.0, 0.8, 0.2, 0.0, 6.0],
               [0, 1, 2, 3, -1, 4], [-1, 5, 6, 7, 8, 5], [2.0, 0.7, 0.5, 0.0, 0.4, 1.5],
               [5, 8, 2, -1, 0, 1], [0.0, 0.2, -1.0, 0.5, 0.25, 0.0],
               [1.0, 0.5, 3.0 + 2.0 ** -45, 0.0, 1.0, -2.0]]
