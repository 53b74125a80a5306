"""The photometric transforms' draws: per sample, with their generators, as keys and factor_ranges
(short and long forms), fresh draws against their replay, and their printed form."""

import math

import pytest
import torch

import gpuaug
from gpuaug import Stage
from gpuaug import transforms as T
from gpuaug_testing import (DEVICES, assert_matches_torchvision, make_image)
from photometric_testing import (DRAWN_STAGES, DRAWN_TERMS, requires_torchvision, torchvision_batch)


def test_repr():
    """Printed, a transform shows its arguments as torchvision's does, and a Compose its
    conversion."""
    compose = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                         T.RandomSolarize(128.0), T.RandomPosterize(4, p=0.3),
                         T.RandomPhotometricDistort(), T.ColorAugment(p=0.5)],
                        dtype=torch.float32, mean=[0.5], std=[0.25])
    text = repr(compose)
    for part in ["Compose(\n  dtype=torch.float32, mean=[0.5], std=[0.25]\n",
                 "RandomApply(\n      p=0.8\n",
                 "ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.8, 1.2), "
                 "hue=(-0.1, 0.1))",
                 "RandomSolarize(threshold=128.0, p=0.5)", "RandomPosterize(bits=4, p=0.3)",
                 "RandomPhotometricDistort(brightness=(0.875, 1.125), contrast=(0.5, 1.5), "
                 "saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5)",
                 "ColorAugment(color=(0.8, 1.2), brightness=(-0.1, 0.1), contrast=(0.8, 1.2), "
                 "gamma=(0.8, 1.25), p=0.5)"]:
        assert part in text, (part, text)
    assert repr(T.RandomInvert()) == "RandomInvert(p=0.5)"
    assert repr(T.ColorJitter(hue=0.2, dtype=torch.float16)) == (
        "ColorJitter(hue=(-0.2, 0.2), dtype=torch.float16)")


@pytest.mark.parametrize("device", DEVICES)
def test_per_sample_draws(device):
    """Samples draw their own factors and orders; a generator makes the draws reproducible."""
    image = make_image([64, 3, 4, 4], torch.uint8, device, seed=5)
    g1 = torch.Generator(device=device).manual_seed(11)
    g2 = torch.Generator(device=device).manual_seed(11)
    p1 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g1).sample_params(image)
    p2 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g2).sample_params(image)
    for key in p1:
        assert torch.equal(p1[key], p2[key])
    assert p1["factors"][:, 0].unique().numel() == 64
    assert p1["order"].unique(dim=0).shape[0] > 10
    f = p1["factors"]
    assert (f[:, :3] >= 0.6).all() and (f[:, :3] <= 1.4).all()
    assert (f[:, 3].abs() <= 0.1).all()
    distort = T.RandomPhotometricDistort(p=0.5).sample_params(image)
    rate = distort["apply"].double().mean().item()
    assert 0.35 < rate < 0.65


class _CudaGenerator:
    """Stands in for a CUDA generator where there is no GPU: the check reads its device alone."""
    device = torch.device("cuda")


@pytest.mark.parametrize("device", DEVICES)
def test_generator_of_another_device(device):
    """A generator of another device type than the image's: the transform's own message, before
    torch.rand's (which names neither); meta images take any generator, as torch.rand does; and
    the check stays out of TorchScript, which has no Generator.device."""
    image = make_image([2, 3, 4, 4], torch.uint8, device, seed=1)
    other = torch.Generator() if device == "cuda" else _CudaGenerator()
    other_type = "cpu" if device == "cuda" else "cuda"
    inner = T.RandomInvert()
    transforms = {"ColorJitter": T.ColorJitter(0.4),
                  "RandomApply": T.RandomApply([T.RandomInvert()]),
                  "RandomInvert": T.Compose([inner]),  # a Compose's transform, its own generator
                  "ColorAugment": T.ColorAugment()}
    for name, transform in transforms.items():
        (inner if name == "RandomInvert" else transform).generator = other
        message = rf"gpuaug.transforms.{name}: generator is a {other_type} generator and the image"
        with pytest.raises(ValueError, match=rf"{message} is on {device}"):
            transform(image)
    meta = torch.empty([2, 3, 4, 4], dtype=torch.uint8, device="meta")
    params = T.ColorJitter(0.4, generator=torch.Generator()).sample_params(meta)
    assert params["factors"].device.type == "meta"
    scripted = torch.jit.script(T.ColorJitter(0.4, generator=torch.Generator(device=device)))
    assert scripted(image).shape == image.shape


