"""torchvision's transforms that draw factors per sample: ColorJitter, RandomChannelPermutation
and RandomPhotometricDistort."""

import numbers
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from ._base import _Photometric
from ._program import (_PERMUTATION_CODES, _PERMUTATIONS, Stage, _in_ranges, _params,
                       _permutation_codes)

__all__ = ["ColorJitter", "RandomChannelPermutation", "RandomPhotometricDistort"]


def _uniform(name: str, value: Optional[object], center: float = 1.0,
             bound: Tuple[float, float] = (0.0, float("inf")),
             clip_first_on_zero: bool = True) -> Optional[Tuple[float, float]]:
    # torchvision's ColorJitter._check_input: a number v means [center - v, center + v].
    if value is None:
        return None
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        low, high = center - float(value), center + float(value)
        if clip_first_on_zero:
            low = max(low, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        low, high = float(value[0]), float(value[1])
    else:
        raise TypeError(f"{name}={value} should be a single number or a sequence with length 2.")
    if not bound[0] <= low <= high <= bound[1]:
        raise ValueError(f"{name} values should be between {bound} and increasing, but got "
                         f"{[low, high]}.")
    return None if low == high == center else (low, high)


class ColorJitter(_Photometric):
    """torchvision.transforms.v2.ColorJitter with factors and order drawn per sample.

    Same arguments and ranges as torchvision's; each sample draws its brightness, contrast,
    saturation and hue factors and its own order of the four adjustments. ``sample_params``
    returns ``factors`` ``[N, 4]`` (brightness, contrast, saturation, hue), ``order`` ``[N, 4]``
    (torchvision's ``fn_idx``, the disabled adjustments last) and ``apply`` ``[N, 4]`` (false
    for an adjustment left out). Fresh draws run the enabled adjustments alone: without
    contrast, one pass over the images.
    """

    def __init__(self, brightness: Optional[object] = None, contrast: Optional[object] = None,
                 saturation: Optional[object] = None, hue: Optional[object] = None, *,
                 generator: Optional[torch.Generator] = None,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        ranges = [_uniform("brightness", brightness), _uniform("contrast", contrast),
                  _uniform("saturation", saturation),
                  _uniform("hue", hue, center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False)]
        active = [k for k, r in enumerate(ranges) if r is not None]
        # per sample: a factor, then a key of the order, for each enabled adjustment
        super().__init__([Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE],
                         2 * len(active), generator, dtype, mean, std)
        self.enabled = [r is not None for r in ranges]
        self._describe([f"{name}={r}" for name, r in
                        zip(("brightness", "contrast", "saturation", "hue"), ranges)
                        if r is not None])
        self.program = [self.stages[k] for k in active]
        # rows: low, high - low, of the enabled adjustments, float32 values (see _in_ranges)
        lows = [ranges[k][0] for k in active]
        scales = [ranges[k][1] - ranges[k][0] for k in active]
        self.register_buffer("constants", torch.tensor([lows, scales], dtype=torch.float32)
                             .view(2, len(active)).double(), persistent=False)
        self.register_buffer("active", torch.tensor(active, dtype=torch.long), persistent=False)
        self.register_buffer("apply_row", torch.ones(len(active), dtype=torch.bool),
                             persistent=False)
        self.register_buffer("enabled_row", torch.tensor(self.enabled), persistent=False)
        self._set_draws()

    def _keyed_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        # the program's factors, its order as the keys it sorts (the op ranks them), apply as
        # one row for every sample
        if self.constants.device != image.device:
            self.constants = self.constants.to(image.device)
        if self.apply_row.device != image.device:
            self.apply_row = self.apply_row.to(image.device)
        m = len(self.program)
        return _params(_in_ranges(u[:, :m], self.constants), u[:, m:], self.apply_row)

    def _program_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        p = self._keyed_params(u, image)
        return _params(p["factors"], torch.argsort(p["order"], dim=1, stable=True),
                       p["apply"].expand(u.shape[0], len(self.program)))

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        # the program's draws spread over the four adjustments; a disabled one's key, 2, sorts
        # it after every uniform
        p = self._keyed_params(u, image)
        if self.active.device != image.device:
            self.active = self.active.to(image.device)
        if self.enabled_row.device != image.device:
            self.enabled_row = self.enabled_row.to(image.device)
        n = u.shape[0]
        if len(self.program) == 4:  # all four enabled: the draws are already the rows
            factors, keys = p["factors"], p["order"]
        else:
            factors = p["factors"].new_zeros([n, 4]).index_copy_(1, self.active, p["factors"])
            keys = p["order"].new_full([n, 4], 2.0).index_copy_(1, self.active, p["order"])
        return _params(factors, torch.argsort(keys, dim=1, stable=True),
                       self.enabled_row.expand(n, 4))

    def _affine_terms(self) -> List[List[float]]:
        m, c = len(self.program), self.constants.tolist()
        return [[j, -1, m + j, c[0][j], c[1][j], 2.0, 0.0, 1.0] for j in range(m)]


class RandomChannelPermutation(_Photometric):
    """torchvision.transforms.v2.RandomChannelPermutation, a permutation per sample."""

    def __init__(self, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__([Stage.PERMUTE_CHANNELS], 1, generator)
        self.register_buffer("constants", torch.tensor([[0.0], [_PERMUTATIONS]],
                                                       dtype=torch.float64), persistent=False)
        self.register_buffer("codes", torch.tensor(_PERMUTATION_CODES), persistent=False)
        self.register_buffer("order_row", torch.zeros(1, dtype=torch.long), persistent=False)
        self.register_buffer("apply_row", torch.ones(1, dtype=torch.bool), persistent=False)
        self._set_draws()

    def _rows(self, image: torch.Tensor) -> None:
        if self.order_row.device != image.device:
            self.order_row = self.order_row.to(image.device)
        if self.apply_row.device != image.device:
            self.apply_row = self.apply_row.to(image.device)

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        self._rows(image)
        if self.constants.device != image.device:
            self.constants = self.constants.to(image.device)
        if self.codes.device != image.device:
            self.codes = self.codes.to(image.device)
        n = u.shape[0]
        factors = _permutation_codes(_in_ranges(u, self.constants), image.shape[-3], self.codes)
        return _params(factors, self.order_row.expand(n, 1), self.apply_row.expand(n, 1))

    def _affine_terms(self) -> List[List[float]]:
        return [[0, -1, -1, 0.0, _PERMUTATIONS, 2.0, 0.0, 0.0]]


class RandomPhotometricDistort(_Photometric):
    """torchvision.transforms.v2.RandomPhotometricDistort, every draw per sample: brightness,
    contrast (before or after saturation and hue), saturation, hue, each with probability p, then
    a channel permutation with probability p."""

    def __init__(self, brightness: Tuple[float, float] = (0.875, 1.125),
                 contrast: Tuple[float, float] = (0.5, 1.5),
                 saturation: Tuple[float, float] = (0.5, 1.5),
                 hue: Tuple[float, float] = (-0.05, 0.05), p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        # per sample: the four factors' uniforms and the permutation's, five coins, the coin
        # that puts contrast after saturation and hue
        super().__init__([Stage.BRIGHTNESS, Stage.CONTRAST, Stage.SATURATION, Stage.HUE,
                          Stage.PERMUTE_CHANNELS], 11, generator)
        ranges = [brightness, contrast, saturation, hue]
        self.p = float(p)
        self._describe([f"{name}={tuple(r)}" for name, r in
                        zip(("brightness", "contrast", "saturation", "hue"), ranges)] +
                       [f"p={self.p}"])
        # rows: low, high - low per slot, float32 values (see _in_ranges)
        self.register_buffer("constants", torch.tensor(
            [[float(r[0]) for r in ranges] + [0.0],
             [float(r[1]) - float(r[0]) for r in ranges] + [_PERMUTATIONS]],
            dtype=torch.float32).double(), persistent=False)
        self.register_buffer("codes", torch.tensor(_PERMUTATION_CODES), persistent=False)
        # slots: brightness 0, contrast 1, saturation 2, hue 3, permutation 4; contrast runs
        # second or fourth
        self.register_buffer("orders", torch.tensor([[0, 1, 2, 3, 4], [0, 2, 3, 1, 4]]),
                             persistent=False)
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.constants.device != image.device:
            self.constants = self.constants.to(image.device)
        if self.codes.device != image.device:
            self.codes = self.codes.to(image.device)
        if self.orders.device != image.device:
            self.orders = self.orders.to(image.device)
        values = _in_ranges(u[:, :5], self.constants)
        factors = torch.cat([values[:, :4],
                             _permutation_codes(values[:, 4:], image.shape[-3], self.codes)], 1)
        apply = u[:, 5:10] < self.p
        order = torch.where(u[:, 10:] < 0.5, self.orders[0], self.orders[1])
        return _params(factors, order, apply)

    def _affine_terms(self) -> List[List[float]]:
        # the orders as keys of the last coin u, offset + scale u: contrast's 0.125 + 0.75 u
        # (exact) sorts before saturation's and hue's, 0.5 less 2^-40, where u < 0.5
        offsets = [0.0, 0.125, 0.5 - 2.0 ** -40, 0.5 - 2.0 ** -40, 0.9375]
        c = self.constants.tolist()
        return [[j, 5 + j, 10 if j == 1 else -1, c[0][j], c[1][j], self.p, offsets[j],
                 0.75 if j == 1 else 0.0] for j in range(5)]
