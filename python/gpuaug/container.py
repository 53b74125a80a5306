"""What RandomApply, RandomChoice and RandomOrder share: photometric transforms held in turn
(Composes and containers among them), their uniforms after the container's own columns, their
params side by side, their nesting inside the container's."""

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from ._base import _converts, _Photometric
from ._program import _concatenated, _merged_levels, _set_nesting
from .color_augment import ColorAugment, _color_augment_stage


class _Container(_Photometric):
    """``transforms`` (gpuaug's photometric transforms, Composes, containers or ColorAugment)
    with their uniforms after the container's ``leading`` columns and before its ``trailing``
    ones. ``whole``: its stages are its transforms' whole stages (their ``sample_params``'
    slots), else their programs (as a Compose's)."""

    def __init__(self, owner: str, transforms: Sequence[nn.Module], leading: int, whole: bool,
                 generator: Optional[torch.Generator], trailing: int = 0) -> None:
        transforms = _held(transforms, owner)
        super().__init__([s for t in transforms for s in (t.stages if whole else t.program)],
                         leading + sum(t.uniforms for t in transforms) + trailing, generator)
        self.transforms = nn.ModuleList(transforms)
        self.owner = owner
        self.program = [s for t in transforms for s in t.program]
        # each transform's first column of the uniforms, then the end of theirs
        self.columns = [leading]
        for t in transforms:
            self.columns.append(self.columns[-1] + t.uniforms)
        # each slot's transform's first slot, in the stages and in the program: a transform's
        # order indexes its own slots
        self.register_buffer("offsets", _offsets([len(t.stages if whole else t.program)
                                                  for t in transforms]), persistent=False)
        self.register_buffer("program_offsets", _offsets([len(t.program) for t in transforms]),
                             persistent=False)
        # a held RandomOrder's keys are made after the nesting
        self.held_derive = any(t.derives for t in transforms)
        self.derives = self.held_derive

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        for t in self.transforms:
            if channels == 1 and t.expand_slot >= 0:
                raise ValueError(f"gpuaug.transforms.{self.owner}: a Grayscale("
                                 "num_output_channels=3) or RGB in it would give a 1-channel "
                                 "image three channels in some samples only: put it before "
                                 f"the {self.owner}, in a Compose")
            t._check(dtype, channels)

    def _units(self, whole: bool) -> List[List[int]]:
        # its transforms run in turn: a call of the op may end between them (and inside a held
        # Compose or container, between its own)
        units: List[List[int]] = []
        for t in self.transforms:
            units += t._units(whole)
        return units

    def _nest(self, rows: List[List[float]]) -> None:
        """Its nesting: ``rows`` (its own coins' intervals) outermost, then its transforms'."""
        _set_nesting(self, ([rows] if len(rows) > 0 else []) +
                     _merged_levels([t.nesting for t in self.transforms], self.columns[:-1]))

    def _derived(self, u: torch.Tensor) -> torch.Tensor:
        if not self.held_derive:
            return u
        return self._held_derived(u)

    def _held_derived(self, u: torch.Tensor) -> torch.Tensor:
        """``u`` with its transforms' derived columns (a held RandomOrder's keys)."""
        return torch.cat([u[:, :self.columns[0]]] +
                         [t._derived(u[:, self.columns[i]:self.columns[i + 1]])
                          for i, t in enumerate(self.transforms)] +
                         [u[:, self.columns[-1]:]], 1)

    def _joined(self, u: torch.Tensor, image: torch.Tensor,
                whole: bool) -> Dict[str, torch.Tensor]:
        """The transforms' params of their columns of ``u``, side by side: their
        ``_params_from`` (``whole``) or their ``_program_params``."""
        parts: List[Dict[str, torch.Tensor]] = []
        for i, t in enumerate(self.transforms):
            columns = u[:, self.columns[i]:self.columns[i + 1]]
            parts.append(t._params_from(columns, image) if whole
                         else t._program_params(columns, image))
        if self.offsets.device != image.device:
            self.offsets = self.offsets.to(image.device)
        if self.program_offsets.device != image.device:
            self.program_offsets = self.program_offsets.to(image.device)
        return _concatenated(parts, self.offsets if whole else self.program_offsets)

    def _own_coin(self, i: int, term: List[float]) -> bool:
        """Whether a slot's shifted term (``_shifted_terms``) of transform i flips a coin of its
        own: one that may fall against, or one that transform nests (a held RandomChoice's
        carrier, bound 1, drawn as 1 where not chosen)."""
        nested = {row[0] + self.columns[i] for level in self.transforms[i].nesting
                  for row in level}
        return term[1] >= 0 and (term[5] < 1.0 or term[1] in nested)

    def _shifted_terms(self) -> List[List[List[float]]]:
        """Each transform's ``_affine_terms``, their columns shifted to the container's."""
        shifted: List[List[List[float]]] = []
        for i, t in enumerate(self.transforms):
            shifted.append([[c if c < 0 else c + self.columns[i] for c in term[:3]] + term[3:]
                            for term in t._affine_terms()])
        return shifted


def _held(transforms: Sequence[nn.Module], owner: str) -> List[nn.Module]:
    """``transforms`` as a container holds them: checked, a ColorAugment as its stage."""
    if not isinstance(transforms, (Sequence, nn.ModuleList)):
        raise TypeError(f"gpuaug.transforms.{owner}: expected 'transforms' as a sequence of "
                        f"transforms or an nn.ModuleList, got {type(transforms).__name__}")
    if len(transforms) == 0:
        raise ValueError(f"gpuaug.transforms.{owner}: expected at least one transform")
    held = [_color_augment_stage(t, owner) if isinstance(t, ColorAugment) else t
            for t in transforms]
    for t in held:
        _check_transform(t, owner)
    return held


def _offsets(lengths: List[int]) -> torch.Tensor:
    """Each slot's transform's first slot, for slots of transforms of ``lengths`` in turn."""
    offsets: List[int] = []
    for length in lengths:
        offsets += [len(offsets)] * length
    return torch.tensor(offsets, dtype=torch.long)


def _check_transform(t: nn.Module, owner: str) -> None:
    if not isinstance(t, _Photometric) or getattr(t, "geometric", False):
        raise TypeError(f"gpuaug.transforms.{owner}: expected gpuaug.transforms' photometric "
                        f"transforms, Composes of them or ColorAugment, got {type(t).__name__} "
                        f"(torchvision's {owner} takes any transform, with one draw a call)")
    if _converts(t):
        raise ValueError(f"gpuaug.transforms.{owner}: a transform in it cannot convert the "
                         "output: pass 'dtype', 'mean' and 'std' (or ToDtype and Normalize) to "
                         "a Compose around it")
    if t.keeps_first_plane:
        raise ValueError(f"gpuaug.transforms.{owner}: Grayscale(num_output_channels=1) in it "
                         "would leave samples of one channel and samples of three: use "
                         "RandomGrayscale or Grayscale(3), or a Compose ending in Grayscale(1) "
                         "around it")
    if t._own_generators():
        raise ValueError(f"gpuaug.transforms.{owner}: {type(t).__name__} has a generator of "
                         f"its own, or holds one that has: give it to the {owner}, which draws "
                         "for its transforms")
