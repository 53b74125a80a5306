"""TrivialAugmentWide, RandAugment, AutoAugment and AugMix as torchvision.transforms.v2's, each
sample drawing its own operations, magnitudes, signs (and AugMix's mixing weights) on the image's
device, all of a policy one call of ``gpuaug::auto_augment``: the operation is data, not a launch.

``sample_params(image)`` returns each sample's chains as the op takes them: ``operations``
([N, B, D] int64, indices of :data:`NAMES`) and ``magnitudes`` ([N, B, D] float64, torchvision's
signed magnitude), and AugMix's ``weights`` ([N, B + 1] float32); ``forward(image, params)``
replays them. For each sample the result is torchvision's ``_apply_image_or_video_transform`` of
each operation in turn (and AugMix's mixture) for that image."""

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ._program import _check_generator, _rand
from .warp import warp_interpolation
from ._geometry import fill_values

__all__ = ["NAMES", "auto_augment", "AugMix", "AutoAugment", "AutoAugmentPolicy", "RandAugment",
           "TrivialAugmentWide"]

# The op's operation codes: torchvision's names, in this order.
NAMES = ("Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
         "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize",
         "Invert")
_CODE = {name: code for code, name in enumerate(NAMES)}
MAX_DEPTH = 4  # operations a chain of one call


def auto_augment(image: torch.Tensor, operations: torch.Tensor, magnitudes: torch.Tensor, *,
                 weights: Optional[torch.Tensor] = None, interpolation: int = 0,
                 fill: Optional[List[float]] = None, dtype: Optional[torch.dtype] = None,
                 mean: Optional[List[float]] = None,
                 std: Optional[List[float]] = None) -> torch.Tensor:
    """Each sample of ``image`` ([N, C, H, W], uint8, float32 or float64, C 1 or 3) through its
    B chains of D <= 4 operations (``operations`` [N, B, D] int64 codes of :data:`NAMES`,
    ``magnitudes`` [N, B, D] float64), each as torchvision's
    ``_apply_image_or_video_transform(image, NAMES[code], magnitude, interpolation, fill)`` runs
    it; without ``weights`` (B = 1) the chain's image is the result, with them ([N, B + 1]
    float32) AugMix's mixture ``w0 image + sum_b w_b chain_b`` in the image's dtype. Then
    ``dtype`` (the image's, or float32 from uint8, scaled) and ``mean``/``std``. Operation codes
    outside 0..14 are refused on the CPU and run as Identity on the GPU (checking them there
    would synchronise)."""
    return torch.ops.gpuaug.auto_augment(image, operations, magnitudes, weights=weights,
                                         interpolation=interpolation, fill=fill, dtype=dtype,
                                         mean=mean, std=std)


