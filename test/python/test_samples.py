"""gpuaug.transforms in torchvision.transforms.v2's pipelines: tv_tensors, PIL images and samples
of an image and its targets (python/gpuaug/samples.py)."""
import pytest
import torch
from gpuaug_testing import DEVICES

from gpuaug import transforms as T

tv_tensors = pytest.importorskip("torchvision.tv_tensors")
v2 = pytest.importorskip("torchvision.transforms.v2")
Image = pytest.importorskip("PIL.Image")

TRANSFORMS = {
    "ColorJitter": lambda g: T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g),
    "Compose": lambda g: T.Compose([T.ColorJitter(0.4, 0, 0.4, 0.1, generator=g),
                                    T.RandomInvert(0.5, generator=g)]),
    "ColorAugment": lambda g: T.ColorAugment(generator=g),
}


def seeded(name, device, seed=5):
    """Two copies of a transform whose draws come from generators in the same state."""
    def make():
        return TRANSFORMS[name](torch.Generator(device).manual_seed(seed))
    return make(), make()


def image_of(shape, device, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g).to(device)


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("device", DEVICES)
def test_image_and_its_targets(name, device):
    """t(image, target) in a v2.Compose: the Image transformed as the plain tensor is and still an
    Image, the boxes flipped by torchvision and the other targets the same objects."""
    transform, reference = seeded(name, device)
    image = tv_tensors.Image(image_of([3, 24, 40], device, seed=1))
    boxes = tv_tensors.BoundingBoxes([[2, 3, 10, 12]], format="XYXY", canvas_size=(24, 40),
                                     device=device)
    labels = torch.tensor([7], device=device)
    mask = tv_tensors.Mask(torch.ones(24, 40, dtype=torch.uint8, device=device))
    target = {"boxes": boxes, "labels": labels, "masks": mask}
    pipeline = v2.Compose([v2.RandomHorizontalFlip(p=1), transform])
    out_image, out_target = pipeline(image, target)
    assert type(out_image) is tv_tensors.Image
    flipped = image.as_subclass(torch.Tensor).flip(-1)
    expected = reference(flipped)
    assert torch.equal(out_image.as_subclass(torch.Tensor), expected)
    assert not torch.equal(expected, flipped)  # the transform did something
    assert torch.equal(out_target["boxes"], v2.functional.horizontal_flip(boxes))
    assert out_target["labels"] is labels
    assert torch.equal(out_target["masks"], mask.flip(-1))


@pytest.mark.parametrize("device", DEVICES)
def test_images_of_one_sample_share_the_draws(device):
    """Every image of one call gets the same draws (torchvision's rule), per sample of a batch;
    a lone plain tensor beside an Image passes through."""
    transform = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    batch = image_of([4, 3, 16, 16], device, seed=2)
    plain = image_of([4, 3, 16, 16], device, seed=3)
    a, b, untouched = transform({"a": tv_tensors.Image(batch), "b": [tv_tensors.Image(batch)],
                                 "plain": plain}).values()
    assert torch.equal(a, b[0])
    assert untouched is plain
    assert not torch.equal(a[0], a[1])  # yet each sample its own
    with pytest.raises(ValueError, match=r"gpuaug.transforms.ColorJitter: the images of one "
                       r"input share one draw, so they need the same number of samples; got "
                       r"\[4, 2\]"):
        transform(tv_tensors.Image(batch), tv_tensors.Image(batch[:2]))


@pytest.mark.parametrize("device", DEVICES)
def test_first_plain_tensor_without_images(device):
    """With no Image, Video or PIL image, the first plain tensor is the image, as in torchvision."""
    transform, reference = seeded("ColorJitter", device)
    image = image_of([2, 3, 8, 8], device, seed=4)
    other = image_of([2, 3, 8, 8], device, seed=6)
    out, passed = transform((image, other))
    assert torch.equal(out, reference(image))
    assert passed is other


@pytest.mark.parametrize("device", DEVICES)
def test_video_frames_share_a_draw(device):
    """A 4-D Video is one video: its frames get one draw, where a 4-D tensor's samples get one
    each; a 5-D Video is a batch of videos."""
    frame = image_of([3, 12, 12], device, seed=7)
    frames = frame.expand(5, 3, 12, 12).contiguous()
    transform, reference = seeded("ColorJitter", device)
    out = transform(tv_tensors.Video(frames))
    assert type(out) is tv_tensors.Video and out.shape == frames.shape
    assert all(torch.equal(out[t], out[0]) for t in range(5))
    assert torch.equal(out.as_subclass(torch.Tensor), reference(frames.unsqueeze(0))[0])
    assert not all(torch.equal(f, transform(frames)[0]) for f in transform(frames))
    videos = frames.expand(2, 5, 3, 12, 12)
    transform, reference = seeded("ColorJitter", device)
    assert torch.equal(transform(tv_tensors.Video(videos)).as_subclass(torch.Tensor),
                       reference(videos))


@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_pil_images(mode):
    """A PIL image comes back as one, of the same mode, with the tensor path's pixels; with the
    transform's own float conversion it comes back as that tensor."""
    channels = 3 if mode == "RGB" else 1
    pixels = image_of([channels, 10, 14], "cpu", seed=8)
    array = (pixels.permute(1, 2, 0) if channels == 3 else pixels[0]).numpy()
    picture = Image.fromarray(array, mode=mode)
    transform, reference = seeded("ColorJitter", "cpu")
    out = transform(picture)
    assert isinstance(out, Image.Image) and out.mode == mode and out.size == (14, 10)
    got = torch.from_numpy(__import__("numpy").array(out))
    got = got.unsqueeze(0) if channels == 1 else got.permute(2, 0, 1)
    assert torch.equal(got, reference(pixels))
    normalise = T.ColorJitter(0.4, dtype=torch.float32, mean=[0.5] * channels,
                              std=[0.25] * channels)
    as_float = normalise(picture)
    assert type(as_float) is torch.Tensor and as_float.dtype == torch.float32
    with pytest.raises(TypeError, match=r"gpuaug.transforms.ColorJitter: expected a PIL image of "
                       r"mode 'RGB' or 'L', got mode 'RGBA'"):
        transform(picture.convert("RGBA"))


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("device", DEVICES)
def test_params_replayed_on_tv_tensors(name, device):
    """sample_params' dict beside an Image, or as params=, replays it as on a plain tensor."""
    transform = TRANSFORMS[name](None)
    batch = image_of([3, 3, 8, 8], device, seed=9)
    params = transform.sample_params(batch)
    expected = transform(batch, params)
    for out in (transform(tv_tensors.Image(batch), params),
                transform(tv_tensors.Image(batch), params=params)):
        assert type(out) is tv_tensors.Image
        assert torch.equal(out.as_subclass(torch.Tensor), expected)


def test_unexpected_keyword():
    with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomInvert: unexpected keyword "
                       r"arguments \['flip'\]"):
        T.RandomInvert()(tv_tensors.Image(image_of([3, 4, 4], "cpu", seed=10)), flip=True)


def test_no_image():
    """Where torchvision would hand the input back untouched, a clear error: an array, say."""
    numpy = pytest.importorskip("numpy")
    with pytest.raises(TypeError, match=r"gpuaug.transforms.ColorJitter: found no image in the "
                       r"input: expected a tensor, .*; got \['ndarray'\]"):
        T.ColorJitter(0.4)(numpy.zeros((8, 8, 3), dtype=numpy.uint8))
    with pytest.raises(TypeError, match=r"found no image in the input: .*; got \['int', 'str'\]"):
        T.RandomInvert()({"label": 3, "name": "cat"})
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        T.RandomInvert()()

