"""gpuaug's transforms, torchvision.transforms.v2's photometric ones with each sample's own draws
through the fused ``gpuaug::photometric`` op, its geometric ones (crops, flips, resize, pad)
through ``gpuaug::augment``, and ColorAugment (gpuaug.color_transform).

Every transform is a program of stages (brightness, contrast, ...) with per-sample factors, an
order per sample and an apply mask per sample and stage. ``sample_params(image)`` draws them on the
image's device (no host synchronisation, so a transform runs inside a CUDA graph) and
``forward(image, params)`` replays them. :class:`Compose` concatenates the programs of several
transforms into one call of the op: one element-wise pass over the batch, plus one reduction pass
when the program has a reduction stage (contrast or autocontrast; a histogram pass for equalize);
a Compose (or RandomApply) with several of those makes one call per reduction stage.

The public names live here; the modules beside it hold them by family: ``jitter`` (ColorJitter,
RandomChannelPermutation, RandomPhotometricDistort), ``random_stages`` (one stage with a
probability), ``conversion`` (Grayscale, RGB, ToDtype, Normalize), ``color_augment``,
``crop``, ``flip``, ``resize`` and ``warp`` (the geometric ones, on ``_geometry``),
``auto_augment`` (the AutoAugment policies, through ``gpuaug::auto_augment``),
``compose``, the containers (``random_apply``, ``random_choice``, ``random_order``) and
``from_torchvision``.
"""

from .auto_augment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .color_augment import ColorAugment
from .compose import Compose
from .conversion import RGB, Grayscale, Normalize, ToDtype
from .crop import CenterCrop, RandomCrop, RandomResizedCrop
from .flip import RandomHorizontalFlip, RandomVerticalFlip
from .from_torchvision import from_torchvision
from .jitter import ColorJitter, RandomChannelPermutation, RandomPhotometricDistort
from .random_apply import RandomApply
from .random_choice import RandomChoice
from .random_order import RandomOrder
from .random_stages import (RandomAutocontrast, RandomEqualize, RandomGrayscale, RandomInvert,
                            RandomPosterize, RandomSolarize)
from .resize import Pad, Resize
from .warp import RandomAffine, RandomPerspective, RandomRotation

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorAugment", "ColorJitter", "Compose", "Grayscale", "Normalize",
           "Pad", "RandomAffine", "RandomApply", "RandomAutocontrast", "RandomChannelPermutation",
           "RandomChoice", "RandomCrop", "RandomEqualize", "RandomGrayscale",
           "RandomHorizontalFlip", "RandomInvert", "RandomOrder", "RandomPerspective",
           "RandomPhotometricDistort", "RandomPosterize", "RandomResizedCrop", "RandomRotation",
           "RandomSolarize", "RandomVerticalFlip",
           "RandAugment", "Resize", "RGB", "ToDtype", "TrivialAugmentWide", "from_torchvision"]
