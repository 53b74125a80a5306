"""The base class of gpuaug.transforms' photometric transforms: a program of stages of the
``gpuaug::photometric`` op, its draws, and the op's calls that run it."""

from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ._program import (OpCall, _call_bounds, _channels, _check_generator, _check_params,
                       _conversion_arguments, _drawn_terms, _rand, _ranges_of, _samples,
                       _set_nesting, _slots_of, _three_channels, run)
from .samples import TorchvisionInputs


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

    def _calls(self, image: torch.Tensor, params: Optional[Dict[str, torch.Tensor]],
               drawn: Optional[torch.Tensor] = None, start: int = 0) -> torch.Tensor:
        # a 1-channel image repeated to three channels before slot expand_slot (in the last
        # call where it is the end), if it still has one channel there: the call there split.
        # ``drawn`` and ``start``: a Compose's geometry ran the calls before ``start`` with
        # these uniforms (gpuaug::augment)
        expand = self.expand_slot if _channels(image) == 1 else -1
        if params is None:  # the uniforms alone: the op draws each call's parameters of them
            if drawn is None:
                self._check(image.dtype, image.shape[-3])
                u = self._prepared(self._uniforms(image))
            else:
                u = drawn
            calls = len(self.program_bounds) - 1
            if calls == 1 and expand < 0 and start == 0:  # the common case: no slicing
                return self._call(image, self._op_call(self.program, u, None, None,
                                                       self.call_draws[0],
                                                       self.program_outputs[0]),
                                  self.keeps_first_plane)
            out = image
            for i in range(start, calls):
                first, end = self.program_bounds[i], self.program_bounds[i + 1]
                draws = self.call_draws[i]
                if out.shape[-3] != 1:  # three already: repeated, or a Normalize broadcast it
                    expand = -1
                if first <= expand < end or expand == end == self.program_bounds[-1]:
                    if expand > first:
                        out = self._call(out, self._op_call(
                            self.program[first:expand], u, None, None,
                            _slots_of(draws, 0, expand - first), -1))
                    draws = _slots_of(draws, expand + self.expand_skip - first, end - first)
                    first = expand + self.expand_skip
                    out = _three_channels(out, view=first < end)
                out = self._call(out, self._op_call(self.program[first:end], u, None, None,
                                                    draws, self.program_outputs[i]),
                                 self.keeps_first_plane and first < end == len(self.program))
            return out
        _check_params(params, ["factors", "order", "apply"])
        calls = len(self.bounds) - 1
        if calls == 1 and expand < 0 and start == 0:
            return self._call(image, self._op_call(self.stages, params["factors"],
                                                   params["order"], params["apply"], None,
                                                   self.call_outputs[0]),
                              self.keeps_first_plane)
        out = image
        for i in range(start, calls):
            first, end = self.bounds[i], self.bounds[i + 1]
            if out.shape[-3] != 1:
                expand = -1
            if first <= expand < end or expand == end == self.bounds[-1]:
                if expand > first:
                    out = self._call(out, self._replayed(params, first, expand, -1))
                first = expand + self.expand_skip
                out = _three_channels(out, view=first < end)
            out = self._call(out, self._replayed(params, first, end, self.call_outputs[i]),
                             self.keeps_first_plane and first < end == len(self.stages))
        return out

    def _op_call(self, stages: List[int], factors: torch.Tensor, order: Optional[torch.Tensor],
                 apply: Optional[torch.Tensor], factor_ranges: Optional[List[float]],
                 output: int) -> OpCall:
        """A call of the op over ``stages``, converting to output ``output`` (an index of the
        ``output_*`` lists; -1: none)."""
        if output < 0:
            return OpCall(stages, factors, order, apply, factor_ranges, None, None, None)
        return OpCall(stages, factors, order, apply, factor_ranges, self.output_dtypes[output],
                      self.output_means[output], self.output_stds[output])

    def _replayed(self, params: Dict[str, torch.Tensor], first: int, end: int,
                  output: int) -> OpCall:
        """A call of the op over the stages' slots first..end of ``params``."""
        order = params["order"][:, first:end]
        if not order.is_floating_point():  # a permutation of this call's slots
            order = order - first
        return self._op_call(self.stages[first:end], params["factors"][:, first:end], order,
                             params["apply"][:, first:end], None, output)

    def _call(self, image: torch.Tensor, call: OpCall, grays: bool = False) -> torch.Tensor:
        """``call`` on ``image``; ``grays``: it ends in the Grayscale whose first plane is the
        output (``keeps_first_plane``)."""
        converted = call.dtype
        if (grays and converted is not None and converted != torch.uint8
                and image.dtype == torch.uint8 and image.shape[-3] == 3):
            # the grayscale in uint8, then its first plane alone converted, read in place by the
            # op: fewer bytes a pixel than three converted planes and the copy of one
            gray = self._converting_call(image, OpCall(call.stages, call.factors, call.order,
                                                       call.apply, call.factor_ranges, None,
                                                       None, None))
            return self._converting_call(gray.narrow(-3, 0, 1),
                                         OpCall([], call.factors, None, None, None, converted,
                                                call.mean, call.std))
        return self._converting_call(image, call)

    def _converting_call(self, image: torch.Tensor, call: OpCall) -> torch.Tensor:
        """``call`` on ``image``, its mean and std broadcast over the image's channels."""
        dtype = call.dtype
        mean = self._broadcast(call.mean, image)
        std = self._broadcast(call.std, image)
        stages = call.stages
        factors = call.factors
        factor_ranges = call.factor_ranges
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
                out = run(image, OpCall(stages, factors, call.order, call.apply, factor_ranges,
                                        None if cast else dtype, None, None))
            if cast and dtype is not None:
                out = out.to(dtype)
            if mean is None:
                return out
            if spread:
                out = _three_channels(out, view=True)
            return run(out, OpCall([], factors[..., :0], None, None, None, None,
                                   self._broadcast(mean, out), self._broadcast(std, out)))
        return run(image, OpCall(stages, factors, call.order, call.apply, factor_ranges, dtype,
                                 mean, std))

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


def _converts(t: nn.Module) -> bool:
    """Whether a transform converts its output: ToDtype, Normalize, a Compose with them."""
    return t.dtype is not None or t.mean is not None or len(t.output_dtypes) > 1
