"""torchvision.transforms.v2.RandomApply with a coin per sample, for the photometric transforms:
the self-supervised recipes' ``RandomApply([ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8)``."""

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .photo import (Compose, _color_augment_stage, _concatenated, _params, _Photometric,
                    _set_nesting)


class RandomApply(_Photometric):
    """torchvision.transforms.v2.RandomApply, per sample: each sample runs ``transforms`` in turn
    with probability ``p``, or none of them; a transform with a p of its own (RandomInvert(0.5),
    RandomPhotometricDistort, ColorAugment(p=0.5)) then flips its own coins as it would alone.
    ``transforms`` are gpuaug's photometric transforms or ColorAugment. ``sample_params`` gives
    the slots of the transforms' ``sample_params`` one after the other, ``apply`` false where
    the sample's coin fell against; it joins a :class:`Compose` as its transforms do.
    ``generator`` draws the coins and the transforms' parameters (they may not have one of their
    own). Each stage of the op takes one coin: a transform's own coin is drawn as 1 (never
    applying) where RandomApply's fell against, so that it applies where both fall for it. Its
    transforms share a call of the op as a Compose's do (one per reduction stage)."""

    def __init__(self, transforms: Sequence[nn.Module], p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        if not isinstance(transforms, (Sequence, nn.ModuleList)):
            raise TypeError("gpuaug.transforms.RandomApply: expected 'transforms' as a sequence "
                            f"of transforms or an nn.ModuleList, got {type(transforms).__name__}")
        if len(transforms) == 0:
            raise ValueError("gpuaug.transforms.RandomApply: expected at least one transform")
        from .transforms import ColorAugment  # which imports this module
        transforms = [_color_augment_stage(t, "RandomApply") if isinstance(t, ColorAugment)
                      else t for t in transforms]
        for t in transforms:
            _check_transform(t)
        super().__init__([s for t in transforms for s in t.stages],
                         1 + sum(t.uniforms for t in transforms), generator)
        self.p = float(p)
        self.transforms = nn.ModuleList(transforms)
        self.program = [s for t in transforms for s in t.program]
        # each transform's first column of the uniforms (the coin is column 0)
        self.columns = [1]
        for t in transforms:
            self.columns.append(self.columns[-1] + t.uniforms)
        # each slot's transform's first slot, in the stages and in the program: a transform's
        # order indexes its own slots
        self.register_buffer("offsets", _offsets([len(t.stages) for t in transforms]),
                             persistent=False)
        self.register_buffer("program_offsets", _offsets([len(t.program) for t in transforms]),
                             persistent=False)
        # the transforms' own coins nest in RandomApply's (column 0)
        _set_nesting(self, [[float(c), 0.0, self.p] for c in sorted(
            {self.columns[i] + int(term[1]) for i, t in enumerate(transforms)
             for term in t._affine_terms() if _has_own_coin(term)})])
        self._set_draws()
        self._describe([f"p={self.p}"])

    def _check(self, image: torch.Tensor) -> None:
        for t in self.transforms:
            t._check(image)

    def _units(self, whole: bool) -> List[List[int]]:
        # its transforms run in turn: a call of the op may end between them
        return [t.stages if whole else t.program for t in self.transforms]

    def _joined(self, u: torch.Tensor, image: torch.Tensor,
                whole: bool) -> Dict[str, torch.Tensor]:
        parts: List[Dict[str, torch.Tensor]] = []
        for i, t in enumerate(self.transforms):
            columns = u[:, self.columns[i]:self.columns[i + 1]]
            parts.append(t._params_from(columns, image) if whole
                         else t._program_params(columns, image))
        if self.offsets.device != image.device:
            self.offsets = self.offsets.to(image.device)
        if self.program_offsets.device != image.device:
            self.program_offsets = self.program_offsets.to(image.device)
        joined = _concatenated(parts, self.offsets if whole else self.program_offsets)
        return _params(joined["factors"], joined["order"], joined["apply"] & (u[:, :1] < self.p))

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return self._joined(u, image, True)

    def _program_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return self._joined(u, image, False)

    def _affine_terms(self) -> List[List[float]]:
        # the transforms' terms on their columns, every slot on the coin of column 0 but those
        # with their own (nested in it); transform i's keys k in [0, 1) become (i + k) / n, so
        # that they run in turn and stay in [0, 1)
        n = len(self.transforms)
        terms: List[List[float]] = []
        for i, t in enumerate(self.transforms):
            for term in t._affine_terms():
                factor, key = (c if c < 0 else c + self.columns[i] for c in (term[0], term[2]))
                coin, bound = ((term[1] + self.columns[i], term[5]) if _has_own_coin(term)
                               else (0, self.p))
                terms.append([factor, coin, key, term[3], term[4], bound, (i + term[6]) / n,
                              term[7] / n])
        return terms


def _has_own_coin(term: List[float]) -> bool:
    """Whether a slot's term (``_affine_terms``) flips a coin: one that may fall against."""
    return term[1] >= 0 and term[5] < 1.0


def _offsets(lengths: List[int]) -> torch.Tensor:
    """Each slot's transform's first slot, for slots of transforms of ``lengths`` in turn."""
    offsets: List[int] = []
    for length in lengths:
        offsets += [len(offsets)] * length
    return torch.tensor(offsets, dtype=torch.long)


def _check_transform(t: nn.Module) -> None:
    if not isinstance(t, _Photometric) or isinstance(t, (Compose, RandomApply)):
        raise TypeError("gpuaug.transforms.RandomApply: expected gpuaug.transforms' photometric "
                        f"transforms or ColorAugment, got {type(t).__name__} (torchvision's "
                        "RandomApply takes any transform, with one coin a call)")
    if t.dtype is not None or t.mean is not None:
        raise ValueError("gpuaug.transforms.RandomApply: a transform in it cannot convert the "
                         "output: pass 'dtype', 'mean' and 'std' to a Compose around it")
    if t.generator is not None:
        raise ValueError(f"gpuaug.transforms.RandomApply: {type(t).__name__} has a generator of "
                         "its own: give it to the RandomApply, which draws for its transforms")
