"""gpuaug.functional: torchvision.transforms.v2.functional's photometric functions with a value per
sample, against torchvision's applied image by image with that sample's value."""
import pytest
import torch
from gpuaug_testing import (DEVICES, IMAGE_DTYPES, assert_matches_torchvision, make_image,
                            requires_cuda)

import gpuaug.functional as GF

try:  # the newest PyTorch may have no torchvision released for it yet
    import torchvision.transforms.v2.functional as F
except ImportError:
    F = None

requires_torchvision = pytest.mark.skipif(
    F is None, reason="torchvision is not installed (none may be released for this PyTorch yet)")


def values(name, n, dtype, seed):
    """Per-sample values of the function's argument, float64 (one sample's: 0.9 of the range
    and its far end, so that clamps and thresholds are met)."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    low, high = {"adjust_brightness": (0.0, 2.0), "adjust_contrast": (0.0, 2.0),
                 "adjust_saturation": (0.0, 2.0), "adjust_hue": (-0.5, 0.5),
                 "solarize": (0.0, 255.0 if dtype == torch.uint8 else 1.0)}[name]
    return low + (high - low) * u


TAKES_A_VALUE = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
                 "solarize"]


def torchvision_each(name, image, arguments):
    """torchvision's function on each sample with its own argument."""
    fn = getattr(F, name)
    return torch.stack([fn(image[i].cpu(), argument) for i, argument in enumerate(arguments)])


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("name", TAKES_A_VALUE)
def test_a_value_per_sample(name, channels, dtype, device):
    image = make_image([6, channels, 11, 13], dtype, device, seed=channels)
    per_sample = values(name, 6, dtype, seed=len(name))
    out = getattr(GF, name)(image, per_sample.to(device))
    expected = torchvision_each(name, image, per_sample.tolist())
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=name != "solarize")
    # a number: every sample alike, as torchvision's
    number = float(per_sample[0])
    assert_matches_torchvision(getattr(GF, name)(image, number), getattr(F, name)(image.cpu(), number),
                               dtype, differentiable_chain=name != "solarize")


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
def test_posterize(dtype, device):
    image = make_image([9, 3, 7, 10], dtype, device, seed=3)
    bits = torch.arange(9)
    out = GF.posterize(image, bits.to(device))
    expected = torchvision_each("posterize", image, bits.tolist())
    assert_matches_torchvision(out, expected, dtype, differentiable_chain=False)
    assert torch.equal(GF.posterize(image, 3), GF.posterize(image, torch.tensor(3, device=device)))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["invert", "autocontrast", "equalize"])
def test_no_value(name, dtype, device):
    image = make_image([4, 3, 12, 9], dtype, device, seed=5)
    image[1] = image[1] // 3 if dtype == torch.uint8 else image[1] / 3  # a narrow range
    expected = getattr(F, name)(image.cpu())
    assert_matches_torchvision(getattr(GF, name)(image), expected, dtype)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("outputs", [1, 3])
def test_rgb_to_grayscale(outputs, channels, device):
    image = make_image([4, channels, 6, 7], torch.uint8, device, seed=6)
    out = GF.rgb_to_grayscale(image, num_output_channels=outputs)
    assert out.shape == (4, outputs, 6, 7)
    assert torch.equal(out.cpu(), F.rgb_to_grayscale(image.cpu(), num_output_channels=outputs))
    assert out.is_contiguous()  # a tensor of its own, as torchvision's repeat (not a view)


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_permute_channels(device):
    image = make_image([6, 3, 5, 4], torch.uint8, device, seed=7)
    permutations = torch.tensor([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1],
                                 [2, 1, 0]])
    out = GF.permute_channels(image, permutations.to(device))
    assert torch.equal(out.cpu(), torchvision_each("permute_channels", image,
                                                   permutations.tolist()))
    for permutation in ([2, 0, 1], permutations[4].to(device)):
        assert torch.equal(GF.permute_channels(image, permutation).cpu(),
                           F.permute_channels(image.cpu(), [2, 0, 1]))
    gray = image[:, :1]
    assert torch.equal(GF.permute_channels(gray, [0]), gray)


@pytest.mark.parametrize("device", DEVICES)
def test_video_frames_share_their_value(device):
    """[N, T, C, H, W]: each frame takes its sample's value."""
    video = make_image([3, 4, 3, 5, 6], torch.float32, device, seed=8)
    factors = torch.tensor([0.5, 1.0, 1.5], device=device)
    out = GF.adjust_brightness(video, factors)
    assert torch.equal(out, (video * factors.view(3, 1, 1, 1, 1)).clamp(0, 1))


@pytest.mark.parametrize("device", DEVICES)
def test_gradient(device):
    """Differentiable in a floating image, through the op's backward."""
    # values away from 0, 1 and each other: no clamp, extreme or hue sector changes at the
    # finite differences' steps
    g = torch.Generator().manual_seed(9)
    image = (0.1 + 0.8 * torch.rand([3, 3, 5, 6], generator=g, dtype=torch.float64)).to(device)
    image.requires_grad_()
    hue = torch.tensor([-0.2, 0.05, 0.3], dtype=torch.float64, device=device)
    saturation = torch.tensor([0.5, 1.2, 0.8], dtype=torch.float64, device=device)
    assert torch.autograd.gradcheck(
        lambda x: GF.adjust_saturation(GF.adjust_hue(x, hue), saturation), (image,))


