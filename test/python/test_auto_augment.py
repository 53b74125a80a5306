"""gpuaug::auto_augment and the policies (TrivialAugmentWide, RandAugment, AutoAugment, AugMix)
against torchvision.transforms.v2's own per-operation code (``_apply_image_or_video_transform``)
run on each sample with that sample's operations and magnitudes, on the same device: single
operations, chains, AugMix's mixture, the policies' draws; opcheck, compile, TorchScript and bad
inputs."""

import pytest
import torch

import gpuaug.auto_augment as A
from gpuaug_testing import DEVICES, requires_cuda
from geometric_testing import F

pytestmark = pytest.mark.skipif(F is None, reason="torchvision is not installed")

if F is not None:
    from torchvision.transforms import v2 as V2
    from torchvision.transforms.v2 import InterpolationMode

# uint8 values off torchvision's by one where its float arithmetic sits on a rounding or
# truncation boundary (a bilinear tap's weights, sharpness's blend), at most this fraction
OFF_BY_ONE = 1e-3


def make_images(shape, dtype, device, seed):
    """Images whose samples span ranges of their own (autocontrast and equalize then change
    them): uint8, or floating in [0, 1]."""
    g = torch.Generator().manual_seed(seed)
    n = shape[0]
    low = torch.randint(0, 120, [n, 1, 1, 1], generator=g)
    span = torch.randint(1, 256, [n, 1, 1, 1], generator=g).clamp(max=255 - low)
    u = torch.rand(shape, generator=g, dtype=torch.float64)
    images = (low + u * (span + 1)).floor().clamp(max=255)
    if dtype == torch.uint8:
        return images.to(torch.uint8).to(device)
    return (images / 255 + u / 512).clamp(0, 1).to(dtype).to(device)


def torchvision_op(image, name, magnitude, interpolation, fill):
    """torchvision's operation `name` with `magnitude` on one image."""
    mode = InterpolationMode.NEAREST if interpolation == 0 else InterpolationMode.BILINEAR
    t = V2.TrivialAugmentWide(interpolation=mode, fill=fill)
    return t._apply_image_or_video_transform(image, name, magnitude, interpolation=mode,
                                            fill=t._fill)


def reference(images, operations, magnitudes, weights=None, interpolation=0, fill=None):
    """Each sample through torchvision's operations in turn (and AugMix's mixture)."""
    out = []
    for i in range(images.shape[0]):
        chains = []
        for b in range(operations.shape[1]):
            x = images[i]
            for d in range(operations.shape[2]):
                x = torchvision_op(x, A.NAMES[int(operations[i, b, d])],
                                   float(magnitudes[i, b, d]), interpolation, fill)
            chains.append(x)
        if weights is None:
            out.append(chains[0])
            continue
        mix = weights[i, 0] * images[i]
        for b, x in enumerate(chains):
            mix.add_(weights[i, b + 1] * x)
        out.append(mix.to(images.dtype))
    return torch.stack(out)


def assert_matches(actual, expected, what=""):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, what
    if actual.dtype != torch.uint8:
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0, msg=what)
        return
    diff = (actual.int() - expected.int()).abs()
    assert diff.max() <= 1, (what, diff.max().item(), diff.nonzero()[:5].tolist())
    off = (diff > 0).double().mean().item()
    assert off <= OFF_BY_ONE, (what, off)


