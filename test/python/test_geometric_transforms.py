"""The geometric transforms (gpuaug.transforms' crops, flips, Resize, Pad): their draws against
torchvision's distributions, the replay of sample_params, and each sample's values against
torchvision.transforms.v2.functional on that one image with the sample's parameters."""

import math

import pytest
import torch

from gpuaug import transforms as T
from gpuaug.crop import resized_crop_windows
from gpuaug_testing import DEVICES
from geometric_testing import MODES, F, assert_close_images, make_images, uint8_tolerance

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

DTYPES = [torch.uint8, torch.float32]


def torchvision_windows(u, height, width, scale, ratio):
    """torchvision's RandomResizedCrop.make_params in float64 on the host, its draws the
    uniforms ``u`` (one sample's 22): torch.empty(1).uniform_(a, b) as float32 ``a + (b - a) u``,
    randint(0, n) as floor(u n)."""
    def f32(x):
        return torch.tensor(x, dtype=torch.float32)

    log_ratio = torch.log(torch.tensor(ratio))
    area = height * width
    for k in range(10):
        s = (u[k] * (f32(scale[1]) - f32(scale[0])) + f32(scale[0])).item()
        a = torch.exp(u[10 + k] * (log_ratio[1] - log_ratio[0]) + log_ratio[0]).item()
        target = area * s
        w = int(round(math.sqrt(target * a)))
        h = int(round(math.sqrt(target / a)))
        if 0 < w <= width and 0 < h <= height:
            i = math.floor(u[20].item() * (height - h + 1))
            j = math.floor(u[21].item() * (width - w + 1))
            return [i, j, h, w]
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return [(height - h) // 2, (width - w) // 2, h, w]


@pytest.mark.parametrize("scale, ratio, size", [((0.08, 1.0), (3 / 4, 4 / 3), (20, 24)),
                                                 ((0.9, 1.0), (0.5, 0.6), (20, 60)),
                                                 ((0.9, 1.0), (2.0, 3.0), (60, 20)),
                                                 ((1.5, 2.0), (3 / 4, 4 / 3), (21, 24))])
def test_resized_crop_windows_replay_torchvision(scale, ratio, size):
    """The same uniforms through torchvision's ten tries and fallback, on the host."""
    g = torch.Generator().manual_seed(1)
    u = torch.rand([300, 22], generator=g)
    height, width = size
    got = resized_crop_windows(u, height, width, scale, ratio)
    got = torch.stack([got["top"], got["left"], got["height"], got["width"]], 1).tolist()
    expected = [torchvision_windows(row, height, width, scale, ratio) for row in u]
    mismatches = sum(a != b for a, b in zip(got, expected))
    # the float32 exp of a vectorised loop may differ from a scalar one by an ulp: a window
    # whose side is within that of a half rounds the other way, rarely
    assert mismatches <= 3, [(a, b) for a, b in zip(got, expected) if a != b][:5]


def test_resized_crop_windows_per_sample_sizes():
    """Per-sample image sizes (a list of images) against each one's own replay."""
    u = torch.rand([6, 22], generator=torch.Generator().manual_seed(2))
    heights, widths = [20, 16, 40, 8, 30, 12], [24, 40, 10, 8, 30, 50]
    got = resized_crop_windows(u, torch.tensor(heights), torch.tensor(widths), (0.08, 1.0),
                               (3 / 4, 4 / 3))
    got = torch.stack([got["top"], got["left"], got["height"], got["width"]], 1).tolist()
    assert got == [torchvision_windows(u[i], heights[i], widths[i], (0.08, 1.0), (3 / 4, 4 / 3))
                   for i in range(6)]


def test_resized_crop_statistics():
    """Per-sample windows of one batch follow torchvision's distribution (its make_params
    looped), and differ between samples."""
    image = torch.zeros([4000, 1, 20, 24], dtype=torch.uint8)
    params = T.RandomResizedCrop(8).sample_params(image)
    area = (params["height"] * params["width"]).double() / (20 * 24)
    tv = pytest.importorskip("torchvision.transforms.v2")
    torch.manual_seed(3)
    reference = tv.RandomResizedCrop(8)
    draws = [reference.make_params([image[0]]) for _ in range(1000)]
    tv_area = torch.tensor([d["height"] * d["width"] / (20 * 24) for d in draws])
    assert abs(area.mean().item() - tv_area.mean().item()) < 0.03
    assert abs(area.std().item() - tv_area.std().item()) < 0.03
    assert (params["top"] + params["height"] <= 20).all()
    assert (params["left"] + params["width"] <= 24).all()
    assert len(set(params["top"].tolist())) > 5


@pytest.mark.parametrize("transform", [T.RandomHorizontalFlip(0.3), T.RandomVerticalFlip()])
def test_flip_draws(transform):
    image = torch.zeros([20000, 1, 2, 2], dtype=torch.uint8)
    fraction = transform.sample_params(image)["apply"].double().mean().item()
    assert abs(fraction - transform.p) < 0.02


def test_random_crop_draws():
    """Each place equally likely, in the padded image (pad_if_needed pads both sides)."""
    image = torch.zeros([30000, 1, 6, 5], dtype=torch.uint8)
    params = T.RandomCrop(4, pad_if_needed=True, padding=[0, 1]).sample_params(image)
    tops = torch.bincount(params["top"], minlength=5).double() / 30000  # 6 + 2 - 4 + 1
    lefts = torch.bincount(params["left"], minlength=2).double() / 30000  # 5 - 4 + 1
    assert tops.shape == (5,) and (tops - 0.2).abs().max() < 0.02
    assert lefts.shape == (2,) and (lefts - 0.5).abs().max() < 0.02


def test_generator():
    """Draws come from the transform's generator: the same seed, the same windows."""
    image = torch.zeros([8, 3, 20, 24], dtype=torch.uint8)
    a = T.RandomResizedCrop(8, generator=torch.Generator().manual_seed(5)).sample_params(image)
    b = T.RandomResizedCrop(8, generator=torch.Generator().manual_seed(5)).sample_params(image)
    assert all(torch.equal(a[k], b[k]) for k in a)


def torchvision_sample(transform, image, params, i):
    """Sample i through torchvision's functions with its parameters."""
    name = type(transform).__name__
    if name == "RandomResizedCrop":
        return F.resized_crop(image, *[int(params[k][i]) for k in ("top", "left", "height",
                                                                   "width")],
                              transform.size, interpolation=MODES[transform.interpolation],
                              antialias=transform.antialias)
    if name in ("RandomHorizontalFlip", "RandomVerticalFlip"):
        flip = F.hflip if name == "RandomHorizontalFlip" else F.vflip
        return flip(image) if params["apply"][i] else image
    if name == "RandomCrop":
        padding = transform._paddings([image.shape[-2]], [image.shape[-1]])[0]
        fill = transform.fill if transform.fill is None or len(transform.fill) > 1 else \
            transform.fill[0]
        padded = F.pad(image, padding, fill=fill,
                       padding_mode=["constant", "edge", "reflect", "symmetric"][
                           transform.padding_mode]) if any(padding) else image
        return F.crop(padded, int(params["top"][i]), int(params["left"][i]), *transform.size)
    if name == "CenterCrop":
        return F.center_crop(image, transform.size)
    if name == "Resize":
        return F.resize(image, transform.size, interpolation=MODES[transform.interpolation],
                        max_size=transform.max_size, antialias=transform.antialias)
    assert name == "Pad"
    fill = transform.fill if transform.fill is None or len(transform.fill) > 1 else \
        transform.fill[0]
    return F.pad(image, transform.padding, fill=fill,
                 padding_mode=["constant", "edge", "reflect", "symmetric"][
                     transform.padding_mode])


def every_transform():
    return {
        "RandomResizedCrop": T.RandomResizedCrop([10, 12]),
        "RandomResizedCrop bicubic": T.RandomResizedCrop(9, interpolation="bicubic"),
        "RandomResizedCrop nearest": T.RandomResizedCrop(16, interpolation=0, antialias=False),
        "RandomHorizontalFlip": T.RandomHorizontalFlip(),
        "RandomVerticalFlip": T.RandomVerticalFlip(),
        "Resize": T.Resize(15),
        "Resize (h, w) nearest-exact": T.Resize([31, 13], interpolation="nearest-exact"),
        "CenterCrop": T.CenterCrop([14, 30]),
        "RandomCrop": T.RandomCrop(18, padding=[3, 1], fill=[10, 20, 30]),
        "RandomCrop reflect": T.RandomCrop([22, 26], pad_if_needed=True, padding_mode="reflect"),
        "Pad symmetric": T.Pad([1, 2, 3, 4], padding_mode="symmetric"),
        "Pad edge": T.Pad(2, padding_mode="edge"),
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(every_transform()))
def test_values(name, dtype, device):
    """Each sample as torchvision's functions make it of that image with its parameters, and
    the replay of the params as the fresh draws' values."""
    transform = every_transform()[name]
    off = uint8_tolerance(device, getattr(transform, "interpolation", 1))
    images = make_images([4, 3, 20, 24], dtype, device, seed=len(name))
    params = transform.sample_params(images)
    out = transform(images, params)
    for i in range(4):
        assert_close_images(out[i], torchvision_sample(transform, images[i], params, i),
                            f"{name} sample {i}", off)
    transform.generator = torch.Generator(device).manual_seed(9)
    fresh = transform(images)
    transform.generator = torch.Generator(device).manual_seed(9)
    assert torch.equal(fresh, transform(images, transform.sample_params(images)))


@pytest.mark.parametrize("name", ["RandomResizedCrop", "RandomCrop reflect", "CenterCrop"])
def test_list_input(name):
    """A list of images: the same per sample as the batch; images of different sizes each as
    torchvision makes it, in one batch."""
    transform = every_transform()[name]
    images = make_images([3, 3, 20, 24], torch.uint8, seed=4)
    params = transform.sample_params(images)
    assert torch.equal(transform(list(images.unbind(0)), params), transform(images, params))
    assert torch.equal(transform(images[1], {k: v[1:2] for k, v in params.items()}),
                       transform(images, params)[1])
    different = [images[0], images[1, :, :17, :21], make_images([3, 29, 33], torch.uint8)]
    params = transform.sample_params(different)
    out = transform(different, params)
    for i, image in enumerate(different):
        assert_close_images(out[i], torchvision_sample(transform, image, params, i), f"{i}")


def test_list_input_different_output_sizes():
    with pytest.raises(ValueError, match="gpuaug.transforms.Resize: the samples come out in "
                                         "different sizes"):
        T.Resize(10)([torch.zeros([3, 20, 24]), torch.zeros([3, 20, 30])])
    # a crop after it to one size: one batch
    pipeline = T.Compose([T.Resize(10), T.CenterCrop(8)])
    assert pipeline([torch.zeros([3, 20, 24]), torch.zeros([3, 20, 30])]).shape == (2, 3, 8, 8)


def seeded(transform, seed):
    transform.generator = torch.Generator().manual_seed(seed)
    return transform


@pytest.mark.skipif(F is None, reason="torchvision is not installed")
@pytest.mark.parametrize("name", ["RandomResizedCrop", "RandomHorizontalFlip", "RandomCrop"])
def test_video_frames_share_their_draw(name):
    """A Video's frames share its draw (a 4-D Video is one video, a 5-D one a batch of them),
    each frame as torchvision makes it with those parameters; the output is a Video."""
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    transform = every_transform()[name]
    off = uint8_tolerance("cpu", getattr(transform, "interpolation", 1))
    videos = make_images([3, 4, 3, 20, 24], torch.uint8, seed=50)
    out = seeded(transform, 5)(tv_tensors.Video(videos))
    params = seeded(transform, 5).sample_params(videos[:, 0])
    assert isinstance(out, tv_tensors.Video) and out.shape[:3] == (3, 4, 3)
    for v in range(3):
        for f in range(4):
            assert_close_images(out[v, f], torchvision_sample(transform, videos[v, f], params, v),
                                f"video {v} frame {f}", off)
    one = seeded(transform, 6)(tv_tensors.Video(videos[1]))
    params = seeded(transform, 6).sample_params(videos[1, :1])
    assert isinstance(one, tv_tensors.Video) and one.shape[0] == 4
    for f in range(4):
        assert_close_images(one[f], torchvision_sample(transform, videos[1, f], params, 0),
                            f"frame {f}", off)


@pytest.mark.skipif(F is None, reason="torchvision is not installed")
def test_images_pil_and_labels_in_samples():
    """tv_tensors.Image and PIL images come back as such, with the plain call's values for the
    same draw; the images of one sample share its draw; labels pass through."""
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    transform = T.RandomResizedCrop([10, 12])
    a, b = make_images([2, 3, 20, 24], torch.uint8, seed=52).unbind(0)
    expected = seeded(transform, 7)(torch.stack([a, a]))[0]
    out, label = seeded(transform, 7)(tv_tensors.Image(a), {"label": 3})
    assert isinstance(out, tv_tensors.Image) and torch.equal(out, expected)
    assert label == {"label": 3}
    pil = seeded(transform, 7)(F.to_pil_image(a))
    assert pil.size == (12, 10) and torch.equal(F.pil_to_tensor(pil), expected)
    params = seeded(transform, 8).sample_params(a)
    both = seeded(transform, 8)({"image": tv_tensors.Image(a), "other": tv_tensors.Image(b)})
    assert torch.equal(both["image"], transform(a, params))
    assert torch.equal(both["other"], transform(b, params))
