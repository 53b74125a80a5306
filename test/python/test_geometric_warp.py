"""RandomAffine, RandomRotation, RandomPerspective and gpuaug.functional's affine, rotate and
perspective (the op's ``warp``) against torchvision.transforms.v2.functional per sample, with each
sample's params on the same device; their Composes' calls; the op's warp: opcheck, gradcheck and
bad inputs."""

import pytest
import torch

import gpuaug.functional as GF
from gpuaug import transforms as T
from gpuaug_testing import DEVICES, requires_cuda
from geometric_testing import MODES, F, make_images

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

# uint8 pixels off torchvision's by more than one: where its float sampling position sits on a
# rounding boundary (nearest: the other pixel), at most this fraction
NEAREST_OFF = 0.001
FILLS = {"zero": 0, "channels": [30, 120, 250], "none": None}


def fill_of(name, dtype):
    fill = FILLS[name]
    if dtype == torch.uint8 or fill is None:
        return fill
    return [f / 255 for f in fill] if isinstance(fill, list) else fill / 255


def off_fraction(actual, expected):
    """The fraction of uint8 values off by more than one; floating images within 1e-5."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype != torch.uint8:
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)
        return 0.0
    return ((actual.int() - expected.int()).abs() > 1).double().mean().item()


def assert_matches(actual, expected, interpolation, what=""):
    off = off_fraction(actual, expected)
    assert off <= (NEAREST_OFF if interpolation == 0 else 0.0), (what, off)
    if off:
        print(f"{what}: {off:.4%} of the uint8 values off by more than one")


def python_row(params, i):
    return {k: v[i].tolist() for k, v in params.items()}


@pytest.fixture
def calls(monkeypatch):
    """The calls of gpuaug::augment the test makes."""
    made = []
    op = torch.ops.gpuaug.augment

    def counted(*args, **kwargs):
        made.append("augment")
        return op(*args, **kwargs)
    monkeypatch.setattr(torch.ops.gpuaug, "augment", counted)
    return made


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("center", [None, [5.0, 7.5]])
def test_random_affine(device, dtype, interpolation, fill, center):
    t = T.RandomAffine(40, translate=(0.2, 0.1), scale=(0.7, 1.3), shear=(-10, 10, -5, 5),
                       interpolation=MODES[interpolation], fill=fill_of(fill, dtype),
                       center=center)
    images = make_images([3, 3, 17, 22], dtype, device, seed=interpolation)
    params = t.sample_params(images)
    out = t(images, params)
    for i in range(3):
        row = python_row(params, i)
        expected = F.affine(images[i], row["angle"], [int(v) for v in row["translate"]],
                            row["scale"], row["shear"], interpolation=MODES[interpolation],
                            fill=fill_of(fill, dtype), center=center)
        assert_matches(out[i], expected, interpolation, f"affine {dtype} {interpolation} {fill}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("center", [None, [3.0, 12.0]])
def test_random_rotation(device, dtype, interpolation, center):
    t = T.RandomRotation((-200, 200), interpolation=MODES[interpolation], center=center,
                         fill=fill_of("channels", dtype))
    images = make_images([3, 3, 16, 19], dtype, device, seed=2)
    params = t.sample_params(images)
    out = t(images, params)
    for i in range(3):
        expected = F.rotate(images[i], params["angle"][i].item(),
                            interpolation=MODES[interpolation], center=center,
                            fill=fill_of("channels", dtype))
        assert_matches(out[i], expected, interpolation, f"rotate {dtype} {interpolation}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("fill", ["zero", "channels"])
def test_random_perspective(device, dtype, interpolation, fill):
    t = T.RandomPerspective(0.6, p=0.75, interpolation=MODES[interpolation],
                            fill=fill_of(fill, dtype))
    images = make_images([4, 3, 18, 21], dtype, device, seed=5)
    params = t.sample_params(images)
    out = t(images, params)
    for i in range(4):
        if not params["apply"][i]:
            torch.testing.assert_close(out[i], images[i], atol=0, rtol=0)
            continue
        expected = F.perspective(images[i], None, None, interpolation=MODES[interpolation],
                                 fill=fill_of(fill, dtype),
                                 coefficients=params["coefficients"][i].tolist())
        assert_matches(out[i], expected, interpolation, f"perspective {dtype} {interpolation}")


def test_perspective_coefficients_as_torchvision():
    """The coefficients of each sample's corners as torchvision's make_params computes them."""
    from torchvision.transforms.v2.functional._geometry import _get_perspective_coeffs
    t = T.RandomPerspective(0.9, p=1.0)
    images = make_images([6, 3, 25, 30], torch.uint8, seed=1)
    params = t.sample_params(images)
    # the corners back from the coefficients are those drawn; check the solve against lstsq's
    from gpuaug.warp import solved_coefficients
    g = torch.Generator().manual_seed(0)
    for _ in range(6):
        end = torch.randint(0, 12, [4, 2], generator=g).double() + torch.tensor(
            [[0, 0], [17, 0], [17, 12], [0, 12]])
        start = [[0, 0], [29, 0], [29, 24], [0, 24]]
        ours = solved_coefficients(torch.tensor(start).double()[None], end[None])[0]
        theirs = _get_perspective_coeffs(start, end.long().tolist())
        # equal but where the exact value is 0 (lstsq leaves ~1e-13 there)
        torch.testing.assert_close(ours, torch.tensor(theirs, dtype=torch.float64), rtol=0,
                                   atol=1e-9)
    assert params["coefficients"].dtype == torch.float64 and params["apply"].all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_functional(device, dtype):
    """affine, rotate and perspective with per-sample tensors, and with one value for all."""
    images = make_images([3, 3, 15, 20], dtype, device, seed=4)
    angle = torch.tensor([10.0, -33.5, 145.0], device=device)
    translate = torch.tensor([[1.0, -2.0], [0.0, 3.0], [-4.0, 0.0]], device=device)
    scale = torch.tensor([1.0, 0.8, 1.2], device=device)
    shear = torch.tensor([[5.0, 0.0], [-3.0, 2.0], [0.0, 0.0]], device=device)
    out = GF.affine(images, angle, translate, scale, shear, interpolation=MODES[1], fill=None)
    same = GF.rotate(images, 30.0, interpolation=MODES[0], center=[4, 4])
    start = [[0, 0], [19, 0], [19, 14], [0, 14]]
    end = torch.tensor([[[2, 1], [18, 0], [17, 13], [1, 14]]] * 3, device=device)
    warped = GF.perspective(images, start, end, fill=7 if dtype == torch.uint8 else 0.5)
    for i in range(3):
        expected = F.affine(images[i], angle[i].item(), translate[i].long().tolist(),
                            scale[i].item(), shear[i].tolist(), interpolation=MODES[1])
        assert_matches(out[i], expected, 1, "functional affine")
        expected = F.rotate(images[i], 30.0, interpolation=MODES[0], center=[4, 4])
        assert_matches(same[i], expected, 0, "functional rotate")
        expected = F.perspective(images[i], start, end[i].tolist(),
                                 fill=7 if dtype == torch.uint8 else 0.5)
        assert_matches(warped[i], expected, 1, "functional perspective")


def test_list_of_sizes():
    """Images of different sizes: each warped about its own centre, cropped to one size."""
    images = [make_images([3, h, w], torch.float32, seed=h) for h, w in [(14, 20), (18, 16)]]
    compose = T.Compose([T.RandomAffine(30, interpolation=MODES[1]), T.CenterCrop(12)])
    params = compose.sample_params(images)
    out = compose(images, params)
    for i, image in enumerate(images):
        row = {k[2:]: v[i].tolist() for k, v in params.items()}
        expected = F.center_crop(F.affine(image, row["angle"], [int(v) for v in row["translate"]],
                                          row["scale"], row["shear"],
                                          interpolation=MODES[1], fill=0), [12, 12])
        assert_matches(out[i], expected, 1, "list")


def test_compose_photometric_one_call(calls):
    """RandomAffine, ColorJitter, ToDtype, Normalize: one call, as the transforms one by one."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    compose = T.Compose([T.RandomAffine(25, scale=(0.8, 1.1), interpolation=MODES[1]),
                         T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ToDtype(torch.float32, scale=True),
                         T.Normalize(mean, std)])
    images = make_images([3, 3, 16, 20], torch.uint8, seed=9)
    params = compose.sample_params(images)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment"]
    warped = compose.transforms[0](images, {k[2:]: v for k, v in params.items()
                                            if k.startswith("0.")})
    rest = T.Compose(list(compose.transforms)[1:])
    reference = rest(warped, {k[2:]: v for k, v in params.items() if k.startswith("1.")})
    torch.testing.assert_close(out, reference, atol=0.02, rtol=0)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_center_crop_after_affine_one_call(dtype, calls):
    compose = T.Compose([T.RandomAffine(30, translate=(0.1, 0.1), fill=fill_of("channels", dtype)),
                         T.RandomHorizontalFlip(), T.CenterCrop([10, 13])])
    images = make_images([3, 3, 16, 20], dtype, seed=11)
    params = compose.sample_params(images)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment"]
    for i in range(3):
        row = {k: v[i].tolist() for k, v in params.items()}
        expected = F.affine(images[i], row["0.angle"], [int(v) for v in row["0.translate"]],
                            row["0.scale"], row["0.shear"], fill=fill_of("channels", dtype))
        if row["1.apply"]:
            expected = F.horizontal_flip(expected)
        assert_matches(out[i], F.center_crop(expected, [10, 13]), 0, "center crop")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_resized_crop_then_affine_two_calls(dtype, calls):
    compose = T.Compose([T.RandomResizedCrop(14), T.RandomAffine(20, interpolation=MODES[1])])
    images = make_images([3, 3, 20, 24], dtype, seed=12)
    params = compose.sample_params(images)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment", "augment"]
    for i in range(3):
        row = {k: v[i].tolist() for k, v in params.items()}
        cropped = F.resized_crop(images[i], row["0.top"], row["0.left"], row["0.height"],
                                 row["0.width"], [14, 14], antialias=True)
        expected = F.affine(cropped, row["1.angle"], [int(v) for v in row["1.translate"]],
                            row["1.scale"], row["1.shear"], interpolation=MODES[1], fill=0)
        assert_matches(out[i], expected, 1, "two calls")


