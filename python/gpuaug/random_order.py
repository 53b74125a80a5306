"""torchvision.transforms.v2.RandomOrder with an order per sample, for the photometric
transforms."""

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .container import _Container, _held
from .photo import _REDUCTIONS, _params

# the op's slots in one call
_MOST_SLOTS = 16


class RandomOrder(_Container):
    """torchvision.transforms.v2.RandomOrder, per sample: each sample runs all of ``transforms``
    in an order of its own, each of the n! orders alike (a transform with a p of its own still
    flips its coins). ``transforms`` are gpuaug's photometric transforms or ColorAugment, one
    reduction stage (contrast, autocontrast, equalize) among them at most: the op's call takes
    one, and what runs before it differs between samples. As in a :class:`Compose`, its slots
    are its transforms' programs (a ColorJitter's enabled adjustments), and ``sample_params``'
    ``order`` the sample's order of all of them. ``generator`` draws the orders and the
    transforms' parameters (they may not have one of their own).

    Each sample draws a uniform per transform, whose ranks are the transforms' places, and the
    op takes its order as a key per slot: the slot's place in the sample's order over 16, made
    of those ranks and the transforms' own keys (the sample's draws: no kernel of their own)."""

    def __init__(self, transforms: Sequence[nn.Module], *,
                 generator: Optional[torch.Generator] = None) -> None:
        held = _held(transforms, "RandomOrder")
        program = [s for t in held for s in t.program]
        reductions = sum(1 for s in program if s in _REDUCTIONS)
        if reductions > 1:
            raise ValueError("gpuaug.transforms.RandomOrder: expected one reduction stage "
                             "(contrast, autocontrast, equalize) at most among its transforms' "
                             f"programs, got {reductions}: the op's call takes one, and the "
                             "stages before it differ between samples")
        if len(program) > _MOST_SLOTS:
            raise ValueError(f"gpuaug.transforms.RandomOrder: expected {_MOST_SLOTS} slots at "
                             f"most in its transforms' programs (one call of the op), got "
                             f"{len(program)}")
        # columns: each transform's place, the transforms' own, then a key per slot
        super().__init__("RandomOrder", held, len(held), False, generator, len(program))
        self.first_key = self.columns[-1]
        slot_terms = self._shifted_terms()
        terms = [term for terms in slot_terms for term in terms]
        transform_of = [i for i, terms in enumerate(slot_terms) for _ in terms]
        slots = len(terms)
        # each slot's own key, its transform's (low + width u[column], in [0, 1)), the slots of
        # one transform, and which transform goes first where their uniforms tie
        self.register_buffer("key_columns", torch.tensor(
            [max(int(term[2]), 0) for term in terms], dtype=torch.long), persistent=False)
        self.register_buffer("key_terms", torch.tensor(
            [[term[6] for term in terms], [term[7] if term[2] >= 0 else 0.0 for term in terms]],
            dtype=torch.float64), persistent=False)
        self.register_buffer("slot_transform", torch.tensor(transform_of, dtype=torch.long),
                             persistent=False)
        self.register_buffer("same_transform", torch.tensor(
            [[transform_of[t] == transform_of[s] for t in range(slots)] for s in range(slots)]),
            persistent=False)
        self.register_buffer("transform_before", torch.ones(
            len(held), len(held), dtype=torch.bool).tril(-1), persistent=False)
        self.derives = True
        self._set_draws()

    def _units(self, whole: bool) -> List[List[int]]:
        return [self.program]  # one call: its stages are the programs

    def _derived(self, u: torch.Tensor) -> torch.Tensor:
        """The keys' columns: each slot's place in the sample's order, over 16. The transforms
        run in the order of their uniforms (ties by index), each its slots in the order of its
        own keys: comparisons of a few values per sample, small kernels, no sort."""
        if self.key_columns.device != u.device:
            self.key_columns = self.key_columns.to(u.device)
        if self.key_terms.device != u.device:
            self.key_terms = self.key_terms.to(u.device)
        if self.slot_transform.device != u.device:
            self.slot_transform = self.slot_transform.to(u.device)
        if self.same_transform.device != u.device:
            self.same_transform = self.same_transform.to(u.device)
        if self.transform_before.device != u.device:
            self.transform_before = self.transform_before.to(u.device)
        # each transform's place, then each slot's transform's
        transform_places = _preceding(u[:, :len(self.transforms)], self.transform_before).sum(2)
        ranks = transform_places.index_select(1, self.slot_transform)
        own = torch.addcmul(self.key_terms[0], u.index_select(1, self.key_columns).double(),
                            self.key_terms[1])
        # slots whose own keys tie take one place: the op runs them in slot order, as it sorts
        preceding = torch.where(self.same_transform, own.unsqueeze(1) < own.unsqueeze(2),
                                ranks.unsqueeze(1) < ranks.unsqueeze(2))
        # places 0..15 over 16 (_MOST_SLOTS; TorchScript takes no global): exact keys in [0, 1)
        return torch.cat([u[:, :self.first_key], preceding.sum(2).to(u.dtype) / 16.0], 1)

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        joined = self._joined(u, image, False)
        return _params(joined["factors"], torch.argsort(u[:, self.first_key:], dim=1,
                                                        stable=True), joined["apply"])

    def _affine_terms(self) -> List[List[float]]:
        # the transforms' terms, each slot keyed by its column of places (key = u)
        terms: List[List[float]] = []
        for shifted in self._shifted_terms():
            for term in shifted:
                terms.append(term[:2] + [float(self.first_key + len(terms))] + term[3:6] +
                             [0.0, 1.0])
        return terms


def _preceding(keys: torch.Tensor, before_on_ties: torch.Tensor) -> torch.Tensor:
    """[N, K, K]: whether value b of each row of ``keys`` ([N, K]) sorts before value a: a
    smaller key or, on a tie, ``before_on_ties[a, b]``."""
    later, earlier = keys.unsqueeze(2), keys.unsqueeze(1)
    return (earlier < later) | ((earlier == later) & before_on_ties)
