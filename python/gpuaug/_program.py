"""The stage program of the fused ``gpuaug::photometric`` op: its stage codes, the op's call, and
what the transforms build their calls of (their draws' factors, coins and order keys, the long
form of ``factor_ranges``, the calls a program splits into).

Every transform is a program of stages (brightness, contrast, ...) with per-sample factors, an
order per sample and an apply mask per sample and stage. A call of the op is one
:class:`OpCall`: the stages it runs, their parameters and its output conversion.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import torch
from torch import nn

__all__ = ["Stage", "photometric", "OpCall"]


class Stage:
    """The stage codes of ``gpuaug::photometric``'s ``stages`` argument."""
    BRIGHTNESS = 1
    CONTRAST = 2
    SATURATION = 3
    HUE = 4
    GRAYSCALE = 5
    SOLARIZE = 6
    POSTERIZE = 7
    INVERT = 8
    PERMUTE_CHANNELS = 9
    AUTOCONTRAST = 10
    EQUALIZE = 11
    COLOR_AUGMENT = 12
    COLOR_PARAMETER = 13


_REDUCTIONS = (Stage.CONTRAST, Stage.AUTOCONTRAST, Stage.EQUALIZE)


def photometric(image: torch.Tensor, stages: List[int], factors: torch.Tensor, *,
                order: Optional[torch.Tensor] = None, apply: Optional[torch.Tensor] = None,
                dtype: Optional[torch.dtype] = None, mean: Optional[List[float]] = None,
                std: Optional[List[float]] = None,
                factor_ranges: Optional[List[float]] = None) -> torch.Tensor:
    """Runs each sample of ``image`` through its program, as torchvision.transforms.v2.functional
    would run that one image through the same calls.

    ``stages`` (K codes of :class:`Stage`, at most 16; none converts alone) are the slots;
    ``factors`` (``[K]`` or ``[N, K]``, floating, on the image's device) their parameters:
    brightness, contrast and saturation factors, the hue factor, the solarize threshold (in the
    image's range: 0..255 for uint8), posterize's bits, and for a channel permutation
    ``p0 + 3 p1 + 9 p2`` (output channel c takes input channel ``p_c``); grayscale and invert
    ignore theirs. ``COLOR_AUGMENT`` is :func:`gpuaug.color_transform`'s formula, its result as
    color_transform's output of the image's dtype holds it (uint8: ``255 v`` rounded half to
    even); its slot holds the first channel's gain and must be followed by five
    ``COLOR_PARAMETER`` slots: the second and third gains, brightness, contrast and gamma (> 0).
    A parameter slot runs nothing itself: its stage's slot decides where in the order the stage
    runs and whether it applies. ``order`` (``[K]`` or ``[N, K]``:
    int64 rows, permutations of ``0..K-1``, or floating keys, their slots run in ascending order
    as ``argsort(keys, stable=True)`` gives it) is the order a sample runs its slots in, and
    ``apply`` (bool, same shapes) which it runs. At most one reduction stage (contrast,
    autocontrast, equalize).

    ``image``: ``[C, H, W]``, ``[N, C, H, W]`` or ``[N, T, C, H, W]`` (frames share their
    sample's draws; contrast's mean is per frame, as torchvision's is per image), C = 1 or 3,
    uint8 or floating, contiguous or channels-last. ``dtype`` converts the result as
    ``to_dtype(scale=True)`` does (the image's dtype, floating from uint8, uint8 from floating),
    then ``mean`` and ``std`` normalise it. Differentiable in a floating ``image`` with a floating
    output (``factors`` have no gradient).

    ``factor_ranges`` (2K values: each slot's low, then each slot's width) makes ``factors``
    uniforms ``u``: slot k's factor is ``fma(width[k], u, low[k])`` in float64 (``u`` as float32,
    or float64 for a float64 image), rounded to float32; a ``COLOR_AUGMENT`` stage's gamma slot
    (its fifth parameter) takes ``exp`` of that value, its range being log gamma's, as
    ColorAugment draws it; a ``PERMUTE_CHANNELS`` slot takes the code of permutation number
    ``floor`` of it (clamped to 0..5) of the six of (0, 1, 2) in lexicographic order, so that the
    range [0, 6) draws one as ``torch.randperm(3)`` would.

    Its long form, 8K values, draws every parameter of each sample's uniforms: ``factors`` is
    then ``[U]`` or ``[N, U]`` uniforms, ``order`` and ``apply`` absent, and the values are each
    slot's low and width as above, then each slot's factor column, coin column, coin bound, key
    column, key low and key width. Slot k's factor takes ``u`` from its factor column (-1: none,
    ``u = 0``); it applies where the uniform of its coin column is below its coin bound, both
    rounded to float32 (-1: always); the slots run in the ascending order of their keys
    ``fma(key width, u, key low)`` in float64, ``u`` from the key column (-1: the key low),
    ties by slot. Fresh draws pass their uniforms so: no kernel makes parameters of them.
    """
    if not torch.jit.is_scripting() and not isinstance(factors, torch.Tensor):
        raise TypeError("gpuaug.photometric: expected 'factors' as a floating tensor ([K] or "
                        "[N, K]) on the image's device, but got "
                        f"{type(factors).__name__}")
    return torch.ops.gpuaug.photometric(image, stages, factors, order=order, apply=apply,
                                        dtype=dtype, mean=mean, std=std,
                                        factor_ranges=factor_ranges)


