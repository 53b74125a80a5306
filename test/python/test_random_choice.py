"""gpuaug.transforms.RandomChoice: a choice per sample of the transforms it holds. Its values
against torchvision are test_photometric_values.py's (its "RandomChoice" entries, with compile, export,
TorchScript and CUDA graphs)."""
import pytest
import torch
from gpuaug_testing import DEVICES, assert_fresh_draws_replay, uint8_image

from gpuaug import transforms as T


def made(device):
    """RandomChoice's of every kind of transform it takes, each twice, their generators alike."""
    def generator():
        return torch.Generator(device).manual_seed(37)
    return {
        "alike": lambda: T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.2, 0.1), T.RandomInvert(1.0),
                                         T.RandomChannelPermutation()], generator=generator()),
        "weighted, own coins": lambda: T.RandomChoice(
            [T.RandomGrayscale(0.5), T.RandomPhotometricDistort(), T.ColorAugment(p=0.6),
             T.RandomSolarize(90.0, 0.8)], p=[3, 1, 2, 2], generator=generator()),
        "in a Compose": lambda: T.Compose(
            [T.RandomInvert(0.3, generator=generator()),
             T.RandomChoice([T.ColorJitter(0.4, 0, 0.2, 0.1), T.RandomPosterize(3, 0.7)],
                            p=[0.7, 0.3], generator=generator()),
             T.RandomGrayscale(0.2, generator=generator())],
            dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3),
        # a call of the op for each reduction stage
        "reductions": lambda: T.RandomChoice(
            [T.ColorJitter(0.4, 0.4, 0.2), T.RandomAutocontrast(0.7), T.RandomEqualize()],
            generator=generator()),
    }


@pytest.mark.parametrize("name", list(made("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_draws_replay(name, device):
    """Fresh draws (the uniforms and their terms, in the op) equal sample_params' replayed."""
    assert_fresh_draws_replay(made(device)[name], device)


@pytest.mark.parametrize("device", DEVICES)
def test_one_choice_per_sample(device):
    """Each sample runs one transform, transform i with probability p[i] / sum(p), and nothing
    of the others; fresh draws as the replay."""
    transform = T.RandomChoice([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(1.0),
                                T.RandomGrayscale(1.0), T.RandomSolarize(10.0, 1.0)],
                               p=[2.0, 1.0, 0.0, 1.0])
    image = uint8_image([20000, 3, 1, 2], device, seed=2)
    torch.manual_seed(3)
    params = transform.sample_params(image)
    torch.manual_seed(3)
    assert torch.equal(transform(image), transform(image, params))
    apply = params["apply"]
    assert apply.shape == (20000, 7)
    jitter, rest = apply[:, :4], apply[:, 4:]
    assert torch.equal(jitter, jitter[:, :1].expand(20000, 4))
    chosen = torch.cat([jitter[:, :1], rest], 1)
    assert (chosen.sum(1) == 1).all()
    n = len(chosen)
    for got, p in zip(chosen.double().mean(0).tolist(), [0.5, 0.25, 0.0, 0.25]):
        assert abs(got - p) <= 5 * (p * (1 - p) / n) ** 0.5, (got, p)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_compose", [False, True])
def test_own_coins_nest_in_the_choice(in_compose, device):
    """A transform with its own p runs where it is chosen and its coin falls for the sample:
    RandomChoice of RandomInvert(0.5), RandomGrayscale(0.4) and RandomSolarize(0.8), p 0.5,
    0.25, 0.25: inverts 25%, grays 10%, solarizes 20%, none two."""
    transform = T.RandomChoice([T.RandomInvert(0.5), T.RandomGrayscale(0.4),
                                T.RandomSolarize(128.0, 0.8)], p=[0.5, 0.25, 0.25])
    if in_compose:  # its columns after another transform's: the nesting moves with them
        transform = T.Compose([T.RandomPosterize(4, 0.5), transform])
    image = uint8_image([20000, 3, 1, 2], device, seed=3)
    torch.manual_seed(5)
    params = transform.sample_params(image)
    torch.manual_seed(5)
    assert torch.equal(transform(image), transform(image, params))
    apply = params["apply"][:, -3:]
    assert (apply.sum(1) <= 1).all()
    n = len(apply)
    for got, p in zip(apply.double().mean(0).tolist(), [0.25, 0.1, 0.2]):
        assert abs(got - p) < 5 * (p * (1 - p) / n) ** 0.5, (got, p)


def test_a_call_per_reduction():
    """A call ends between two transforms where a reduction stage would be a call's second."""
    two = T.RandomChoice([T.ColorJitter(0.4, 0.4), T.RandomInvert(), T.RandomEqualize()])
    assert two.bounds == [0, 5, 6] and two.program_bounds == [0, 3, 4]
    inside = T.Compose([T.RandomChoice([T.ColorJitter(0.4), T.RandomAutocontrast()]),
                        T.RandomInvert()])
    assert inside.bounds == inside.program_bounds == [0, 3]


def test_errors():
    with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomChoice: expected gpuaug."
                       r"transforms' photometric transforms, Composes of them or ColorAugment, "
                       r"got Identity \(torchvision's RandomChoice takes any transform"):
        T.RandomChoice([T.RandomInvert(), torch.nn.Identity()])
    with pytest.raises(ValueError, match=r"RandomChoice: RandomInvert has a generator of its "
                       r"own, or holds one that has: give it to the RandomChoice"):
        T.RandomChoice([T.RandomInvert(generator=torch.Generator())])
    with pytest.raises(ValueError, match="RandomChoice: a transform in it cannot convert"):
        T.RandomChoice([T.ColorJitter(0.4, dtype=torch.float32)])
    with pytest.raises(TypeError, match=r"RandomChoice: expected 'transforms' as a sequence of "
                       r"transforms or an nn.ModuleList, got ColorJitter"):
        T.RandomChoice(T.ColorJitter(0.4))
    with pytest.raises(ValueError, match="RandomChoice: expected at least one transform"):
        T.RandomChoice([])
    with pytest.raises(ValueError, match=r"Length of p doesn't match the number of transforms: "
                       r"1 != 2"):
        T.RandomChoice([T.RandomInvert(), T.RandomGrayscale()], p=[1.0])
    for p in ([1.0, -0.5], [0.0, 0.0], [1.0, float("nan")], [float("inf"), 1.0]):
        with pytest.raises(ValueError, match=r"RandomChoice: expected 'p' as finite weights, "
                           r"none negative, of a positive sum, got \["):
            T.RandomChoice([T.RandomInvert(), T.RandomGrayscale()], p=p)


def test_repr():
    text = repr(T.RandomChoice([T.RandomInvert(), T.RandomGrayscale()], p=[3, 1]))
    assert text.startswith("RandomChoice(\n  p=[0.75, 0.25]\n") and "RandomGrayscale" in text
