"""torchvision's photometric transforms, with each sample's own random draws, through the fused
``gpuaug::photometric`` op.

Every transform here is a program of stages (brightness, contrast, ...) with per-sample factors,
an order per sample and an apply mask per sample and stage. ``sample_params(image)`` draws them
on the image's device (no host synchronisation, so a transform runs inside a CUDA graph) and
``forward(image, params)`` replays them. :class:`Compose` concatenates the programs of several
transforms into one call of the op: one element-wise pass over the batch, plus one reduction pass
when the program has a reduction stage (contrast or autocontrast; a histogram pass for equalize);
a Compose (or RandomApply) with several of those makes one call per reduction stage.
"""

import numbers
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from .samples import TorchvisionInputs

__all__ = ["Stage", "photometric", "ColorJitter", "RandomGrayscale", "RandomSolarize",
           "RandomPosterize", "RandomInvert", "RandomAutocontrast", "RandomEqualize",
           "RandomChannelPermutation", "RandomPhotometricDistort", "Compose"]


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
    return torch.ops.gpuaug.photometric(image, stages, factors, order=order, apply=apply,
                                        dtype=dtype, mean=mean, std=std,
                                        factor_ranges=factor_ranges)


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
    nor its argument; meta images take any generator, as torch.rand does."""
    if (generator is not None and image.device.type != "meta"
            and generator.device.type != image.device.type):
        raise ValueError(
            f"gpuaug.transforms.{owner}: generator is a {generator.device.type} generator and "
            f"the image is on {image.device}; the draws are made on the image's device, so give "
            f"a torch.Generator({image.device.type!r}) or none")


def _rand(shape: List[int], image: torch.Tensor,
          generator: Optional[torch.Generator]) -> torch.Tensor:
    if generator is None:  # rand(generator=None) does not trace with symbolic sizes
        return torch.rand(shape, device=image.device, dtype=torch.float32)
    return torch.rand(shape, device=image.device, dtype=torch.float32, generator=generator)


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
    by ``cat``, whose copy ran at 0.016 ms where ``repeat``'s and ``expand``'s took 0.083
    (256x1x224x224 uint8, H200). ``view``: the plane expanded (stride 0), for a call of the op,
    which reads it in place."""
    if view:
        shape = list(image.shape)
        shape[-3] = 3
        return image.expand(shape)
    return torch.cat([image, image, image], -3)