@pytest.mark.parametrize("device", DEVICES)
def test_compose_draws(device):
    """A Compose draws its transforms' uniforms in one call, unless they have generators of their
    own: then each draws with its own, reproducibly."""
    image = make_image([32, 3, 4, 4], torch.uint8, device, seed=7)

    def compose(seed):
        g = torch.Generator(device=device).manual_seed(seed)
        return T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g),
                          T.RandomInvert(generator=g), T.RandomSolarize(128.0, generator=g)])
    p1, p2 = compose(3).sample_params(image), compose(3).sample_params(image)
    for key in p1:
        assert torch.equal(p1[key], p2[key])
    torch.manual_seed(5)
    shared = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(0.5)])
    params = shared.sample_params(image)
    assert params["factors"].shape == (32, 5) and params["order"].shape == (32, 5)
    rate = params["apply"][:, 4].double().mean().item()
    assert 0.2 < rate < 0.8 and params["apply"][:, :4].all()
    assert sorted(params["order"][0, :4].tolist()) == [0, 1, 2, 3] and params["order"][0, 4] == 4
    # a generator given to a transform after the Compose was made is used
    shared.transforms[0].generator = torch.Generator(device=device).manual_seed(9)
    alone = T.ColorJitter(0.4, 0.4, 0.4, 0.1,
                          generator=torch.Generator(device=device).manual_seed(9))
    assert torch.equal(shared.sample_params(image)["factors"][:, :4],
                       alone.sample_params(image)["factors"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key_dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_order_as_keys(key_dtype, device):
    """Floating keys order a sample's slots as argsort(keys, stable=True): NaN last, ties (-0.0
    and 0.0 among them) by slot; one row of keys serves every sample."""
    image = make_image([6, 3, 5, 7], torch.uint8, device, seed=12)
    stages = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SOLARIZE, Stage.INVERT, Stage.POSTERIZE]
    factors = torch.tensor([1.3, 0.6, 100.0, 0.0, 3.0], device=device)
    nan = float("nan")
    keys = torch.tensor([[0.5, 0.25, 0.75, 0.1, 0.9],
                         [0.5, 0.5, 0.5, 0.5, 0.5],
                         [nan, 0.2, nan, -1.0, 3.0],
                         [-0.0, 0.0, 0.1, -0.0, -0.1],
                         [float("inf"), nan, 0.3, float("-inf"), 0.3],
                         [0.9, 0.7, 0.5, 0.3, 0.1]]).to(key_dtype)
    order = torch.argsort(keys.double(), dim=1, stable=True)
    for given, expected in [(keys, order), (keys[5], order[5])]:
        out = gpuaug.photometric(image, stages, factors, order=given.to(device))
        assert torch.equal(out, gpuaug.photometric(image, stages, factors,
                                                   order=expected.to(device)))


@pytest.mark.parametrize("device", DEVICES)
def test_broadcast_and_sliced_rows(device):
    """Parameters as one row expanded over the samples, or as columns of a wider tensor: read in
    place, with the results of contiguous copies."""
    image = make_image([4, 3, 6, 5], torch.uint8, device, seed=13)
    stages = [Stage.BRIGHTNESS, Stage.SATURATION, Stage.HUE]
    wide = torch.rand([4, 9], generator=torch.Generator().manual_seed(2)).to(device)
    factors = wide[:, 2:5] * torch.tensor([1.0, 1.0, 0.2], device=device)
    keys = wide[:, 5:8]
    apply = torch.tensor([True, False, True], device=device).expand(4, 3)
    out = gpuaug.photometric(image, stages, factors, order=keys, apply=apply)
    expected = gpuaug.photometric(image, stages, factors.contiguous(), order=keys.contiguous(),
                                  apply=apply.contiguous())
    assert not keys.is_contiguous() and apply.stride(0) == 0
    assert torch.equal(out, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float64])
@pytest.mark.parametrize("enabled", [(0.4, 0.4, 0.4, 0.1), (0.4, None, 0.4, 0.1),
                                     (None, 0.3, None, 0.2), (None, None, None, 0.1)])
def test_jitter_fresh_draws_replay(enabled, dtype, device):
    """ColorJitter's own draws (its uniforms given to the op with their ranges, its order as
    keys) are sample_params' with the same generator state: the two calls agree exactly."""
    image = make_image([16, 3, 7, 9], dtype, device, seed=14)

    def jitter():
        return T.ColorJitter(*enabled, generator=torch.Generator(device=device).manual_seed(4),
                             dtype=torch.float32 if dtype == torch.uint8 else None,
                             mean=[0.5] * 3, std=[0.25] * 3)
    params = jitter().sample_params(image)
    assert params["order"].dtype == torch.int64 and params["apply"].shape == (16, 4)
    assert torch.equal(jitter()(image), jitter()(image, params))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("jitter", [(0.4, 0.4, 0.4, 0.1), (0.4, 0.0, 0.4)])
