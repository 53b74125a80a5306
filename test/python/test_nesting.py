"""Containers (RandomApply, RandomChoice, RandomOrder) and Composes inside containers and
Composes: coins nested over several levels, orders inside choices, a call per reduction. Their
values against torchvision are test_photometric_values.py's ("nested containers" entries, with compile,
export, TorchScript and CUDA graphs)."""
import pytest
import torch
from gpuaug_testing import DEVICES, assert_fresh_draws_replay, uint8_image

from gpuaug import transforms as T


def made(device):
    """Nestings of every kind, each twice, their generators alike."""
    def generator():
        return torch.Generator(device).manual_seed(53)
    return {
        "apply of a choice": lambda: T.RandomApply([T.RandomChoice(
            [T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomGrayscale(1.0), T.RandomInvert(0.5)])],
            p=0.7, generator=generator()),
        "choice of every kind": lambda: T.RandomChoice(
            [T.Compose([T.ColorJitter(0.3), T.RandomInvert(0.6)]),
             T.RandomApply([T.RandomSolarize(100.0, 0.5)], p=0.5),
             T.RandomOrder([T.RandomGrayscale(0.5), T.RandomPosterize(3, 1.0)]),
             T.RandomChoice([T.ColorAugment(p=0.7), T.RandomPhotometricDistort()])],
            generator=generator()),
        "order of containers": lambda: T.RandomOrder(
            [T.RandomApply([T.ColorJitter(0.3, 0, 0.3)], p=0.5),
             T.RandomChoice([T.RandomInvert(1.0), T.RandomGrayscale(1.0)]),
             T.RandomOrder([T.RandomSolarize(120.0), T.RandomPosterize(4)])],
            generator=generator()),
        "Composes in a Compose": lambda: T.Compose(
            [T.Compose([T.RandomInvert(0.3, generator=generator()),
                        T.ColorJitter(0.2, generator=generator())]),
             T.RandomApply([T.RandomApply([T.RandomGrayscale(0.5)], p=0.5)], p=0.8,
                           generator=generator())],
            dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3),
        "reductions": lambda: T.RandomApply(
            [T.Compose([T.ColorJitter(0.4, 0.4), T.RandomAutocontrast(0.7)]),
             T.RandomChoice([T.RandomEqualize(0.5), T.RandomInvert()])], p=0.8,
            generator=generator()),
    }


