"""gpuaug.transforms.RandomApply: a coin per sample for the transforms it holds. Its values against
torchvision are test_photometric_values.py's (its "RandomApply" and "self-supervised Compose" entries,
with compile, export, TorchScript and CUDA graphs)."""
import pytest
import torch
from gpuaug_testing import DEVICES, assert_fresh_draws_replay, uint8_image

from gpuaug import transforms as T


def made(device):
    """RandomApply's of every kind of transform it takes, each twice, their generators alike."""
    def generator():
        return torch.Generator(device).manual_seed(31)
    return {
        "ColorJitter": lambda: T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8,
                                             generator=generator()),
        "three": lambda: T.RandomApply([T.ColorJitter(0.3, 0, 0.3), T.RandomInvert(1.0),
                                        T.RandomChannelPermutation()], generator=generator()),
        "ColorAugment": lambda: T.RandomApply([T.ColorAugment(), T.RandomGrayscale(1.0)],
                                              p=0.4, generator=generator()),
        "in a Compose": lambda: T.Compose(
            [T.RandomInvert(0.3, generator=generator()),
             T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8, generator=generator()),
             T.RandomGrayscale(0.2, generator=generator())],
            dtype=torch.float32, mean=[0.5] * 3, std=[0.25] * 3),
        "own coins": lambda: T.RandomApply(
            [T.RandomInvert(0.6), T.RandomPhotometricDistort(), T.ColorAugment(p=0.5)], p=0.7,
            generator=generator()),
        # two RandomApply's coins in a Compose, and one on its own
        "own coins in a Compose": lambda: T.Compose(
            [T.RandomApply([T.RandomSolarize(100.0, 0.6), T.RandomInvert(0.4)], p=0.5,
                           generator=generator()),
             T.RandomGrayscale(0.3, generator=generator()),
             T.RandomApply([T.RandomPosterize(3, 0.8), T.ColorJitter(0.3)], p=0.6,
                           generator=generator())]),
        # a call of the op for each reduction stage
        "reductions": lambda: T.RandomApply(
            [T.ColorJitter(0.4, 0.4, 0.2), T.RandomAutocontrast(0.7), T.RandomEqualize(0.8)],
            p=0.7, generator=generator()),
    }


@pytest.mark.parametrize("name", list(made("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_draws_replay(name, device):
    """Fresh draws (the uniforms and their terms, in the op) equal sample_params' replayed."""
    assert_fresh_draws_replay(made(device)[name], device)


@pytest.mark.parametrize("device", DEVICES)
def test_a_coin_per_sample(device):
    """Each sample runs all the transforms or none, with probability p; the others stay as they
    were, and the transforms run in turn."""
    transform = T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(1.0)], p=0.3)
    image = uint8_image([4000, 3, 2, 2], device, seed=2)
    params = transform.sample_params(image)
    apply = params["apply"]
    assert apply.shape == (4000, 5)
    assert torch.equal(apply, apply[:, :1].expand(4000, 5))
    assert abs(apply[:, 0].double().mean().item() - 0.3) < 5 * (0.3 * 0.7 / 4000) ** 0.5
    assert (params["order"][:, :4] < 4).all() and (params["order"][:, 4] == 4).all()
    out = transform(image, params)
    kept = ~apply[:, 0]
    assert torch.equal(out[kept], image[kept])
    assert (out[~kept] != image[~kept]).flatten(1).any(1).all()  # inverted at least


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_compose", [False, True])
def test_own_coins_nest_in_its_coin(in_compose, device):
    """A transform with its own p runs where RandomApply's coin and its own both fall for the
    sample, each coin independent of the others: RandomApply(p=0.6) of RandomInvert(0.5) and
    RandomGrayscale(0.4) inverts 30% of the samples, grays 24%, both 12%; fresh draws (the op's
    coins) as sample_params' (its flips)."""
    transform = T.RandomApply([T.RandomInvert(0.5), T.RandomGrayscale(0.4)], p=0.6)
    if in_compose:  # its columns after another transform's: the nesting moves with them
        transform = T.Compose([T.RandomSolarize(128.0, 0.5), transform])
    image = uint8_image([20000, 3, 1, 2], device, seed=3)
    torch.manual_seed(5)
    params = transform.sample_params(image)
    torch.manual_seed(5)
    assert torch.equal(transform(image), transform(image, params))
    inverted, grayed = params["apply"][:, -2], params["apply"][:, -1]
    n = len(inverted)
    for got, p in [(inverted, 0.3), (grayed, 0.24), (inverted & grayed, 0.12),
                   (inverted & ~grayed, 0.18), (~inverted & ~grayed, 0.58)]:
        assert abs(got.double().mean().item() - p) < 5 * (p * (1 - p) / n) ** 0.5, p


def test_one_call_in_a_compose():
    """A Compose holding a RandomApply shares its calls as with the transforms themselves."""
    jitter = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0, 0.4, 0.1)]), T.RandomGrayscale()])
    assert jitter.bounds == [0, 4]
    with_contrast = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4)]),
                               T.RandomAutocontrast()])
    assert with_contrast.bounds == [0, 2, 3]
    inside = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4), T.RandomAutocontrast()]),
                        T.RandomInvert()])
    assert inside.bounds == inside.program_bounds == [0, 2, 4]