class AutoAugmentPolicy:
    """torchvision's AutoAugmentPolicy values (its enum is accepted too)."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# torchvision's magnitude tables: a name's bins for num_bins, height, width (None: no magnitude),
# and whether a draw signs it.
def _linspace(end: float):
    return lambda bins, h, w: torch.linspace(0.0, end, bins)


def _posterize(top: int, span: int):
    return lambda bins, h, w: (top - (torch.arange(bins) / ((bins - 1) / span))).round().int()


_NONE = (lambda bins, h, w: None, False)
_SOLARIZE = (lambda bins, h, w: torch.linspace(1.0, 0.0, bins), False)
_AUTOAUGMENT_SPACE = {
    "ShearX": (_linspace(0.3), True), "ShearY": (_linspace(0.3), True),
    "TranslateX": (lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * w, bins), True),
    "TranslateY": (lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * h, bins), True),
    "Rotate": (_linspace(30.0), True), "Brightness": (_linspace(0.9), True),
    "Color": (_linspace(0.9), True), "Contrast": (_linspace(0.9), True),
    "Sharpness": (_linspace(0.9), True), "Posterize": (_posterize(8, 4), False),
    "Solarize": _SOLARIZE, "AutoContrast": _NONE, "Equalize": _NONE, "Invert": _NONE,
}
_RANDAUGMENT_SPACE = {"Identity": _NONE,
                      **{k: v for k, v in _AUTOAUGMENT_SPACE.items() if k != "Invert"}}
_TRIVIAL_SPACE = {
    "Identity": _NONE, "ShearX": (_linspace(0.99), True), "ShearY": (_linspace(0.99), True),
    "TranslateX": (_linspace(32.0), True), "TranslateY": (_linspace(32.0), True),
    "Rotate": (_linspace(135.0), True), "Brightness": (_linspace(0.99), True),
    "Color": (_linspace(0.99), True), "Contrast": (_linspace(0.99), True),
    "Sharpness": (_linspace(0.99), True), "Posterize": (_posterize(8, 6), False),
    "Solarize": _SOLARIZE, "AutoContrast": _NONE, "Equalize": _NONE,
}
_AUGMIX_PARTIAL = {
    "ShearX": (_linspace(0.3), True), "ShearY": (_linspace(0.3), True),
    "TranslateX": (lambda bins, h, w: torch.linspace(0.0, w / 3.0, bins), True),
    "TranslateY": (lambda bins, h, w: torch.linspace(0.0, h / 3.0, bins), True),
    "Rotate": (_linspace(30.0), True), "Posterize": (_posterize(4, 4), False),
    "Solarize": _SOLARIZE, "AutoContrast": _NONE, "Equalize": _NONE,
}
_AUGMIX_SPACE = {**_AUGMIX_PARTIAL, "Brightness": (_linspace(0.9), True),
                 "Color": (_linspace(0.9), True), "Contrast": (_linspace(0.9), True),
                 "Sharpness": (_linspace(0.9), True)}


def _tables(space: Dict[str, tuple], bins: int, height: int, width: int
            ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A space's codes [K], magnitudes [K, bins] (float64 of torchvision's values; 0 for none)
    and signed flags [K]."""
    codes, rows, signed = [], [], []
    for name, (magnitudes, is_signed) in space.items():
        codes.append(_CODE[name])
        values = magnitudes(bins, height, width)
        rows.append(torch.zeros(bins, dtype=torch.float64) if values is None
                    else values.to(torch.float64))
        signed.append(is_signed and values is not None)
    return torch.tensor(codes), torch.stack(rows), torch.tensor(signed)


def _randint(u: torch.Tensor, n: int) -> torch.Tensor:
    """randint(n) of uniforms in [0, 1): floor(u n), below n."""
    return torch.clamp((u * n).long(), max=n - 1)