class OpCall(NamedTuple):
    """One call of the op: the slots it runs (``stages`` and their ``factors``; ``order`` and
    ``apply``, or the long-form ``factor_ranges`` with which ``factors`` are uniforms) and the
    output conversion (``dtype``, ``mean``, ``std``; None: none)."""
    stages: List[int]
    factors: torch.Tensor
    order: Optional[torch.Tensor]
    apply: Optional[torch.Tensor]
    factor_ranges: Optional[List[float]]
    dtype: Optional[torch.dtype]
    mean: Optional[List[float]]
    std: Optional[List[float]]


def run(image: torch.Tensor, call: OpCall) -> torch.Tensor:
    """The op's call ``call`` on ``image``."""
    return torch.ops.gpuaug.photometric(image, call.stages, call.factors, order=call.order,
                                        apply=call.apply, dtype=call.dtype, mean=call.mean,
                                        std=call.std, factor_ranges=call.factor_ranges)


def _check_shape(image: torch.Tensor, owner: str = "gpuaug.transforms") -> None:
    if image.dim() < 3 or image.dim() > 5:
        raise ValueError(f"{owner}: expected an image of shape [C, H, W], [N, C, H, W] or "
                         f"[N, T, C, H, W], got {list(image.shape)}")


def _samples(image: torch.Tensor) -> int:
    _check_shape(image)
    return 1 if image.dim() == 3 else image.shape[0]


def _channels(image: torch.Tensor, owner: str = "gpuaug.transforms") -> int:
    """The image's channels, once its shape is checked (an [H, W] image has no dimension -3)."""
    _check_shape(image, owner)
    return image.shape[-3]


def _check_threshold(threshold: float, dtype: torch.dtype) -> None:
    """solarize's threshold against the image's range, checked as torchvision checks it."""
    bound = 255.0 if dtype == torch.uint8 else 1.0
    if threshold > bound:
        raise TypeError("Threshold should be less or equal the maximum value of the dtype, but "
                        f"got {threshold}")


def _check_bits(bits: Union[int, float]) -> None:
    """posterize's bits, checked as torchvision checks them."""
    if not isinstance(bits, int) or not 0 <= bits <= 8:
        raise TypeError(f"bits must be a positive integer in the range [0, 8], got {bits} "
                        "instead.")


def _check_generator(owner: str, generator: Optional[torch.Generator],
                     image: torch.Tensor) -> None:
    """A generator of the device type of the image, whose device makes the draws (eager Python:
    TorchScript has no Generator.device). torch.rand's own message names neither the transform
    nor its argument; meta images take any generator, as torch.rand does, but for one on the
    meta device itself, which draws nothing (torch: "META device type not an accelerator")."""
    if generator is None:
        return
    if generator.device.type == "meta":
        raise ValueError(
            f"gpuaug.transforms.{owner}: expected 'generator' as a torch.Generator of the "
            f"image's device ({image.device.type}) or None, but got a generator on the meta "
            "device, which cannot draw; a meta image takes a generator of any other device, or "
            "none")
    if image.device.type != "meta" and generator.device.type != image.device.type:
        raise ValueError(
            f"gpuaug.transforms.{owner}: generator is a {generator.device.type} generator and "
            f"the image is on {image.device}; the draws are made on the image's device, so give "
            f"a torch.Generator({image.device.type!r}) or none")


