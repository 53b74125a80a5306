"""from_torchvision: torchvision pipelines with gpuaug's photometric transforms in place."""
import itertools

import pytest
import torch
from gpuaug_testing import DEVICES, make_image

import gpuaug.transforms as T

try:  # the newest PyTorch may have no torchvision released for it yet
    import torchvision.transforms as v1
    from torchvision import tv_tensors
    from torchvision.transforms import v2
except ImportError:
    v2 = None

pytestmark = pytest.mark.skipif(
    v2 is None, reason="torchvision is not installed (none may be released for this PyTorch yet)")

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def leaves():
    """torchvision's transform, gpuaug's made directly with the same arguments."""
    return [
        (v2.ColorJitter(0.4, 0.3, 0.2, 0.1), T.ColorJitter(0.4, 0.3, 0.2, 0.1)),
        (v2.ColorJitter(brightness=(0.5, 0.9), hue=0.2), T.ColorJitter((0.5, 0.9), hue=0.2)),
        (v2.RandomPhotometricDistort(hue=(-0.1, 0.2), p=0.3),
         T.RandomPhotometricDistort(hue=(-0.1, 0.2), p=0.3)),
        (v2.RandomGrayscale(0.3), T.RandomGrayscale(0.3)),
        (v2.Grayscale(3), T.Grayscale(3)),
        (v2.RGB(), T.RGB()),
        (v2.RandomSolarize(100, 0.4), T.RandomSolarize(100.0, 0.4)),
        (v2.RandomPosterize(3, 0.6), T.RandomPosterize(3, 0.6)),
        (v2.RandomInvert(0.2), T.RandomInvert(0.2)),
        (v2.RandomAutocontrast(0.7), T.RandomAutocontrast(0.7)),
        (v2.RandomEqualize(0.8), T.RandomEqualize(0.8)),
        (v2.RandomChannelPermutation(), T.RandomChannelPermutation()),
        (v2.RandomApply([v2.RandomInvert(0.5), v2.ColorJitter(0.2)], p=0.3),
         T.RandomApply([T.RandomInvert(0.5), T.ColorJitter(0.2)], p=0.3)),
        (v2.RandomChoice([v2.RandomEqualize(), v2.RandomSolarize(50)], p=[1, 3]),
         T.RandomChoice([T.RandomEqualize(), T.RandomSolarize(50.0)], p=[1, 3])),
        (v2.RandomOrder([v2.RandomInvert(), v2.ColorJitter(0, 0, 0.4)]),
         T.RandomOrder([T.RandomInvert(), T.ColorJitter(0, 0, 0.4)])),
        (v1.ColorJitter(0.4, 0.3, 0.2, 0.1), T.ColorJitter(0.4, 0.3, 0.2, 0.1)),
        (v1.RandomChoice([v1.RandomInvert(), v1.RandomEqualize()]),
         T.RandomChoice([T.RandomInvert(), T.RandomEqualize()])),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(leaves()) if v2 is not None else 0))
def test_photometric_transforms(index, device):
    """The same transform as gpuaug's made directly: its arguments and its draws."""
    theirs, ours = leaves()[index]
    converted = T.from_torchvision(theirs)
    assert type(converted) is type(ours) and repr(converted) == repr(ours)
    image = make_image([6, 3, 7, 9], torch.uint8, device, seed=index)
    torch.manual_seed(index)
    out = converted(image)
    torch.manual_seed(index)
    assert torch.equal(out, ours(image))


@pytest.mark.parametrize("device", DEVICES)
def test_pipeline_with_geometry(device):
    """A container of a flip stays torchvision's, with the boxes; the run after it is one
    gpuaug Compose."""
    pipeline = v2.Compose([v2.RandomApply([v2.RandomHorizontalFlip(p=1.0)], p=1.0),
                           v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
                           v2.RandomGrayscale(0.2), v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize(MEAN, STD)])
    converted = T.from_torchvision(pipeline)
    assert type(converted) is v2.Compose and converted.transforms[0] is pipeline.transforms[0]
    fused = converted.transforms[1]
    assert type(fused) is T.Compose and (fused.dtype, fused.mean, fused.std) == (
        torch.float32, MEAN, STD)
    direct = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.2)],
                       dtype=torch.float32, mean=MEAN, std=STD)
    image = tv_tensors.Image(make_image([4, 3, 8, 10], torch.uint8, device, seed=20))
    boxes = tv_tensors.BoundingBoxes([[1, 2, 4, 6]], format="XYXY", canvas_size=(8, 10),
                                     device=device)
    torch.manual_seed(3)
    out, out_boxes = converted(image, boxes)
    torch.manual_seed(3)  # the flip draws too
    expected = direct(pipeline.transforms[0](image).as_subclass(torch.Tensor))
    assert isinstance(out, tv_tensors.Image) and torch.equal(out.as_subclass(torch.Tensor),
                                                             expected)
    assert out_boxes.tolist() == [[6, 2, 9, 6]]