def test_compose_fresh_draws_replay(jitter, device):
    """A Compose's fresh draws are its uniforms alone, of which the op makes every call's
    factors, coins and order keys (factor_ranges' long form): sample_params' values for the same
    generator state, a transform's own generator drawing that transform's columns."""
    image = make_image([24, 3, 6, 5], torch.uint8, device, seed=18)

    def draws_alike(compose):
        torch.manual_seed(21)
        params = compose.sample_params(image)
        replayed = compose(image, params)
        torch.manual_seed(21)
        assert torch.equal(compose(image), replayed)

    affine = T.Compose([T.ColorJitter(*jitter), T.RandomSolarize(100.0, 0.6),
                        T.RandomGrayscale(0.3), T.RandomAutocontrast(0.5), T.RandomInvert()],
                       dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3)
    assert len(affine.bounds) - 1 == (2 if jitter[1] else 1)
    draws_alike(affine)
    augment = T.Compose([T.ColorAugment(gamma=(0.7, 1.6), p=0.6), T.ColorJitter(*jitter),
                         T.RandomInvert(0.4)], dtype=torch.float32)
    # gamma as exp of its log's range, in the op
    draws_alike(augment)
    every = T.Compose([T.ColorJitter(*jitter), T.RandomChannelPermutation(),
                       T.RandomPhotometricDistort(p=0.6), T.RandomEqualize(0.5)])
    # a permutation as the floor of six times a uniform, in the op
    draws_alike(every)
    # a generator of a transform's own: its columns, the same values
    own = T.Compose([T.ColorJitter(*jitter), T.RandomChannelPermutation(
        generator=torch.Generator(device=device))])
    assert own._own_generators()
    own.transforms[1].generator.manual_seed(8)
    torch.manual_seed(21)
    params = own.sample_params(image)
    own.transforms[1].generator.manual_seed(8)
    torch.manual_seed(21)
    assert torch.equal(own(image), own(image, params))
    with pytest.raises(TypeError, match="Threshold should be less or equal"):
        T.Compose([T.RandomSolarize(300.0)])(make_image([2, 3, 4, 4], torch.float32, device, 1))


@requires_torchvision
@pytest.mark.parametrize("device", DEVICES)
def test_jitter_program_without_disabled(device):
    """A disabled adjustment is left out of the program fresh draws run and a Compose takes: no
    contrast, no reduction pass (a Compose with autocontrast after it is one call); sample_params
    still covers all four, the disabled last in the order and never applied."""
    jitter = T.ColorJitter(0.4, 0.0, 0.4, 0.1)
    assert jitter.program == [Stage.BRIGHTNESS, Stage.SATURATION, Stage.HUE]
    assert jitter.uniforms == 6
    image = make_image([32, 3, 6, 7], torch.uint8, device, seed=15)
    params = jitter.sample_params(image)
    assert not params["apply"][:, 1].any() and params["apply"][:, [0, 2, 3]].all()
    assert (params["order"][:, 3] == 1).all()
    assert params["order"][:, 0].unique().numel() == 3  # each enabled one first somewhere
    compose = T.Compose([jitter, T.RandomAutocontrast(0.7)])
    assert compose.bounds == [0, 4]
    assert T.Compose([T.ColorJitter(0.4, 0.4), T.RandomAutocontrast()]).bounds == [0, 2, 3]
    params = compose.sample_params(image)
    assert params["factors"].shape == (32, 4)
    expected = torchvision_batch(image, compose.stages, params)
    assert_matches_torchvision(compose(image, params), expected, torch.uint8)


def fma_reference(width, u, low):
    """fma(width, u, low) rounded once to float64, from exact rationals."""
    from fractions import Fraction
    return float(Fraction(width) * Fraction(u) + Fraction(low))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("u_dtype", [torch.float32, torch.float64])
