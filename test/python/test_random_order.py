"""gpuaug.transforms.RandomOrder: an order per sample of the transforms it holds. Its values
against torchvision are test_photometric_values.py's (its "RandomOrder" entries, with compile, export,
TorchScript and CUDA graphs)."""
import itertools

import pytest
import torch
from gpuaug_testing import DEVICES, assert_fresh_draws_replay, uint8_image

from gpuaug import transforms as T


def made(device):
    """RandomOrder's of every kind of transform it takes, each twice, their generators alike."""
    def generator():
        return torch.Generator(device).manual_seed(41)
    return {
        "jitter and more": lambda: T.RandomOrder(
            [T.ColorJitter(0.4, 0.4, 0.2, 0.1), T.RandomInvert(0.5), T.RandomChannelPermutation(),
             T.RandomPosterize(4, 0.7)], generator=generator()),
        "distort, ColorAugment": lambda: T.RandomOrder(
            [T.RandomPhotometricDistort(), T.ColorAugment(p=0.6), T.RandomGrayscale(0.5)],
            generator=generator()),
        "in a Compose": lambda: T.Compose(
            [T.RandomAutocontrast(0.5, generator=generator()),
             T.RandomOrder([T.ColorJitter(0.4, 0.4, 0.2, 0.1), T.RandomSolarize(90.0)],
                           generator=generator()),
             T.RandomGrayscale(0.2, generator=generator())],
            dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3),
    }


def assert_orders_alike(orders):
    """Rows of permutations of three ([N, 3]): each of the six in a sixth of them."""
    n, p = len(orders), 1 / 6
    for permutation in itertools.permutations(range(3)):
        got = (orders == torch.tensor(permutation)).all(1).double().mean().item()
        assert abs(got - p) < 5 * (p * (1 - p) / n) ** 0.5, (permutation, got)


@pytest.mark.parametrize("name", list(made("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_draws_replay(name, device):
    """Fresh draws (the uniforms and the keys made of them, in the op) equal sample_params'
    replayed."""
    assert_fresh_draws_replay(made(device)[name], device)


@pytest.mark.parametrize("device", DEVICES)
def test_every_order_alike(device):
    """Three one-slot transforms: each of the six orders in a sixth of the samples."""
    transform = T.RandomOrder([T.RandomInvert(1.0), T.RandomGrayscale(1.0),
                               T.RandomSolarize(100.0, 1.0)])
    image = uint8_image([12000, 3, 1, 2], device, seed=2)
    torch.manual_seed(4)
    params = transform.sample_params(image)
    torch.manual_seed(4)
    assert torch.equal(transform(image), transform(image, params))
    assert_orders_alike(params["order"].cpu())


@pytest.mark.parametrize("device", DEVICES)
def test_transforms_keep_their_own_order(device):
    """A transform's slots run together, in its own order: ColorJitter's own order of its three
    adjustments (each of the six), RandomPhotometricDistort's contrast second or fourth (half
    each), the transforms in each of their six orders alike."""
    transform = T.RandomOrder([T.ColorJitter(0.4, 0, 0.4, 0.1), T.RandomInvert(1.0),
                               T.RandomPhotometricDistort(p=1.0)])
    image = uint8_image([12000, 3, 1, 2], device, seed=5)
    torch.manual_seed(6)
    params = transform.sample_params(image)
    torch.manual_seed(6)
    assert torch.equal(transform(image), transform(image, params))
    order = params["order"].cpu()
    n = len(order)
    blocks = [[0, 1, 2], [3], [4, 5, 6, 7, 8]]
    firsts = []
    for block in blocks:
        places = torch.stack([(order == s).int().argmax(1) for s in block], 1)
        first = places.min(1).values
        assert torch.equal(places.max(1).values - first, torch.full([n], len(block) - 1))
        firsts.append(first)
    assert_orders_alike(torch.argsort(torch.stack(firsts, 1), 1))
    jitter = torch.stack([order[i, order[i] < 3] for i in range(n)])
    assert len(torch.unique(jitter, dim=0)) == 6
    distort = torch.stack([order[i, order[i] >= 4] for i in range(n)]) - 4
    late = (distort == torch.tensor([0, 2, 3, 1, 4])).all(1)
    assert (late | (distort == torch.arange(5)).all(1)).all()
    assert abs(late.double().mean().item() - 0.5) < 5 * (0.25 / n) ** 0.5


def test_errors():
    with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomOrder: expected gpuaug."
                       r"transforms' photometric transforms, Composes of them or ColorAugment, "
                       r"got Identity \(torchvision's RandomOrder takes any transform"):
        T.RandomOrder([T.RandomInvert(), torch.nn.Identity()])
    with pytest.raises(ValueError, match=r"RandomOrder: expected one reduction stage \(contrast, "
                       r"autocontrast, equalize\) at most among its transforms' programs, got 2"):
        T.RandomOrder([T.ColorJitter(0.4, 0.4), T.RandomEqualize()])
    with pytest.raises(ValueError, match=r"RandomOrder: expected 16 slots at most in its "
                       r"transforms' programs \(one call of the op\), got 17"):
        T.RandomOrder([T.RandomInvert()] * 17)
    with pytest.raises(ValueError, match=r"RandomOrder: RandomInvert has a generator of its "
                       r"own, or holds one that has: give it to the RandomOrder"):
        T.RandomOrder([T.RandomInvert(generator=torch.Generator())])
    with pytest.raises(ValueError, match="RandomOrder: expected at least one transform"):
        T.RandomOrder([])


def test_one_call():
    """Its stages are its transforms' programs, in one call; ColorJitter(0.4)'s disabled contrast
    is not among them."""
    transform = T.RandomOrder([T.ColorJitter(0.4), T.RandomAutocontrast(), T.RandomInvert()])
    assert transform.bounds == transform.program_bounds == [0, 3]
    inside = T.Compose([T.RandomOrder([T.ColorJitter(0.4, 0.4), T.RandomInvert()]),
                        T.RandomEqualize()])
    assert inside.bounds == inside.program_bounds == [0, 3, 4]


def test_ties():
    """Transforms whose uniforms tie run in their index order, as blocks; a transform's slots
    whose keys tie (ColorAugment's six) run in slot order."""
    transform = T.RandomOrder([T.RandomInvert(1.0), T.ColorJitter(0.4, 0, 0.4),
                               T.ColorAugment(), T.RandomGrayscale(1.0)])
    u = torch.rand(64, transform.uniforms)
    u[:, 1:3] = u[:, 0:1]  # the jitter and ColorAugment tie with the invert
    u[:, 3] = torch.where(torch.arange(64) % 2 == 0, 0.0, 0.99)  # grayscale first, or last
    order = torch.argsort(transform._derived(u)[:, transform.first_key:], dim=1, stable=True)
    jitter = torch.argsort(u[:, transform.columns[1] + 2:transform.columns[1] + 4], 1) + 1
    tied = torch.cat([torch.zeros(64, 1, dtype=torch.long), jitter,
                      torch.arange(3, 9).expand(64, 6)], 1)
    assert torch.equal(order[0::2], torch.cat([torch.full([32, 1], 9), tied[0::2]], 1))
    assert torch.equal(order[1::2], torch.cat([tied[1::2], torch.full([32, 1], 9)], 1))
