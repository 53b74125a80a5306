"""torchvision's transforms of one stage applied with a probability: RandomGrayscale,
RandomSolarize, RandomPosterize, RandomInvert, RandomAutocontrast and RandomEqualize."""

from typing import Dict, List, Optional

import torch

from ._base import _Photometric
from ._program import Stage, _check_bits, _check_threshold, _params

__all__ = ["RandomGrayscale", "RandomSolarize", "RandomPosterize", "RandomInvert",
           "RandomAutocontrast", "RandomEqualize"]


class _RandomApply(_Photometric):
    """One stage with one factor, applied to each sample with probability p."""

    def __init__(self, stage: int, factor: float, p: float,
                 generator: Optional[torch.Generator], factor_name: str = "") -> None:
        super().__init__([stage], 1, generator)
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = float(p)
        self.factor = float(factor)
        self._describe(([f"{factor_name}={factor}"] if factor_name else []) + [f"p={self.p}"])
        # the factor and the order of every sample: broadcast, not made anew per call
        self.register_buffer("factor_row", torch.tensor([float(factor)]), persistent=False)
        self.register_buffer("order_row", torch.zeros(1, dtype=torch.long), persistent=False)
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.factor_row.device != image.device:
            self.factor_row = self.factor_row.to(image.device)
        if self.order_row.device != image.device:
            self.order_row = self.order_row.to(image.device)
        n = u.shape[0]
        return _params(self.factor_row.expand(n, 1), self.order_row.expand(n, 1), u < self.p)

    def _affine_terms(self) -> List[List[float]]:
        return [[-1, 0, -1, self.factor, 0.0, self.p, 0.0, 0.0]]


class RandomGrayscale(_RandomApply):
    """torchvision.transforms.v2.RandomGrayscale, per sample: the image's channel count is kept."""

    def __init__(self, p: float = 0.1, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.GRAYSCALE, 0.0, p, generator)


class RandomSolarize(_RandomApply):
    """torchvision.transforms.v2.RandomSolarize, per sample: ``threshold`` in the image's range
    (0..255 for uint8, 0..1 for floating images)."""

    def __init__(self, threshold: float, p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.SOLARIZE, threshold, p, generator, "threshold")

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        _check_threshold(self.factor, dtype)


class RandomPosterize(_RandomApply):
    """torchvision.transforms.v2.RandomPosterize, per sample."""

    def __init__(self, bits: int, p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        _check_bits(bits)
        super().__init__(Stage.POSTERIZE, bits, p, generator, "bits")


class RandomInvert(_RandomApply):
    """torchvision.transforms.v2.RandomInvert, per sample."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.INVERT, 0.0, p, generator)


class RandomAutocontrast(_RandomApply):
    """torchvision.transforms.v2.RandomAutocontrast, per sample: each image's (each frame's)
    channels stretched from their own minimum and maximum to the full range."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.AUTOCONTRAST, 0.0, p, generator)


class RandomEqualize(_RandomApply):
    """torchvision.transforms.v2.RandomEqualize, per sample: each image's (each frame's)
    channels through their own histogram's table, in uint8 (a floating image is converted to
    uint8 and back, scaled, as torchvision does). Not differentiable."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.EQUALIZE, 0.0, p, generator)