def test_a_call_per_reduction():
    """Its replay runs the transforms' whole stages (a ColorJitter's four), its fresh draws their
    programs (the enabled adjustments): a call ends between two transforms where a reduction
    stage would be a call's second."""
    disabled_contrast = T.RandomApply([T.ColorJitter(0.4), T.RandomAutocontrast()])
    assert disabled_contrast.bounds == [0, 4, 5] and disabled_contrast.program_bounds == [0, 2]
    two = T.RandomApply([T.ColorJitter(0.4, 0.4), T.RandomInvert(), T.RandomEqualize()])
    assert two.bounds == [0, 5, 6] and two.program_bounds == [0, 3, 4]
    image = uint8_image([16, 3, 6, 5], "cpu", seed=4)
    for transform in (disabled_contrast, two):
        torch.manual_seed(8)
        params = transform.sample_params(image)
        torch.manual_seed(8)
        assert torch.equal(transform(image), transform(image, params))


def test_errors():
    with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomApply: expected gpuaug."
                       r"transforms' photometric transforms, Composes of them or ColorAugment, "
                       r"got Identity \(torchvision's RandomApply takes any transform"):
        T.RandomApply([torch.nn.Identity()])
    with pytest.raises(ValueError, match=r"RandomApply: RandomChannelPermutation has a "
                       r"generator of its own, or holds one that has: give it to the RandomApply"):
        T.RandomApply([T.RandomChannelPermutation(generator=torch.Generator())])
    with pytest.raises(ValueError, match="RandomApply: a transform in it cannot convert"):
        T.RandomApply([T.ColorJitter(0.4, dtype=torch.float32)])
    with pytest.raises(ValueError, match=r"RandomApply: the output conversion is the Compose's"):
        T.RandomApply([T.ColorAugment(dtype=torch.float32)])
    with pytest.raises(TypeError, match=r"RandomApply: expected 'transforms' as a sequence of "
                       r"transforms or an nn.ModuleList, got ColorJitter"):
        T.RandomApply(T.ColorJitter(0.4))
    with pytest.raises(ValueError, match="RandomApply: expected at least one transform"):
        T.RandomApply([])
    with pytest.raises(ValueError, match=r"`p` should be a floating point value in the interval"):
        T.RandomApply([T.ColorJitter(0.4)], p=1.5)


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_inside_a_model(device, fresh_dynamo):
    """torch.compile(fullgraph=True) traces a transform's call inside a model (its __call__ takes
    the module's own call while compiling): no graph break, the draws replayed alike."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.augment = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                                      T.RandomGrayscale(0.2)], dtype=torch.float32)

        def forward(self, x, params):
            return self.augment(x, params) * 2

    model = Model()
    image = uint8_image([4, 3, 8, 8], device, seed=11)
    params = model.augment.sample_params(image)
    compiled = torch.compile(model, fullgraph=True)
    assert torch.equal(compiled(image, params), model(image, params))