def test_factor_ranges(u_dtype, dtype, device):
    """With factor_ranges the factors are uniforms, slot k's factor fma(width, u, low) in float64
    (from u as the compute type holds it: float32, float64 for float64 images), then rounded to
    float32: the op's output and gradient are those of the factors so made. Widths of 53 bits
    make the single rounding matter."""
    stages = [Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE]
    image = make_image([6, 3, 5, 7], dtype, device, seed=31)
    g = torch.Generator().manual_seed(32)
    u = torch.rand([6, 4], generator=g, dtype=u_dtype)
    order = torch.rand([6, 4], generator=g).to(device)
    lows, widths = [0.6, 0.55, 0.7, -0.1], [0.8, 0.9 + 2.0 ** -40, 0.3 / 7, 0.2]
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    u_seen = u.to(compute).double().tolist()
    factors = torch.tensor([[fma_reference(widths[k], row[k], lows[k]) for k in range(4)]
                            for row in u_seen], dtype=torch.float64).float()
    ranged = gpuaug.photometric(image, stages, u.to(device), order=order,
                                factor_ranges=lows + widths)
    assert torch.equal(ranged, gpuaug.photometric(image, stages, factors.to(device), order=order))
    if dtype == torch.float64:
        x = image.clone().requires_grad_()
        gpuaug.photometric(x, stages, u.to(device), order=order,
                           factor_ranges=lows + widths).sum().backward()
        y = image.clone().requires_grad_()
        gpuaug.photometric(y, stages, factors.to(device), order=order).sum().backward()
        assert torch.equal(x.grad, y.grad)
    with pytest.raises(RuntimeError, match=r"gpuaug::photometric: expected 'factor_ranges' of "
                       r"length 8 \(each slot's low, then each slot's width\) or 32 \(those, "
                       r"then each slot's factor column, coin column, coin bound, key column, "
                       r"key low and key width\), but got 3"):
        gpuaug.photometric(image, stages, u.to(device), factor_ranges=[0.5, 1.0, 2.0])
    if device == "cpu":  # the made factors' values are checked where they are on the CPU
        with pytest.raises(RuntimeError, match=r"expected the hue factor \(slot 3\) in "
                           r"\[-0.5, 0.5\], but got"):
            gpuaug.photometric(image, stages, u, factor_ranges=lows[:3] + [0.4] + widths)


@pytest.mark.parametrize("device", DEVICES)
def test_factor_ranges_gamma(device):
    """A color_augment stage's gamma slot, ranged, is exp of its value in the range (log gamma's,
    as ColorAugment draws it); its other slots are affine."""
    stages = [Stage.COLOR_AUGMENT] + [Stage.COLOR_PARAMETER] * 5
    image = make_image([8, 3, 5, 6], torch.uint8, device, seed=33)
    u = torch.rand([8, 6], generator=torch.Generator().manual_seed(34))
    lows = [0.8, 0.9, 1.0, -0.1, 0.9, math.log(0.6)]
    widths = [0.4, 0.2, 0.3, 0.2, 0.3, math.log(1.7) - math.log(0.6)]
    factors = torch.tensor([[fma_reference(widths[k], row[k], lows[k]) for k in range(6)]
                            for row in u.double().tolist()], dtype=torch.float64)
    factors[:, 5] = factors[:, 5].exp()
    assert (factors[:, 5] > 0.6 - 1e-6).all() and (factors[:, 5] < 1.7 + 1e-6).all()
    ranged = gpuaug.photometric(image, stages, u.to(device), factor_ranges=lows + widths)
    explicit = gpuaug.photometric(image, stages, factors.float().to(device))
    assert torch.equal(ranged, explicit) and not torch.equal(ranged, image)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [1, 3])
def test_factor_ranges_permutation(channels, device):
    """A ranged permutation slot takes permutation floor(float32(fma)) of the six, clamped, in
    lexicographic order (an independent list here): its boundaries, the clamp above, and a
    1-channel image, which any permutation leaves as it is."""
    image = make_image([10, channels, 5, 6], torch.uint8, device, seed=36)
    u = torch.tensor([0.0, 1 / 6 - 2 ** -26, 1 / 6, 0.34, 0.5, 0.51, 0.7, 5 / 6,
                      1 - 2 ** -24, 1.0]).view(10, 1)
    numbers = [min(5, math.floor(v)) for v in (u * 6).flatten().tolist()]
    assert numbers == [0, 0, 1, 2, 3, 3, 4, 5, 5, 5]
    permutations = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    expected = image if channels == 1 else torch.stack(
        [image[n, list(permutations[k])] for n, k in enumerate(numbers)])
    ranged = gpuaug.photometric(image, [Stage.PERMUTE_CHANNELS], u.to(device),
                                factor_ranges=[0.0, 6.0])
    assert torch.equal(ranged, expected)
    assert channels == 1 or not torch.equal(ranged, image)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float64])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("name", ["RandomPhotometricDistort", "RandomChannelPermutation"])
