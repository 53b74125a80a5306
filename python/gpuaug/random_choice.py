"""torchvision.transforms.v2.RandomChoice with a choice per sample, for the photometric
transforms."""

import math
from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .container import _Container
from ._program import _params


class RandomChoice(_Container):
    """torchvision.transforms.v2.RandomChoice, per sample: each sample runs one of ``transforms``,
    transform i with probability ``p[i]`` (normalised to sum 1; None: all alike); a transform with a
    p of its own (RandomInvert(0.5)) then flips its own coins as it would alone. ``transforms`` are
    gpuaug's photometric transforms, Composes of them, containers (RandomApply, RandomChoice,
    RandomOrder) or ColorAugment. ``sample_params`` gives the slots of the transforms'
    ``sample_params`` one after the other, ``apply`` false but for the sample's choice; it joins a
    :class:`Compose` as its transforms do. ``generator`` draws the choices and the transforms'
    parameters (they may not have one of their own).

    Each sample draws one uniform for its choice, transform i taking the interval [p[0] + ... +
    p[i-1], p[0] + ... + p[i]) of it, and a carrier uniform per transform, drawn as 1 outside
    that interval: the coin of the transform's slots (below 1 where chosen), and of their own
    coins, which nest in the choice as in a RandomApply. Its transforms share a call of the op
    as a Compose's do (one per reduction stage)."""

    def __init__(self, transforms: Sequence[nn.Module], p: Optional[Sequence[float]] = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        count = len(transforms) if isinstance(transforms, (Sequence, nn.ModuleList)) else 0
        if p is not None and count > 0 and len(p) != count:
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != "
                             f"{count}")
        weights = [1.0] * count if p is None else [float(w) for w in p]
        if not all(w >= 0.0 and math.isfinite(w) for w in weights) or (
                count > 0 and sum(weights) <= 0.0):
            raise ValueError("gpuaug.transforms.RandomChoice: expected 'p' as finite weights, "
                             f"none negative, of a positive sum, got {list(p or [])}")
        # column 0: the choice; 1 + i: transform i's carrier
        super().__init__("RandomChoice", transforms, 1 + count, True, generator)
        total = sum(weights)
        self.p = [w / total for w in weights]
        # transform i's interval of the choice uniform (the last one's end 1, past every
        # uniform, whatever the sum's rounding)
        edges = [0.0]
        for w in self.p:
            edges.append(edges[-1] + w)
        edges[-1] = 1.0
        nesting: List[List[float]] = []
        for i, shifted in enumerate(self._shifted_terms()):
            for column in sorted({1.0 + i} | {float(term[1]) for term in shifted
                                             if self._own_coin(i, term)}):
                nesting.append([column, 0.0, edges[i], edges[i + 1]])
        self._nest(nesting)
        self.register_buffer("carriers", _carriers([len(t.stages) for t in self.transforms]),
                             persistent=False)
        self.register_buffer("program_carriers",
                             _carriers([len(t.program) for t in self.transforms]),
                             persistent=False)
        self._set_draws()
        self._describe([f"p={self.p}"])

    def _chosen(self, joined: Dict[str, torch.Tensor], u: torch.Tensor,
                carriers: torch.Tensor) -> Dict[str, torch.Tensor]:
        # a slot applies where its transform was chosen (its carrier below 1) and would apply
        return _params(joined["factors"], joined["order"],
                       joined["apply"] & (u.index_select(1, carriers) < 1.0))

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.carriers.device != u.device:
            self.carriers = self.carriers.to(u.device)
        return self._chosen(self._joined(u, image, True), u, self.carriers)

    def _program_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.program_carriers.device != u.device:
            self.program_carriers = self.program_carriers.to(u.device)
        return self._chosen(self._joined(u, image, False), u, self.program_carriers)

    def _affine_terms(self) -> List[List[float]]:
        # the transforms' terms, every slot on its transform's carrier (bound 1) but those with
        # their own coin (nested in the choice); transform i's keys k in [0, 1) become
        # (i + k) / n, so that they stay in [0, 1) (one transform runs)
        n = len(self.transforms)
        terms: List[List[float]] = []
        for i, shifted in enumerate(self._shifted_terms()):
            for term in shifted:
                coin, bound = (term[1], term[5]) if self._own_coin(i, term) else (1.0 + i, 1.0)
                terms.append([term[0], coin, term[2], term[3], term[4], bound,
                              (i + term[6]) / n, term[7] / n])
        return terms


def _carriers(lengths: List[int]) -> torch.Tensor:
    """Each slot's carrier column (1 + its transform's index), for transforms of ``lengths``."""
    return torch.tensor([1 + i for i, length in enumerate(lengths) for _ in range(length)],
                        dtype=torch.long)
