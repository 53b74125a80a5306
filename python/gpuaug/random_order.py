"""torchvision.transforms.v2.RandomOrder with an order per sample, for the photometric
transforms."""

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .container import _Container, _held
from ._program import _REDUCTIONS, _params

# the op's slots in one call
_MOST_SLOTS = 16


class RandomOrder(_Container):
    """torchvision.transforms.v2.RandomOrder, per sample: each sample runs all of ``transforms`` in
    an order of its own, each of the n! orders alike (a transform with a p of its own still flips
    its coins). ``transforms`` are gpuaug's photometric transforms, Composes of them, containers
    (RandomApply, RandomChoice, RandomOrder) or ColorAugment, one reduction stage (contrast,
    autocontrast, equalize) among them at most: the op's call takes one, and what runs before it
    differs between samples. As in a :class:`Compose`, its slots are its transforms' programs (a
    ColorJitter's enabled adjustments), and ``sample_params``' ``order`` the sample's order of all
    of them. ``generator`` draws the orders and the transforms' parameters (they may not have one of
    their own).

    Each sample draws a uniform per transform, whose ranks are the transforms' places, and the
    op takes its order as a key per slot: the slot's place in the sample's order (over 16),
    made of those ranks and the transforms' own keys by ten small kernels (no sort)."""

    def __init__(self, transforms: Sequence[nn.Module], *,
                 generator: Optional[torch.Generator] = None) -> None:
        held = _held(transforms, "RandomOrder")
        program = [s for t in held for s in t.program]
        reductions = sum(1 for s in program if s in _REDUCTIONS)
        if reductions > 1:
            raise ValueError("gpuaug.transforms.RandomOrder: expected one reduction stage "
                             "(contrast, autocontrast, equalize) at most among its transforms' "
                             f"programs, got {reductions}: the op's call takes one, and the "
                             "stages before it differ between samples (a RandomChoice of a "
                             "Compose per order runs them, a call per reduction stage of each)")
        if len(program) > _MOST_SLOTS:
            raise ValueError(f"gpuaug.transforms.RandomOrder: expected {_MOST_SLOTS} slots at "
                             f"most in its transforms' programs (one call of the op), got "
                             f"{len(program)}")
        # columns: each transform's place, the transforms' own, then a key per slot
        super().__init__("RandomOrder", held, len(held), False, generator, len(program))
        self.first_key = self.columns[-1]
        slot_terms = self._shifted_terms()
        terms = [term for terms in slot_terms for term in terms]
        # transform c's key, (v + 2^-60) (1 + c 2^-40) of its float32 uniform v: in v's order,
        # ties (and zeros) in c's, every two keys apart in float64
        scales = [1.0 + c * 2.0 ** -40 for c in range(len(held))]
        self.register_buffer("transform_terms", torch.tensor(
            [[2.0 ** -60 * f for f in scales], scales], dtype=torch.float64), persistent=False)
        # each slot's own key, its transform's: low + width u[column], in [0, 1)
        self.register_buffer("key_columns", torch.tensor(
            [max(int(term[2]), 0) for term in terms], dtype=torch.long), persistent=False)
        self.register_buffer("key_terms", torch.tensor(
            [[term[6] for term in terms], [term[7] if term[2] >= 0 else 0.0 for term in terms]],
            dtype=torch.float64), persistent=False)
        self.register_buffer("slot_transform", torch.tensor(
            [i for i, terms in enumerate(slot_terms) for _ in terms], dtype=torch.long),
            persistent=False)
        self.derives = True
        self._nest([])
        self._set_draws()

    def _units(self, whole: bool) -> List[List[int]]:
        return [self.program]  # one call: its stages are the programs

    def _derived(self, u: torch.Tensor) -> torch.Tensor:
        """The keys' columns: each slot's place in the sample's order. The transforms run in
        the order of their uniforms, each its slots in the order of its own keys: comparisons of
        a few values per sample in float64, ten small kernels, no sort. A slot's key is twice its
        transform's place plus its own key, exact but where two of a transform's own keys are
        both below 2^-24 (a uniform that small); keys that tie take one place, and the op runs
        them in slot order, as it sorts keys."""
        if self.held_derive:  # a held RandomOrder's keys first: its slots' own keys
            u = self._held_derived(u)
        if self.transform_terms.device != u.device:
            self.transform_terms = self.transform_terms.to(u.device)
        if self.key_columns.device != u.device:
            self.key_columns = self.key_columns.to(u.device)
        if self.key_terms.device != u.device:
            self.key_terms = self.key_terms.to(u.device)
        if self.slot_transform.device != u.device:
            self.slot_transform = self.slot_transform.to(u.device)
        transform_keys = torch.addcmul(self.transform_terms[0], u[:, :len(self.transforms)],
                                       self.transform_terms[1])
        own = torch.addcmul(self.key_terms[0], u.index_select(1, self.key_columns),
                            self.key_terms[1])
        keys = torch.add(own, _places(transform_keys, torch.int64).index_select(
            1, self.slot_transform), alpha=2)
        return torch.cat([u[:, :self.first_key], _places(keys, u.dtype)], 1)

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        joined = self._joined(u, image, False)
        return _params(joined["factors"], torch.argsort(u[:, self.first_key:], dim=1,
                                                        stable=True), joined["apply"])

    def _affine_terms(self) -> List[List[float]]:
        # the transforms' terms, each slot keyed by its column of places: place / 16, in [0, 1)
        terms: List[List[float]] = []
        for shifted in self._shifted_terms():
            for term in shifted:
                terms.append(term[:2] + [float(self.first_key + len(terms))] + term[3:6] +
                             [0.0, 1.0 / _MOST_SLOTS])
        return terms


def _places(keys: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Each key's place in its row of ``keys`` ([N, K]): how many of the row are smaller."""
    return (keys.unsqueeze(1) < keys.unsqueeze(2)).sum(2, dtype=dtype)