def test_pad_crop_flip_then_affine_one_call(calls):
    """Crops, pads and flips before the warp move its window: one call."""
    compose = T.Compose([T.RandomCrop(14, padding=2), T.RandomVerticalFlip(p=1.0),
                         T.RandomRotation(50, interpolation=MODES[1])])
    images = make_images([2, 3, 16, 18], torch.float32, seed=13)
    params = compose.sample_params(images)
    calls.clear()
    out = compose(images, params)
    assert calls == ["augment"]
    for i in range(2):
        row = {k: v[i].tolist() for k, v in params.items()}
        expected = F.crop(F.pad(images[i], [2]), row["0.top"], row["0.left"], 14, 14)
        expected = F.rotate(F.vertical_flip(expected), row["2.angle"],
                            interpolation=MODES[1], fill=0)
        assert_matches(out[i], expected, 1, "pad crop flip rotate")


def warp_call(images, rows, interpolation=1, fill=None, size=None):
    s, _, h, w = images.shape
    geometry = torch.tensor([[0, 0, h, w, 0, h, w, 0, 0, 0]] * s, dtype=torch.long)
    return torch.ops.gpuaug.augment([images], geometry, size or [h, w],
                                    interpolation=interpolation, fill=fill, warp=rows)


def affine_rows(count, angle=20.0):
    from gpuaug.warp import affine_rows as rows
    a = torch.full([count], angle, dtype=torch.float64)
    zero = torch.zeros([count, 2], dtype=torch.float64)
    return rows(a, zero + 1, torch.ones_like(a), zero, a * 0, a * 0)


