"""Cases of the AutoAugment policies (TrivialAugmentWide, RandAugment, AutoAugment, AugMix) on a
256x3x224x224 uint8 batch (fewer with --size), each sample drawing its own operations, uint8 to
uint8 and uint8 to normalised float32 in one gpuaug call: against torchvision.transforms.v2's
policy on the batch (one operation for all) and looped over the images (its own draws each). A
ResNet-18 step fed by RandomResizedCrop + flip + TrivialAugmentWide + ToDtype + Normalize against
the step fed by the conversion alone. Bytes: the batch read once, the output written once."""

from typing import Callable, Optional

import torch

from .. import transforms as T
from .geometric import SIDE, CROP
from .harness import Case, register, register_report, timed
from .photometric import MEAN, STD
from .photometric_step import BATCH, resnet18_training_step

DEFAULT_SIZE = 2**28
POLICIES = ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix")


def gpuaug_policy(name: str, normalised: bool) -> Callable:
    kwargs = dict(dtype=torch.float32, mean=MEAN, std=STD) if normalised else {}
    return getattr(T, name)(**kwargs)


def torchvision_policy(name: str, normalised: bool, per_image: bool) -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    steps = [getattr(v2, name)()]
    if normalised:
        steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]
    pipeline = v2.Compose(steps)
    if per_image:
        return lambda x: torch.stack([pipeline(image) for image in x])
    return pipeline


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    n = max(1, 256 * numel // DEFAULT_SIZE)
    shape = (n, 3, CROP, CROP)
    u8 = torch.uint8

    def inputs():
        return (torch.randint(0, 256, shape, dtype=u8, device=device),)

    result = []
    for name in POLICIES:
        for normalised in (False, True):
            out = "f32" if normalised else "u8"
            nbytes = n * 3 * CROP * CROP * (1 + (4 if normalised else 1))
            ours = gpuaug_policy(name, normalised)
            for per_image, label in [(False, "torchvision (one operation for the batch)"),
                                     (True, "torchvision per image")]:
                baseline = torchvision_policy(name, normalised, per_image)
                if baseline is not None:
                    result.append(Case(f"policy {name} u8->{out}", shape, u8, inputs, ours,
                                       baseline, label, nbytes, random_programs=True))
    return result


@register_report("policy resnet18 step")
def resnet18_step(device: torch.device) -> list[dict]:
    """A ResNet-18 bf16 training step (batch 256, 224x224, channels_last) fed by
    RandomResizedCrop + flip + TrivialAugmentWide + ToDtype + Normalize from 256x256 uint8
    images (two calls: the crop, then the policy with the conversion), against the step fed by
    the conversion alone of 224x224 uint8 images (target: at most 3% more)."""
    step = resnet18_training_step(device)
    if step is None:
        return []
    crop = T.Compose([T.RandomResizedCrop(CROP), T.RandomHorizontalFlip()])
    policy = T.TrivialAugmentWide(dtype=torch.float32, mean=MEAN, std=STD)
    full = lambda x: policy(crop(x)).contiguous(memory_format=torch.channels_last)  # noqa: E731
    convert = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    # channels_last images in, as the geometric step's: each call keeps the layout, so the
    # model's input needs no copy
    originals = [(torch.randint(0, 256, (BATCH, 3, SIDE, SIDE), dtype=torch.uint8, device=device)
                  .contiguous(memory_format=torch.channels_last),) for _ in range(2)]
    cropped = [(torch.randint(0, 256, (BATCH, 3, CROP, CROP), dtype=torch.uint8, device=device)
                .contiguous(memory_format=torch.channels_last),) for _ in range(2)]
    timing = dict(device=device, warmup=5, runs=30, hold_gpu=False)
    plain = timed(lambda x: step(convert(x)), cropped, **timing).gpu_ms
    ours = timed(lambda x: step(full(x)), originals, **timing).gpu_ms
    return [
        {"name": "ResNet-18 bf16 step fed by ToDtype+Normalize alone (224x224 uint8)",
         "value": plain, "unit": "ms"},
        {"name": "ResNet-18 bf16 step fed by RandomResizedCrop+flip+TrivialAugmentWide+ToDtype+"
                 "Normalize (256x256 uint8)", "value": ours, "unit": "ms"},
        {"name": "  the whole pipeline's cost (target: at most 3%)",
         "value": 100 * (ours / plain - 1), "unit": "%"},
    ]
