"""Geometric transforms in a Compose (the calls of gpuaug::augment they fuse into, and their
values against the transforms run one by one), from_torchvision, torch.compile, gpuaug.functional's
geometric functions and bad arguments."""

import pytest
import torch

import gpuaug.functional as GF
from gpuaug import transforms as T
from gpuaug_testing import DEVICES
from geometric_testing import MODES, F, assert_close_images, make_images, uint8_tolerance

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture
def calls(monkeypatch):
    """The calls of gpuaug::augment and gpuaug::photometric the test makes, by name."""
    made = []
    for name in ("augment", "photometric"):
        op = getattr(torch.ops.gpuaug, name)

        def counted(*args, _op=op, _name=name, **kwargs):
            made.append(_name)
            return _op(*args, **kwargs)
        monkeypatch.setattr(torch.ops.gpuaug, name, counted)
    return made


def one_by_one(compose, images, params):
    """The Compose's transforms run in turn, each with its params (the Compose's keys)."""
    out = images
    i = 0
    transforms = list(compose.transforms)
    while i < len(transforms):
        t = transforms[i]
        if getattr(t, "geometric", False):
            out = t(out, {k[len(f"{i}."):]: v for k, v in params.items()
                          if k.startswith(f"{i}.")})
            i += 1
            continue
        end = i
        while end < len(transforms) and not getattr(transforms[end], "geometric", False):
            end += 1
        program = T.Compose(transforms[i:end])
        own = {k[len(f"{i}."):]: v for k, v in params.items() if k.startswith(f"{i}.")}
        out = program(out, own if own else None)
        i = end
    return out


# (transforms, the calls of augment they make): which combinations fuse and which split
GEOMETRY = {
    "crop flip resize crop": ([T.CenterCrop(18), T.RandomHorizontalFlip(), T.Resize([15, 13]),
                               T.RandomCrop(12), T.RandomVerticalFlip()], 1),
    "pad reflect then crop": ([T.Pad(3, padding_mode="reflect"), T.RandomCrop(20)], 1),
    "resize then constant pad": ([T.Resize(16), T.Pad([1, 2], fill=7)], 1),
    "resize then center crop larger": ([T.Resize(10), T.CenterCrop([12, 16])], 1),
    "resized crop then same size": ([T.RandomResizedCrop(12), T.Resize(12)], 1),
    "resize then resized crop": ([T.Resize(16), T.RandomResizedCrop(12)], 2),
    "resized crop then resize": ([T.RandomResizedCrop(12), T.Resize(9, interpolation=0)], 2),
    "resize then reflect pad": ([T.Resize(16), T.Pad(2, padding_mode="edge")], 2),
    "crop then constant pad": ([T.RandomCrop(16), T.Pad(2)], 2),
    "conflicting fills": ([T.Pad(2, fill=3), T.Resize(9), T.Pad(1, fill=4)], 2),
}


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("name", list(GEOMETRY))
def test_geometry_fuses(name, dtype, calls):
    transforms, expected_calls = GEOMETRY[name]
    compose = T.Compose(transforms)
    images = make_images([3, 3, 20, 24], dtype, seed=7)
    params = compose.sample_params(images)
    reference = one_by_one(compose, images, params)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment"] * expected_calls
    assert_close_images(out, reference, name)


def imagenet(size=12):
    return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(),
                      T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ToDtype(torch.float32, scale=True),
                      T.Normalize(MEAN, STD)])


@pytest.mark.parametrize("device", DEVICES)
def test_imagenet_one_call(device, calls):
    """RandomResizedCrop, flip, ColorJitter, ToDtype and Normalize: one call of augment, as
    the transforms one by one compute it (the crops and flips exact, the colour in float32)."""
    compose = imagenet()
    images = make_images([4, 3, 20, 24], torch.uint8, device, seed=3)
    params = compose.sample_params(images)
    assert sorted(params) == ["0.height", "0.left", "0.top", "0.width", "1.apply", "2.apply",
                              "2.factors", "2.order"]
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment"]
    assert out.dtype == torch.float32 and out.shape == (4, 3, 12, 12)
    reference = one_by_one(compose, images, params)
    torch.testing.assert_close(out, reference, atol=0.02, rtol=0)  # uint8 steps of 1/255/std
    calls.clear()
    assert compose(list(images.unbind(0)), params).shape == out.shape
    assert calls == ["augment"]


def test_program_split_and_equalize(calls):
    """A program of two calls: the first fused, the second a photometric call; an equalize
    stage first: the geometry alone, then the program."""
    images = make_images([2, 3, 20, 24], torch.uint8, seed=5)
    compose = T.Compose([T.RandomCrop(16), T.ColorJitter(0, 0.5), T.RandomAutocontrast(),
                         T.ToDtype(torch.float32, scale=True)])
    params = compose.sample_params(images)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment", "photometric"]
    torch.testing.assert_close(out, one_by_one(compose, images, params), atol=1e-5, rtol=0)
    compose = T.Compose([T.CenterCrop(16), T.RandomEqualize(1.0)])
    calls.clear()
    out = compose(images)
    assert calls == ["augment", "photometric"]
    assert torch.equal(out, F.equalize(F.center_crop(images, [16, 16])))


