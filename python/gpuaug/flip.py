"""RandomHorizontalFlip and RandomVerticalFlip: each sample flipped with probability ``p``, its
own coin (torchvision's one coin flips every image of a call). A flip is the op's window read
mirrored (or the output's, after a resize): it joins the call of the transforms around it."""

from typing import Dict, List, Optional

import torch

from ._geometry import _check_keys, _Geometric, _Plan, functional


class _RandomFlip(_Geometric):
    bit = 1

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__(generator)
        self.p = float(p)

    def extra_repr(self) -> str:
        return f"p={self.p}"

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        # torchvision flips where its uniform is below p
        return {"apply": self._uniforms(count, 1, image).squeeze(1) < self.p}

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys(type(self).__name__, params, ["apply"])
        plan.flip(params["apply"].long() * self.bit)
        return True

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        if not row["apply"]:
            return target
        F = functional()
        return F.horizontal_flip(target) if self.bit == 1 else F.vertical_flip(target)


class RandomHorizontalFlip(_RandomFlip):
    """torchvision.transforms.v2.RandomHorizontalFlip, a coin per sample (params: ``apply``,
    bool ``[N]``)."""
    bit = 1


class RandomVerticalFlip(_RandomFlip):
    """torchvision.transforms.v2.RandomVerticalFlip, a coin per sample (params: ``apply``,
    bool ``[N]``)."""
    bit = 2