def _rand(shape: List[int], image: torch.Tensor, generator: Optional[torch.Generator],
          dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if generator is None:  # rand(generator=None) does not trace with symbolic sizes
        return torch.rand(shape, device=image.device, dtype=dtype)
    return torch.rand(shape, device=image.device, dtype=dtype, generator=generator)


def _in_ranges(u: torch.Tensor, ranges: torch.Tensor) -> torch.Tensor:
    """The factors the op makes of float32 uniforms ``u`` ([N, K]) with factor_ranges
    ``ranges`` ([2, K] float64 of float32 values: low, width): u * width is exact in float64, so
    addcmul rounds once, as the op's fma."""
    return torch.addcmul(ranges[0], u.double(), ranges[1]).float()


# The op's codes p0 + 3 p1 + 9 p2 of the six permutations of (0, 1, 2), in lexicographic order.
_PERMUTATION_CODES = [21.0, 15.0, 19.0, 7.0, 11.0, 5.0]
# A permutation slot's range, [0, 6): six times a uniform, whose floor picks one (the op's ranged
# permutation, as torch.randperm(3) draws one).
_PERMUTATIONS = 6.0


def _permutation_codes(values: torch.Tensor, channels: int, codes: torch.Tensor) -> torch.Tensor:
    """The op's code of permutation floor(v) of ``codes`` (``_PERMUTATION_CODES`` on the values'
    device) for each of ``values`` (a permutation slot's ranged factors, [N, 1]): what the op
    makes of the uniforms; 0 (the one channel stays) for a 1-channel image."""
    if channels == 1:
        return torch.zeros_like(values)
    return codes[values.floor().clamp(0, 5).long()]


def _check_params(params: Dict[str, torch.Tensor], keys: List[str]) -> None:
    """A clear error where ``params`` is not a whole ``sample_params`` dict."""
    for key in keys:
        if key not in params:
            raise ValueError(f"gpuaug.transforms: expected 'params' as sample_params returns them, "
                             f"a dict with the keys {keys}, but it has no '{key}' (scripted, a "
                             "transform takes an image tensor and its params alone)")


def _params(factors: torch.Tensor, order: torch.Tensor,
            apply: torch.Tensor) -> Dict[str, torch.Tensor]:
    return {"factors": factors, "order": order, "apply": apply}


def _concatenated(parts: List[Dict[str, torch.Tensor]],
                  offsets: torch.Tensor) -> Dict[str, torch.Tensor]:
    """The params of transforms that run one after the other: their slots side by side, each
    order shifted by ``offsets`` (per slot, its transform's first slot)."""
    return _params(torch.cat([p["factors"] for p in parts], 1),
                   torch.cat([p["order"] for p in parts], 1) + offsets,
                   torch.cat([p["apply"] for p in parts], 1))


def _conversion_arguments(dtype: Optional[torch.dtype], mean: Optional[List[float]],
                          std: Optional[List[float]]) -> List[str]:
    """An output conversion as printed arguments: those given."""
    return [f"{name}={value}" for name, value in (("dtype", dtype), ("mean", mean), ("std", std))
            if value is not None]


def _drawn_terms(terms: List[List[float]], first_column: int,
                 key_offset: float) -> List[List[float]]:
    """Each slot's eight values of the op's long-form factor_ranges, from its
    ``_affine_terms``: low, width, factor column, coin column, coin bound, key column, key low,
    key width; columns shifted by ``first_column`` (the transform's in a Compose's uniforms), keys
    by ``key_offset`` (its index: a Compose runs its transforms in turn)."""
    def column(c: float) -> float:
        return -1.0 if c < 0 else float(first_column + int(c))
    return [[float(t[3]), float(t[4]), column(t[0]), column(t[1]), float(t[5]), column(t[2]),
             key_offset + t[6], float(t[7])] for t in terms]


def _set_nesting(module: nn.Module, levels: List[List[List[float]]]) -> None:
    """A transform's nesting ``levels``, outermost first, each of [column, coin column, low,
    high] rows (the column stays where the coin is in [low, high): RandomApply's coin below its
    p, RandomChoice's in its transform's interval; a column at most once a level), and the
    buffers ``_nested`` reads: per level, for each column of its uniforms, the column of the coin
    it nests in (its own where none) and that coin's interval ([0, 2): none)."""
    module.nesting = levels
    outer = [list(range(module.uniforms)) for _ in levels]
    lows = [[0.0] * module.uniforms for _ in levels]
    highs = [[2.0] * module.uniforms for _ in levels]
    for level, rows in enumerate(levels):
        for column, coin, low, high in rows:
            c = int(column)
            outer[level][c], lows[level][c], highs[level][c] = int(coin), low, high
    # lows above 0 take a second comparison (RandomChoice's intervals but the first)
    module.nest_two_sided = any(low > 0.0 for rows in lows for low in rows)
    shape = [len(levels), module.uniforms]
    module.register_buffer("nest_outer", torch.tensor(outer, dtype=torch.long).view(shape),
                           persistent=False)
    module.register_buffer("nest_lows", torch.tensor(lows, dtype=torch.float32).view(shape),
                           persistent=False)
    module.register_buffer("nest_bounds", torch.tensor(highs, dtype=torch.float32).view(shape),
                           persistent=False)


def _merged_levels(parts: List[List[List[List[float]]]],
                   columns: List[int]) -> List[List[List[float]]]:
    """The nesting levels of transforms side by side, part i's columns shifted by
    ``columns[i]``: their level k's rows together (their columns do not meet)."""
    levels: List[List[List[float]]] = []
    for part, first in zip(parts, columns):
        for k, rows in enumerate(part):
            if k == len(levels):
                levels.append([])
            levels[k] += [[c + first, coin + first, low, high] for c, coin, low, high in rows]
    return levels


def _call_bounds(units: List[List[int]], unit_outputs: List[int],
                 own_converts: bool) -> Tuple[List[int], List[int]]:
    """The op's calls for ``units`` (stage lists that run one after the other, each in one
    call): the first slot of each call, then the slot count; and each call's output conversion
    (an index of the transform's ``output_*`` lists, -1: none). A call takes one reduction stage
    (contrast, autocontrast, equalize) at most, since the stages after it need the image as it
    leaves them; a unit holds one at most. A call ends after a unit with an output conversion
    (``unit_outputs``: a Compose's ToDtype or Normalize, an empty unit), and the last call takes
    the transform's own (the lists' last; ``own_converts``: whether it converts at all)."""
    bounds, outputs, reductions, slots = [0], [], 0, 0
    own = max(unit_outputs + [-1]) + 1
    for unit, output in zip(units, unit_outputs):
        own_reductions = sum(1 for s in unit if s in _REDUCTIONS)
        if reductions + own_reductions > 1 and slots > bounds[-1]:
            bounds.append(slots)
            outputs.append(-1)
            reductions = 0
        reductions += own_reductions
        slots += len(unit)
        if output >= 0:
            bounds.append(slots)
            outputs.append(output)
            reductions = 0
    # after a call that ends with a conversion, the own one (where it converts) is a call alone
    if slots > bounds[-1] or not outputs or own_converts:
        bounds.append(slots)
        outputs.append(own)
    return bounds, outputs


def _ranges_of(slots: List[List[float]]) -> List[float]:
    """The long form itself: each of the eight values for every slot in turn."""
    return [slot[t] for t in range(8) for slot in slots]


def _slots_of(ranges: List[float], first: int, end: int) -> List[float]:
    """The long form ``ranges`` of its slots first..end."""
    slots = len(ranges) // 8
    out: List[float] = []
    for t in range(8):
        out += ranges[t * slots + first:t * slots + end]
    return out


def _three_channels(image: torch.Tensor, view: bool = False) -> torch.Tensor:
    """A 1-channel image's plane in three channels, a new tensor as torchvision's ``repeat``:
    by ``cat``, a faster copy than ``repeat``'s or a copy of ``expand``'s. ``view``: the plane
    expanded (stride 0), for a call of the op, which reads it in place."""
    if view:
        shape = list(image.shape)
        shape[-3] = 3
        return image.expand(shape)
    return torch.cat([image, image, image], -3)
