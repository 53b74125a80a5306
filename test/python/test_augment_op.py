"""gpuaug::augment, the operator under the geometric transforms: each sample's values against
torchvision.transforms.v2.functional (geometric_testing.reference_augment) for every
interpolation, antialias, padding mode, dtype and layout; the program fused into it; its
gradient; opcheck, torch.compile, torch.export, TorchScript, CUDA graphs; and bad inputs."""

from typing import List

import pytest
import torch

from gpuaug_testing import DEVICES, captured_replays, requires_cuda
from geometric_testing import (F, assert_close_images, make_images, reference_augment,
                               uint8_tolerance)

needs_torchvision = pytest.mark.skipif(F is None, reason="torchvision is not installed")

OUT = (9, 11)
# (interpolation, antialias): nearest's antialias changes nothing
RESAMPLINGS = [(0, False), (1, True), (1, False), (2, True), (2, False), (3, False)]


def random_geometry(sizes, out=OUT, seed=0, device="cpu"):
    """A geometry row per sample of the [H, W] `sizes`: windows reaching outside the image,
    both flips, down- and upscales (some samples not resized at all), output windows reaching
    outside the resized image."""
    g = torch.Generator().manual_seed(seed)

    def draw(lo, hi):
        return int(torch.randint(lo, hi + 1, [1], generator=g))

    rows = []
    for k, (h, w) in enumerate(sizes):
        height, width = draw(1, h + 4), draw(1, w + 4)
        top, left = draw(-3, h - height + 3), draw(-3, w - width + 3)
        if k % 3 == 0:
            resized = [height, width]
        else:
            resized = [draw(1, 3 * out[0]), draw(1, 3 * out[1])]
        out_top, out_left = draw(-2, max(resized[0] - out[0], 0) + 2), \
            draw(-2, max(resized[1] - out[1], 0) + 2)
        rows.append([top, left, height, width, draw(0, 3), *resized, out_top, out_left,
                     draw(0, 3)])
    return torch.tensor(rows, dtype=torch.long, device=device)


def augment(images, geometry, size=OUT, **kwargs):
    return torch.ops.gpuaug.augment(images, geometry, list(size), **kwargs)


def half_reference(images, geometry, dtype, **kwargs):
    """torchvision resizes half types in float32, rounding the result to the dtype."""
    return reference_augment([i.float() for i in images], geometry, OUT, **kwargs).to(dtype)