class _Photometric(TorchvisionInputs, nn.Module):
    """What every transform shares: its stages, its draws' generator, the output conversion.
    A transform's draws are ``uniforms`` uniforms per sample, made into its parameters by
    ``_params_from``. ``program`` is what its fresh draws run and what it adds to a Compose:
    its stages without those it never applies (ColorJitter's disabled adjustments), with
    parameters from ``_program_params``; a Compose draws the uniforms of all its transforms at
    once. ``draws``: the op's factor_ranges in its long form for the program's slots (from
    ``_affine_terms``), with which fresh draws are the uniforms alone: the op makes each slot's
    factor, coin and order key of them, no kernel of their own.

    A transform's constants live in buffers that follow the images' device: moved there once (the
    warm-up before a CUDA graph capture), not rebuilt from host values on every call (each a
    kernel, or a host-to-device copy a capture cannot hold), and assigned only when they move
    (torch.export takes an assignment in forward for a buffer mutation)."""

    # (subclasses declare none of their own: TorchScript reads the annotations of a module's
    # class, not its bases', and an empty list needs one)
    stages: List[int]
    program: List[int]
    uniforms: int
    bounds: List[int]
    program_bounds: List[int]
    call_outputs: List[int]
    program_outputs: List[int]
    output_dtypes: List[Optional[torch.dtype]]
    output_means: List[Optional[List[float]]]
    output_stds: List[Optional[List[float]]]
    call_draws: List[List[float]]
    nesting: List[List[List[float]]]
    nest_two_sided: bool
    derives: bool
    keeps_first_plane: bool
    expand_slot: int
    expand_skip: int
    input_dtypes: List[Optional[torch.dtype]]
    dtype: Optional[torch.dtype]
    mean: Optional[List[float]]
    std: Optional[List[float]]
    generator: Optional[torch.Generator]
    description: str

    def __init__(self, stages: List[int], uniforms: int, generator: Optional[torch.Generator],
                 dtype: Optional[torch.dtype] = None, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
        super().__init__()
        self.uniforms = uniforms
        if (mean is None) != (std is None):
            raise ValueError("gpuaug.transforms: 'mean' and 'std' normalise together: pass both "
                             "or neither")
        self.stages = stages
        self.program = stages
        self.generator = generator
        self.dtype = dtype
        self.mean = None if mean is None else [float(m) for m in mean]
        self.std = None if std is None else [float(s) for s in std]
        # the op's calls over the stages (replay) and the program (fresh draws), each call's
        # output conversion (the transform's own last; a Compose's ToDtype and Normalize before
        # it) and each fresh call's factor_ranges: set by _set_draws
        self.bounds = [0, len(stages)]
        self.program_bounds = [0, len(stages)]
        self.call_outputs = [0]
        self.program_outputs = [0]
        self.output_dtypes = [self.dtype]
        self.output_means = [self.mean]
        self.output_stds = [self.std]
        self.call_draws = [[]]
        # the coins that nest in another (RandomApply's, RandomChoice's), and whether _derived
        # writes columns of its own (RandomOrder's keys)
        _set_nesting(self, [])
        self.derives = False
        # Grayscale(num_output_channels=1): the op's first plane of three is the output
        self.keeps_first_plane = False
        # Grayscale(num_output_channels=3) and RGB: the slot where a 1-channel image becomes
        # three channels (-1: none), as torchvision repeats it there, and the slots that
        # repeating it replaces (Grayscale's own, whose grayscale of three equal values differs)
        self.expand_slot = -1
        self.expand_skip = 0
        # a Compose's: each transform's input dtype where a ToDtype before it sets it
        self.input_dtypes = []
        self._describe([])

    def _describe(self, arguments: List[str]) -> None:
        """extra_repr's text: the constructor's arguments, then the output conversion's."""
        self.description = ", ".join(
            arguments + _conversion_arguments(self.dtype, self.mean, self.std))

    def extra_repr(self) -> str:
        return self.description

    def _set_draws(self) -> None:
        # a subclass's last step: its constants are in place
        self._set_calls(_drawn_terms(self._affine_terms(), 0, 0.0))

    def _set_calls(self, slots: List[List[float]],
                   conversions: Optional[List[Tuple[int, Optional[torch.dtype],
                                                    Optional[List[float]],
                                                    Optional[List[float]]]]] = None) -> None:
        """The op's calls, from the program's ``slots`` (``_drawn_terms``) and ``_units``; a
        Compose's ``conversions`` before its own: each a unit after which a call ends, and the
        ``dtype``, ``mean`` and ``std`` that call converts to."""
        conversions = conversions or []
        unit_outputs = [-1] * len(self._units(False))
        for i, (unit, _, _, _) in enumerate(conversions):
            unit_outputs[unit] = i
        self.output_dtypes = [c[1] for c in conversions] + [self.dtype]
        self.output_means = [c[2] for c in conversions] + [self.mean]
        self.output_stds = [c[3] for c in conversions] + [self.std]
        own_converts = self.dtype is not None or self.mean is not None
        self.bounds, self.call_outputs = _call_bounds(self._units(True), unit_outputs,
                                                      own_converts)
        self.program_bounds, self.program_outputs = _call_bounds(self._units(False),
                                                                 unit_outputs, own_converts)
        b = self.program_bounds
        self.call_draws = [_ranges_of(slots[b[i]:b[i + 1]]) for i in range(len(b) - 1)]

    def _units(self, whole: bool) -> List[List[int]]:
        """The stages (``whole``) or the program as lists that run one after the other, each in
        one call of the op: this transform's, or a RandomApply's transforms'."""
        return [self.stages if whole else self.program]

    def forward(self, image: torch.Tensor,
                params: Optional[Dict[str, torch.Tensor]] = None) -> torch.Tensor:
        """Transforms ``image`` with fresh draws, or with ``params`` from ``sample_params``. One
        call of the op, or one per reduction stage and conversion (``bounds``), each the next
        one's input."""
        out = self._calls(image, params)
        return out.narrow(-3, 0, 1).contiguous() if self.keeps_first_plane else out

    def _broadcast(self, values: Optional[List[float]],
                   image: torch.Tensor) -> Optional[List[float]]:
        # one mean or std for every channel, as torchvision's Normalize broadcasts it
        if values is not None and len(values) == 1 and image.shape[-3] != 1:
            return values * image.shape[-3]
        return values

    def _calls(self, image: torch.Tensor,
               params: Optional[Dict[str, torch.Tensor]]) -> torch.Tensor:
        # a 1-channel image repeated to three channels before slot expand_slot (in the last
        # call where it is the end), if it still has one channel there: the call there split
        expand = self.expand_slot if _channels(image) == 1 else -1
        if params is None:  # the uniforms alone: the op draws each call's parameters of them
            self._check(image.dtype, image.shape[-3])
            u = self._prepared(self._uniforms(image))
            calls = len(self.program_bounds) - 1
            if calls == 1 and expand < 0:  # the common case: no slicing
                return self._call(image, self.program, u, None, None, self.call_draws[0],
                                  self.program_outputs[0], self.keeps_first_plane)
            out = image
            for i in range(calls):
                first, end = self.program_bounds[i], self.program_bounds[i + 1]
                draws = self.call_draws[i]
                if out.shape[-3] != 1:  # three already: repeated, or a Normalize broadcast it
                    expand = -1
                if first <= expand < end or expand == end == self.program_bounds[-1]:
                    if expand > first:
                        out = self._call(out, self.program[first:expand], u, None, None,
                                         _slots_of(draws, 0, expand - first), -1)
                    draws = _slots_of(draws, expand + self.expand_skip - first, end - first)
                    first = expand + self.expand_skip
                    out = _three_channels(out, view=first < end)
                out = self._call(out, self.program[first:end], u, None, None, draws,
                                 self.program_outputs[i],
                                 self.keeps_first_plane and first < end == len(self.program))
            return out
        _check_params(params, ["factors", "order", "apply"])
        calls = len(self.bounds) - 1
        if calls == 1 and expand < 0:
            return self._call(image, self.stages, params["factors"], params["order"],
                              params["apply"], None, self.call_outputs[0], self.keeps_first_plane)
        out = image
        for i in range(calls):
            first, end = self.bounds[i], self.bounds[i + 1]
            if out.shape[-3] != 1:
                expand = -1
            if first <= expand < end or expand == end == self.bounds[-1]:
                if expand > first:
                    out = self._replayed(out, params, first, expand, -1)
                first = expand + self.expand_skip
                out = _three_channels(out, view=first < end)
            out = self._replayed(out, params, first, end, self.call_outputs[i],
                                 self.keeps_first_plane and first < end == len(self.stages))
        return out

    def _replayed(self, image: torch.Tensor, params: Dict[str, torch.Tensor], first: int,
                  end: int, output: int, grays: bool = False) -> torch.Tensor:
        """A call of the op over the stages' slots first..end of ``params``."""
        order = params["order"][:, first:end]
        if not order.is_floating_point():  # a permutation of this call's slots
            order = order - first
        return self._call(image, self.stages[first:end], params["factors"][:, first:end], order,
                          params["apply"][:, first:end], None, output, grays)

    def _call(self, image: torch.Tensor, stages: List[int], factors: torch.Tensor,
              order: Optional[torch.Tensor], apply: Optional[torch.Tensor],
              factor_ranges: Optional[List[float]], output: int,
              grays: bool = False) -> torch.Tensor:
        """A call of the op, converting to output ``output`` (-1: none); ``grays``: it ends in
        the Grayscale whose first plane is the output (``keeps_first_plane``)."""
        if grays and output >= 0 and image.dtype == torch.uint8 and image.shape[-3] == 3:
            converted = self.output_dtypes[output]
            if converted is not None and converted != torch.uint8:
                # the grayscale in uint8, then its first plane alone converted, read in place
                # by the op: 3 + 3 + 1 + 4 bytes a pixel (float32), where three converted planes
                # and the copy of one took 3 + 12 + 8 (H200: 0.139 ms with the jitter)
                gray = self._converting_call(image, stages, factors, order, apply,
                                             factor_ranges, -1)
                return self._converting_call(gray.narrow(-3, 0, 1), [], factors, None, None,
                                             None, output)
        return self._converting_call(image, stages, factors, order, apply, factor_ranges,
                                     output)

    def _converting_call(self, image: torch.Tensor, stages: List[int], factors: torch.Tensor,
                         order: Optional[torch.Tensor], apply: Optional[torch.Tensor],
                         factor_ranges: Optional[List[float]], output: int) -> torch.Tensor:
        """A call of the op, converting to output ``output`` (-1: none)."""
        dtype: Optional[torch.dtype] = None
        mean: Optional[List[float]] = None
        std: Optional[List[float]] = None
        if output >= 0:
            dtype = self.output_dtypes[output]
            mean = self._broadcast(self.output_means[output], image)
            std = self._broadcast(self.output_stds[output], image)
        if len(stages) == 0:  # a conversion alone: no draws
            if mean is None and (dtype is None or dtype == image.dtype):
                return image  # nothing to do: the image itself, as torchvision's to_dtype
            factors = factors[..., :0]
            factor_ranges = None
        cast = (dtype is not None and dtype != image.dtype and dtype != torch.uint8
                and image.dtype != torch.uint8)
        spread = (mean is not None and std is not None and image.shape[-3] == 1
                  and (len(mean) > 1 or len(std) > 1))
        if cast or spread:
            # normalised apart: after a floating-to-floating cast, which the op leaves to
            # to_dtype's (unscaled), or, for several means or stds, over a 1-channel image's
            # plane in as many channels (torchvision's Normalize broadcasts it so)
            out = image
            if len(stages) > 0 or (not cast and dtype is not None and dtype != image.dtype):
                out = torch.ops.gpuaug.photometric(image, stages, factors, order=order,
                                                   apply=apply, dtype=None if cast else dtype,
                                                   factor_ranges=factor_ranges)
            if cast:
                out = out.to(dtype)
            if mean is None:
                return out
            if spread:
                out = _three_channels(out, view=True)
            return torch.ops.gpuaug.photometric(out, [], factors[..., :0],
                                                mean=self._broadcast(mean, out),
                                                std=self._broadcast(std, out))
        return torch.ops.gpuaug.photometric(image, stages, factors, order=order, apply=apply,
                                            dtype=dtype, mean=mean, std=std,
                                            factor_ranges=factor_ranges)

    def sample_params(self, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        """This transform's draws for ``image``: ``factors``, ``order`` and ``apply``."""
        self._check(image.dtype, _channels(image))
        return self._params_from(self._prepared(self._uniforms(image)), image)

    def _uniforms(self, image: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_scripting():
            _check_generator(type(self).__name__, self.generator, image)
        return _rand([_samples(image), self.uniforms], image, self.generator)

    def _own_generators(self) -> bool:
        """Whether it or a transform it holds draws with a generator of its own."""
        return self.generator is not None

    def _prepared(self, u: torch.Tensor) -> torch.Tensor:
        """The drawn uniforms as the op and ``_params_from`` take them."""
        return self._derived(self._nested(u))

    def _nested(self, u: torch.Tensor) -> torch.Tensor:
        """Each coin of ``nesting`` drawn as 1 (never below a coin's bound) where a coin it
        nests in fell outside its interval (the op's coins are one uniform each: RandomApply's
        transforms with a p of their own apply where both fall for them). Every level at once,
        from the drawn uniforms: a container's rows name every coin inside it, however deep, so
        a coin outside the interval of any level's is outside, as when levels are applied in
        turn (a coin an outer level set to 1 falls outside every interval of an inner one)."""
        levels = len(self.nesting)
        if levels == 0:
            return u
        if self.nest_outer.device != u.device:
            self.nest_outer = self.nest_outer.to(u.device)
        if self.nest_bounds.device != u.device:
            self.nest_bounds = self.nest_bounds.to(u.device)
        if self.nest_lows.device != u.device:
            self.nest_lows = self.nest_lows.to(u.device)
        outer = u.index_select(1, self.nest_outer.view(-1)).view(-1, levels, self.uniforms)
        outside = outer >= self.nest_bounds
        if self.nest_two_sided:
            outside = outside.logical_or_(outer < self.nest_lows)
        return u.masked_fill(outside.select(1, 0) if levels == 1 else outside.any(1), 1.0)

    def _derived(self, u: torch.Tensor) -> torch.Tensor:
        # columns made of the others after the nesting: RandomOrder's keys
        return u

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        raise NotImplementedError

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        """Its arguments against an input of ``dtype`` and ``channels`` (RandomSolarize's
        threshold, say): a hook, as TorchScript has no super()."""
        pass

    def _program_params(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        return self._params_from(u, image)

    def _affine_terms(self) -> List[List[float]]:
        """Each slot of the program, how its draws follow from this transform's uniforms:
        [factor column, coin column, key column, low, scale, p, key offset, key scale], columns
        of the uniforms or -1 (none). The factor is low + scale u (the op's factor_ranges),
        applied where u < p (2: always); its order key, key offset + key scale u, in [0, 1)."""
        raise NotImplementedError


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
        factors = p["factors"].new_zeros([n, 4]).index_copy_(1, self.active, p["factors"])
        keys = p["order"].new_full([n, 4], 2.0).index_copy_(1, self.active, p["order"])
        return _params(factors, torch.argsort(keys, dim=1, stable=True),
                       self.enabled_row.expand(n, 4))

    def _affine_terms(self) -> List[List[float]]:
        m, c = len(self.program), self.constants.tolist()
        return [[j, -1, m + j, c[0][j], c[1][j], 2.0, 0.0, 1.0] for j in range(m)]


class _RandomApply(_Photometric):
    """One stage with one factor, applied to each sample with probability p."""

    def __init__(self, stage: int, factor: float, p: float,
                 generator: Optional[torch.Generator], factor_name: str = "") -> None:
        super().__init__([stage], 1, generator)
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = float(p)
        self.factor = float(factor)
        self._describe(([f"{factor_name}={factor}"] if factor_name else []) + [f"p={self.p}"])
        # the factor and the order of every sample: broadcast, not made anew per call
        self.register_buffer("factor_row", torch.tensor([float(factor)]), persistent=False)
        self.register_buffer("order_row", torch.zeros(1, dtype=torch.long), persistent=False)
        self._set_draws()

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.factor_row.device != image.device:
            self.factor_row = self.factor_row.to(image.device)
        if self.order_row.device != image.device:
            self.order_row = self.order_row.to(image.device)
        n = u.shape[0]
        return _params(self.factor_row.expand(n, 1), self.order_row.expand(n, 1), u < self.p)

    def _affine_terms(self) -> List[List[float]]:
        return [[-1, 0, -1, self.factor, 0.0, self.p, 0.0, 0.0]]


class RandomGrayscale(_RandomApply):
    """torchvision.transforms.v2.RandomGrayscale, per sample: the image's channel count is kept."""

    def __init__(self, p: float = 0.1, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.GRAYSCALE, 0.0, p, generator)


class RandomSolarize(_RandomApply):
    """torchvision.transforms.v2.RandomSolarize, per sample: ``threshold`` in the image's range
    (0..255 for uint8, 0..1 for floating images)."""

    def __init__(self, threshold: float, p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.SOLARIZE, threshold, p, generator, "threshold")

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        _check_threshold(self.factor, dtype)


class RandomPosterize(_RandomApply):
    """torchvision.transforms.v2.RandomPosterize, per sample."""

    def __init__(self, bits: int, p: float = 0.5, *,
                 generator: Optional[torch.Generator] = None) -> None:
        _check_bits(bits)
        super().__init__(Stage.POSTERIZE, bits, p, generator, "bits")


class RandomInvert(_RandomApply):
    """torchvision.transforms.v2.RandomInvert, per sample."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.INVERT, 0.0, p, generator)


class RandomAutocontrast(_RandomApply):
    """torchvision.transforms.v2.RandomAutocontrast, per sample: each image's (each frame's)
    channels stretched from their own minimum and maximum to the full range."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.AUTOCONTRAST, 0.0, p, generator)


class RandomEqualize(_RandomApply):
    """torchvision.transforms.v2.RandomEqualize, per sample: each image's (each frame's)
    channels through their own histogram's table, in uint8 (a floating image is converted to
    uint8 and back, scaled, as torchvision does). Not differentiable."""

    def __init__(self, p: float = 0.5, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(Stage.EQUALIZE, 0.0, p, generator)


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


class _ColorAugmentStage(_Photometric):
    """A :class:`gpuaug.transforms.ColorAugment` in a Compose: the op's COLOR_AUGMENT stage (its
    slot and five parameter slots), with ColorAugment's ranges and p. Each sample draws seven
    uniforms: three gains (1-channel images use the first), brightness, contrast, log gamma and
    its coin."""

    def __init__(self, color_low: List[float], color_high: List[float], brightness: List[float],
                 contrast: List[float], log_gamma: List[float], p: float,
                 generator: Optional[torch.Generator]) -> None:
        super().__init__([Stage.COLOR_AUGMENT] + [Stage.COLOR_PARAMETER] * 5, 7, generator)
        if len(color_low) not in (1, 3):
            raise ValueError("gpuaug.transforms.Compose: expected a ColorAugment with one colour "
                             "range, or one per channel of a 3-channel image, but got "
                             f"{len(color_low)} ranges")
        self.color_ranges = len(color_low)
        self.p = float(p)
        lows = color_low * (3 // len(color_low)) + [brightness[0], contrast[0], log_gamma[0]]
        highs = color_high * (3 // len(color_high)) + [brightness[1], contrast[1], log_gamma[1]]
        # rows: low, high - low per slot, float32 values (see _in_ranges); the last slot's is log
        # gamma's, as the op's factor_ranges take a gamma slot's
        self.register_buffer("constants", torch.tensor(
            [lows, [h - lo for lo, h in zip(lows, highs)]], dtype=torch.float32).double(),
            persistent=False)
        self.register_buffer("order_row", torch.arange(6), persistent=False)
        self._set_draws()

    def _get_name(self) -> str:
        return "ColorAugment"  # what it is to whoever prints the Compose

    def _check(self, dtype: torch.dtype, channels: int) -> None:
        if self.color_ranges == 3 and channels != 3:
            raise ValueError(f"ColorAugment: 3 colour ranges for an image of {channels} "
                             "channels")

    def _params_from(self, u: torch.Tensor, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        if self.constants.device != image.device:
            self.constants = self.constants.to(image.device)
        if self.order_row.device != image.device:
            self.order_row = self.order_row.to(image.device)
        n = u.shape[0]
        values = torch.addcmul(self.constants[0], u[:, :6].double(), self.constants[1])
        factors = torch.cat([values[:, :5], values[:, 5:].exp()], dim=1).float()
        return _params(factors, self.order_row.expand(n, 6), (u[:, 6:] < self.p).expand(n, 6))

    def _affine_terms(self) -> List[List[float]]:
        # one coin for the six slots, in slot order; the op takes the gamma slot's exp
        c = self.constants.tolist()
        return [[j, 6, -1, c[0][j], c[1][j], self.p, 0.0, 0.0] for j in range(6)]


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


def _converts(t: nn.Module) -> bool:
    """Whether a transform converts its output: ToDtype, Normalize, a Compose with them."""
    return t.dtype is not None or t.mean is not None or len(t.output_dtypes) > 1


def _color_augment_stage(augment: nn.Module, owner: str = "Compose") -> _ColorAugmentStage:
    """A ColorAugment as a stage of ``owner``: its ranges, p and generator (as they are now)."""
    if augment.dtype is not None or augment.mean is not None:
        raise ValueError(f"gpuaug.transforms.{owner}: the output conversion is the Compose's "
                         "own: pass 'dtype', 'mean' and 'std' to the Compose")
    stage = _ColorAugmentStage(
        augment.color_low, augment.color_high, [augment.brightness_low, augment.brightness_high],
        [augment.contrast_low, augment.contrast_high],
        [augment.log_gamma_low, augment.log_gamma_high], augment.p, augment.generator)
    stage.description = augment.extra_repr()
    return stage


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
        from .conversion import (Normalize, ToDtype, _Conversion,  # which import this module
                                 _inner_conversions, _output_conversion)
        from .transforms import ColorAugment
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