def drawn_magnitudes(name, count, generator):
    """Magnitudes as the policies draw them for `name`: TrivialAugmentWide's bins and signs."""
    codes, table, signed = A._tables(A._TRIVIAL_SPACE, 31, 1, 1)
    if name not in A._TRIVIAL_SPACE:  # Invert
        return torch.zeros(count, dtype=torch.float64)
    k = list(A._TRIVIAL_SPACE).index(name)
    values = table[k, torch.randint(0, 31, [count], generator=generator)]
    sign = torch.where(signed[k] & (torch.rand(count, generator=generator) < 0.5), -1.0, 1.0)
    return values * sign


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("name", A.NAMES)
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("fill", [None, [30.0, 120.0, 250.0]])
def test_operation(device, dtype, name, interpolation, fill):
    if fill is not None and dtype != torch.uint8:
        fill = [f / 255 for f in fill]
    g = torch.Generator().manual_seed(A.NAMES.index(name))
    images = make_images([5, 3, 19, 23], dtype, device, seed=interpolation)
    operations = torch.full([5, 1, 1], A.NAMES.index(name), dtype=torch.int64)
    magnitudes = drawn_magnitudes(name, 5, g).view(5, 1, 1)
    out = A.auto_augment(images, operations.to(device), magnitudes.to(device),
                         interpolation=interpolation, fill=fill)
    expected = reference(images, operations, magnitudes, interpolation=interpolation, fill=fill)
    assert_matches(out, expected, f"{name} {dtype} {interpolation} {fill}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("seed", range(4))
def test_chains(device, dtype, interpolation, seed):
    """Random chains of four operations: warps before sharpness and the reductions, reductions
    after reductions, warps after warps."""
    g = torch.Generator().manual_seed(seed)
    n = 8
    images = make_images([n, 3, 16, 21], dtype, device, seed=seed)
    operations = torch.randint(0, len(A.NAMES), [n, 1, 4], generator=g)
    magnitudes = torch.stack([drawn_magnitudes(A.NAMES[int(o)], 1, g)[0]
                              for o in operations.flatten()]).view(n, 1, 4)
    fill = None if seed % 2 else ([7.0] if dtype == torch.uint8 else [0.03])
    out = A.auto_augment(images, operations.to(device), magnitudes.to(device),
                         interpolation=interpolation, fill=fill)
    expected = reference(images, operations, magnitudes, interpolation=interpolation, fill=fill)
    assert_matches(out, expected, f"{operations.tolist()}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("channels", [1, 3])
def test_augmix_mixture(device, dtype, channels):
    g = torch.Generator().manual_seed(channels)
    n, width, depth = 6, 3, 3
    images = make_images([n, channels, 14, 18], dtype, device, seed=channels)
    names = [k for k in A.NAMES if k not in ("Identity", "Invert")]
    operations = torch.tensor([[[A.NAMES.index(names[int(i)]) for i in row] for row in chain]
                               for chain in torch.randint(0, len(names), [n, width, depth],
                                                          generator=g)])
    magnitudes = torch.stack([drawn_magnitudes(A.NAMES[int(o)], 1, g)[0]
                              for o in operations.flatten()]).view(n, width, depth)
    m = torch._sample_dirichlet(torch.ones(n, 2), generator=g)
    weights = torch.cat([m[:, :1], torch._sample_dirichlet(torch.ones(n, width), generator=g)
                         * m[:, 1:]], 1)
    out = A.auto_augment(images, operations.to(device), magnitudes.to(device),
                         weights=weights.to(device), interpolation=1)
    expected = reference(images, operations, magnitudes, weights.to(device), interpolation=1)
    assert_matches(out, expected, "augmix")


def replayed(policy_cls, images, params, **kwargs):
    return reference(images, params["operations"].cpu(), params["magnitudes"].cpu(),
                     None if "weights" not in params else params["weights"].to(images.device),
                     **kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", ["trivial", "rand", "imagenet", "cifar10", "svhn", "augmix"])
def test_policy_replays_torchvision(device, policy):
    make = {"trivial": lambda: A.TrivialAugmentWide(),
            "rand": lambda: A.RandAugment(num_ops=3),
            "imagenet": lambda: A.AutoAugment(A.AutoAugmentPolicy.IMAGENET),
            "cifar10": lambda: A.AutoAugment(A.AutoAugmentPolicy.CIFAR10),
            "svhn": lambda: A.AutoAugment(A.AutoAugmentPolicy.SVHN),
            "augmix": lambda: A.AugMix()}
    t = make[policy]()
    images = make_images([12, 3, 20, 24], torch.uint8, device, seed=3)
    params = t.sample_params(images)
    out = t(images, params)
    expected = replayed(type(t), images, params, interpolation=t.interpolation)
    assert_matches(out, expected, policy)


def test_autoaugment_policies_are_torchvision_s():
    for policy in ["imagenet", "cifar10", "svhn"]:
        tv = V2.AutoAugment(V2.AutoAugmentPolicy(policy))
        ours = A._policies(policy)
        assert [[tuple(op) for op in sub] for sub in ours] == \
            [[tuple(op) for op in sub] for sub in tv._policies]


@pytest.mark.parametrize("device", DEVICES)
def test_policy_draws(device):
    """Each sample its own operation: all 14 of TrivialAugmentWide's come up about equally,
    signs about half, over 14000 samples."""
    t = A.TrivialAugmentWide()
    params = t.sample_params(torch.zeros([14000, 3, 8, 8], dtype=torch.uint8, device=device))
    counts = torch.bincount(params["operations"].flatten().cpu(), minlength=len(A.NAMES))
    used = counts[[A.NAMES.index(k) for k in A._TRIVIAL_SPACE]]
    assert used.sum() == 14000 and used.min() > 850 and used.max() < 1150, counts.tolist()
    signed = params["magnitudes"][params["operations"] == A.NAMES.index("Rotate")]
    negative = (signed < 0).double().mean().item()
    assert 0.4 < negative < 0.6


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_auto_augment_draws(device, policy):
    """AutoAugment's operations come up in each slot as often as torchvision's sub-policies and
    probabilities make them (within five standard deviations over 40000 samples), a signed
    operation's sign about half the time, each with its sub-policy's magnitude."""
    n = 40000
    t = A.AutoAugment(policy, generator=torch.Generator(device).manual_seed(7))
    params = t.sample_params(torch.zeros([n, 3, 32, 32], dtype=torch.uint8, device=device))
    operations, magnitudes = params["operations"][:, 0].cpu(), params["magnitudes"][:, 0].cpu()
    subs = V2.AutoAugment(getattr(V2.AutoAugmentPolicy, policy.upper()))._policies
    for slot in range(2):
        expected = torch.zeros(len(A.NAMES), dtype=torch.float64)
        for sub in subs:
            name, p, _ = sub[slot]
            expected[A.NAMES.index(name)] += p / len(subs)
            expected[0] += (1 - p) / len(subs)
        counts = torch.bincount(operations[:, slot], minlength=len(A.NAMES)).double()
        sigma = (n * expected * (1 - expected)).sqrt()
        assert ((counts - n * expected).abs() <= 5 * sigma + 1).all(), (slot, counts, n * expected)
    rotated = magnitudes[operations == A.NAMES.index("Rotate")]
    if rotated.numel() > 1000:
        assert 0.45 < (rotated < 0).double().mean().item() < 0.55
        allowed = {abs(float(m)) for m in torch.linspace(0, 30, 10)}
        assert all(min(abs(abs(float(m)) - a) for a in allowed) < 1e-4 for m in rotated.unique())
    assert (magnitudes[operations == 0] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_rand_augment_draws(device):
    """RandAugment's num_ops operations a sample, each of its 14 about equally often, signed
    magnitudes negative about half the time and always bin ``magnitude``'s value."""
    t = A.RandAugment(num_ops=3, magnitude=5)
    params = t.sample_params(torch.zeros([14000, 3, 8, 8], dtype=torch.uint8, device=device))
    operations, magnitudes = params["operations"].cpu(), params["magnitudes"].cpu()
    assert operations.shape == (14000, 1, 3)
    counts = torch.bincount(operations.flatten(), minlength=len(A.NAMES))
    used = counts[[A.NAMES.index(k) for k in A._RANDAUGMENT_SPACE]]
    assert used.sum() == 42000 and used.min() > 2700 and used.max() < 3300, counts.tolist()
    rotated = magnitudes[operations == A.NAMES.index("Rotate")]
    assert 0.45 < (rotated < 0).double().mean().item() < 0.55
    assert torch.allclose(rotated.abs(), torch.tensor(30 * 5 / 30, dtype=torch.float64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("side", [(16, 20), (15, 17)])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("channels", [1, 3])
def test_output_layouts(device, side, channels_last, channels):
    """Chains of two (bilinear: stage images) into uint8 and normalised float32 outputs, in the
    input's layout: four pixels a thread written as whole words where the image's pixels are a
    multiple of four (planar and channels_last), one element at a time otherwise."""
    g = torch.Generator().manual_seed(side[0] + 2 * channels + channels_last)
    n = 6
    images = make_images([n, channels, *side], torch.uint8, device, seed=side[1])
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    operations = torch.randint(0, len(A.NAMES), [n, 1, 2], generator=g)
    operations[0, 0] = torch.tensor([A.NAMES.index("Rotate"), A.NAMES.index("Sharpness")])
    magnitudes = torch.stack([drawn_magnitudes(A.NAMES[int(o)], 1, g)[0]
                              for o in operations.flatten()]).view(n, 1, 2)
    expected = reference(images, operations, magnitudes, interpolation=1)
    mean, std = [0.4, 0.5, 0.6][:channels], [0.2, 0.25, 0.3][:channels]
    for out_dtype in (torch.uint8, torch.float32):
        kwargs = {} if out_dtype == torch.uint8 else dict(dtype=out_dtype, mean=mean, std=std)
        out = A.auto_augment(images, operations.to(device), magnitudes.to(device),
                             interpolation=1, **kwargs)
        assert out.is_contiguous(memory_format=torch.channels_last if channels_last
                                 else torch.contiguous_format)
        if out_dtype == torch.uint8:
            assert_matches(out, expected, f"{operations.tolist()}")
            continue
        u8 = ((out * torch.tensor(std, device=device).view(-1, 1, 1)
               + torch.tensor(mean, device=device).view(-1, 1, 1)) * 255).round().to(torch.uint8)
        assert_matches(u8, expected, f"{operations.tolist()} float32")


@pytest.mark.parametrize("device", DEVICES)
def test_conversion_and_video(device):
    t = A.TrivialAugmentWide(dtype=torch.float32, mean=[0.4, 0.5, 0.6], std=[0.2, 0.25, 0.3])
    video = make_images([12, 3, 12, 15], torch.uint8, device, seed=5).view(4, 3, 3, 12, 15)
    params = t.sample_params(video)
    out = t(video, params)
    assert out.shape == video.shape and out.dtype == torch.float32
    for f in range(3):
        frames = video[:, f]
        expected = replayed(type(t), frames, params, interpolation=0)
        expected = F.normalize(F.to_dtype(expected, torch.float32, scale=True),
                               [0.4, 0.5, 0.6], [0.2, 0.25, 0.3])
        torch.testing.assert_close(out[:, f], expected, atol=1e-5, rtol=0)


def test_opcheck():
    images = make_images([3, 3, 9, 11], torch.uint8, "cpu", seed=0)
    operations = torch.tensor([[[1, 9]], [[13, 5]], [[8, 0]]])
    magnitudes = torch.tensor([[[0.3, 0.5]], [[0.0, -20.0]], [[0.4, 0.0]]], dtype=torch.float64)
    torch.library.opcheck(torch.ops.gpuaug.auto_augment.default,
                          (images, operations, magnitudes), {"interpolation": 1})
    torch.library.opcheck(torch.ops.gpuaug.auto_augment.default,
                          (images.float() / 255, operations, magnitudes),
                          {"dtype": torch.float32, "mean": [0.5] * 3, "std": [0.2] * 3})


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_policy(device):
    t = A.RandAugment()
    images = make_images([4, 3, 16, 16], torch.uint8, device, seed=1)
    params = t.sample_params(images)
    compiled = torch.compile(lambda x, p: t(x, p), fullgraph=True)
    torch.testing.assert_close(compiled(images, params), t(images, params), atol=0, rtol=0)


def test_torchscript_op():
    @torch.jit.script
    def call(image: torch.Tensor, operations: torch.Tensor, magnitudes: torch.Tensor):
        return torch.ops.gpuaug.auto_augment(image, operations, magnitudes, interpolation=0)

    images = make_images([2, 3, 8, 8], torch.uint8, "cpu", seed=2)
    operations, magnitudes = torch.tensor([[[5]], [[13]]]), torch.tensor([[[30.0]], [[0.0]]],
                                                                         dtype=torch.float64)
    torch.testing.assert_close(call(images, operations, magnitudes),
                               reference(images, operations, magnitudes))


@pytest.mark.parametrize("kwargs, message", [
    ({"operations": torch.zeros([2, 1, 5], dtype=torch.int64)}, "D <= 4"),
    ({"operations": torch.zeros([2, 1, 1], dtype=torch.int32)}, "dtype int64"),
    ({"operations": torch.full([2, 1, 1], 15)}, "codes 0..14"),
    ({"magnitudes": torch.zeros([2, 1, 1])}, "'magnitudes' of dtype float64"),
    ({"operations": torch.zeros([2, 2, 1], dtype=torch.int64),
      "magnitudes": torch.zeros([2, 2, 1], dtype=torch.float64)}, "one chain a sample"),
    ({"weights": torch.ones([2, 3])}, "'weights' of shape"),
    ({"interpolation": 2}, "'interpolation' 0 (nearest) or 1"),
    ({"fill": [1.0, 2.0]}, "'fill' of one value or one per channel"),
    ({"dtype": torch.float64}, "'dtype' to be the image's dtype"),
    ({"dtype": torch.float32, "mean": [0.5] * 3}, "pass both or neither"),
    ({"image": torch.zeros([2, 2, 4, 4], dtype=torch.uint8)}, "1 or 3 channels"),
    ({"image": torch.zeros([2, 3, 4, 4], dtype=torch.float16)}, "uint8, float32 or float64"),
])
def test_bad_inputs(kwargs, message):
    args = {"image": torch.zeros([2, 3, 4, 4], dtype=torch.uint8),
            "operations": torch.zeros([2, 1, 1], dtype=torch.int64),
            "magnitudes": torch.zeros([2, 1, 1], dtype=torch.float64)}
    args.update(kwargs)
    image, operations, magnitudes = args.pop("image"), args.pop("operations"), args.pop("magnitudes")
    with pytest.raises(RuntimeError, match="gpuaug::auto_augment.*" + message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        torch.ops.gpuaug.auto_augment(image, operations, magnitudes, **args)


def test_policy_arguments():
    with pytest.raises(ValueError, match="chain_depth"):
        A.AugMix(chain_depth=5)
    with pytest.raises(ValueError, match="magnitude"):
        A.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="not recognized"):
        A.AutoAugment("imagenet2")


@requires_cuda
def test_cuda_graph_capture():
    t = A.TrivialAugmentWide(dtype=torch.float32)
    images = make_images([8, 3, 16, 16], torch.uint8, "cuda", seed=4)
    params = t.sample_params(images)
    t(images, params)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = t(images, params)
    graph.replay()
    torch.testing.assert_close(out, t(images, params), atol=0, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_adjust_sharpness(device, dtype):
    import gpuaug.functional as GF
    images = make_images([5, 3, 13, 17], dtype, device, seed=6)
    factors = torch.tensor([0.0, 0.3, 1.0, 1.7, 3.0], device=device)
    out = GF.adjust_sharpness(images, factors)
    expected = torch.stack([F.adjust_sharpness(images[i], float(factors[i])) for i in range(5)])
    assert_matches(out, expected, "adjust_sharpness")
    assert_matches(GF.adjust_sharpness(images[0], 0.5), F.adjust_sharpness(images[0], 0.5))
    with pytest.raises(ValueError, match="not non-negative"):
        GF.adjust_sharpness(images, -1.0)


def test_from_torchvision_policies():
    from gpuaug.transforms import from_torchvision
    pipeline = from_torchvision(V2.Compose([
        V2.RandomResizedCrop(16), V2.RandAugment(num_ops=3, magnitude=5),
        V2.ToDtype(torch.float32, scale=True), V2.Normalize([0.5] * 3, [0.2] * 3)]))
    policy = pipeline.transforms[1]
    assert isinstance(policy, A.RandAugment) and len(pipeline.transforms) == 2
    assert (policy.num_ops, policy.magnitude, policy.dtype, policy.mean) == \
        (3, 5, torch.float32, [0.5] * 3)
    for tv in [V2.TrivialAugmentWide(num_magnitude_bins=11), V2.AutoAugment(V2.AutoAugmentPolicy.SVHN),
               V2.AugMix(severity=5, mixture_width=2)]:
        ours = from_torchvision(tv)
        assert type(ours).__name__ == type(tv).__name__ and isinstance(ours, A._Policy)
    assert from_torchvision(V2.AugMix(chain_depth=6)).__module__.startswith("torchvision")


def test_compose_refuses_a_policy():
    from gpuaug import transforms as T
    with pytest.raises(TypeError, match="TrivialAugmentWide is a call of gpuaug::auto_augment"):
        T.Compose([T.RandomResizedCrop(8), T.TrivialAugmentWide()])
    assert "num_magnitude_bins=31" in repr(A.TrivialAugmentWide())


def test_export_dynamic_batch():
    class Policy(torch.nn.Module):
        def forward(self, image, operations, magnitudes):
            return torch.ops.gpuaug.auto_augment(image, operations, magnitudes,
                                                 dtype=torch.float32, mean=[0.5] * 3,
                                                 std=[0.25] * 3)

    images = make_images([4, 3, 10, 12], torch.uint8, "cpu", seed=7)
    operations = torch.tensor([[[5, 13]], [[9, 0]], [[1, 8]], [[12, 11]]])
    magnitudes = torch.tensor([[[12.0, 0.0]], [[0.5, 0.0]], [[-0.2, 0.3]], [[0.0, 0.4]]],
                              dtype=torch.float64)
    expected = Policy()(images, operations, magnitudes)
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(Policy(), (images, operations, magnitudes),
                                  dynamic_shapes=({0: batch}, {0: batch}, {0: batch}))
    torch.testing.assert_close(program.module()(images[:3], operations[:3], magnitudes[:3]),
                               expected[:3], rtol=0, atol=0)


CHAIN_PATTERNS = [  # (names, interpolation, magnitudes): taps after taps (a stage image each),
    # reductions before, between and after them; shears off round values, whose taps would sit on
    # rounding boundaries that the operations after them amplify past one
    ("Sharpness Sharpness", 0, [0.5, 0.7]), ("Rotate Rotate", 1, [20.0, -30.0]),
    ("Brightness Rotate", 1, [0.3, 20.0]), ("Color Rotate", 1, [0.3, 20.0]),
    ("Rotate AutoContrast", 1, [20.0, 0.0]), ("Rotate Contrast", 1, [20.0, 0.4]),
    ("Rotate Equalize", 1, [20.0, 0.0]), ("Rotate AutoContrast", 0, [20.0, 0.0]),
    ("Sharpness Equalize", 0, [0.5, 0.0]), ("AutoContrast Equalize", 0, [0.0, 0.0]),
    ("Rotate Sharpness", 1, [20.0, 0.5]), ("Sharpness Rotate", 1, [0.5, 20.0]),
    ("Sharpness Sharpness Sharpness Contrast", 0, [0.9, -0.6, 0.8, 0.5]),
    ("Rotate Sharpness AutoContrast Rotate", 1, [12.0, 0.8, 0.0, -25.0]),
    ("ShearX Equalize ShearY Sharpness", 1, [0.2371, 0.0, -0.3137, 0.6]),
    ("Contrast ShearX Posterize Rotate", 1, [0.5, 0.2713, 4.0, 33.0]),
    ("TranslateX Sharpness TranslateY Solarize", 0, [3.0, 0.7, -2.0, 0.6]),
    ("Sharpness Rotate Sharpness ShearX", 1, [0.8, 21.7, -0.7, 0.2371]),  # a stage image reused
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float64])
@pytest.mark.parametrize("pattern", CHAIN_PATTERNS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_chain_patterns(device, dtype, pattern):
    """Each way an operation reads the chain before it, 3-channel images (a failure names the
    pattern)."""
    names, interpolation, values = pattern
    images = make_images([3, 3, 16, 21], dtype, device, seed=8)
    operations = torch.tensor([A.NAMES.index(n) for n in names.split()]).repeat(3, 1, 1)
    magnitudes = torch.tensor(values, dtype=torch.float64).repeat(3, 1, 1)
    magnitudes[1] *= 0.5
    out = A.auto_augment(images, operations.to(device), magnitudes.to(device),
                         interpolation=interpolation)
    expected = reference(images, operations, magnitudes, interpolation=interpolation)
    assert_matches(out, expected, names)


@pytest.mark.parametrize("device", DEVICES)
def test_reductions_over_several_blocks(device):
    """Images of more pixels than one GPU statistics block takes (4096), so that a chain's
    statistics are combined from several: each reduction, first and after a stage image."""
    images = make_images([4, 3, 75, 130], torch.uint8, device, seed=9)
    chains = [("Equalize Brightness", [0.0, 0.3]), ("AutoContrast Equalize", [0.0, 0.0]),
              ("Contrast Color", [0.6, -0.4]), ("Sharpness Rotate Equalize", [0.7, 17.0, 0.0])]
    depth = max(len(names.split()) for names, _ in chains)
    operations = torch.zeros([4, 1, depth], dtype=torch.int64)  # Identity pads the shorter
    magnitudes = torch.zeros([4, 1, depth], dtype=torch.float64)
    for i, (names, values) in enumerate(chains):
        codes = [A.NAMES.index(n) for n in names.split()]
        operations[i, 0, :len(codes)] = torch.tensor(codes)
        magnitudes[i, 0, :len(codes)] = torch.tensor(values)
    out = A.auto_augment(images, operations.to(device), magnitudes.to(device), interpolation=1)
    assert_matches(out, reference(images, operations, magnitudes, interpolation=1))
