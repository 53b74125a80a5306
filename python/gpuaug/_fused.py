"""A Compose's geometric transforms fused with the photometric ones after them: the geometry and
the first call of the photometric program are one ``gpuaug::augment`` call (the crops read once,
the output written once), the program's other calls ``gpuaug::photometric`` calls as before.

A call that augment does not run stays apart, the geometry's call then converting nothing: an
equalize stage (its histogram), a 1-channel image made three channels by the program, a
Grayscale to one channel, a cast between floating types or several means of a 1-channel
image (normalised apart)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ._base import _Photometric
from ._geometry import _Geometric, as_images, draw_all, run_geometry, samples, uniform_size
from ._program import OpCall, Stage, _check_params

Images = Union[torch.Tensor, List[torch.Tensor]]


def first_call(program: _Photometric, dtype: torch.dtype, channels: int,
               drawn: Optional[torch.Tensor],
               params: Optional[Dict[str, torch.Tensor]]) -> Optional[OpCall]:
    """The first call of ``program`` on images of ``dtype`` and ``channels``, with its uniforms
    ``drawn`` or its ``params``, where augment runs it; else None."""
    if program.keeps_first_plane or (channels == 1 and program.expand_slot >= 0):
        return None
    if params is None:
        assert drawn is not None
        b = program.program_bounds
        call = program._op_call(program.program[b[0]:b[1]], drawn, None, None,
                                program.call_draws[0], program.program_outputs[0])
    else:
        b = program.bounds
        call = program._replayed(params, b[0], b[1], program.call_outputs[0])
    converted, mean, std = call.dtype, call.mean, call.std
    cast = (converted is not None and converted != dtype and converted != torch.uint8
            and dtype != torch.uint8)
    spread = (mean is not None and std is not None and channels == 1
              and (len(mean) > 1 or len(std) > 1))
    if Stage.EQUALIZE in call.stages or cast or spread:
        return None
    if mean is not None and std is not None and channels != 1:
        # one mean or std for every channel, as torchvision's Normalize broadcasts it
        mean = mean * channels if len(mean) == 1 else mean
        std = std * channels if len(std) == 1 else std
    return OpCall(call.stages, call.factors, call.order, call.apply, call.factor_ranges,
                  None if converted == dtype else converted, mean, std)


class _Step(nn.Module):
    """A run of geometric transforms (``index``: the first one's in the Compose) and the
    photometric transforms after it (one gpuaug Compose, at ``program_index``), either may be
    absent."""

    def __init__(self, geometric: Sequence[_Geometric], index: int,
                 program: Optional[_Photometric], program_index: int) -> None:
        super().__init__()
        self.geometric = nn.ModuleList(geometric)
        self.index = index
        self.program = program
        self.program_index = program_index

    def _keys(self, j: int) -> str:
        return f"{self.index + j}."

    def sample_params(self, images: Images) -> Tuple[Dict[str, torch.Tensor], Images]:
        """Its draws for ``images`` (the Compose's keys), and a stand-in of its output (the
        next step's draws need the sizes alone)."""
        out: Dict[str, torch.Tensor] = {}
        if len(self.geometric) > 0:
            listed, hs, ws = as_images("transforms." + type(self.geometric[0]).__name__, images)
            params, hs, ws = draw_all(list(self.geometric), listed[0], samples(listed), hs, ws)
            for j, p in enumerate(params):
                out.update({self._keys(j) + k: v for k, v in p.items()})
            size = uniform_size("transforms." + type(self.geometric[-1]).__name__, hs, ws)
            first = listed[0]  # a view of the output's shape, no memory of its own
            images = first.new_empty([1, 1, 1, 1]).expand(samples(listed), first.shape[-3],
                                                          size[0], size[1])
        if self.program is not None:
            own = _empty_params(_batch(images)) if len(self.program.program) == 0 else \
                self.program.sample_params(_batch(images))
            out.update({f"{self.program_index}." + k: v for k, v in own.items()})
        return out, images

    def run(self, images: Images, params: Optional[Dict[str, torch.Tensor]]) -> torch.Tensor:
        geometric: Optional[List[Dict[str, torch.Tensor]]] = None
        program_params: Optional[Dict[str, torch.Tensor]] = None
        if params is not None:
            geometric = [_picked(params, self._keys(j)) for j in range(len(self.geometric))]
            if self.program is not None:
                program_params = _picked(params, f"{self.program_index}.")
                _check_params(program_params, ["factors", "order", "apply"])
        if len(self.geometric) == 0:
            assert self.program is not None
            return self.program(_batch(images), program_params)
        listed, _, _ = as_images("transforms." + type(self.geometric[0]).__name__, images)
        program = self.program
        if program is None:
            return run_geometry(list(self.geometric), images, geometric)
        first = listed[0]
        channels, count = first.shape[-3], samples(listed)
        drawn: Optional[torch.Tensor] = None
        if program_params is None:
            program._check(first.dtype, channels)
            drawn = program._prepared(program._uniforms(
                first.new_empty([count, channels, 0, 0])))
        call = first_call(program, first.dtype, channels, drawn, program_params)
        out = run_geometry(list(self.geometric), images, geometric, call)
        out = program._calls(out, program_params, drawn, 0 if call is None else 1)
        return out.narrow(-3, 0, 1).contiguous() if program.keeps_first_plane else out


def _empty_params(images: torch.Tensor) -> Dict[str, torch.Tensor]:
    # a conversion alone (ToDtype, Normalize) draws nothing
    count = 1 if images.dim() == 3 else images.shape[0]
    return {"factors": images.new_zeros([count, 0], dtype=torch.float32),
            "order": images.new_zeros([count, 0], dtype=torch.long),
            "apply": images.new_zeros([count, 0], dtype=torch.bool)}


def _picked(params: Dict[str, torch.Tensor], prefix: str) -> Dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def _batch(images: Images) -> torch.Tensor:
    if isinstance(images, torch.Tensor):
        return images
    raise ValueError("gpuaug.transforms.Compose: a list of images of different sizes takes a "
                     "geometric transform first (a crop or resize to one size), then the "
                     "photometric ones")


def run_steps(steps: Sequence[_Step], images: Images,
              params: Optional[Dict[str, torch.Tensor]]) -> torch.Tensor:
    single = isinstance(images, torch.Tensor) and images.dim() == 3
    out: Images = images.unsqueeze(0) if single else images
    for step in steps:
        out = step.run(out, params)
    assert isinstance(out, torch.Tensor)
    return out.squeeze(0) if single else out


def sample_steps(steps: Sequence[_Step], images: Images) -> Dict[str, torch.Tensor]:
    out: Dict[str, torch.Tensor] = {}
    if isinstance(images, torch.Tensor) and images.dim() == 3:
        images = images.unsqueeze(0)
    for step in steps:
        params, images = step.sample_params(images)
        out.update(params)
    return out