@pytest.mark.parametrize("name", list(made("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_draws_replay(name, device):
    """Fresh draws (the uniforms nested level by level, the keys made of them, in the op) equal
    sample_params' replayed."""
    assert_fresh_draws_replay(made(device)[name], device)


def drawn(transform, device, seed):
    """sample_params' apply flags for 20000 one-pixel-pair samples, and the fresh draws checked
    against their replay."""
    image = uint8_image([20000, 3, 1, 2], device, seed=seed)
    torch.manual_seed(seed)
    params = transform.sample_params(image)
    torch.manual_seed(seed)
    assert torch.equal(transform(image), transform(image, params))
    return params


def assert_frequency(flags, p):
    n = len(flags)
    got = flags.double().mean().item()
    assert abs(got - p) < 5 * max(p * (1 - p) / n, 1 / n) ** 0.5, (got, p)


@pytest.mark.parametrize("device", DEVICES)
def test_a_choice_inside_a_coin(device):
    """RandomApply(p=0.6) of RandomChoice([RandomInvert(1.0), RandomGrayscale(0.5)], p=[1, 3]):
    invert in 0.6 x 0.25 of the samples, gray in 0.6 x 0.75 x 0.5, never both."""
    apply = drawn(T.RandomApply([T.RandomChoice([T.RandomInvert(1.0), T.RandomGrayscale(0.5)],
                                                p=[1, 3])], p=0.6), device, 7)["apply"]
    inverted, grayed = apply[:, 0], apply[:, 1]
    assert_frequency(inverted, 0.15)
    assert_frequency(grayed, 0.225)
    assert not (inverted & grayed).any()


@pytest.mark.parametrize("device", DEVICES)
def test_coins_inside_a_choice(device):
    """RandomChoice of RandomApply(p=0.8)([RandomInvert(0.5), RandomGrayscale(1.0)]) and
    RandomSolarize(1.0): the first in half the samples, its coin in 0.8 of those and invert's own
    in half of these; solarize in the other half."""
    apply = drawn(T.RandomChoice([
        T.RandomApply([T.RandomInvert(0.5), T.RandomGrayscale(1.0)], p=0.8),
        T.RandomSolarize(100.0, 1.0)]), device, 8)["apply"]
    inverted, grayed, solarized = apply[:, 0], apply[:, 1], apply[:, 2]
    assert_frequency(grayed, 0.4)
    assert_frequency(inverted, 0.2)
    assert not (inverted & ~grayed).any()
    assert_frequency(solarized, 0.5)
    assert not (solarized & grayed).any()


@pytest.mark.parametrize("device", DEVICES)
def test_three_levels_of_coins(device):
    """RandomApply(0.5) of RandomApply(0.5) of RandomInvert(0.5) inverts an eighth, in a
    Compose beside another transform (the levels' columns moved with it)."""
    transform = T.Compose([T.RandomGrayscale(0.5), T.RandomApply(
        [T.RandomApply([T.RandomInvert(0.5)], p=0.5)], p=0.5)])
    apply = drawn(transform, device, 9)["apply"]
    assert_frequency(apply[:, 0], 0.5)
    assert_frequency(apply[:, 1], 0.125)


def assert_blocks(order, blocks):
    """Each block of slots runs together in every row of ``order``; the blocks' orders."""
    firsts = []
    for block in blocks:
        places = torch.stack([(order == s).int().argmax(1) for s in block], 1)
        first = places.min(1).values
        assert torch.equal(places.max(1).values - first, torch.full_like(first, len(block) - 1))
        firsts.append(first)
    return torch.argsort(torch.stack(firsts, 1), 1)


@pytest.mark.parametrize("device", DEVICES)
def test_an_order_inside_an_order(device):
    """RandomOrder([RandomOrder([ColorJitter, A]), B]): the jitter's adjustments run together
    (its own order), and with A as one block, before or after B: the four orders of the three
    blocks alike."""
    transform = T.RandomOrder([
        T.RandomOrder([T.ColorJitter(0.4, 0, 0.4), T.RandomInvert(1.0)]),
        T.RandomSolarize(100.0, 1.0)])
    order = drawn(transform, device, 10)["order"].cpu()
    blocks = assert_blocks(order, [[0, 1], [2], [3]])
    inner = assert_blocks(order, [[0, 1, 2], [3]])
    for o in ([0, 1, 2], [1, 0, 2], [2, 0, 1], [2, 1, 0]):
        assert_frequency((blocks == torch.tensor(o)).all(1), 0.25)
    assert_frequency(inner[:, 0] == 0, 0.5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("outer", ["RandomChoice", "RandomApply", "Compose"])
def test_an_order_inside(outer, device):
    """An order held by a RandomChoice, RandomApply or Compose: the jitter's adjustments run
    together in its own order, invert before or after them alike; where a RandomChoice takes
    the other transform, neither runs."""
    order_of = T.RandomOrder([T.ColorJitter(0.4, 0, 0.4), T.RandomInvert(1.0)])
    transform = {"RandomChoice": lambda: T.RandomChoice([order_of, T.RandomSolarize(100.0, 1.0)]),
                 "RandomApply": lambda: T.RandomApply([order_of], p=0.5),
                 "Compose": lambda: T.Compose([T.RandomGrayscale(0.5), order_of])}[outer]()
    params = drawn(transform, device, 11)
    apply, order = params["apply"].cpu(), params["order"].cpu()
    held = [1, 2, 3] if outer == "Compose" else [0, 1, 2]
    if outer != "Compose":
        assert_frequency(apply[:, 0], 0.5)
        assert (apply[:, held] == apply[:, :1]).all()
    if outer == "RandomChoice":
        assert torch.equal(apply[:, 3], ~apply[:, 0])
    blocks = assert_blocks(order, [held[:2], held[2:]])
    assert_frequency(blocks[:, 0] == 0, 0.5)


def test_calls_of_nested_reductions():
    """A call ends between a held Compose's transforms where a reduction would be a call's
    second."""
    transform = T.RandomApply([T.Compose([T.ColorJitter(0.4, 0.4), T.RandomAutocontrast()]),
                               T.RandomChoice([T.RandomEqualize(), T.RandomInvert()])])
    assert transform.bounds == transform.program_bounds == [0, 2, 3, 5]
    composes = T.Compose([T.Compose([T.RandomEqualize(), T.RandomInvert()]),
                          T.Compose([T.RandomAutocontrast()])])
    assert composes.bounds == [0, 2, 3]


def test_errors():
    with pytest.raises(ValueError, match=r"RandomApply: Compose has a generator of its own, or "
                       r"holds one that has: give it to the RandomApply"):
        T.RandomApply([T.Compose([T.RandomInvert(generator=torch.Generator())])])
    with pytest.raises(ValueError, match=r"RandomChoice: a transform in it cannot convert"):
        T.RandomChoice([T.Compose([T.RandomInvert()], dtype=torch.float32)])
    with pytest.raises(ValueError, match=r"RandomOrder: expected one reduction stage"):
        T.RandomOrder([T.RandomApply([T.ColorJitter(0.4, 0.4)]), T.RandomEqualize()])