def test_opcheck():
    images = make_images([2, 3, 6, 7], torch.float32, seed=1)
    rows = affine_rows(2)
    rows[1, 8] = 2.0  # a perspective: these coefficients are an affine one's
    for fill in (None, [0.5]):
        torch.library.opcheck(torch.ops.gpuaug.augment.default,
                              ([images], warp_call_geometry(images), [6, 7]),
                              {"interpolation": 1, "fill": fill, "warp": rows})


def warp_call_geometry(images):
    s, _, h, w = images.shape
    return torch.tensor([[0, 0, h, w, 0, h, w, 0, 0, 0]] * s, dtype=torch.long)


@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("fill", [None, [0.3, 0.6, 0.9]])
def test_gradcheck(interpolation, fill):
    images = make_images([2, 3, 5, 6], torch.float64, seed=2).requires_grad_()
    rows = affine_rows(2, 33.0)
    rows[1] = torch.tensor([0.9, 0.1, 0.2, -0.05, 1.1, -0.3, 0.01, -0.02, 2.0])

    def f(x):
        return warp_call(x, rows, interpolation, fill)
    assert torch.autograd.gradcheck(f, (images,))


def test_bad_inputs():
    images = make_images([2, 3, 6, 7], torch.float32, seed=1)
    rows = affine_rows(2)
    with pytest.raises(RuntimeError, match="expected 'warp' of dtype float64"):
        warp_call(images, rows.float())
    with pytest.raises(RuntimeError, match=r"expected 'warp' of shape \[2, 9\]"):
        warp_call(images, rows[:, :8])
    with pytest.raises(RuntimeError, match="expected no resize with 'warp'"):
        warp_call(images, rows, size=None) if False else torch.ops.gpuaug.augment(
            [images], torch.tensor([[0, 0, 6, 7, 0, 12, 14, 0, 0, 0]] * 2), [6, 7],
            warp=rows)
    with pytest.raises(RuntimeError, match="0 \\(nearest\\) or 1 \\(bilinear\\) with 'warp'"):
        warp_call(images, rows, interpolation=2)
    bad = rows.clone()
    bad[0, 8] = 5
    with pytest.raises(RuntimeError, match="warp kind"):
        warp_call(images, bad)
    with pytest.raises(ValueError, match="expand=True is not supported"):
        T.RandomRotation(10, expand=True)
    with pytest.raises(ValueError, match="unsupported with Tensor input"):
        T.RandomAffine(10, interpolation=MODES[2])