def _signed(values: torch.Tensor, signed: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """torchvision's sign: negated where signed and rand() <= 0.5."""
    return torch.where(signed & (u <= 0.5), -values, values)


def _signed_outcomes(codes: torch.Tensor, values: torch.Tensor, signed: torch.Tensor
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each (operation, magnitude bin, sign) of codes [K], values [K, M] and signed [K], equally
    likely: their codes and signed magnitudes, [K * M * 2] each (a uniform index draws all three
    at once, in one kernel)."""
    magnitudes = torch.stack([values, torch.where(signed[:, None], -values, values)], -1)
    return codes[:, None, None].expand(magnitudes.shape).flatten(), magnitudes.flatten()


class _Policy(nn.Module):
    """A policy's draws (``_draw``) and its call: the op on [N, C, H, W] (a [C, H, W] image as
    one sample, a [..., T, C, H, W] video's frames sharing their sample's draws), chains of more
    than MAX_DEPTH operations as consecutive calls. ``dtype``, ``mean`` and ``std`` convert the
    result in the same pass, as a ToDtype and Normalize after it would."""

    policy_call = True  # a call of its own: gpuaug's Compose does not hold it

    def __init__(self, interpolation: object, fill: object,
                 generator: Optional[torch.Generator], dtype: Optional[torch.dtype],
                 mean: Optional[Sequence[float]], std: Optional[Sequence[float]]) -> None:
        super().__init__()
        owner = "transforms." + type(self).__name__
        self.interpolation = warp_interpolation(owner, interpolation)
        self.fill = None if fill is None else fill_values(owner, fill)
        self.generator = generator
        self.dtype = dtype
        self.mean = None if mean is None else [float(m) for m in mean]
        self.std = None if std is None else [float(s) for s in std]
        self._cached: Dict[tuple, tuple] = {}

    def extra_repr(self) -> str:
        names = [k for k in ("num_ops", "magnitude", "num_magnitude_bins", "policy", "severity",
                             "mixture_width", "chain_depth", "alpha", "all_ops") if hasattr(self, k)]
        names += ["interpolation", "fill", "dtype", "mean", "std"]
        return ", ".join(f"{k}={getattr(self, k)}" for k in names
                         if k in ("interpolation",) or getattr(self, k) is not None)

    def _on_device(self, key: tuple, device: torch.device,
                   make: Callable[[], Tuple[torch.Tensor, ...]]) -> Tuple[torch.Tensor, ...]:
        """Tables made once a key and device: on the CPU, then moved."""
        key = key + (device,)
        if key not in self._cached:
            self._cached[key] = tuple(t.to(device) for t in make())
        return self._cached[key]

    def _space_tables(self, space: Dict[str, tuple], bins: int, height: int, width: int,
                      device: torch.device) -> Tuple[torch.Tensor, ...]:
        return self._on_device((id(space), bins, height, width), device,
                               lambda: _tables(space, bins, height, width))

    def _uniforms(self, shape: List[int], image: torch.Tensor,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
        _check_generator(type(self).__name__, self.generator, image)
        return _rand(shape, image, self.generator, dtype)

    def _indices(self, high: int, shape: List[int], image: torch.Tensor) -> torch.Tensor:
        """Uniform integers in 0..high - 1."""
        _check_generator(type(self).__name__, self.generator, image)
        if self.generator is None:  # randint(generator=None) does not trace with symbolic sizes
            return torch.randint(high, shape, device=image.device)
        return torch.randint(high, shape, device=image.device, generator=self.generator)

    def _draw(self, image: torch.Tensor, count: int) -> Dict[str, torch.Tensor]:
        raise NotImplementedError

    @staticmethod
    def _batch(image: torch.Tensor) -> Tuple[torch.Tensor, int]:
        """The image as [N, C, H, W] samples, and the frames a sample (1 but for a video)."""
        if image.dim() == 3:
            return image.unsqueeze(0), 1
        if image.dim() == 5:
            return image.flatten(0, 1), image.shape[1]
        return image, 1

    def sample_params(self, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        count = 1 if image.dim() == 3 else image.shape[0]
        return self._draw(image, count)

    def forward(self, image: torch.Tensor,
                params: Optional[Dict[str, torch.Tensor]] = None) -> torch.Tensor:
        if params is None:
            params = self.sample_params(image)
        batch, frames = self._batch(image)
        operations, magnitudes = params["operations"], params["magnitudes"]
        weights = params.get("weights")
        if frames > 1:
            operations = operations.repeat_interleave(frames, 0)
            magnitudes = magnitudes.repeat_interleave(frames, 0)
            weights = None if weights is None else weights.repeat_interleave(frames, 0)
        depth = operations.shape[2]
        out = batch
        for first in range(0, max(depth, 1), MAX_DEPTH):
            last = first + MAX_DEPTH >= depth
            out = auto_augment(out, operations[:, :, first:first + MAX_DEPTH].contiguous(),
                               magnitudes[:, :, first:first + MAX_DEPTH].contiguous(),
                               weights=weights, interpolation=self.interpolation, fill=self.fill,
                               dtype=self.dtype if last else None,
                               mean=self.mean if last else None, std=self.std if last else None)
        return out.reshape(image.shape[:-3] + out.shape[-3:])


class TrivialAugmentWide(_Policy):
    """torchvision.transforms.v2.TrivialAugmentWide, each sample drawing its operation (one of
    14), its magnitude bin and its sign."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation: object = "nearest",
                 fill: object = None, *, generator: Optional[torch.Generator] = None,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__(interpolation, fill, generator, dtype, mean, std)
        self.num_magnitude_bins = int(num_magnitude_bins)

    def _draw(self, image: torch.Tensor, count: int) -> Dict[str, torch.Tensor]:
        h, w = image.shape[-2:]
        bins = self.num_magnitude_bins
        codes, magnitudes = self._on_device(
            ("trivial", bins, h, w), image.device,
            lambda: _signed_outcomes(*_tables(_TRIVIAL_SPACE, bins, h, w)))
        pick = self._indices(codes.numel(), [count], image)
        return {"operations": codes[pick].view(count, 1, 1),
                "magnitudes": magnitudes[pick].view(count, 1, 1)}


class RandAugment(_Policy):
    """torchvision.transforms.v2.RandAugment, each sample drawing its ``num_ops`` operations (of
    14, with replacement) and their signs; the magnitude is bin ``magnitude`` of
    ``num_magnitude_bins``."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: object = "nearest", fill: object = None, *,
                 generator: Optional[torch.Generator] = None,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__(interpolation, fill, generator, dtype, mean, std)
        if not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops} "
                             "instead.")
        if not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"gpuaug.transforms.RandAugment: expected 'magnitude' in "
                             f"0..{num_magnitude_bins - 1} (a bin of num_magnitude_bins), but "
                             f"got {magnitude}")
        self.num_ops, self.magnitude = num_ops, int(magnitude)
        self.num_magnitude_bins = int(num_magnitude_bins)

    def _draw(self, image: torch.Tensor, count: int) -> Dict[str, torch.Tensor]:
        h, w = image.shape[-2:]
        if self.num_ops == 0:
            zeros = torch.zeros([count, 1, 1], dtype=torch.int64, device=image.device)
            return {"operations": zeros, "magnitudes": zeros.double()}
        bins, m = self.num_magnitude_bins, self.magnitude

        def outcomes() -> Tuple[torch.Tensor, torch.Tensor]:
            codes, table, signed = _tables(_RANDAUGMENT_SPACE, bins, h, w)
            return _signed_outcomes(codes, table[:, m:m + 1], signed)
        codes, magnitudes = self._on_device(("rand", bins, m, h, w), image.device, outcomes)
        pick = self._indices(codes.numel(), [count, self.num_ops], image)
        return {"operations": codes[pick].unsqueeze(1), "magnitudes": magnitudes[pick].unsqueeze(1)}


# AutoAugment's sub-policies (Cubuk et al., 2019; torchvision's order): "name probability
# magnitude-bin" pairs, "-" for no magnitude.
_SUB_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8, Rotate .6 9; Solarize .6 5, AutoContrast .6 -; Equalize .8 -, Equalize .6 -;
        Posterize .6 7, Posterize .6 6; Equalize .4 -, Solarize .2 4; Equalize .4 -, Rotate .8 8;
        Solarize .6 3, Equalize .6 -; Posterize .8 5, Equalize 1 -; Rotate .2 3, Solarize .6 8;
        Equalize .6 -, Posterize .4 6; Rotate .8 8, Color .4 0; Rotate .4 9, Equalize .6 -;
        Equalize 0 -, Equalize .8 -; Invert .6 -, Equalize 1 -; Color .6 4, Contrast 1 8;
        Rotate .8 8, Color 1 2; Color .8 8, Solarize .8 7; Sharpness .4 7, Invert .6 -;
        ShearX .6 5, Equalize 1 -; Color .4 0, Equalize .6 -; Equalize .4 -, Solarize .2 4;
        Solarize .6 5, AutoContrast .6 -; Invert .6 -, Equalize 1 -; Color .6 4, Contrast 1 8;
        Equalize .8 -, Equalize .6 -""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1 -, Contrast .2 6; Rotate .7 2, TranslateX .3 9; Sharpness .8 1, Sharpness .9 3;
        ShearY .5 8, TranslateY .7 9; AutoContrast .5 -, Equalize .9 -; ShearY .2 7, Posterize .3 7;
        Color .4 3, Brightness .6 7; Sharpness .3 9, Brightness .7 9; Equalize .6 -, Equalize .5 -;
        Contrast .6 7, Sharpness .6 5; Color .7 7, TranslateX .5 8; Equalize .3 -, AutoContrast .4 -;
        TranslateY .4 3, Sharpness .2 6; Brightness .9 6, Color .2 8; Solarize .5 2, Invert 0 -;
        Equalize .2 -, AutoContrast .6 -; Equalize .2 -, Equalize .6 -; Color .9 9, Equalize .6 -;
        AutoContrast .8 -, Solarize .2 8; Brightness .1 3, Color .7 0; Solarize .4 5, AutoContrast .9 -;
        TranslateY .9 9, TranslateY .7 9; AutoContrast .9 -, Solarize .8 3; Equalize .8 -, Invert .1 -;
        TranslateY .7 9, AutoContrast .9 -""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4, Invert .2 -; ShearY .9 8, Invert .7 -; Equalize .6 -, Solarize .6 6;
        Invert .9 -, Equalize .6 -; Equalize .6 -, Rotate .9 3; ShearX .9 4, AutoContrast .8 -;
        ShearY .9 8, Invert .4 -; ShearY .9 5, Solarize .2 6; Invert .9 -, AutoContrast .8 -;
        Equalize .6 -, Rotate .9 3; ShearX .9 4, Solarize .3 3; ShearY .8 8, Invert .7 -;
        Equalize .9 -, TranslateY .6 6; Invert .9 -, Equalize .6 -; Contrast .3 3, Rotate .8 4;
        Invert .8 -, TranslateY 0 2; ShearY .7 6, Solarize .4 8; Invert .6 -, Rotate .8 4;
        ShearY .3 7, TranslateX .9 3; ShearX .1 6, Invert .6 -; Solarize .7 2, TranslateY .6 7;
        ShearY .8 4, Invert .8 -; ShearX .7 9, TranslateY .8 3; ShearY .8 5, AutoContrast .7 -;
        ShearX .7 2, Invert .1 -""",
}