def test_torchscript_and_compile():
    image = make_image([4, 3, 6, 5], torch.uint8, "cpu", seed=10)
    factors = torch.tensor([0.5, 0.9, 1.3, 2.0])

    def pipeline(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        x = GF.adjust_contrast(GF.adjust_brightness(x, f), 1.2)
        return GF.permute_channels(GF.solarize(x, 100.0), [2, 0, 1])

    eager = pipeline(image, factors)
    assert torch.equal(torch.jit.script(pipeline)(image, factors), eager)
    compiled = torch.compile(pipeline, fullgraph=True, dynamic=True)
    assert torch.equal(compiled(image, factors), eager)


@requires_cuda
def test_cuda_graph():
    """A number is filled on the device, so a capture holds the call."""
    image = make_image([4, 3, 8, 8], torch.uint8, "cuda", seed=11)
    factors = torch.tensor([0.5, 0.9, 1.3, 2.0], device="cuda")
    expected = GF.adjust_hue(GF.adjust_brightness(image, factors), 0.1)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = GF.adjust_hue(GF.adjust_brightness(image, factors), 0.1)
    graph.replay()
    assert torch.equal(out, expected)


def test_errors():
    image = make_image([2, 3, 4, 4], torch.uint8, "cpu", seed=12)
    for name in ("brightness", "contrast", "saturation"):
        with pytest.raises(ValueError, match=rf"{name}_factor \(-0.5\) is not non-negative."):
            getattr(GF, f"adjust_{name}")(image, -0.5)
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]."):
        GF.adjust_hue(image, 0.7)
    with pytest.raises(TypeError, match="Threshold should be less or equal the maximum value"):
        GF.solarize(image, 256.0)
    with pytest.raises(TypeError, match=r"bits must be a positive integer in the range \[0, 8\], "
                       "got 9 instead."):
        GF.posterize(image, 9)
    with pytest.raises(ValueError, match="num_output_channels must be 1 or 3, got 2."):
        GF.rgb_to_grayscale(image, num_output_channels=2)
    for name, call in (("rgb_to_grayscale", lambda x: GF.rgb_to_grayscale(x, 3)),
                       ("permute_channels", lambda x: GF.permute_channels(x, [2, 1, 0]))):
        with pytest.raises(ValueError, match=rf"gpuaug.functional.{name}: expected an image of "
                           r"shape \[C, H, W\], \[N, C, H, W\] or \[N, T, C, H, W\], "
                           r"got \[4, 4\]"):
            call(image[0, 0])
    with pytest.raises(ValueError, match="Length of permutation does not match number of "
                       r"channels: 2 != 3"):
        GF.permute_channels(image, [0, 1])
    with pytest.raises(ValueError, match=r"permute_channels: expected a permutation of the "
                       r"channels 0..2, got \[0, 0, 1\]"):
        GF.permute_channels(image, [0, 0, 1])
    with pytest.raises(ValueError, match=r"permute_channels: expected 'permutation' as integers "
                       r"of shape \[3\] or \[N, 3\], got torch.float32 of shape \[2, 3\]"):
        GF.permute_channels(image, torch.zeros(2, 3))
    with pytest.raises(TypeError, match=r"gpuaug.functional: expected 'brightness_factor' as a "
                       "number or a floating tensor, got torch.int64"):
        GF.adjust_brightness(image, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"gpuaug.functional: expected 'hue_factor' as a number, "
                       r"or a tensor of one value or of one a sample \(2\), got shape \[3\]"):
        GF.adjust_hue(image, torch.zeros(3))
    # a tensor's values are checked where it is on the CPU: by the op
    with pytest.raises(RuntimeError, match=r"gpuaug::photometric: expected the brightness factor "
                       r"\(slot 0\) >= 0, but got -1"):
        GF.adjust_brightness(image, torch.tensor([1.0, -1.0]))


def test_factors_as_a_list():
    """Per-sample factors as a Python list: an error naming the function, the argument, what it
    takes and what came (not a failed comparison of a list with a number)."""
    image = make_image([2, 3, 4, 4], torch.uint8, "cpu", seed=12)
    calls = {"adjust_brightness": "brightness_factor", "adjust_contrast": "contrast_factor",
             "adjust_saturation": "saturation_factor", "adjust_hue": "hue_factor",
             "solarize": "threshold"}
    for name, argument in calls.items():
        with pytest.raises(TypeError, match=rf"gpuaug.functional.{name}: expected '{argument}' "
                           r"as a number, or a floating tensor of one value or of one a sample "
                           r"on the image's device, but got list \(one value a sample: pass "
                           r"them as a tensor, torch.tensor\(\[0.2, 0.3\], "
                           r"device=image.device\)\)"):
            getattr(GF, name)(image, [0.2, 0.3])
    with pytest.raises(TypeError, match="gpuaug.functional.adjust_brightness: expected "
                       "'brightness_factor' as a number.*but got str"):
        GF.adjust_brightness(image, "1.2")


@requires_cuda
def test_a_value_on_another_device():
    image = make_image([2, 3, 4, 4], torch.uint8, "cuda", seed=13)
    with pytest.raises(ValueError, match=r"gpuaug.functional: expected 'saturation_factor' on "
                       r"the image's device cuda:0, got cpu"):
        GF.adjust_saturation(image, torch.ones(2))
