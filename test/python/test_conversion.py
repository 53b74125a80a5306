"""Grayscale, ToDtype and Normalize: torchvision's transforms that draw nothing, alone against
torchvision's, and as a Compose's output conversion in the same call of the op."""
from unittest import mock

import pytest
import torch
from gpuaug_testing import (DEVICES, IMAGE_DTYPES, assert_exported_draws, captured_replays,
                            make_image, requires_cuda)

import gpuaug.transforms as T

try:  # the newest PyTorch may have no torchvision released for it yet
    from torchvision import tv_tensors
    from torchvision.transforms import v2
except ImportError:
    v2 = None

requires_torchvision = pytest.mark.skipif(
    v2 is None, reason="torchvision is not installed (none may be released for this PyTorch yet)")

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def assert_close_to(out, expected, tolerance):
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert (out.cpu().double() - expected.double()).abs().max().item() <= tolerance


def ulps(dtype):
    # a few units in the last place of the half types; float32 and float64 within 1e-5
    return {torch.float16: 4 * 2.0 ** -10, torch.bfloat16: 4 * 2.0 ** -7}.get(dtype, 1e-5)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("outputs", [1, 3])
@pytest.mark.parametrize("shape", [[5, 3, 9, 13], [3, 7, 6], [2, 4, 3, 5, 6]])
def test_grayscale(shape, outputs, dtype, device):
    image = make_image(shape, dtype, device, seed=len(shape) + outputs)
    out = T.Grayscale(outputs)(image)
    expected = v2.Grayscale(outputs)(image.cpu())
    if dtype == torch.uint8:
        assert torch.equal(out.cpu(), expected)
    else:
        assert_close_to(out, expected, ulps(dtype))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_grayscale_layouts_and_one_channel(device):
    image = make_image([4, 3, 8, 10], torch.uint8, device, seed=3)
    last = image.contiguous(memory_format=torch.channels_last)
    assert torch.equal(T.Grayscale()(last).cpu(), v2.Grayscale()(image.cpu()))
    gray = image[:, :1].contiguous()
    assert torch.equal(T.Grayscale()(gray), gray)
    # three channels of a 1-channel image: its plane repeated, a new tensor (not its grayscale)
    three = T.Grayscale(3)(gray)
    assert torch.equal(three.cpu(), v2.Grayscale(3)(gray.cpu())) and three.is_contiguous()


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", FLOATS)
def test_to_dtype_from_uint8_and_back(out_dtype, device):
    image = make_image([3, 3, 11, 7], torch.uint8, device, seed=4)
    out = T.ToDtype(out_dtype, scale=True)(image)
    expected = v2.ToDtype(out_dtype, scale=True)(image.cpu())
    assert_close_to(out, expected, 0.0)
    # floating to uint8, as to_dtype(scale=True): x * 255.999, truncated
    floating = make_image([3, 3, 11, 7], out_dtype, device, seed=5)
    back = T.ToDtype(torch.uint8, scale=True)(floating)
    expected = v2.ToDtype(torch.uint8, scale=True)(floating.cpu())
    # where a half type's x * 255.999 rounds to 256, torchvision's cast wraps to 0; gpuaug's 255
    expected[floating.cpu() * 255.999 >= 256] = 255
    assert torch.equal(back.cpu(), expected)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("one_value", [False, True])