def test_runs():
    """Where a gpuaug Compose ends: at a transform gpuaug has not, or where a photometric one
    follows a one-channel Grayscale; conversions join the runs, nested Composes are one run."""
    parts = T.from_torchvision(v2.Compose([
        v2.ToDtype(torch.float32, scale=True), v2.ColorJitter(0.4),
        v2.Compose([v2.RandomInvert(), v2.Grayscale()]), v2.Normalize([0.5], [0.2]),
        v2.RandomInvert(), v2.RandomResizedCrop(4), v2.ToDtype(torch.float16, scale=False),
        v2.Normalize([0.5], [0.2]), v2.ToDtype(torch.float16, scale=True)])).transforms
    kinds = [type(p).__name__ + ("" if type(p).__module__.startswith("gpuaug") else " (tv)")
             for p in parts]
    assert kinds == ["Compose", "Compose", "ToDtype (tv)", "Compose"]
    assert [type(t).__name__ for t in parts[0].transforms] == ["ToDtype", "ColorJitter",
                                                               "RandomInvert", "Grayscale"]
    # geometric transforms join the runs (a call of gpuaug::augment after the photometric one)
    assert [type(t).__name__ for t in parts[1].transforms] == ["RandomInvert",
                                                               "RandomResizedCrop"]
    assert parts[0].mean == [0.5] and parts[0].keeps_first_plane
    assert [type(t).__name__ for t in parts[3].transforms] == ["Normalize"]
    assert parts[3].dtype == torch.float16
    # a container of a transform gpuaug has not stays torchvision's, whole
    held = v2.RandomApply([v2.RandomHorizontalFlip(), v2.ColorJitter(0.2)])
    assert T.from_torchvision(held) is held


def test_deterministic_end_to_end():
    image = make_image([3, 3, 9, 7], torch.uint8, "cpu", seed=21)
    for version in (v2, v1):
        to_float = (v2.ToDtype(torch.float32, scale=True) if version is v2
                    else v1.ConvertImageDtype(torch.float32))
        for steps in ([version.RandomInvert(1.0), version.Grayscale(), to_float,
                       version.Normalize([0.5], [0.25])],
                      # conversions inside: one Compose, a call of the op ending at each
                      [to_float, version.RandomInvert(1.0), version.Normalize([0.5], [0.25]),
                       version.RandomAutocontrast(1.0)]):
            pipeline = version.Compose(steps)
            converted = T.from_torchvision(pipeline)
            assert type(converted) is T.Compose
            expected = pipeline(image)
            assert (converted(image) - expected).abs().max().item() <= 1e-5
    # a grayscale dataset's batch made three channels for an ImageNet model, where it stands
    gray = image[:, :1].contiguous()
    for expanding in (v2.Grayscale(3), v2.RGB()):
        pipeline = v2.Compose([v2.RandomInvert(1.0), expanding, v2.ColorJitter(hue=(0.1, 0.1)),
                               v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
        converted = T.from_torchvision(pipeline)
        assert type(converted) is T.Compose
        assert (converted(gray) - pipeline(gray)).abs().max().item() <= 1e-5


def test_errors():
    with pytest.raises(TypeError, match="from_torchvision: expected a torchvision.transforms "
                       "transform, got ColorJitter"):
        T.from_torchvision(T.ColorJitter(0.4))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("count", [2, 3])
def test_random_order_of_reductions(count, device):
    """A RandomOrder past gpuaug's one reduction stage: a RandomChoice of a Compose per order,
    each sample one of torchvision's orders, every order drawn about as often."""
    held = [v2.ColorJitter(contrast=(0.5, 0.5)), v2.RandomAutocontrast(1.0),
            v2.RandomSolarize(100, 1.0)]
    held = held[:count]
    converted = T.from_torchvision(v2.RandomOrder(held))
    orders = list(itertools.permutations(held))
    assert type(converted) is T.RandomChoice and len(converted.transforms) == len(orders)
    image = make_image([120 * len(orders), 3, 5, 6], torch.uint8, device, seed=22)
    out = converted(image)
    # [orders, N]: whether sample n is order k's result; the orders give different results
    matches = torch.stack([(out == v2.Compose(list(order))(image)).flatten(1).all(1)
                           for order in orders])
    assert matches.any(0).all()
    alone = matches & (matches.sum(0) == 1)
    assert alone.sum().item() > 0.8 * image.shape[0]
    assert (alone.sum(1) > 0.5 * alone.sum() / len(orders)).all(), alone.sum(1)


def test_kept_whole():
    """What gpuaug's containers cannot hold stays torchvision's, whole, and runs: a Grayscale to
    one channel in a container, four transforms in an order past gpuaug's one reduction stage."""
    image = make_image([4, 3, 5, 6], torch.uint8, "cpu", seed=23)
    for held in (v2.RandomApply([v2.Grayscale()], p=1.0),
                 v2.RandomChoice([v2.Compose([v2.Grayscale(), v2.RandomInvert()])]),
                 v2.RandomOrder([v2.RandomEqualize(), v2.RandomAutocontrast(),
                                 v2.RandomInvert(), v2.RandomPosterize(4)])):
        assert T.from_torchvision(held) is held
        held(image)
    pipeline = T.from_torchvision(v2.Compose([held, v2.RandomInvert(1.0)]))
    assert pipeline.transforms[0] is held and type(pipeline.transforms[1]) is T.RandomInvert