def test_permuting_fresh_draws_replay(name, channels, dtype, device):
    """RandomPhotometricDistort's and RandomChannelPermutation's own draws (the uniforms with
    their ranges, Distort's order as keys) are sample_params' for the same generator state."""
    image = make_image([32, channels, 7, 9], dtype, device, seed=15)

    def transform():
        g = torch.Generator(device=device).manual_seed(6)
        if name == "RandomChannelPermutation":
            return T.RandomChannelPermutation(generator=g)
        return T.RandomPhotometricDistort(p=0.7, generator=g)
    params = transform().sample_params(image)
    assert torch.equal(transform()(image), transform()(image, params))


def drawn_params(u, terms):
    """The factors' uniforms (for the short form), the order keys and apply that the long form
    makes of the uniforms u ([N, U], or [U]), computed here: keys from exact rationals."""
    rows = u.reshape(-1, u.shape[-1])
    k = len(terms[0])
    column = [[int(c) for c in terms[t]] for t in (2, 3, 5)]
    ut = rows.double().tolist()
    factors = torch.tensor([[0.0 if column[0][j] < 0 else row[column[0][j]] for j in range(k)]
                            for row in ut], dtype=torch.float64).to(u.dtype)
    keys = torch.tensor([[terms[6][j] if column[2][j] < 0 else
                          fma_reference(terms[7][j], row[column[2][j]], terms[6][j])
                          for j in range(k)] for row in ut], dtype=torch.float64)
    below = torch.tensor(terms[4], dtype=torch.float64).float()
    coins = torch.stack([rows[:, c].float() if c >= 0 else torch.zeros(rows.shape[0])
                         for c in column[1]], 1)
    apply = (coins < below) | (torch.tensor(column[1]) < 0)
    return factors, keys, apply


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("per_sample", [True, False])
def test_drawn_factor_ranges(per_sample, dtype, device):
    """factor_ranges' long form takes each slot's factor, coin and order key from columns of the
    uniforms: the output and gradient of the short form given the factors' uniforms, and the
    order and apply computed here (keys as exact fma in float64, coins as float32 compares)."""
    image = make_image([16, 3, 5, 7], dtype, device, seed=33)
    g = torch.Generator().manual_seed(34)
    u = torch.rand([16, 9] if per_sample else [9], generator=g)
    u[..., 6] = 0.5  # a coin equal to its bound: not applied
    factors, keys, apply = drawn_params(u, DRAWN_TERMS)
    assert 0 < apply[:, 1].sum() < 16 and not apply[:, 2].any() and apply[:, 0].all()
    if not per_sample:
        factors, keys, apply = factors[0], keys[0], apply[0]
    long_form = [v for row in DRAWN_TERMS for v in row]
    short_form = long_form[:12]
    drawn = gpuaug.photometric(image, DRAWN_STAGES, u.to(device), factor_ranges=long_form)
    given = gpuaug.photometric(image, DRAWN_STAGES, factors.to(device), order=keys.to(device),
                               apply=apply.to(device), factor_ranges=short_form)
    assert torch.equal(drawn, given)
    if dtype == torch.float64:
        x = image.clone().requires_grad_()
        gpuaug.photometric(x, DRAWN_STAGES, u.to(device),
                           factor_ranges=long_form).square().sum().backward()
        y = image.clone().requires_grad_()
        gpuaug.photometric(y, DRAWN_STAGES, factors.to(device), order=keys.to(device),
                           apply=apply.to(device),
                           factor_ranges=short_form).square().sum().backward()
        assert torch.equal(x.grad, y.grad)


def test_permutation_and_order_draws():
    """Distort's permutations cover the six evenly, contrast runs second about half the time,
    and the 1-channel permutation is none."""
    image = torch.zeros([6000, 3, 1, 1], dtype=torch.uint8)
    params = T.RandomPhotometricDistort(generator=torch.Generator().manual_seed(2)) \
        .sample_params(image)
    counts = torch.stack([(params["factors"][:, 4] == c).sum() for c in (21, 15, 19, 7, 11, 5)])
    assert counts.sum() == 6000 and (counts > 880).all() and (counts < 1120).all()
    second = (params["order"][:, 1] == 1).double().mean().item()
    assert 0.46 < second < 0.54
    gray = T.RandomChannelPermutation().sample_params(image[:, :1])
    assert (gray["factors"] == 0).all()


def test_jitter_ranges_as_torchvision():
    j = T.ColorJitter(brightness=(0.5, 0.9), contrast=0.0, hue=0.2)
    assert j.enabled == [True, False, False, True]
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="must be non negative"):
        T.ColorJitter(brightness=-1)
