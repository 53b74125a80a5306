"""The photometric op's CUDA paths: resident images, the jitter kernels' kinds, a second GPU."""

import pytest
import torch

import gpuaug
from gpuaug import transforms as T
from gpuaug_testing import (assert_matches_torchvision, make_image, requires_cuda,
                            requires_two_gpus)
from photometric_testing import (F, PLANE_LAYOUTS, requires_torchvision, strided_plane_transforms,
                                 strided_planes, torchvision_batch)


@requires_torchvision
@requires_cuda
@pytest.mark.parametrize("out_dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("layout", PLANE_LAYOUTS)
@pytest.mark.parametrize("name", ["ColorJitter", "RandomEqualize"])
def test_resident_planes_at_strides_of_their_own(name, layout, out_dtype):
    """Resident images (see test_resident_images) copy their planes from where they lie."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    image = strided_planes(layout, [4 * sms, 3, 144, 160], torch.uint8, "cuda")
    normalize = {} if out_dtype == torch.uint8 else dict(dtype=out_dtype, mean=[0.5], std=[0.25])
    transform = T.Compose([strided_plane_transforms()[name]], **normalize)
    params = transform.sample_params(image)
    dense = image.contiguous()
    names = kernel_names(lambda: transform(image, params))
    assert any("resident_transform" in k for k in names)
    assert names == kernel_names(lambda: transform(dense, params))  # no copy first
    out = transform(image, params)
    assert torch.equal(out, transform(dense, params))
    assert_first_samples_match(out, image, transform, params, 4, normalize)


def assert_first_samples_match(out, image, transform, params, samples, normalize):
    """The first samples of a uint8 batch's result against torchvision's; converted (normalize:
    the Compose's dtype, mean and std), within a uint8 value torchvision truncates differently,
    which moves the output by 1 / 255 / std."""
    few = slice(0, samples)
    expected = torchvision_batch(image[few], transform.stages,
                                 {k: v[few] for k, v in params.items()})
    if not normalize:
        assert_matches_torchvision(out[few], expected, torch.uint8)
        return
    expected = F.normalize(F.to_dtype(expected, normalize["dtype"], scale=True),
                           normalize["mean"], normalize["std"])
    diff = (out[few].cpu().double() - expected.double()).abs()
    assert (diff > 1e-5).double().mean().item() < 1e-3
    assert diff.max().item() <= 1 / 255 / min(normalize["std"]) + 1e-5


def kernel_names(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [event.name for event in prof.events() if event.device_type.name == "CUDA"]


def transform_builds(names):
    """The last template argument (JitterKinds) of each two-pass element-wise kernel launched."""
    return [k.split("::transform<")[1].split(">")[0].rsplit(", ", 1)[1] for k in names
            if "::transform<" in k]


@requires_torchvision
@requires_cuda
@pytest.mark.parametrize("size", [(150, 156), (144, 160)])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["ColorJitter", "ColorJitter alone", "RandomPhotometricDistort",
                                  "RandomAutocontrast", "RandomEqualize"])
def test_resident_images(name, out_dtype, channels_last, size):
    """A uint8 batch with a reduction stage that fills the GPU runs with each image in shared
    memory (on Hopper, in two halves, a cluster of two blocks); the same samples a few at a time
    take the two-pass kernels. Both give the same values, torchvision's. Blocks large enough that
    two images an SM fill it. 150x156: an odd number of runs of 8 pixels (the halves differ).
    144x160: each half a whole number of warps' runs, so that the resident kernel takes float
    planes' runs in halves (kRunHalves), and interleaved float32 ones in pairs (kRunPairs).
    ColorJitter alone and RandomPhotometricDistort: programs of jitter kinds alone, which take the
    resident kernel built for those (without the other steps' code); the others the general one."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    image = make_image([2 * sms, 3, *size], torch.uint8, "cuda", seed=31)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    normalize = {} if out_dtype == torch.uint8 else dict(dtype=out_dtype, mean=[0.5, 0.4, 0.3],
                                                         std=[0.2, 0.25, 0.3])
    jitter_kinds = name in ("ColorJitter alone", "RandomPhotometricDistort")
    prefix = [] if jitter_kinds else [T.RandomSolarize(100.0), T.RandomPosterize(6)]
    transform = T.Compose([*prefix, *{
        "ColorJitter": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
        "ColorJitter alone": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
        "RandomPhotometricDistort": [T.RandomPhotometricDistort(p=0.7)],
        "RandomAutocontrast": [T.RandomGrayscale(0.3), T.RandomAutocontrast(0.8),
                               T.ColorJitter(0.4, 0, 0.4, 0.1)],
        "RandomEqualize": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomEqualize(0.8),
                           T.RandomInvert()],
    }[name]], **normalize)
    params = transform.sample_params(image)
    whole = transform(image, params)
    names = kernel_names(lambda: transform(image, params))
    assert any("resident_transform" in k for k in names)
    # planar float outputs take runs in halves, interleaved float32 ones pairs (kRunPairs)
    halves = size == (144, 160) and (out_dtype == torch.float32 if channels_last
                                     else out_dtype != torch.uint8)
    layout = "8, true, true," if channels_last else "8, false, true,"
    assert any("resident_transform" in k and layout in k for k in names) == halves
    assert all(k.split("resident_transform<")[1].split(">")[0].endswith(
        f", {str(jitter_kinds).lower()}") for k in names if "resident_transform" in k)
    pieces = torch.cat([transform(image[n:n + 4], {k: v[n:n + 4] for k, v in params.items()})
                        for n in range(0, image.shape[0], 4)])
    few = kernel_names(lambda: transform(image[:4], {k: v[:4] for k, v in params.items()}))
    assert not any("resident_transform" in k for k in few)
    assert transform_builds(few) == [str(jitter_kinds).lower()]
    assert torch.equal(whole, pieces)
    torch.manual_seed(33)  # fresh draws: the uniforms with their ranges (factor_ranges)
    fresh = transform(image)
    torch.manual_seed(33)
    assert torch.equal(fresh, transform(image, transform.sample_params(image)))
    assert_first_samples_match(whole, image, transform, params, 6, normalize)


@requires_torchvision
@requires_cuda
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("name", ["one pass", "two passes", "other kinds", "unaligned"])
def test_jitter_kinds_transform(name, dtype, channels_last):
    """Programs of jitter kinds alone (is_jitter_kind) on RGB images in 16-byte runs take the
    element-wise kernel built for those kinds (without the other steps' code), with or without
    contrast's reduction pass; other programs, and images not in runs (33x35), the general one.
    Both give torchvision's values."""
    size = [33, 35] if name == "unaligned" else [32, 40]
    image = make_image([4, 3, *size], dtype, "cuda", seed=51)
    if channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    transform = T.Compose({
        "one pass": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomChannelPermutation()],
        "two passes": [T.RandomPhotometricDistort(p=0.7)],
        "other kinds": [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomInvert()],
        "unaligned": [T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
    }[name])
    params = transform.sample_params(image)
    out = transform(image, params)
    builds = transform_builds(kernel_names(lambda: transform(image, params)))
    assert builds == [str(name in ("one pass", "two passes")).lower()]
    expected = torchvision_batch(image, transform.stages, params)
    assert_matches_torchvision(out, expected, dtype)


@requires_torchvision
@requires_two_gpus
@pytest.mark.parametrize("name", ["ColorJitter", "RandomAutocontrast", "RandomEqualize"])
def test_second_gpu(name):
    """A batch on cuda:1 while cuda:0 is current runs on cuda:1, on its current stream (a side
    stream here), drawing from a cuda:1 generator. The resident kernel's shared-memory opt-in,
    Hopper check and occupancy are set up per device (cuda:1's first call may come before
    cuda:0's): the whole batch takes it on both GPUs, four images the two-pass kernels, all with
    the same values (uint8 sums are exact in any order), torchvision's."""
    sms = min(torch.cuda.get_device_properties(d).multi_processor_count for d in (0, 1))
    image = make_image([2 * sms, 3, 150, 156], torch.uint8, "cpu", seed=41)
    g = torch.Generator(device="cuda:1").manual_seed(43)
    jitter = T.ColorJitter(0.4, 0.4 if name == "ColorJitter" else 0, 0.4, 0.1, generator=g)
    transform = T.Compose([T.RandomSolarize(100.0, generator=g), jitter, *{
        "ColorJitter": [], "RandomAutocontrast": [T.RandomAutocontrast(0.8, generator=g)],
        "RandomEqualize": [T.RandomEqualize(0.8, generator=g)]}[name]])
    on = {d: image.to(d) for d in ("cuda:1", "cuda:0")}
    with torch.cuda.device(0):
        params = transform.sample_params(on["cuda:1"])
        assert {p.device for p in params.values()} == {torch.device("cuda:1")}
        side = torch.cuda.Stream(device="cuda:1")  # cuda:1's current stream: busy, not default
        side.wait_stream(torch.cuda.current_stream("cuda:1"))
        with torch.cuda.stream(side):
            names = kernel_names(lambda: (transform(on["cuda:1"], params),
                                          torch.cuda.synchronize("cuda:1")))
            whole = transform(on["cuda:1"], params)
        torch.cuda.current_stream("cuda:1").wait_stream(side)
        assert whole.device == torch.device("cuda:1")
        assert any("resident_transform" in k for k in names)
        pieces = transform(on["cuda:1"][:4], {k: v[:4] for k, v in params.items()})
        on_first = transform(on["cuda:0"], {k: v.to("cuda:0") for k, v in params.items()})
    assert torch.equal(pieces, whole[:4])
    assert torch.equal(on_first.cpu(), whole.cpu())
    expected = torchvision_batch(image[:6], transform.stages, {k: v[:6] for k, v in params.items()})
    assert_matches_torchvision(whole[:6], expected, torch.uint8)
    with pytest.raises(RuntimeError,
                       match="expected 'factors' on cuda:1 like 'image', but got cuda:0"):
        gpuaug.photometric(on["cuda:1"], [1], torch.ones(1, device="cuda:0"))


@requires_two_gpus
def test_second_gpu_backward():
    """The float32 backward on cuda:1 (cuda:0 current) gives the CPU kernel's gradient."""
    image = make_image([4, 3, 16, 24], torch.float32, "cpu", seed=45)
    transform = T.ColorJitter(0.4, 0.4, 0.4, 0.0)
    params = transform.sample_params(image)
    grad = torch.randn(image.shape, generator=torch.Generator().manual_seed(46))

    def image_grad(device):
        x = image.to(device).requires_grad_()
        out = transform(x, {k: v.to(device) for k, v in params.items()})
        return torch.autograd.grad(out, [x], grad.to(device))[0]
    with torch.cuda.device(0):
        got = image_grad("cuda:1")
    assert got.device == torch.device("cuda:1")
    torch.testing.assert_close(got.cpu(), image_grad("cpu"), atol=1e-4, rtol=1e-4)
