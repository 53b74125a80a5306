"""gpuaug::photometric's and the photometric transforms' errors: bad arguments, shapes, devices and
parameters, each with a message naming what was expected."""

import re

import pytest
import torch

import gpuaug
from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import (DEVICES, make_image, requires_cuda)
from photometric_testing import (COLOR_AUGMENT, DRAWN_STAGES, DRAWN_TERMS)


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


def test_color_augment_compose_errors():
    with pytest.raises(ValueError, match="the output conversion is the Compose's own"):
        T.Compose([T.ColorAugment(dtype=torch.float32)])
    with pytest.raises(ValueError, match="one colour range, or one per channel of a 3-channel "
                                         "image, but got 2 ranges"):
        T.Compose([T.ColorAugment(color=[(0.9, 1.1), (0.8, 1.2)])])
    with pytest.raises(ValueError, match="ColorAugment: 3 colour ranges for an image of 1"):
        T.Compose([T.ColorAugment(color=[(0.9, 1.1)] * 3)])(torch.zeros(2, 1, 4, 4))


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


class _MetaGenerator:
    """Stands in for a generator on the meta device, which torch.Generator refuses to make in
    some releases and rand refuses to draw with in others: the check reads its device alone."""
    device = torch.device("meta")


@pytest.mark.parametrize("image_device", ["cpu", "meta"])
def test_generator_on_the_meta_device(image_device):
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8, device=image_device)
    inner = T.RandomInvert()  # a Compose's transform, its own generator
    transforms = {"ColorJitter": T.ColorJitter(0.4), "ColorAugment": T.ColorAugment(),
                  "RandomApply": T.RandomApply([T.RandomInvert()]),
                  "RandomInvert": T.Compose([inner])}
    for name, transform in transforms.items():
        (inner if name == "RandomInvert" else transform).generator = _MetaGenerator()
        with pytest.raises(ValueError, match=rf"gpuaug.transforms.{name}: expected 'generator' "
                           rf"as a torch.Generator of the image's device \({image_device}\) or "
                           "None, but got a generator on the meta device, which cannot draw"):
            transform.sample_params(image) if image_device == "meta" else transform(image)


def test_factors_as_a_list():
    image = torch.zeros([2, 3, 4, 4], dtype=torch.uint8)
    with pytest.raises(TypeError, match=r"gpuaug.photometric: expected 'factors' as a floating "
                       r"tensor \(\[K\] or \[N, K\]\) on the image's device, but got list"):
        gpuaug.photometric(image, [Stage.BRIGHTNESS], [1.2])