def test_normalize(one_value, dtype, device):
    image = make_image([4, 3, 6, 9], dtype, device, seed=6)
    mean, std = ([0.45], [0.27]) if one_value else (MEAN, STD)
    out = T.Normalize(mean, std)(image)
    expected = v2.Normalize(mean, std)(image.cpu())
    # one multiply-add by 1 / std: within two of the dtype's units of torchvision's (1e-5: float)
    tolerance = ulps(dtype) * 4 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert_close_to(out, expected, tolerance)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_uint8_to_float64_normalized_as_torchvision(channels_last, device):
    """float64 from uint8 is torchvision's arithmetic in float64: the same values."""
    image = make_image([3, 3, 16, 16], torch.uint8, "cpu", seed=15)
    image.view(-1)[:256] = torch.arange(256, dtype=torch.uint8)  # every value
    pipeline = [T.RandomInvert(1.0), T.ToDtype(torch.float64, scale=True), T.Normalize(MEAN, STD)]
    reference = v2.Compose([v2.RandomInvert(1.0), v2.ToDtype(torch.float64, scale=True),
                            v2.Normalize(MEAN, STD)])
    on_device = image.to(device)
    if channels_last:
        on_device = on_device.contiguous(memory_format=torch.channels_last)
    assert torch.equal(T.Compose(pipeline)(on_device).cpu(), reference(image))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_compose_ends_in_grayscale(channels_last, device):
    """Deterministic end to end: torchvision's Compose on the whole batch."""
    image = make_image([4, 3, 10, 12], torch.uint8, device, seed=7)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    steps = [T.RandomInvert(1.0), T.Grayscale(), T.ToDtype(torch.float32, scale=True),
             T.Normalize([0.5], [0.25])]
    reference = v2.Compose([v2.RandomInvert(1.0), v2.Grayscale(),
                            v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5], [0.25])])
    transform = T.Compose(steps)
    calls = []
    op = torch.ops.gpuaug.photometric

    def recorded(image, *args, **kwargs):
        calls.append((image.shape[-3], image.dtype, kwargs.get("dtype")))
        return op(image, *args, **kwargs)

    with mock.patch.object(torch.ops.gpuaug, "photometric", recorded):
        out = transform(image)
        replayed = transform(image, transform.sample_params(image))
    assert out.shape == (4, 1, 10, 12)
    assert_close_to(out, reference(image.cpu()), 1e-5)
    assert torch.equal(replayed, out)
    # the grayscale in uint8, then its first plane alone converted, fresh and replayed
    assert calls == 2 * [(3, torch.uint8, None), (1, torch.uint8, torch.float32)]