def test_from_torchvision():
    from torchvision.transforms import v2
    converted = T.from_torchvision(v2.Compose([
        v2.RandomAffine(10, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=5, fill=3),
        v2.RandomRotation(15, interpolation=MODES[1], center=[2, 3]),
        v2.RandomPerspective(0.3, p=0.4)]))
    kinds = [type(t).__name__ for t in converted.transforms]
    assert kinds == ["RandomAffine", "RandomRotation", "RandomPerspective"]
    affine, rotation, perspective = converted.transforms
    assert affine.translate == [0.1, 0.2] and affine.shear == [-5.0, 5.0] and affine.fill == [3.0]
    assert rotation.interpolation == 1 and rotation.center == [2.0, 3.0]
    assert perspective.distortion_scale == 0.3 and perspective.p == 0.4
    images = make_images([2, 3, 12, 12], torch.uint8)
    assert converted(images).shape == images.shape


def test_compile_fullgraph():
    compose = T.Compose([T.RandomAffine(20), T.RandomPerspective(p=1.0), T.CenterCrop(8)])
    images = make_images([2, 3, 12, 12], torch.float32)
    params = compose.sample_params(images)
    compiled = torch.compile(compose, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(images, params), compose(images, params))


@requires_cuda
def test_draws_and_warp_capture_in_a_cuda_graph():
    """The draws (the perspective's solve among them) and the call capture: no host sync. Each
    replay draws anew; the last replay's params give its output."""
    compose = T.Compose([T.RandomAffine(30, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10),
                         T.ColorJitter(0.4, 0.4, 0.4, 0.1)])
    perspective = T.RandomPerspective(0.4, p=1.0)
    images = make_images([4, 3, 20, 24], torch.uint8, "cuda")
    torch.manual_seed(0)
    for transform in (compose, perspective):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm-up of the captured calls outside the capture
            transform(images, transform.sample_params(images))
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            params = transform.sample_params(images)
            out = transform(images, params)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, transform(images, {k: v.clone() for k, v in params.items()}),
                                   rtol=0, atol=0)


def test_torchscript_and_export():
    """The op's warp argument from TorchScript and torch.export (a dynamic batch)."""
    geometry = torch.tensor([[0, 0, 20, 24, 0, 20, 24, 3, 4, 0],
                             [-2, -1, 20, 24, 1, 20, 24, 0, 0, 2],
                             [0, 0, 20, 24, 3, 20, 24, 4, 5, 0]])
    warp = torch.tensor([[0.96, -0.28, 2.0, 0.28, 0.96, -1.0, 0, 0, 1],
                         [1.05, 0.02, -0.5, 0.01, 0.97, 0.3, 0.001, -0.002, 2],
                         [0, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=torch.float64)
    images = make_images([3, 3, 20, 24], torch.uint8, seed=9)

    def run(images: torch.Tensor, geometry: torch.Tensor, warp: torch.Tensor) -> torch.Tensor:
        return torch.ops.gpuaug.augment([images], geometry, [12, 14], interpolation=1,
                                        fill=[3.0, 4.0, 5.0], warp=warp)

    expected = run(images, geometry, warp)
    torch.testing.assert_close(torch.jit.script(run)(images, geometry, warp), expected,
                               rtol=0, atol=0)

    class Warp(torch.nn.Module):
        def forward(self, images, geometry, warp):
            return run(images, geometry, warp)

    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(Warp(), (images, geometry, warp),
                                  dynamic_shapes=({0: batch}, {0: batch}, {0: batch}))
    torch.testing.assert_close(program.module()(images[:2], geometry[:2], warp[:2]),
                               expected[:2], rtol=0, atol=0)
