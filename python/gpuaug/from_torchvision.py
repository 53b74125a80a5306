"""``from_torchvision``: a torchvision.transforms pipeline (v2, or v1's classes of the same names)
with gpuaug's transforms in place of its photometric and geometric ones, each sample drawing its
own windows, flips, factors, coins and order, and each run of them one Compose: the ImageNet
pipeline (RandomResizedCrop, RandomHorizontalFlip, ColorJitter, ToDtype, Normalize) one call of
``gpuaug::augment``."""

import copy
import itertools
from typing import Any, List, Optional

import torch
from torch import nn

from .auto_augment import AugMix, AutoAugment, RandAugment, TrivialAugmentWide, _Policy
from .compose import Compose
from .conversion import RGB, Grayscale, Normalize, ToDtype
from .crop import CenterCrop, RandomCrop, RandomResizedCrop
from .flip import RandomHorizontalFlip, RandomVerticalFlip
from .jitter import ColorJitter, RandomChannelPermutation, RandomPhotometricDistort
from .random_apply import RandomApply
from .random_choice import RandomChoice
from .random_order import RandomOrder
from .random_stages import (RandomAutocontrast, RandomEqualize, RandomGrayscale, RandomInvert,
                            RandomPosterize, RandomSolarize)
from .resize import Pad, Resize
from .warp import RandomAffine, RandomPerspective, RandomRotation

# torchvision's photometric transforms by class name: gpuaug's of their arguments
_PHOTOMETRIC = {
    "ColorJitter": lambda t: ColorJitter(t.brightness, t.contrast, t.saturation, t.hue),
    "RandomPhotometricDistort": lambda t: RandomPhotometricDistort(
        t.brightness, t.contrast, t.saturation, t.hue, t.p),
    "RandomGrayscale": lambda t: RandomGrayscale(t.p),
    "Grayscale": lambda t: Grayscale(t.num_output_channels),
    "RGB": lambda t: RGB(),
    "RandomSolarize": lambda t: RandomSolarize(float(t.threshold), t.p),
    "RandomPosterize": lambda t: RandomPosterize(t.bits, t.p),
    "RandomInvert": lambda t: RandomInvert(t.p),
    "RandomAutocontrast": lambda t: RandomAutocontrast(t.p),
    "RandomEqualize": lambda t: RandomEqualize(t.p),
    "RandomChannelPermutation": lambda t: RandomChannelPermutation(),
}




def _random_crop(t: Any) -> nn.Module:
    padding = t.padding
    if padding is not None and type(t).__module__.startswith("torchvision.transforms.v2"):
        padding = [padding[0], padding[2], padding[1], padding[3]]  # v2 keeps torch's order
    return RandomCrop(t.size, padding, t.pad_if_needed, t.fill, t.padding_mode)


# torchvision's geometric transforms by class name: gpuaug's of their arguments
_GEOMETRIC = {
    "RandomResizedCrop": lambda t: RandomResizedCrop(t.size, tuple(t.scale), tuple(t.ratio),
                                                     t.interpolation, t.antialias),
    "RandomHorizontalFlip": lambda t: RandomHorizontalFlip(t.p),
    "RandomVerticalFlip": lambda t: RandomVerticalFlip(t.p),
    "Resize": lambda t: Resize(t.size, t.interpolation, t.max_size, t.antialias),
    "CenterCrop": lambda t: CenterCrop(t.size),
    "RandomCrop": _random_crop,
    "Pad": lambda t: Pad(t.padding, t.fill, t.padding_mode),
    "RandomAffine": lambda t: RandomAffine(t.degrees, t.translate, t.scale, t.shear,
                                           t.interpolation, t.fill, t.center),
    "RandomRotation": lambda t: RandomRotation(t.degrees, t.interpolation, t.expand, t.center,
                                               t.fill),
    "RandomPerspective": lambda t: RandomPerspective(t.distortion_scale, t.p, t.interpolation,
                                                     t.fill),
}


# torchvision's AutoAugment policies by class name: gpuaug's of their arguments
_POLICIES = {
    "TrivialAugmentWide": lambda t: TrivialAugmentWide(t.num_magnitude_bins, t.interpolation,
                                                       t.fill),
    "RandAugment": lambda t: RandAugment(t.num_ops, t.magnitude, t.num_magnitude_bins,
                                         t.interpolation, t.fill),
    "AutoAugment": lambda t: AutoAugment(t.policy, t.interpolation, t.fill),
    "AugMix": lambda t: AugMix(t.severity, t.mixture_width, t.chain_depth, t.alpha, t.all_ops,
                               t.interpolation, t.fill),
}


def _policy(t: Any) -> Optional[nn.Module]:
    """gpuaug's policy for torchvision's, else None (one gpuaug cannot take: a fill of a dict of
    types, an AugMix chain_depth over 4)."""
    if not _is_torchvision(t) or type(t).__name__ not in _POLICIES:
        return None
    try:
        return _POLICIES[type(t).__name__](t)
    except (TypeError, ValueError):
        return None


def _folded(policy: _Policy, conversion: nn.Module) -> bool:
    """Whether a ToDtype(float32) or Normalize right after ``policy`` joins its call."""
    if isinstance(conversion, ToDtype) and conversion.dtype == torch.float32 and \
            policy.dtype is None and policy.mean is None:
        policy.dtype = torch.float32
        return True
    if isinstance(conversion, Normalize) and policy.dtype is not None and policy.mean is None:
        policy.mean, policy.std = list(conversion.mean), list(conversion.std)
        return True
    return False


def _geometric(t: Any) -> Optional[nn.Module]:
    """gpuaug's geometric transform for torchvision's, else None (one gpuaug cannot take: a
    fill of a dict of types, an interpolation other than nearest, bilinear or bicubic)."""
    if not _is_torchvision(t) or type(t).__name__ not in _GEOMETRIC:
        return None
    try:
        return _GEOMETRIC[type(t).__name__](t)
    except (TypeError, ValueError):
        return None


