"""torchvision.transforms.v2's transforms that draw nothing: Grayscale, RGB, ToDtype and
Normalize, so that a torchvision pipeline reads the same in gpuaug. In a Compose, a ToDtype and
Normalize become the output conversion (the op's ``dtype``, ``mean`` and ``std``) of the call
before them, in the same pass: trailing ones the Compose's own, others where they are, a call of
the op ending there. A Grayscale with one output channel comes last before them. Grayscale(3)
and RGB give a 1-channel image three channels, as torchvision repeats its plane: in a Compose
the transforms after them see three."""

from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ._base import _Photometric
from ._program import Stage, _params


class Grayscale(_Photometric):
    """torchvision.transforms.v2.Grayscale: every sample's grayscale in ``num_output_channels``
    channels (1 or 3). The op writes three equal planes; one output channel is the first of
    them. A 1-channel image stays as it is (1) or has its plane repeated in three channels (3),
    as torchvision's."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
        super().__init__([Stage.GRAYSCALE], 0, None)
        self.keeps_first_plane = num_output_channels == 1
        if num_output_channels == 3:
            self.expand_slot, self.expand_skip = 0, 1
        self._describe([f"num_output_channels={num_output_channels}"])
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        n = u.shape[0]
        device = image.device
        return _params(torch.zeros([n, 1], device=device),
                       torch.zeros([n, 1], dtype=torch.long, device=device),
                       torch.ones([n, 1], dtype=torch.bool, device=device))

    def _affine_terms(self) -> List[List[float]]:
        return [[-1, -1, -1, 0.0, 0.0, 2.0, 0.0, 0.0]]  # no draws: always, first


class RGB(_Photometric):
    """torchvision.transforms.v2.RGB: a 1-channel image's plane repeated in three channels, a
    3-channel image as it is (the image itself, alone)."""

    def __init__(self) -> None:
        super().__init__([], 0, None)
        self.expand_slot = 0
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return _empty_params(u.shape[0], image.device)

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        if channels != 1 and channels != 3:
            raise ValueError("gpuaug.transforms.RGB: expected an image of 1 or 3 channels, got "
                             f"{channels}")

    def _affine_terms(self) -> List[List[float]]:
        return []


def _empty_params(n: int, device: torch.device) -> Dict[str, torch.Tensor]:
    """The params of a transform with no slots."""
    return _params(torch.zeros([n, 0], device=device),
                   torch.zeros([n, 0], dtype=torch.long, device=device),
                   torch.zeros([n, 0], dtype=torch.bool, device=device))


class _Conversion(_Photometric):
    """An output conversion alone: an empty program (the op converts and normalises)."""

    def __init__(self, dtype: Optional[torch.dtype] = None,
                 mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__([], 0, None, dtype, mean, std)
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return _empty_params(u.shape[0], image.device)

    def _affine_terms(self) -> List[List[float]]:
        return []


class ToDtype(_Conversion):
    """torchvision.transforms.v2.ToDtype with ``scale=True`` for images: uint8 to a floating
    dtype (values / 255), a floating dtype to uint8 or to another (a cast), or the image's own
    dtype. The op converts as ``to_dtype(scale=True)`` does; an unscaled cast is
    ``image.to(dtype)``."""

    def __init__(self, dtype: torch.dtype, scale: bool = False) -> None:
        if not isinstance(dtype, torch.dtype):
            raise TypeError("gpuaug.transforms.ToDtype: expected 'dtype' as a torch.dtype (the "
                            f"images' dtype), got {type(dtype).__name__}")
        if not scale:
            raise ValueError("gpuaug.transforms.ToDtype: expected scale=True (the op converts "
                             "as to_dtype(scale=True)); for an unscaled cast use image.to(dtype)")
        super().__init__(dtype)
        self.description = f"dtype={dtype}, scale=True"


class Normalize(_Conversion):
    """torchvision.transforms.v2.Normalize of floating images: ``(image - mean) / std`` per
    channel, one value of ``mean`` or ``std`` for every channel. The result is a new tensor
    (``inplace`` is taken for torchvision's signature)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float],
                 inplace: bool = False) -> None:
        super().__init__(None, mean, std)


def _output_conversion(owner: str, transforms: List[nn.Module], dtype: Optional[torch.dtype],
                       mean: Optional[Sequence[float]], std: Optional[Sequence[float]]
                       ) -> Tuple[List[nn.Module], Optional[torch.dtype],
                                  Optional[Sequence[float]], Optional[Sequence[float]]]:
    """A Compose's ``transforms`` without their trailing ToDtype and Normalize, and its output
    conversion with theirs."""
    transforms = list(transforms)
    if transforms and isinstance(transforms[-1], Normalize):
        if mean is not None:
            raise ValueError(f"gpuaug.transforms.{owner}: got both 'mean' and 'std' and a "
                             "trailing Normalize: pass one of them")
        normalize = transforms.pop()
        mean, std = normalize.mean, normalize.std
    if transforms and isinstance(transforms[-1], ToDtype):
        if dtype is not None:
            raise ValueError(f"gpuaug.transforms.{owner}: got both 'dtype' and a trailing "
                             "ToDtype: pass one of them")
        dtype = transforms.pop().dtype
    return transforms, dtype, mean, std


_InnerConversion = Tuple[int, Optional[torch.dtype], Optional[List[float]], Optional[List[float]]]


def _inner_conversions(transforms: List[nn.Module]
                       ) -> Tuple[List[_InnerConversion], List[Optional[torch.dtype]]]:
    """The ToDtype and Normalize among a Compose's ``transforms`` (before its own): each a call's
    end, as (the index of the transform it ends after, dtype, mean, std), a ToDtype and the
    Normalize right after it one conversion; and each transform's input dtype where one of them
    set it (None: the image's)."""
    conversions: List[_InnerConversion] = []
    input_dtypes: List[Optional[torch.dtype]] = []
    current: Optional[torch.dtype] = None
    for i, t in enumerate(transforms):
        input_dtypes.append(current)
        if not isinstance(t, _Conversion):
            continue
        if isinstance(t, ToDtype):
            current = t.dtype
            if i + 1 < len(transforms) and isinstance(transforms[i + 1], Normalize):
                continue  # converted, then normalised, in one call
            conversions.append((i, t.dtype, None, None))
        else:
            before = transforms[i - 1] if i > 0 else None
            dtype = before.dtype if isinstance(before, ToDtype) else None
            conversions.append((i, dtype, t.mean, t.std))
    return conversions, input_dtypes
