"""Cases of the geometric transforms fused with the photometric ones: the ImageNet training
pipeline RandomResizedCrop(224) + RandomHorizontalFlip + ColorJitter(0.4, 0.4, 0.4, 0.1) +
ToDtype(float32) + Normalize on a 256x3x256x256 uint8 batch (fewer with --size), each sample
drawing its own crop, flip and jitter, in one gpuaug call. Against torchvision.transforms.v2's
same Compose on the batch (one draw for all), the same looped over the images (a draw each),
and Kornia's per-sample AugmentationSequential where it is installed. The op alone (draws made
beforehand) is set against a copy of the batch, and the pipeline from a list of 256 images of
different sizes against the same from the uniform batch. Bytes: the crops read once (a
RandomResizedCrop window covers 54% of the image on average) and the output written once.
"""

from typing import Callable, Optional

import torch

from .. import transforms as T
from .harness import Case, register, register_report, timed
from .photometric import MEAN, STD, copy_of_image
from .photometric_step import BATCH, resnet18_training_step

DEFAULT_SIZE = 2**28
SIDE, CROP = 256, 224
# E[scale] of RandomResizedCrop's default (0.08, 1.0): the share of the image a window reads
MEAN_WINDOW = 0.54


def imagenet(module, size=CROP):
    return [module.RandomResizedCrop(size, antialias=True), module.RandomHorizontalFlip(),
            module.ColorJitter(0.4, 0.4, 0.4, 0.1), module.ToDtype(torch.float32, scale=True),
            module.Normalize(MEAN, STD)]


def gpuaug_imagenet() -> Callable:
    return T.Compose(imagenet(T))


def torchvision_imagenet(per_image: bool) -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    pipeline = v2.Compose(imagenet(v2))
    if per_image:
        return lambda x, *rest: torch.stack([pipeline(image) for image in x])
    return lambda x, *rest: pipeline(x)


def kornia_imagenet() -> Optional[Callable]:
    try:
        import kornia.augmentation as K
    except ImportError:
        return None
    pipeline = K.AugmentationSequential(
        K.RandomResizedCrop((CROP, CROP)), K.RandomHorizontalFlip(),
        K.ColorJiggle(0.4, 0.4, 0.4, 0.1, p=1.0), K.Normalize(torch.tensor(MEAN), torch.tensor(STD)))
    return lambda x, *rest: pipeline(x.float() / 255)


def batch_inputs(n, device):
    return lambda: (torch.randint(0, 256, (n, 3, SIDE, SIDE), dtype=torch.uint8, device=device),)


def drawn_inputs(n, device, pipeline):
    """The batch and the pipeline's draws for it: the op alone."""
    def make():
        images = torch.randint(0, 256, (n, 3, SIDE, SIDE), dtype=torch.uint8, device=device)
        return (images, pipeline.sample_params(images))
    return make


def sizes_of(n, seed=0):
    """n image sizes of 192..320 on each side (a mean area near 256x256), as a data set's."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(192, 321, (n, 2), generator=g).tolist()


def list_and_batch_inputs(n, device):
    """A list of n images of different sizes and a uniform batch of as many pixels."""
    def make():
        images = [torch.randint(0, 256, (3, h, w), dtype=torch.uint8, device=device)
                  for h, w in sizes_of(n)]
        return (images, torch.randint(0, 256, (n, 3, SIDE, SIDE), dtype=torch.uint8,
                                      device=device))
    return make


def crop_bytes(n):
    return int(n * (MEAN_WINDOW * 3 * SIDE * SIDE + 4 * 3 * CROP * CROP))


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    n = max(1, 256 * numel // DEFAULT_SIZE)
    shape = (n, 3, SIDE, SIDE)
    u8 = torch.uint8
    pipeline = gpuaug_imagenet()
    nbytes = crop_bytes(n)
    result = [Case("geometric imagenet u8->f32 op", shape, u8, drawn_inputs(n, device, pipeline),
                   pipeline, copy_of_image, "copy of the batch", nbytes)]
    for baseline, label in [(torchvision_imagenet(False), "torchvision Compose (one draw)"),
                            (torchvision_imagenet(True), "torchvision Compose per image"),
                            (kornia_imagenet(), "Kornia AugmentationSequential (per sample)")]:
        if baseline is not None:
            result.append(Case("geometric imagenet u8->f32", shape, u8, batch_inputs(n, device),
                               pipeline, baseline, label, nbytes, random_programs=True))
    # the same from a list of images of different sizes, against the uniform batch (target:
    # within 1.3x)
    result.append(Case("geometric imagenet from a list of sizes", shape, u8,
                       list_and_batch_inputs(n, device), lambda images, batch: pipeline(images),
                       lambda images, batch: pipeline(batch), "gpuaug from the uniform batch",
                       nbytes, random_programs=True))
    return result


@register_report("geometric resnet18 step")
def resnet18_step(device: torch.device) -> list[dict]:
    """A ResNet-18 bf16 training step (batch 256, 224x224, channels_last) fed by the whole
    pipeline from 256x256 uint8 images, against the step fed by the conversion and normalisation
    alone (gpuaug's one call) of 224x224 uint8 images (target: at most 2% more)."""
    step = resnet18_training_step(device)
    if step is None:
        return []
    full = T.Compose(imagenet(T))
    full_out = lambda x: full(x).contiguous(memory_format=torch.channels_last)  # noqa: E731
    convert = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    originals = [(torch.randint(0, 256, (BATCH, 3, SIDE, SIDE), dtype=torch.uint8, device=device)
                  .contiguous(memory_format=torch.channels_last),) for _ in range(2)]
    cropped = [(torch.randint(0, 256, (BATCH, 3, CROP, CROP), dtype=torch.uint8, device=device)
                .contiguous(memory_format=torch.channels_last),) for _ in range(2)]
    timing = dict(device=device, warmup=5, runs=30, hold_gpu=False)
    plain = timed(lambda x: step(convert(x)), cropped, **timing).gpu_ms
    ours = timed(lambda x: step(full_out(x)), originals, **timing).gpu_ms
    return [
        {"name": "ResNet-18 bf16 step fed by ToDtype+Normalize alone (224x224 uint8)",
         "value": plain, "unit": "ms"},
        {"name": "ResNet-18 bf16 step fed by RandomResizedCrop+flip+ColorJitter+ToDtype+Normalize"
                 " (256x256 uint8)", "value": ours, "unit": "ms"},
        {"name": "  the whole pipeline's cost (target: at most 2%)",
         "value": 100 * (ours / plain - 1), "unit": "%"},
    ]
