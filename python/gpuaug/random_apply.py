"""torchvision.transforms.v2.RandomApply with a coin per sample, for the photometric transforms:
the self-supervised recipes' ``RandomApply([ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8)``."""

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .container import _Container
from ._program import _params


class RandomApply(_Container):
    """torchvision.transforms.v2.RandomApply, per sample: each sample runs ``transforms`` in turn
    with probability ``p``, or none of them; a transform with a p of its own (RandomInvert(0.5),
    RandomPhotometricDistort, ColorAugment(p=0.5)) then flips its own coins as it would alone.
    ``transforms`` are gpuaug's photometric transforms, Composes of them, containers (RandomApply,
    RandomChoice, RandomOrder) or ColorAugment. ``sample_params`` gives the slots of the transforms'
    ``sample_params`` one after the other, ``apply`` false where the sample's coin fell against; it
    joins a :class:`Compose` as its transforms do.
    ``generator`` draws the coins and the transforms' parameters (they may not have one of their
    own). Each stage of the op takes one coin: a transform's own coin is drawn as 1 (never
    applying) where RandomApply's fell against, so that it applies where both fall for it. Its
    transforms share a call of the op as a Compose's do (one per reduction stage)."""

    def __init__(self, transforms: Sequence[nn.Module], p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        # column 0: the coin
        super().__init__("RandomApply", transforms, 1, True, generator)
        self.p = float(p)
        # the transforms' own coins nest in RandomApply's
        self._nest([[c, 0.0, 0.0, self.p] for c in sorted(
            {float(term[1]) for i, terms in enumerate(self._shifted_terms()) for term in terms
             if self._own_coin(i, term)})])
        self._set_draws()
        self._describe([f"p={self.p}"])

    def _applied(self, joined: Dict[str, torch.Tensor],
                 u: torch.Tensor) -> Dict[str, torch.Tensor]:
        return _params(joined["factors"], joined["order"], joined["apply"] & (u[:, :1] < self.p))

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return self._applied(self._joined(u, image, True), u)

    def _program_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return self._applied(self._joined(u, image, False), u)

    def _affine_terms(self) -> List[List[float]]:
        # the transforms' terms, every slot on the coin of column 0 but those with their own
        # (nested in it); transform i's keys k in [0, 1) become (i + k) / n, so that they run in
        # turn and stay in [0, 1)
        n = len(self.transforms)
        terms: List[List[float]] = []
        for i, shifted in enumerate(self._shifted_terms()):
            for term in shifted:
                coin, bound = (term[1], term[5]) if self._own_coin(i, term) else (0, self.p)
                terms.append([term[0], coin, term[2], term[3], term[4], bound,
                              (i + term[6]) / n, term[7] / n])
        return terms
