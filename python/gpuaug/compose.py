"""Compose: several photometric transforms as one call of the op (or one per reduction stage
and conversion), their programs one after the other; geometric transforms in front of them as
one call of ``gpuaug::augment`` with the program's first call (see ``_fused``)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ._base import _converts, _Photometric
from ._fused import _picked, _Step, run_steps, sample_steps
from ._geometry import _Geometric
from ._program import _concatenated, _drawn_terms, _merged_levels, _rand, _samples, _set_nesting
from .color_augment import ColorAugment, _color_augment_stage
from .conversion import Normalize, ToDtype, _Conversion, _inner_conversions, _output_conversion

__all__ = ["Compose"]


class Compose(_Photometric):
    """Several of these transforms as one call of the op: their programs one after the other,
    then ``dtype`` (``to_dtype(scale=True)``) and ``mean``/``std`` (Normalize). A reduction stage
    (contrast, autocontrast, equalize) needs the image as the stages before it leave it, so
    consecutive transforms share a call while it holds at most one (RandomPhotometricDistort has
    a contrast stage, and ColorJitter where its contrast is enabled): ColorJitter(0.4, 0.4) then
    RandomAutocontrast is two calls, ColorJitter(0.4, 0, 0.4) then RandomAutocontrast one. Its
    ``sample_params`` covers the slots of its transforms' programs (a ColorJitter's enabled
    adjustments), one after the other. It holds Composes and the containers (RandomApply,
    RandomChoice, RandomOrder) as it holds transforms, without an output conversion of their
    own. A ToDtype or Normalize last is its ``dtype``, ``mean`` and ``std``; one elsewhere ends
    a call of the op there, which converts to it (a ToDtype and the Normalize right after it
    together), and the transforms after it see the converted image, as in torchvision's
    Compose. A held Compose that converts stands as its transforms and conversions (in
    ``transforms`` too). A Grayscale(3) or RGB gives a 1-channel image three channels where it stands (its
    plane repeated, the call there split), as does a Normalize of three means or stds (which
    broadcasts it), and the transforms after them see three. A
    :class:`gpuaug.transforms.ColorAugment` joins as the op's COLOR_AUGMENT stage
    (gpuaug.color_transform's formula, in the same pass), with the ranges, p and generator it
    has when the Compose is made; its draws there are the Compose's (seven uniforms a sample),
    not those of its own ``sample_params``."""

    def __init__(self, transforms: Sequence[nn.Module], *,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        flat: List[nn.Module] = []  # held geometric Composes as their transforms
        for t in transforms:
            flat += list(t.transforms) if isinstance(t, Compose) and t.geometric else [t]
        if any(isinstance(t, _Geometric) for t in flat):
            self._init_geometric(flat, dtype, mean, std)
            return
        self._init_photometric(flat, dtype, mean, std)
        self.geometric = False

    def _init_geometric(self, transforms: List[nn.Module], dtype: Optional[torch.dtype],
                        mean: Optional[Sequence[float]], std: Optional[Sequence[float]]) -> None:
        """Steps: each run of geometric transforms with the photometric ones after it (a
        Compose of them, the output conversion the last one's)."""
        super().__init__([], 0, None)
        self.geometric = True
        self.transforms = nn.ModuleList(transforms)
        runs: List[List[int]] = []  # the indices of each run of one kind
        for i, t in enumerate(transforms):
            if runs and isinstance(t, _Geometric) == isinstance(transforms[runs[-1][0]],
                                                                 _Geometric):
                runs[-1].append(i)
            else:
                runs.append([i])
        if (dtype is not None or mean is not None) and isinstance(transforms[-1], _Geometric):
            runs.append([])  # the output conversion alone
        steps: List[_Step] = []
        for k, run in enumerate(runs):
            last = k == len(runs) - 1
            if run and isinstance(transforms[run[0]], _Geometric):
                steps.append(_Step([transforms[i] for i in run], run[0], None, -1))
                continue
            program = Compose([transforms[i] for i in run], dtype=dtype if last else None,
                              mean=mean if last else None, std=std if last else None)
            index = run[0] if run else len(transforms)
            if steps and steps[-1].program is None:
                steps[-1].program, steps[-1].program_index = program, index
            else:
                steps.append(_Step([], -1, program, index))
        self.steps = nn.ModuleList(steps)
        self.description = ", ".join(type(t).__name__ for t in transforms)

    def forward(self, image: torch.Tensor,
                params: Optional[Dict[str, torch.Tensor]] = None) -> torch.Tensor:
        """Transforms ``image`` (with geometric transforms: a batch, an image or a list of
        images) with fresh draws, or with ``params`` from ``sample_params``."""
        if self.geometric:
            return self._geometric_forward(image, params)
        out = self._calls(image, params)
        return out.narrow(-3, 0, 1).contiguous() if self.keeps_first_plane else out

    @torch.jit.unused
    def _geometric_forward(self, image: torch.Tensor,
                           params: Optional[Dict[str, torch.Tensor]]) -> torch.Tensor:
        return run_steps(list(self.steps), image, params)

    def sample_params(self, image: Union[torch.Tensor, List[torch.Tensor]]
                      ) -> Dict[str, torch.Tensor]:
        """Its draws for ``image``. With geometric transforms, each transform's keys prefixed by
        its index in ``transforms`` ("0.top"), a run of photometric ones' by its first's."""
        if self.geometric:
            return sample_steps(list(self.steps), image)
        assert isinstance(image, torch.Tensor)
        return super().sample_params(image)

    def _stages(self, params: Dict[str, torch.Tensor]
                ) -> Tuple[List[_Geometric], List[Dict[str, torch.Tensor]]]:
        """Its geometric transforms and their params, which boxes, masks and key points follow
        (the photometric ones leave them as they are)."""
        picked = [(t, _picked(params, f"{i}.")) for i, t in enumerate(self.transforms)
                  if isinstance(t, _Geometric)]
        return [t for t, _ in picked], [p for _, p in picked]

    def _init_photometric(self, transforms: List[nn.Module], dtype: Optional[torch.dtype],
                          mean: Optional[Sequence[float]], std: Optional[Sequence[float]]
                          ) -> None:
        transforms, dtype, mean, std = _output_conversion("Compose", transforms, dtype, mean,
                                                          std)
        # a held Compose that converts: its transforms and conversions in its place, which are
        # the same calls of the op
        flat: List[nn.Module] = []
        for t in transforms:
            if not (isinstance(t, Compose) and _converts(t)):
                flat.append(t)
                continue
            flat += list(t.transforms)
            if t.dtype is not None:
                flat.append(ToDtype(t.dtype, scale=True))
            if t.mean is not None:
                flat.append(Normalize(t.mean, t.std))
        transforms = [_color_augment_stage(t) if isinstance(t, ColorAugment) else t
                      for t in flat]
        for i, t in enumerate(transforms):
            if getattr(t, "policy_call", False):
                raise TypeError(f"gpuaug.transforms.Compose: {type(t).__name__} is a call of "
                                "gpuaug::auto_augment of its own and does not join a Compose: "
                                "run it after the Compose (torch.nn.Sequential, torchvision's "
                                "Compose) with its dtype, mean and std for the conversion, or "
                                "let from_torchvision build the pipeline")
            if not isinstance(t, _Photometric):
                raise TypeError("gpuaug.transforms.Compose: expected gpuaug.transforms' "
                                "photometric transforms or ColorAugment, got "
                                f"{type(t).__name__}")
            if _converts(t) and not isinstance(t, _Conversion):
                raise ValueError(f"gpuaug.transforms.Compose: {type(t).__name__} in it "
                                 "converts its own output (dtype, mean and std): put the "
                                 "conversions in this Compose instead, where they stand")
            after = [type(a).__name__ for a in transforms[i + 1:]
                     if not isinstance(a, _Conversion)]
            if t.keeps_first_plane and after:
                raise ValueError("gpuaug.transforms.Compose: Grayscale(num_output_channels=1) "
                                 "leaves one channel, so it comes last (before ToDtype and "
                                 f"Normalize), but {after[0]} follows it")
        # after Grayscale(num_output_channels=1), the op's three equal planes: the first is the
        # output, unless a Normalize of several means or stds broadcasts the plane over them
        # (as torchvision's does), which then normalises the three
        grayed = [i for i, t in enumerate(transforms) if t.keeps_first_plane]
        normalizations = [(t.mean, t.std) for t in transforms[grayed[0]:]
                          if isinstance(t, Normalize)] if grayed else []
        if mean is not None and std is not None:
            normalizations.append((mean, std))
        one_plane = bool(grayed) and all(len(m) == 1 and len(sd) == 1
                                         for m, sd in normalizations)
        super().__init__([s for t in transforms for s in t.program],
                         sum(t.uniforms for t in transforms), None, dtype, mean, std)
        self.transforms = nn.ModuleList(transforms)
        self.keeps_first_plane = one_plane
        # the first transform that gives a 1-channel image three channels: those after it see
        # three (a Compose's slots are its transforms' programs)
        slot = 0
        for t in transforms:
            if t.expand_slot >= 0 and self.expand_slot < 0:
                self.expand_slot, self.expand_skip = slot + t.expand_slot, t.expand_skip
            slot += len(t.program)
        conversions, self.input_dtypes = _inner_conversions(transforms)
        # each transform's last unit: a call ends after a conversion's
        last_units: List[int] = []
        for t in transforms:
            last_units.append((last_units[-1] if last_units else -1) + len(t._units(False)))
        # each transform's columns of the Compose's uniforms
        self.columns = [0]
        for t in transforms:
            self.columns.append(self.columns[-1] + t.uniforms)
        # each slot's offset: a transform's order indexes its own slots
        offsets: List[int] = []
        for t in transforms:
            offsets += [len(offsets)] * len(t.program)
        self.register_buffer("offsets", torch.tensor(offsets, dtype=torch.long),
                             persistent=False)
        # fresh draws: the transforms' terms on their columns, their keys offset by their
        # index, so that they run in turn
        self._set_calls([slot for i, t in enumerate(transforms)
                         for slot in _drawn_terms(t._affine_terms(), self.columns[i], float(i))],
                        [(last_units[i], d, m, sd) for i, d, m, sd in conversions])
        _set_nesting(self, _merged_levels([t.nesting for t in transforms], self.columns))
        self.derives = any(t.derives for t in transforms)

    def _own_generators(self) -> bool:
        # looked up per call: a transform's generator may be set after the Compose was made
        own = False
        for t in self.transforms:
            own = own or t._own_generators()
        return own

    def _uniforms(self, image: torch.Tensor) -> torch.Tensor:
        # one draw for all, unless a transform draws with a generator of its own: each its columns
        if not self._own_generators():
            return _rand([_samples(image), self.uniforms], image, None)
        parts: List[torch.Tensor] = []
        for t in self.transforms:
            parts.append(t._uniforms(image))
        return torch.cat(parts, 1)

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.offsets.device != image.device:
            self.offsets = self.offsets.to(image.device)
        return _concatenated([t._program_params(u[:, self.columns[i]:self.columns[i + 1]], image)
                              for i, t in enumerate(self.transforms)], self.offsets)

    def _derived(self, u: torch.Tensor) -> torch.Tensor:
        if not self.derives:
            return u
        return torch.cat([t._derived(u[:, self.columns[i]:self.columns[i + 1]])
                          for i, t in enumerate(self.transforms)], 1)

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        # each transform's input: the image's dtype, or a ToDtype's before it, and three
        # channels after a Grayscale(num_output_channels=3), RGB or a Normalize of three means
        for i, t in enumerate(self.transforms):
            converted = self.input_dtypes[i]
            t._check(dtype if converted is None else converted, channels)
            mean, std = t.mean, t.std
            if t.expand_slot >= 0 or (mean is not None and std is not None
                                      and (len(mean) > 1 or len(std) > 1)):
                channels = 3

    def _affine_terms(self) -> List[List[float]]:
        # (in a container) its transforms' terms on their columns; transform i's keys k in
        # [0, 1) become (i + k) / n, so that they run in turn and stay in [0, 1)
        n = len(self.transforms)
        return [[c if c < 0 else c + self.columns[i] for c in term[:3]] + term[3:6] +
                [(i + term[6]) / n, term[7] / n]
                for i, t in enumerate(self.transforms) for term in t._affine_terms()]

    def _units(self, whole: bool) -> List[List[int]]:
        # its stages are its transforms' programs
        units: List[List[int]] = []
        for t in self.transforms:
            units += t._units(False)
        return units