def from_torchvision(transform: Any, geometric: bool = True) -> Any:
    """``transform`` (a torchvision.transforms transform, a Compose of them among others) with
    gpuaug's in place of torchvision's photometric transforms: ColorJitter, Grayscale, RGB and the
    Random ones of this package, and RandomApply, RandomChoice and RandomOrder of them; and of
    its geometric ones: RandomResizedCrop, RandomHorizontalFlip, RandomVerticalFlip, Resize,
    CenterCrop, RandomCrop, Pad, RandomAffine, RandomRotation (without expand) and
    RandomPerspective (not in containers); and the policies TrivialAugmentWide, RandAugment,
    AutoAugment and AugMix (a ToDtype to float32 and a Normalize right after one join its call).
    A run of them in a Compose, with the
    ToDtype (``scale=True``; v1's ConvertImageDtype) and Normalize among and after them, becomes
    one gpuaug Compose; the others (RandomRotation with expand, say) stay torchvision's, in place, in a Compose of torchvision's class, and so do the containers
    gpuaug's cannot hold (but for a RandomOrder of up to three transforms past gpuaug's limits,
    a RandomChoice of a Compose per order). The result draws per sample where torchvision draws
    per call, and otherwise computes what torchvision does (see gpuaug.transforms).
    ``geometric=False`` keeps torchvision's geometric transforms (gpuaug's move boxes, masks and
    key points too, each sample's with its own draw)."""
    if not type(transform).__module__.startswith("torchvision.transforms"):
        raise TypeError("gpuaug.transforms.from_torchvision: expected a torchvision.transforms "
                        f"transform, got {type(transform).__name__}")
    if type(transform).__name__ == "Compose":
        parts = _runs(transform.transforms, geometric)
        return parts[0] if len(parts) == 1 and not _is_torchvision(parts[0]) else \
            type(transform)(parts)
    converted = _photometric(transform)
    if converted is None:
        converted = _conversion(transform)
    if converted is None:
        converted = _policy(transform)
    if converted is None and geometric:
        converted = _geometric(transform)
    return transform if converted is None else converted


def _is_torchvision(t: Any) -> bool:
    return type(t).__module__.startswith("torchvision.transforms")


def _photometric(t: Any) -> Optional[nn.Module]:
    """gpuaug's transform for a photometric transform or a container (Compose included) of
    nothing else, else None."""
    if not _is_torchvision(t):
        return None
    name = type(t).__name__
    if name in _PHOTOMETRIC:
        return _PHOTOMETRIC[name](t)
    if name not in ("Compose", "RandomApply", "RandomChoice", "RandomOrder"):
        return None
    held = [_photometric(h) for h in t.transforms]
    if any(h is None for h in held):
        return None
    try:  # what gpuaug's containers cannot hold stays torchvision's, whole
        if name == "Compose":
            return Compose(held)
        if name == "RandomApply":
            return RandomApply(held, p=t.p)
        if name == "RandomChoice":
            return RandomChoice(held, p=t.p)
        return _random_order(held)
    except ValueError:
        return None


def _random_order(held: List[nn.Module]) -> nn.Module:
    """gpuaug's RandomOrder of ``held``; past its limits (one reduction stage, 16 slots), for
    up to three transforms, a RandomChoice of a Compose per order, each alike: torchvision's
    orders, drawn per sample, at a call of the op per reduction stage of each order."""
    try:
        return RandomOrder(held)
    except ValueError:
        if len(held) > 3:
            raise
    return RandomChoice([Compose([copy.deepcopy(held[i]) for i in order])
                         for order in itertools.permutations(range(len(held)))])


def _conversion(t: Any) -> Optional[nn.Module]:
    """gpuaug's ToDtype or Normalize for torchvision's (an image dtype, scaled), else None."""
    if not _is_torchvision(t):
        return None
    name = type(t).__name__
    if name == "Normalize":
        return Normalize(t.mean, t.std)
    scaled = name == "ConvertImageDtype" or (name == "ToDtype" and t.scale)
    if scaled and isinstance(t.dtype, torch.dtype):
        return ToDtype(t.dtype, scale=True)
    return None


def _flattened(transforms: List[Any]) -> List[Any]:
    """A Compose's transforms with the Composes among them replaced by theirs, in turn."""
    flat: List[Any] = []
    for t in transforms:
        flat += (_flattened(t.transforms) if _is_torchvision(t) and type(t).__name__ == "Compose"
                 else [t])
    return flat


def _runs(transforms: List[Any], geometric: bool) -> List[Any]:
    """A Compose's transforms with each run of photometric ones and conversions as one gpuaug
    Compose (one transform alone as itself); torchvision's others as they are."""
    parts: List[Any] = []
    run: List[nn.Module] = []

    def close() -> None:
        if run:
            parts.append(run[0] if len(run) == 1 else Compose(list(run)))
            run.clear()

    for t in _flattened(transforms):
        conversion = _conversion(t)
        policy = _policy(t)
        if policy is not None or (conversion is not None and not run and parts
                                  and isinstance(parts[-1], _Policy)
                                  and _folded(parts[-1], conversion)):
            close()
            if policy is not None:
                parts.append(policy)
            continue
        converted = _photometric(t) if conversion is None else conversion
        if converted is None and geometric:
            converted = _geometric(t)
        if converted is None:
            close()
            parts.append(t)
            continue
        # after a Grayscale to one channel, only conversions join its run
        if conversion is None and any(getattr(r, "keeps_first_plane", False) for r in run):
            close()
        run.append(converted)
    close()
    return parts