@needs_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("padding_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("interpolation, antialias", RESAMPLINGS)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
def test_values(dtype, interpolation, antialias, padding_mode, device):
    images = make_images([12, 3, 13, 17], dtype, device, seed=interpolation + 4 * padding_mode)
    geometry = random_geometry([(13, 17)] * 12, seed=padding_mode)
    fill = [200.0, 10.0, 77.6] if dtype == torch.uint8 else [0.25, 0.5, 1.0]
    kwargs = dict(interpolation=interpolation, antialias=antialias, padding_mode=padding_mode,
                  fill=fill)
    out = augment([images], geometry.to(device), **kwargs)
    assert_close_images(out, reference_augment([images], geometry, OUT, **kwargs),
                        f"{dtype} {interpolation} {antialias} {padding_mode} {device}",
                        uint8_tolerance(device, interpolation))


@needs_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("interpolation, antialias", [(1, True), (2, False)])
def test_half_types(dtype, interpolation, antialias, device):
    images = make_images([6, 3, 13, 17], dtype, device, seed=5)
    geometry = random_geometry([(13, 17)] * 6, seed=6)
    kwargs = dict(interpolation=interpolation, antialias=antialias, padding_mode=2)
    out = augment([images], geometry.to(device), **kwargs)
    expected = half_reference([images], geometry, dtype, **kwargs)
    # one rounding of a float32 sum whose terms may add in another order: a unit in the last place
    tolerance = {torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(out, expected, atol=tolerance, rtol=tolerance)


@needs_torchvision
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_list_of_sizes(dtype, device):
    """A list of [C, H, W] images of different sizes and of batches, in one call."""
    shapes = [[3, 13, 17], [2, 3, 8, 30], [3, 21, 5], [3, 1, 1], [3, 16, 16]]
    images = [make_images(s, dtype, device, seed=k) for k, s in enumerate(shapes)]
    sizes = [tuple(s[-2:]) for s in shapes for _ in range(s[0] if len(s) == 4 else 1)]
    geometry = random_geometry(sizes, seed=3)
    kwargs = dict(interpolation=1, antialias=True, padding_mode=3)
    out = augment(images, geometry.to(device), **kwargs)
    assert_close_images(out, reference_augment(images, geometry, OUT, **kwargs), "list")


@pytest.mark.parametrize("device", DEVICES)
def test_layouts(device):
    """Channels-last, strided and single-channel images; the output's memory format."""
    base = make_images([4, 3, 20, 24], torch.float32, device, seed=7)
    geometry = random_geometry([(20, 24)] * 4, seed=8).to(device)
    expected = augment([base], geometry)
    assert expected.is_contiguous()
    channels_last = base.contiguous(memory_format=torch.channels_last)
    out = augment([channels_last], geometry)
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    strided = torch.cat([base, base], 3)[..., ::2]
    torch.testing.assert_close(augment([strided], geometry),
                               augment([strided.contiguous()], geometry), rtol=0, atol=0)
    out = augment([base], geometry, memory_format=torch.channels_last)
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    gray = augment([base[:, :1]], geometry)
    torch.testing.assert_close(gray, expected[:, :1], rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stages, dtype, normalize", [
    ([1, 2, 3, 4], torch.float32, True),   # ColorJitter: contrast's mean of the cropped image
    ([5, 8, 6], None, False),               # grayscale, invert, solarize: not jitter kinds
    ([10], torch.float32, False),           # autocontrast's reduction
    ([9, 1], torch.float16, False),         # permute channels, brightness: to float16
])
def test_program_fused(stages, dtype, normalize, device):
    """The program inside the geometric pass equals gpuaug::photometric on its output."""
    images = make_images([5, 3, 20, 24], torch.uint8, device, seed=11)
    geometry = random_geometry([(20, 24)] * 5, seed=12).to(device)
    factors = torch.rand([5, len(stages)], generator=torch.Generator().manual_seed(13))
    factors = (0.5 + factors).to(device)
    if 6 in stages:
        factors[:, stages.index(6)] *= 128  # solarize's threshold, in uint8's range
    if 9 in stages:
        factors[:, stages.index(9)] = torch.tensor([5.0, 7, 11, 15, 19])  # permutations
    if 4 in stages:
        factors[:, stages.index(4)] -= 0.9  # hue in [-0.4, 0.6): wrap it into [-0.5, 0.5]
        factors[:, stages.index(4)] = factors[:, stages.index(4)].clamp(-0.5, 0.5)
    program = dict(dtype=dtype)
    if normalize:
        program.update(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if len(stages) == 4:
        program["order"] = torch.stack([torch.randperm(4) for _ in range(5)]).to(device)
        program["apply"] = torch.rand([5, 4], device=device) < 0.7
    fused = augment([images], geometry, stages=stages, factors=factors, **program)
    front = augment([images], geometry)
    apart = torch.ops.gpuaug.photometric(front, stages, factors, **program)
    if fused.dtype == torch.uint8:
        torch.testing.assert_close(fused, apart, rtol=0, atol=0)
    else:
        torch.testing.assert_close(fused, apart, rtol=0, atol=1e-6)


CONVERSIONS = [(torch.uint8, out) for out in (torch.float16, torch.bfloat16, torch.float32,
                                              torch.float64)]
CONVERSIONS += [(image, torch.uint8) for image in (torch.float16, torch.bfloat16, torch.float32,
                                                   torch.float64)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("image_dtype, dtype", CONVERSIONS)
def test_output_dtypes(image_dtype, dtype, memory_format, device):
    """Every conversion the op writes (to_dtype's, then Normalize's for floating outputs)
    equals gpuaug::photometric's of the unconverted output, in both memory formats."""
    images = make_images([3, 3, 14, 23], image_dtype, device, seed=40)
    geometry = random_geometry([(14, 23)] * 3, out=(10, 21), seed=41).to(device)
    program = dict(dtype=dtype)
    if dtype != torch.uint8:
        program.update(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    out = augment([images], geometry, size=(10, 21), memory_format=memory_format, **program)
    assert out.dtype == dtype and out.is_contiguous(memory_format=memory_format)
    front = augment([images], geometry, size=(10, 21))
    expected = torch.ops.gpuaug.photometric(front, [], torch.empty([3, 0], device=device),
                                            **program)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def test_geometry_on_device_as_data():
    """The geometry is data: another geometry, another result, same call (no host copy)."""
    images = make_images([2, 3, 10, 12], torch.float32, seed=14)
    a = random_geometry([(10, 12)] * 2, seed=15)
    b = random_geometry([(10, 12)] * 2, seed=16)
    assert not torch.equal(augment([images], a), augment([images], b))


GRADCHECK_CASES = {
    "bilinear antialias": dict(interpolation=1, antialias=True, padding_mode=2),
    "bicubic": dict(interpolation=2, antialias=False, padding_mode=3),
    "nearest, edge": dict(interpolation=0, antialias=False, padding_mode=1),
    "brightness, contrast, normalise": dict(interpolation=1, antialias=True, padding_mode=0,
                                            fill=[0.5], stages=[1, 2],
                                            std=[0.2, 0.3, 0.4], mean=[0.1, 0.2, 0.3]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(GRADCHECK_CASES))
def test_gradcheck(case, device):
    kwargs = dict(GRADCHECK_CASES[case])
    batch = make_images([3, 3, 6, 7], torch.float64, device, seed=17).requires_grad_()
    image = make_images([3, 5, 9], torch.float64, device, seed=18).requires_grad_()
    geometry = random_geometry([(6, 7)] * 3 + [(5, 9)], out=(4, 5), seed=19).to(device)
    if "stages" in kwargs:
        kwargs["factors"] = torch.tensor([[1.2, 0.7]] * 4, dtype=torch.float64, device=device)
    assert torch.autograd.gradcheck(
        lambda b, i: torch.ops.gpuaug.augment([b, i], geometry, [4, 5], **kwargs),
        (batch, image))


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_of_float32_list(device):
    """float32 images' gradients (float32 sums) against float64's, a list of two sizes."""
    images64 = [make_images([3, 12, 10], torch.float64, device, seed=20),
                make_images([2, 3, 7, 15], torch.float64, device, seed=21)]
    geometry = random_geometry([(12, 10), (7, 15), (7, 15)], seed=22).to(device)
    grad = torch.randn([3, 3, *OUT], dtype=torch.float64, device=device)
    kwargs = dict(interpolation=2, antialias=True, padding_mode=2)
    grads = []
    for dtype in (torch.float64, torch.float32):
        images = [i.detach().to(dtype).requires_grad_() for i in images64]
        augment(images, geometry, **kwargs).backward(grad.to(dtype))
        grads.append([i.grad for i in images])
    for g64, g32 in zip(*grads):
        torch.testing.assert_close(g32.double(), g64, atol=1e-5, rtol=1e-5)


def test_uint8_has_no_gradient():
    images = make_images([1, 3, 5, 5], torch.uint8, seed=23)
    geometry = random_geometry([(5, 5)], seed=24)
    out = augment([images], geometry, dtype=torch.float32)
    assert not out.requires_grad
    with pytest.raises(RuntimeError, match="_augment_backward: gradients need floating images"):
        torch.ops.gpuaug._augment_backward(
            torch.zeros([1, 3, *OUT]), [images], geometry, interpolation=1, antialias=True,
            padding_mode=0, fill=None, stages=[], factors=None, order=None, apply=None, std=None,
            factor_ranges=None)


def opcheck_args(device):
    images = [make_images([2, 3, 8, 9], torch.uint8, device, seed=25),
              make_images([3, 11, 6], torch.uint8, device, seed=26)]
    geometry = random_geometry([(8, 9), (8, 9), (11, 6)], out=(5, 4), seed=27).to(device)
    return (images, geometry, [5, 4]), dict(
        interpolation=2, padding_mode=2, fill=[1.0, 2.0, 3.0], stages=[1, 2],
        factors=torch.rand([3, 2], device=device) + 0.5, dtype=torch.float32,
        mean=[0.5, 0.4, 0.3], std=[0.2, 0.2, 0.2])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    args, kwargs = opcheck_args(device)
    torch.library.opcheck(torch.ops.gpuaug.augment.default, args, kwargs)
    images = [make_images([2, 3, 8, 9], torch.float64, device, seed=28).requires_grad_()]
    geometry = random_geometry([(8, 9)] * 2, out=(5, 4), seed=29).to(device)
    torch.library.opcheck(torch.ops.gpuaug.augment.default, (images, geometry, [5, 4]),
                          dict(stages=[1], factors=torch.rand([2, 1], device=device,
                                                              dtype=torch.float64)))


def test_compile_dynamic(fresh_dynamo):
    def run(images, geometry):
        return torch.ops.gpuaug.augment([images], geometry, [9, 11], interpolation=2,
                                        stages=[1], factors=torch.ones([images.shape[0], 1]))

    # (aot_eager: Dynamo, the Meta kernel and AOTAutograd on symbolic sizes; Inductor adds
    # nothing for an opaque op but half a minute of CI)
    compiled = torch.compile(run, fullgraph=True, dynamic=True, backend="aot_eager")
    for n in (3, 5):
        images = make_images([n, 3, 13 + n, 17], torch.float32, seed=n)
        geometry = random_geometry([(13 + n, 17)] * n, seed=n)
        torch.testing.assert_close(compiled(images, geometry), run(images, geometry))


def test_export_dynamic_batch():
    class Crop(torch.nn.Module):
        def forward(self, images, geometry):
            return torch.ops.gpuaug.augment([images], geometry, [9, 11], padding_mode=1)

    images = make_images([4, 3, 13, 17], torch.float32, seed=30)
    geometry = random_geometry([(13, 17)] * 4, seed=31)
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(Crop(), (images, geometry),
                                  dynamic_shapes=({0: batch}, {0: batch}))
    assert torch.ops.gpuaug.augment.default in {n.target for n in program.graph.nodes}
    images, geometry = images[:3], geometry[:3]
    torch.testing.assert_close(program.module()(images, geometry), Crop()(images, geometry),
                               rtol=0, atol=0)


def test_torchscript():
    @torch.jit.script
    def run(images: List[torch.Tensor], geometry: torch.Tensor) -> torch.Tensor:
        return torch.ops.gpuaug.augment(images, geometry, [9, 11], interpolation=0,
                                        fill=[100.0], dtype=torch.float64)

    images = [make_images([3, 13, 17], torch.uint8, seed=32),
              make_images([3, 8, 20], torch.uint8, seed=33)]
    geometry = random_geometry([(13, 17), (8, 20)], seed=34)
    torch.testing.assert_close(run(images, geometry),
                               augment(images, geometry, interpolation=0, fill=[100.0],
                                       dtype=torch.float64), rtol=0, atol=0)


@requires_cuda
def test_cuda_graph_replays():
    """A list of images of different sizes and a reduction stage, captured and replayed with new
    geometry and factors written in place."""
    images = [make_images([3, 13, 17], torch.uint8, "cuda", seed=35),
              make_images([2, 3, 30, 8], torch.uint8, "cuda", seed=36)]
    sizes = [(13, 17), (30, 8), (30, 8)]
    geometry = random_geometry(sizes, seed=37).cuda()
    factors = torch.rand([3, 1], device="cuda") + 0.5

    def run():
        return augment(images, geometry, stages=[2], factors=factors, dtype=torch.float32)

    expected = []

    def redraw(k):
        geometry.copy_(random_geometry(sizes, seed=38 + k))
        factors.uniform_(0.5, 1.5)
        expected.append(run())

    for out, want in zip(captured_replays(run, before_replay=redraw), expected, strict=True):
        torch.testing.assert_close(out, want, rtol=0, atol=0)


@requires_cuda
def test_cuda_many_images():
    """More images than one launch's table takes: a launch per table, the same values."""
    images = [make_images([3, 4 + k % 5, 5 + k % 3], torch.float32, "cuda", seed=k)
              for k in range(300)]
    geometry = random_geometry([tuple(i.shape[-2:]) for i in images], out=(3, 3), seed=39).cuda()
    out = augment(images, geometry, size=(3, 3))
    expected = augment([i.cpu() for i in images], geometry.cpu(), size=(3, 3))
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=1e-6)


@requires_cuda
@pytest.mark.parametrize("interpolation, antialias", [(1, True), (2, False)])
def test_cuda_tiles(interpolation, antialias):
    """An output of several tiles per sample (bands of rows, chunks of 256 columns), windows
    downscaled by up to 8 (more taps than the tiles' tables hold) and a reduction stage: the CPU
    loop's values."""
    images = make_images([3, 3, 90, 700], torch.float32, "cuda", seed=40)
    geometry = torch.tensor([[0, 0, 90, 700, 0, 70, 600, 0, 0, 0],
                             [5, 20, 80, 660, 1, 35, 90, -3, -4, 3],
                             [-6, -9, 60, 500, 2, 300, 4000, 10, 3000, 1]], device="cuda")
    kwargs = dict(size=(70, 600), interpolation=interpolation, antialias=antialias,
                  padding_mode=2, stages=[2], factors=torch.tensor([[1.3], [0.6], [0.9]]))
    out = augment([images], geometry, **{**kwargs, "factors": kwargs["factors"].cuda()})
    expected = augment([images.cpu()], geometry.cpu(), **kwargs)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=1e-5)


@requires_cuda
@pytest.mark.parametrize("padding_mode", [0, 2])
def test_cuda_bands(padding_mode):
    """A batch large enough for tiles of several rows, each resizing the image rows its rows read
    once (and the fill's row): the CPU loop's values."""
    images = make_images([300, 3, 40, 44], torch.float32, "cuda", seed=41)
    geometry = random_geometry([(40, 44)] * 300, out=(48, 40), seed=42)
    kwargs = dict(size=(48, 40), interpolation=1, antialias=True, padding_mode=padding_mode,
                  fill=[0.25, 0.5, 1.0])
    out = augment([images], geometry.cuda(), **kwargs)
    expected = augment([images.cpu()], geometry, **kwargs)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=1e-5)


def bad_call(images=None, geometry=None, size=OUT, **kwargs):
    images = [make_images([2, 3, 5, 5], torch.float32)] if images is None else images
    geometry = random_geometry([(5, 5)] * 2) if geometry is None else geometry
    return torch.ops.gpuaug.augment(images, geometry, list(size), **kwargs)


@pytest.mark.parametrize("call, message", [
    (lambda: bad_call(images=[]), "'images' to hold at least one image, but got an empty list"),
    (lambda: bad_call(images=[torch.rand([3, 5, 5]), torch.rand([3, 5, 5]).double()],
                      geometry=random_geometry([(5, 5)] * 2)),
     r"every image of the dtype and device of images\[0\]"),
    (lambda: bad_call(images=[torch.rand([2, 3, 0, 5])]),
     r"'images\[0\]' of at least one pixel, but got shape \[2, 3, 0, 5\]"),
    (lambda: bad_call(images=[torch.rand([5, 5])]), r"'images\[0\]' of shape \[C, H, W\]"),
    (lambda: bad_call(images=[torch.rand([2, 4, 5, 5])]), "with 1 or 3 channels, but got 4"),
    (lambda: bad_call(images=[torch.randint(0, 9, [2, 3, 5, 5])]),
     r"'images\[0\]' of dtype float32, float64, float16, bfloat16 or uint8, but got Long"),
    (lambda: bad_call(geometry=torch.zeros([3, 10], dtype=torch.long)),
     r"'geometry' of shape \[2, 10\] \(a row per sample\), but got \[3, 10\]"),
    (lambda: bad_call(geometry=torch.zeros([2, 10])), "'geometry' of dtype int64"),
    (lambda: bad_call(geometry=torch.zeros([2, 10], dtype=torch.long)),
     "sample 0's window .* of at least one pixel, but got 0x0 resized to 0x0"),
    (lambda: bad_call(size=(0, 3)), "'size' of two positive values"),
    (lambda: bad_call(interpolation=4), "'interpolation' 0 .* but got 4"),
    (lambda: bad_call(padding_mode=-1), "'padding_mode' 0 .* but got -1"),
    (lambda: bad_call(fill=[1.0, 2.0]), "'fill' of one value or one per channel"),
    (lambda: bad_call(stages=[1]), "'factors' for the 1 stages, but got None"),
    (lambda: bad_call(stages=[11], factors=torch.zeros([2, 1])), "equalize does not run"),
])
def test_bad_inputs(call, message):
    with pytest.raises(RuntimeError, match="gpuaug::augment: .*" + message):
        call()


@requires_cuda
def test_bad_devices():
    with pytest.raises(RuntimeError, match=r"every image of the dtype and device of images\[0\]"):
        bad_call(images=[torch.rand([3, 5, 5]), torch.rand([3, 5, 5], device="cuda")])
    with pytest.raises(RuntimeError, match="'geometry' on cuda:0 like the images"):
        bad_call(images=[torch.rand([2, 3, 5, 5], device="cuda")])