@pytest.mark.parametrize("device", DEVICES)
def test_trailing_conversion_is_the_composes_own(device):
    """ToDtype and Normalize last in a Compose: the same call and values as its keywords,
    for the same draws (fresh and replayed)."""
    image = make_image([6, 3, 9, 8], torch.uint8, device, seed=8)
    jitter = [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.3)]
    listed = T.Compose(jitter + [T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    keywords = T.Compose(jitter, dtype=torch.float32, mean=MEAN, std=STD)
    assert (listed.dtype, listed.mean, listed.std) == (keywords.dtype, keywords.mean,
                                                       keywords.std)
    assert listed.program == keywords.program and len(listed.program_bounds) == 2
    torch.manual_seed(8)
    drawn = listed(image)
    torch.manual_seed(8)
    assert torch.equal(drawn, keywords(image))
    params = keywords.sample_params(image)
    assert torch.equal(listed(image, params), keywords(image, params))
    assert drawn.dtype == torch.float32 and drawn.shape == image.shape
    # a trailing ToDtype alone, and a Normalize after the keyword's dtype
    to_float = T.Compose(jitter + [T.ToDtype(torch.float16, scale=True)])
    assert to_float(image, params).dtype == torch.float16
    normalized = T.Compose(jitter + [T.Normalize([0.5], [0.5])], dtype=torch.float32)
    assert torch.equal(normalized(image, params),
                       T.Compose(jitter, dtype=torch.float32, mean=[0.5] * 3,
                                 std=[0.5] * 3)(image, params))


@pytest.mark.parametrize("device", DEVICES)
def test_conversion_alone_compose(device):
    image = make_image([2, 3, 5, 6], torch.uint8, device, seed=9)
    convert = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    expected = (image.double() / 255 - torch.tensor(MEAN, dtype=torch.float64, device=device)
                .view(3, 1, 1)) / torch.tensor(STD, dtype=torch.float64, device=device).view(3, 1, 1)
    assert_close_to(convert(image), expected.float().cpu(), 1e-5)


# Pipelines with ToDtype and Normalize inside: (name, arguments) of transforms that draw nothing
# or apply always, built alike of gpuaug's and torchvision's
INNER_CONVERSIONS = {
    "float_first": [("ToDtype", torch.float32), ("RandomInvert", 1.0),
                    ("RandomSolarize", 0.6, 1.0), ("Normalize", MEAN, STD)],
    "normalized_then_more": [("RandomPosterize", 3, 1.0), ("ToDtype", torch.float32),
                             ("Normalize", [0.5], [0.2]), ("RandomAutocontrast", 1.0),
                             ("ToDtype", torch.float64)],
    "back_to_uint8": [("RandomInvert", 1.0), ("ToDtype", torch.float32),
                      ("RandomGrayscale", 1.0), ("ToDtype", torch.uint8),
                      ("RandomEqualize", 1.0), ("ToDtype", torch.float32),
                      ("Normalize", [0.5], [0.25])],
}


def built(module, spec):
    return [module.ToDtype(*arguments, scale=True) if name == "ToDtype"
            else getattr(module, name)(*arguments) for name, *arguments in spec]


def sliced(params, first, end):
    """A Compose's params for its slots first..end: those of the transform there."""
    order = params["order"][:, first:end]
    return {"factors": params["factors"][:, first:end], "apply": params["apply"][:, first:end],
            "order": order if order.is_floating_point() else order - first}


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("name", sorted(INNER_CONVERSIONS))
def test_conversions_inside_a_compose(name, channels_last, device):
    """ToDtype and Normalize anywhere in a Compose: each ends a call of the op, converting
    there, as torchvision's Compose runs them in turn; the whole batch against torchvision's."""
    image = make_image([4, 3, 10, 12], torch.uint8, device, seed=17)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    spec = INNER_CONVERSIONS[name]
    out = T.Compose(built(T, spec))(image)
    expected = v2.Compose(built(v2, spec))(image.cpu())
    assert out.dtype == expected.dtype and out.shape == expected.shape
    assert_close_to(out, expected, 1e-5)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_composes_that_convert_inside_a_compose(device):
    """A held Compose that converts (ToDtype and Normalize inside, or its dtype, mean and std)
    stands as its transforms and conversions: torchvision's nested Composes' values."""
    image = make_image([4, 3, 10, 12], torch.uint8, device, seed=26)
    inner = T.Compose([T.RandomInvert(1.0), T.ToDtype(torch.float32, scale=True),
                       T.RandomSolarize(0.5, 1.0)], mean=MEAN, std=STD)
    outer = T.Compose([T.RandomPosterize(4, 1.0), inner, T.RandomAutocontrast(1.0),
                       T.Compose([T.RandomInvert(1.0)], dtype=torch.float64)])
    assert [type(t).__name__ for t in outer.transforms] == [
        "RandomPosterize", "RandomInvert", "ToDtype", "RandomSolarize", "Normalize",
        "RandomAutocontrast", "RandomInvert", "ToDtype"]
    # its own conversion after theirs
    twice = T.Compose([T.Compose([T.RandomInvert(1.0)], dtype=torch.float32)],
                      dtype=torch.float64)
    assert twice(image).dtype == torch.float64
    expected = v2.Compose([
        v2.RandomPosterize(4, 1.0),
        v2.Compose([v2.RandomInvert(1.0), v2.ToDtype(torch.float32, scale=True),
                    v2.RandomSolarize(0.5, 1.0), v2.Normalize(MEAN, STD)]),
        v2.RandomAutocontrast(1.0),
        v2.Compose([v2.RandomInvert(1.0), v2.ToDtype(torch.float64, scale=True)])])(image.cpu())
    assert_close_to(outer(image), expected, 1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_conversions_inside_a_compose_draw_per_sample(device):
    """Fresh draws and replayed params through the calls the conversions end: the values of
    the transforms run one after the other, each with its slots of the params."""
    image = make_image([6, 3, 9, 8], torch.uint8, device, seed=18)
    jitter, autocontrast = T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomAutocontrast(0.5)
    to_float, normalize = T.ToDtype(torch.float32, scale=True), T.Normalize([0.5], [0.25])
    compose = T.Compose([to_float, jitter, normalize, autocontrast,
                         T.ToDtype(torch.float64, scale=True)])
    # calls: the conversion alone, the jitter normalised, autocontrast then float64
    assert compose.program_bounds == [0, 0, 4, 5] and compose.program_outputs == [0, 1, 2]
    torch.manual_seed(19)
    drawn = compose(image)
    torch.manual_seed(19)
    params = compose.sample_params(image)
    replayed = compose(image, params)
    assert torch.equal(drawn, replayed) and replayed.dtype == torch.float64
    jittered = normalize(jitter(to_float(image), sliced(params, 0, 4)))
    expected = autocontrast(jittered, sliced(params, 4, 5)).double()
    assert torch.equal(replayed, expected)
    assert not torch.equal(params["factors"][0], params["factors"][1])  # per sample


# deterministic pipelines that give a 1-channel image three channels, as torchvision's do
TO_THREE_CHANNELS = {
    "grayscale_3": [("Grayscale", 3)],
    "rgb": [("RGB",)],
    "rgb_inside": [("RandomInvert", 1.0), ("RGB",), ("ColorJitter", None, (0.5, 0.5)),
                   ("ToDtype", torch.float32), ("Normalize", MEAN, STD)],
    # its grayscale of three equal values would differ: the plane is repeated instead
    "grayscale_3_then_reductions": [("ColorJitter", None, (0.5, 0.5)), ("Grayscale", 3),
                                    ("RandomAutocontrast", 1.0), ("Grayscale", 3),
                                    ("RandomEqualize", 1.0)],
    "rgb_last": [("RandomPosterize", 3, 1.0), ("ToDtype", torch.float32), ("RGB",)],
    # torchvision's Normalize broadcasts a plane over three means; the Grayscale(3) after it
    # then takes three channels
    "normalize_broadcasts": [("ToDtype", torch.float32), ("Normalize", [0.5], [0.25]),
                             ("Normalize", MEAN, STD), ("Grayscale", 3), ("Normalize", MEAN, STD)],
    "grayscale_1_then_three_means": [("RandomSolarize", 100.0, 1.0), ("Grayscale", 1),
                                     ("ToDtype", torch.float32), ("Normalize", MEAN, STD)],
}


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("name", sorted(TO_THREE_CHANNELS))
def test_three_channels_of_one(name, channels, device):
    """Grayscale(3), RGB and a Normalize of three means give a 1-channel image three channels
    where they stand, torchvision's plane repeated (a 3-channel image: as before); the whole
    batch against torchvision's Compose, planar and channels_last."""
    image = make_image([3, channels, 10, 12], torch.uint8, device, seed=23)
    spec = TO_THREE_CHANNELS[name]
    expected = v2.Compose(built(v2, spec))(image.cpu())
    for layout in (torch.contiguous_format, torch.channels_last):
        compose = T.Compose(built(T, spec))
        laid_out = image.contiguous(memory_format=layout)
        for out in (compose(laid_out), compose(laid_out, compose.sample_params(laid_out))):
            assert out.shape == expected.shape and out.shape[1] == 3
            assert_close_to(out, expected, 1e-5 if out.is_floating_point() else 0)
    if len(spec) == 1:  # alone too
        assert torch.equal(built(T, spec)[0](image).cpu(), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("expanding", ["RGB", "Grayscale"])
def test_three_channels_of_one_draw_per_sample(expanding, device):
    """Fresh draws and replayed params across the repeat: the values of the jitter on the
    plane, the plane repeated, then the second jitter on the three, each with its slots (a
    Grayscale's slot between them, which the repeat takes the place of)."""
    image = make_image([5, 1, 9, 8], torch.uint8, device, seed=24)
    # the second without contrast: the same call as the first (one reduction), split there
    first, second = T.ColorJitter(0.4, 0.4), T.ColorJitter(0.4, 0, 0.4, 0.1)
    between = T.RGB() if expanding == "RGB" else T.Grayscale(3)
    compose = T.Compose([first, between, second, T.ToDtype(torch.float32, scale=True)])
    torch.manual_seed(25)
    drawn = compose(image)
    torch.manual_seed(25)
    params = compose.sample_params(image)
    replayed = compose(image, params)
    assert torch.equal(drawn, replayed) and replayed.shape == (5, 3, 9, 8)
    plane = T.Compose([first])(image, sliced(params, 0, 2))  # its program's two slots
    after = 2 + len(between.program)
    assert compose.program_bounds == [0, after + 3]
    expected = T.Compose([second])(plane.expand(-1, 3, -1, -1).contiguous(),
                                   sliced(params, after, after + 3))
    assert torch.equal(replayed, T.ToDtype(torch.float32, scale=True)(expected))


@pytest.mark.parametrize("device", DEVICES)
def test_nothing_to_do_is_the_image_itself(device):
    """As torchvision's to_dtype and its ColorJitter with nothing to adjust: no copy."""
    image = make_image([2, 3, 5, 7], torch.uint8, device, seed=21)
    assert T.ToDtype(torch.uint8, scale=True)(image) is image
    assert T.ColorJitter()(image) is image
    assert T.Compose([T.ToDtype(torch.uint8, scale=True), T.ColorJitter()])(image) is image
    assert T.ToDtype(torch.float32, scale=True)(image) is not image


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_to_dtype_between_floating_dtypes(dtype, device):
    """torchvision's ToDtype from one floating dtype to another is a cast."""
    image = make_image([2, 3, 5, 7], torch.float32, device, seed=20) / 255
    out = T.ToDtype(dtype, scale=True)(image)
    assert torch.equal(out.cpu(), v2.ToDtype(dtype, scale=True)(image.cpu()))
    normalized = T.Compose([T.ToDtype(dtype, scale=True), T.Normalize(MEAN, STD)])(image)
    expected = v2.Normalize(MEAN, STD)(image.cpu().to(dtype))
    assert_close_to(normalized, expected, ulps(dtype))


def test_errors():
    image = make_image([2, 3, 4, 4], torch.uint8, "cpu", seed=10)
    with pytest.raises(ValueError, match="num_output_channels must be 1 or 3, got 2."):
        T.Grayscale(2)
    with pytest.raises(ValueError, match=r"ToDtype: expected scale=True \(the op converts as "
                       r"to_dtype\(scale=True\)\); for an unscaled cast use image.to\(dtype\)"):
        T.ToDtype(torch.float32)
    with pytest.raises(TypeError, match="ToDtype: expected 'dtype' as a torch.dtype"):
        T.ToDtype({torch.Tensor: torch.float32}, scale=True)
    with pytest.raises(RuntimeError, match="'mean' and 'std' need a floating output dtype"):
        T.Normalize(MEAN, STD)(image)
    with pytest.raises(ValueError, match=r"Compose: ColorJitter in it converts its own output "
                       r"\(dtype, mean and std\): put the conversions in this Compose instead, "
                       "where they stand"):
        T.Compose([T.ColorJitter(0.4, dtype=torch.float32)])
    # each transform's check sees its input's dtype: a float image's threshold is at most 1
    solarize_float = T.Compose([T.ToDtype(torch.float32, scale=True), T.RandomSolarize(128.0)])
    for call in (solarize_float, solarize_float.sample_params):
        with pytest.raises(TypeError, match="Threshold should be less or equal the maximum "
                           "value of the dtype, but got 128.0"):
            call(image)
    assert T.Compose([T.RandomSolarize(128.0), T.ToDtype(torch.float32, scale=True),
                      T.RandomSolarize(0.5)])(image).dtype == torch.float32
    with pytest.raises(ValueError, match="got both 'dtype' and a trailing ToDtype"):
        T.Compose([T.ToDtype(torch.float32, scale=True)], dtype=torch.float32)
    with pytest.raises(ValueError, match="got both 'mean' and 'std' and a trailing Normalize"):
        T.Compose([T.Normalize(MEAN, STD)], dtype=torch.float32, mean=MEAN, std=STD)
    with pytest.raises(ValueError, match=r"Grayscale\(num_output_channels=1\) leaves one "
                       "channel, so it comes last .* but RandomInvert follows it"):
        T.Compose([T.Grayscale(), T.RandomInvert()])
    gray = make_image([2, 1, 4, 4], torch.uint8, "cpu", seed=22)
    for container in (T.RandomApply, T.RandomChoice, T.RandomOrder):
        for expanding in (T.Grayscale(3), T.RGB(), T.Compose([T.RandomInvert(), T.RGB()])):
            held = container([T.RandomInvert(), expanding])
            assert held(image).shape == image.shape  # three channels already: nothing to expand
            with pytest.raises(ValueError, match=rf"{container.__name__}: a Grayscale\("
                               r"num_output_channels=3\) or RGB in it would give a 1-channel "
                               "image three channels in some samples only: put it before"):
                held(gray)
    with pytest.raises(ValueError, match="RGB: expected an image of 1 or 3 channels, got 2"):
        T.RGB()(image[:, :2])
        with pytest.raises(ValueError, match=r"Grayscale\(num_output_channels=1\) in it would "
                           "leave samples of one channel and samples of three"):
            container([T.Grayscale()])
        with pytest.raises(ValueError, match=r"or ToDtype and Normalize\) to a Compose "
                           "around it"):
            container([T.Normalize(MEAN, STD)])
    # inside a Compose that ends a Compose, Grayscale(1) ends the outer one too
    nested = T.Compose([T.RandomInvert(1.0), T.Compose([T.RandomSolarize(100.0), T.Grayscale()])])
    assert nested(image).shape == (2, 1, 4, 4)
    with pytest.raises(ValueError, match="but RandomInvert follows it"):
        T.Compose([T.Compose([T.Grayscale()]), T.RandomInvert()])


@requires_torchvision
def test_torchvision_inputs():
    """An RGB PIL image becomes an L image through Grayscale(1); a tv_tensors.Image stays one."""
    from PIL import Image
    pixels = make_image([3, 6, 5], torch.uint8, "cpu", seed=11)
    rgb = Image.fromarray(pixels.permute(1, 2, 0).numpy())
    gray = T.Grayscale()(rgb)
    assert gray.mode == "L" and gray.size == rgb.size
    assert torch.equal(torch.from_numpy(__import__("numpy").array(gray)),
                       T.Grayscale()(pixels)[0])
    image = tv_tensors.Image(pixels)
    out = T.Compose([T.Grayscale(3), T.ToDtype(torch.float32, scale=True)])(image)
    assert isinstance(out, tv_tensors.Image) and out.dtype == torch.float32


# each a pipeline and the channels of its input
PIPELINES = {
    "grayscale": (lambda: T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.Grayscale(),
                                     T.ToDtype(torch.float32, scale=True),
                                     T.Normalize([0.5], [0.25])]), 3),
    "inner_conversions": (lambda: T.Compose([
        T.ToDtype(torch.float32, scale=True), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.Normalize(MEAN, STD), T.RandomAutocontrast(0.5), T.ToDtype(torch.float64, scale=True)]),
        3),
    "one_channel_to_three": (lambda: T.Compose([
        T.ColorJitter(0.4, 0.4), T.RGB(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]), 1),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_torchscript_compile_export(name, device, fresh_dynamo):
    make, channels = PIPELINES[name]
    transform = make()
    image = make_image([4, channels, 9, 11], torch.uint8, device, seed=12)
    params = transform.sample_params(image)
    expected = transform(image, params)
    assert expected.shape == (4, 1 if name == "grayscale" else 3, 9, 11)
    assert torch.equal(torch.jit.script(transform)(image, params), expected)
    assert torch.equal(torch.compile(transform, fullgraph=True)(image, params), expected)
    assert_exported_draws(transform, device, seed=13, channels=channels)


@requires_cuda
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_cuda_graph(name):
    """The fresh draws, the output's plane and the inner conversions inside one capture: each
    replay draws anew."""
    make, channels = PIPELINES[name]
    transform = make()
    image = make_image([8, channels, 16, 16], torch.uint8, "cuda", seed=14)
    outputs = captured_replays(lambda: transform(image))
    assert outputs[0].shape == (8, 1 if name == "grayscale" else 3, 16, 16)
    assert not torch.equal(outputs[0], outputs[1])
    assert torch.equal(captured_replays(lambda: T.Grayscale(3)(image), 1)[0],
                       T.Grayscale(3)(image))