def _policies(policy: str) -> List[List[Tuple[str, float, Optional[int]]]]:
    """AutoAugment's sub-policies of ``policy``: two (name, probability, bin) each."""
    subs = []
    for sub in _SUB_POLICIES[policy].split(";"):
        pairs = []
        for op in sub.split(","):
            name, p, index = op.split()
            pairs.append((name, float(p), None if index == "-" else int(index)))
        subs.append(pairs)
    return subs


def _outcomes(sub_policies: List[List[Tuple[str, float, Optional[int]]]], height: int,
              width: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every outcome of an AutoAugment draw with a chance (sub-policy, whether each operation
    applies, its sign): codes [M, 2], magnitudes [M, 2] (float64) and the chances' running sums
    [M] (float64, the last raised to 2: above any uniform)."""
    codes, magnitudes, chances = [], [], []
    for sub in sub_policies:
        branches = []
        for name, p, index in sub:
            values, is_signed = _AUTOAUGMENT_SPACE[name]
            table = values(10, height, width)
            value = 0.0 if table is None else float(table[index])
            signs = (1.0, -1.0) if is_signed and table is not None else (1.0,)
            branches.append([(0, 0.0, 1.0 - p)] +
                            [(_CODE[name], s * value, p / len(signs)) for s in signs])
        for code0, value0, p0 in branches[0]:
            for code1, value1, p1 in branches[1]:
                if p0 * p1 > 0:
                    codes.append([code0, code1])
                    magnitudes.append([value0, value1])
                    chances.append(p0 * p1 / len(sub_policies))
    sums = torch.tensor(chances, dtype=torch.float64).cumsum(0)
    sums[-1] = 2.0
    return torch.tensor(codes), torch.tensor(magnitudes, dtype=torch.float64), sums


class AutoAugment(_Policy):
    """torchvision.transforms.v2.AutoAugment (``policy`` IMAGENET, CIFAR10 or SVHN), each sample
    drawing its sub-policy (one of 25), whether each of its two operations applies, and their
    signs."""

    def __init__(self, policy: object = AutoAugmentPolicy.IMAGENET,
                 interpolation: object = "nearest", fill: object = None, *,
                 generator: Optional[torch.Generator] = None,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__(interpolation, fill, generator, dtype, mean, std)
        value = getattr(policy, "value", policy)
        if value not in (AutoAugmentPolicy.IMAGENET, AutoAugmentPolicy.CIFAR10,
                         AutoAugmentPolicy.SVHN):
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy = value
        self._sub_policies = _policies(value)

    def _draw(self, image: torch.Tensor, count: int) -> Dict[str, torch.Tensor]:
        h, w = image.shape[-2:]
        codes, magnitudes, sums = self._on_device(
            ("policy", h, w), image.device, lambda: _outcomes(self._sub_policies, h, w))
        pick = torch.searchsorted(sums, self._uniforms([count], image, torch.float64), right=True)
        return {"operations": codes[pick].unsqueeze(1), "magnitudes": magnitudes[pick].unsqueeze(1)}


class AugMix(_Policy):
    """torchvision.transforms.v2.AugMix, each sample drawing its mixing weights (Dirichlet, as
    torchvision draws them per image), and for each of its ``mixture_width`` chains its depth
    (``chain_depth``, or 1..3), operations, severities and signs. The chains and the mixture are
    one call: no image a chain. Chains of more than 4 operations are refused."""

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1,
                 alpha: float = 1.0, all_ops: bool = True, interpolation: object = "bilinear",
                 fill: object = None, *, generator: Optional[torch.Generator] = None,
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__(interpolation, fill, generator, dtype, mean, std)
        if not 1 <= severity <= 10:
            raise ValueError(f"The severity must be between [1, 10]. Got {severity} instead.")
        if chain_depth > MAX_DEPTH:
            raise ValueError(f"gpuaug.transforms.AugMix: expected 'chain_depth' of at most "
                             f"{MAX_DEPTH} (or <= 0: 1..3 drawn), but got {chain_depth}")
        if mixture_width < 1:
            raise ValueError(f"gpuaug.transforms.AugMix: expected 'mixture_width' of at least "
                             f"1, but got {mixture_width}")
        self.severity, self.mixture_width = int(severity), int(mixture_width)
        self.chain_depth, self.alpha, self.all_ops = int(chain_depth), float(alpha), all_ops

    def _draw(self, image: torch.Tensor, count: int) -> Dict[str, torch.Tensor]:
        h, w = image.shape[-2:]
        space = _AUGMIX_SPACE if self.all_ops else _AUGMIX_PARTIAL
        codes, table, signed = self._space_tables(space, 10, h, w, image.device)
        width = self.mixture_width
        depth = self.chain_depth if self.chain_depth > 0 else 3
        u = self._uniforms([count, width, depth * 3 + 1], image)
        if self.chain_depth > 0:
            used = torch.full([count, width, 1], depth, device=image.device)
        else:  # randint(1, 4)
            used = 1 + _randint(u[..., -1:], 3)
        op = _randint(u[..., 0:depth], len(space))
        magnitude = table[op, _randint(u[..., depth:2 * depth], self.severity)]
        magnitude = _signed(magnitude, signed[op], u[..., 2 * depth:3 * depth])
        steps = torch.arange(depth, device=image.device)
        applies = steps < used
        alpha = torch.tensor(self.alpha, device=image.device)
        m = torch._sample_dirichlet(alpha.expand(count, 2), generator=self.generator)
        combined = torch._sample_dirichlet(alpha.expand(count, width),
                                           generator=self.generator) * m[:, 1:2]
        return {"operations": torch.where(applies, codes[op], 0),
                "magnitudes": torch.where(applies, magnitude, 0.0),
                "weights": torch.cat([m[:, :1], combined], 1)}
