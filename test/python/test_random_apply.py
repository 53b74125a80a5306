"""gpuaug.transforms.RandomApply: a coin per sample for the transforms it holds. Its values against
torchvision are test_photometric.py's (its "RandomApply" and "self-supervised Compose" entries,
with compile, export, TorchScript and CUDA graphs)."""
import pytest
import torch
from gpuaug_testing import DEVICES

from gpuaug import transforms as T


def image_of(shape, device, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g).to(device)


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
    }


@pytest.mark.parametrize("name", list(made("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_draws_replay(name, device):
    """Fresh draws (the uniforms and their terms, in the op) equal sample_params' replayed."""
    image = image_of([32, 3, 5, 7], device, seed=1)
    make = made(device)[name]
    params = make().sample_params(image)
    assert torch.equal(make()(image), make()(image, params))


@pytest.mark.parametrize("device", DEVICES)
def test_a_coin_per_sample(device):
    """Each sample runs all the transforms or none, with probability p; the others stay as they
    were, and the transforms run in turn."""
    transform = T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomInvert(1.0)], p=0.3)
    image = image_of([4000, 3, 2, 2], device, seed=2)
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


def test_one_call_in_a_compose():
    """A Compose holding a RandomApply shares its calls as with the transforms themselves."""
    jitter = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0, 0.4, 0.1)]), T.RandomGrayscale()])
    assert jitter.bounds == [0, 4]
    with_contrast = T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4)]),
                               T.RandomAutocontrast()])
    assert with_contrast.bounds == [0, 2, 3]


def test_errors():
    with pytest.raises(ValueError, match=r"gpuaug.transforms.RandomApply: RandomInvert has a p "
                       r"of its own \(0.5\), and each stage takes one coin"):
        T.RandomApply([T.RandomInvert()])
    with pytest.raises(ValueError, match="RandomApply: RandomPhotometricDistort has a p of its"):
        T.RandomApply([T.RandomPhotometricDistort()])
    with pytest.raises(ValueError, match="RandomApply: _ColorAugmentStage has a p of its own"):
        T.RandomApply([T.ColorAugment(p=0.5)])
    for inner in (T.Compose([T.ColorJitter(0.4)]), T.RandomApply([T.ColorJitter(0.4)]),
                  torch.nn.Identity()):
        with pytest.raises(TypeError, match=r"gpuaug.transforms.RandomApply: expected "
                           r"gpuaug.transforms' photometric transforms or ColorAugment, got "
                           r"\w+ \(torchvision's RandomApply takes any transform"):
            T.RandomApply([inner])
    with pytest.raises(ValueError, match=r"RandomApply: RandomChannelPermutation has a "
                       r"generator of its own: give it to the RandomApply"):
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
    image = image_of([4, 3, 8, 8], device, seed=11)
    params = model.augment.sample_params(image)
    compiled = torch.compile(model, fullgraph=True)
    assert torch.equal(compiled(image, params), model(image, params))