def test_geometry_after_photometric(calls):
    """A geometric transform after photometric ones: a call of its own there."""
    images = make_images([2, 3, 20, 24], torch.uint8, seed=6)
    compose = T.Compose([T.RandomInvert(1.0), T.CenterCrop(10), T.ToDtype(torch.float32,
                                                                          scale=True)])
    calls.clear()
    out = compose(images)
    assert calls == ["photometric", "augment"]
    torch.testing.assert_close(out, F.to_dtype(F.center_crop(F.invert(images), [10, 10]),
                                               torch.float32, scale=True))


def test_from_torchvision_imagenet(calls):
    v2 = pytest.importorskip("torchvision.transforms.v2")
    pipeline = v2.Compose([v2.RandomResizedCrop(12), v2.RandomHorizontalFlip(),
                           v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
                           v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    converted = T.from_torchvision(pipeline)
    assert isinstance(converted, T.Compose)
    assert [type(t).__name__ for t in converted.transforms] == [
        "RandomResizedCrop", "RandomHorizontalFlip", "ColorJitter", "ToDtype", "Normalize"]
    calls.clear()
    assert converted(make_images([4, 3, 20, 24], torch.uint8)).shape == (4, 3, 12, 12)
    assert calls == ["augment"]
    crop = T.from_torchvision(v2.RandomCrop(8, padding=[1, 2, 3, 4], padding_mode="edge"))
    assert crop.padding == [1, 2, 3, 4] and crop.padding_mode == 1
    kept = T.from_torchvision(pipeline, geometric=False)
    assert type(kept) is v2.Compose and kept.transforms[0] is pipeline.transforms[0]
    lanczos = v2.Resize(8, interpolation=v2.InterpolationMode.LANCZOS)
    assert T.from_torchvision(lanczos) is lanczos  # stays torchvision's


def test_compile_imagenet(fresh_dynamo):
    """One graph (fullgraph, Dynamo's eager backend: Inductor's compile takes half a minute of
    the CI's CPU and adds nothing to an op call), with params and with fresh draws."""
    from torch._dynamo.testing import CompileCounter
    compose = imagenet()
    images = make_images([4, 3, 20, 24], torch.uint8, seed=8)
    params = compose.sample_params(images)
    counter = CompileCounter()
    compiled = torch.compile(compose, backend=counter, fullgraph=True)
    torch.testing.assert_close(compiled(images, params), compose(images, params))
    assert compiled(images).shape == (4, 3, 12, 12)
    assert counter.frame_count == 2  # with params, then without


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_functional(dtype, device):
    """Each function with per-sample tensors against torchvision's on each image."""
    images = make_images([3, 3, 20, 24], dtype, device, seed=9)
    top = torch.tensor([-2, 0, 5], device=device)
    left = torch.tensor([3, -1, 10], device=device)
    height = torch.tensor([9, 20, 16], device=device)
    width = torch.tensor([12, 13, 20], device=device)
    cases = {
        "resized_crop": (GF.resized_crop(images, top, left, height, width, [11, 7],
                                         interpolation="bicubic"),
                         lambda i, x: F.resized_crop(x, int(top[i]), int(left[i]), int(height[i]),
                                                     int(width[i]), [11, 7],
                                                     interpolation=MODES[2])),
        "crop": (GF.crop(images, top, 4, 15, 22),
                 lambda i, x: F.crop(x, int(top[i]), 4, 15, 22)),
        "hflip": (GF.hflip(images), lambda i, x: F.hflip(x)),
        "vflip": (GF.vflip(images), lambda i, x: F.vflip(x)),
        "resize": (GF.resize(images, 10, max_size=12), lambda i, x: F.resize(x, 10, max_size=12)),
        "center_crop": (GF.center_crop(images, [23, 9]), lambda i, x: F.center_crop(x, [23, 9])),
        "pad": (GF.pad(images, [2, 15], padding_mode="reflect"),
                lambda i, x: F.pad(x, [2, 15], padding_mode="reflect")),
    }
    for name, (out, reference) in cases.items():
        for i in range(3):
            assert_close_images(out[i], reference(i, images[i]), f"{name} {i}",
                                uint8_tolerance(device, 2 if name == "resized_crop" else 1))
    padded = GF.pad(images, [2, 3, 1, 4], fill=[1, 2, 3])
    assert_close_images(padded[1], F.pad(images[1], [2, 3, 1, 4], fill=[1, 2, 3]), "pad fill")


def test_bad_arguments():
    image = torch.zeros([2, 3, 20, 24], dtype=torch.uint8)
    with pytest.raises(ValueError, match="interpolation 'lanczos' is not supported"):
        T.RandomResizedCrop(8, interpolation="lanczos")
    with pytest.raises(ValueError, match="Required crop size"):
        T.RandomCrop(30)(image)
    with pytest.raises(ValueError, match="has no 'left'"):
        T.RandomResizedCrop(8)(image, {"top": torch.zeros(2, dtype=torch.long)})
    with pytest.raises(TypeError, match="gpuaug.functional.crop: expected 'top'"):
        GF.crop(image, torch.zeros(2), 0, 4, 4)
    with pytest.raises(ValueError, match="padding mode 'reflect' is not supported if fill"):
        T.Pad(2, fill=[1, 2, 3], padding_mode="reflect")
    with pytest.raises(ValueError, match="expected an image"):
        T.RandomHorizontalFlip()(torch.zeros([2, 2]))
    with pytest.raises(ValueError, match="a list of images of different sizes takes a "
                                         "geometric transform first"):
        T.Compose([T.RandomInvert(), T.CenterCrop(4)])([image[0], image[1, :, :10]])
    with pytest.raises(TypeError, match="photometric"):
        T.RandomApply([T.Compose([T.CenterCrop(4)])])
