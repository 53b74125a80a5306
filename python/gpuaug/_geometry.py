"""The base of gpuaug.transforms' geometric transforms and the geometry of one ``gpuaug::augment``
call: each sample's window in its image, its flips, the size it is resized to and the output
window in the resized image (the op's ``geometry`` rows, ``[S, 10]`` int64).

Transforms in a row compose into one call, one sampling of each source pixel, where
torchvision's result allows it: crops, pads and flips are index maps, composed before and after at
most one resize. What the call cannot express starts the next call (see ``_Plan``): a second
resize, an edge, reflect or symmetric pad after a crop, after a pad or after the resize, a
constant pad after a crop (the pixels it pads are the image's own in the source), a fill other
than the call's. A warp (affine, rotation, perspective: the op's ``warp`` rows) takes the place of
the call's resize: crops, pads and flips before it move its window, crops and flips after it the
output window; a resize or a second warp after it, or a warp after a resize, starts the next call
(torchvision interpolates twice there)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ._program import OpCall, _check_generator, _rand
from .samples import TorchvisionInputs

# A per-sample value: one for every sample (a python int) or a [S] int64 tensor.
Value = Union[int, torch.Tensor]

# The op's interpolation codes of torchvision's InterpolationMode values, and torchvision's PIL
# integer constants (``_interpolation_modes_from_int``) as their modes.
_INTERPOLATIONS = {"nearest": 0, "bilinear": 1, "bicubic": 2, "nearest-exact": 3}
_PIL_INTEGERS = {0: "nearest", 2: "bilinear", 3: "bicubic", 1: "lanczos", 4: "box", 5: "hamming"}
PADDING_MODES = {"constant": 0, "edge": 1, "reflect": 2, "symmetric": 3}


def interpolation_code(owner: str, interpolation: object) -> int:
    """The op's code of an InterpolationMode, its value or name ("bilinear", "BILINEAR") or
    torchvision's PIL integer constant (2: bilinear)."""
    name = getattr(interpolation, "value", interpolation)  # an InterpolationMode: its value
    if isinstance(name, bool) or not isinstance(name, (int, str)):
        raise ValueError(f"gpuaug.{owner}: expected 'interpolation' as a torchvision "
                         "InterpolationMode, its name or its Pillow integer constant, got "
                         f"{interpolation!r}")
    if isinstance(name, int):
        name = _PIL_INTEGERS.get(name, str(name))
    name = name.lower().replace("_", "-")
    if name not in _INTERPOLATIONS:
        raise ValueError(f"gpuaug.{owner}: interpolation {interpolation!r} is not supported for "
                         "tensors: expected nearest, nearest-exact, bilinear or bicubic")
    return _INTERPOLATIONS[name]


def fill_values(owner: str, fill: object) -> Optional[List[float]]:
    """torchvision's ``fill`` as the op's: None (0), a number or a sequence of them."""
    if fill is None:
        return None
    if isinstance(fill, dict):
        raise TypeError(f"gpuaug.{owner}: 'fill' as a dict of types is not supported; give the "
                        "image's fill")
    if isinstance(fill, (int, float)) and not isinstance(fill, bool):
        return [float(fill)]
    if isinstance(fill, (list, tuple)) and all(isinstance(f, (int, float)) for f in fill):
        return [float(f) for f in fill]
    raise TypeError(f"gpuaug.{owner}: expected 'fill' as a number or a sequence of numbers, got "
                    f"{fill!r}")


def padding_code(owner: str, padding_mode: str, fill: Optional[List[float]]) -> int:
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"gpuaug.{owner}: expected 'padding_mode' as 'constant', 'edge', "
                         f"'reflect' or 'symmetric', got {padding_mode!r}")
    if padding_mode != "constant" and fill is not None and len(fill) > 1:
        raise ValueError(f"gpuaug.{owner}: padding mode '{padding_mode}' is not supported if "
                         "fill is not scalar")
    return PADDING_MODES[padding_mode]


def parse_padding(owner: str, padding: object) -> List[int]:
    """torchvision's padding (an int, or 1, 2 or 4 of them: left, top, right, bottom) as
    [left, top, right, bottom]."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return [padding] * 4
    if isinstance(padding, (list, tuple)) and all(isinstance(p, int) for p in padding):
        if len(padding) == 1:
            return [padding[0]] * 4
        if len(padding) == 2:
            return [padding[0], padding[1], padding[0], padding[1]]
        if len(padding) == 4:
            return list(padding)
    raise ValueError(f"gpuaug.{owner}: expected 'padding' as an int or a sequence of 1, 2 or 4 "
                     f"ints, got {padding!r}")


def parse_size(owner: str, size: object, name: str = "size") -> List[int]:
    """A crop's size: an int (square) or one or two of them, as [height, width]."""
    if isinstance(size, int) and not isinstance(size, bool):
        size = [size]
    if (isinstance(size, (list, tuple)) and len(size) in (1, 2)
            and all(isinstance(s, int) and s > 0 for s in size)):
        return [size[0], size[-1]]
    raise ValueError(f"gpuaug.{owner}: expected '{name}' as a positive int or a sequence of one "
                     f"or two (height, width), got {size!r}")


def as_images(owner: str, images: Union[torch.Tensor, Sequence[torch.Tensor]]
              ) -> Tuple[List[torch.Tensor], List[int], List[int]]:
    """The op's image list of a batch, an image or a list of [C, H, W] images, and each
    sample's height and width (one for all samples where they are alike)."""
    if isinstance(images, torch.Tensor):
        if images.dim() not in (3, 4):
            raise ValueError(f"gpuaug.{owner}: expected an image [C, H, W], a batch "
                             f"[N, C, H, W] or a list of [C, H, W] images, got shape "
                             f"{list(images.shape)}")
        return [images], [images.shape[-2]], [images.shape[-1]]
    if not isinstance(images, (list, tuple)) or len(images) == 0:
        raise ValueError(f"gpuaug.{owner}: expected an image tensor or a non-empty "
                         f"list of [C, H, W] images, got {type(images).__name__}")
    for image in images:
        if not isinstance(image, torch.Tensor) or image.dim() != 3:
            raise ValueError(f"gpuaug.{owner}: expected a list of [C, H, W] images, "
                             f"got an element {_described(image)}")
    hs = [image.shape[-2] for image in images]
    ws = [image.shape[-1] for image in images]
    if len(set(zip(hs, ws))) == 1:
        return list(images), hs[:1], ws[:1]
    return list(images), hs, ws


def _summed(sizes: List[int], first: List[int], second: List[int]) -> List[int]:
    # per-sample host lists, each of one value for all or one a sample
    count = max(len(sizes), len(first), len(second))
    if count == 1:
        return [sizes[0] + first[0] + second[0]]
    return [sizes[i % len(sizes)] + first[i % len(first)] + second[i % len(second)]
            for i in range(count)]


def _described(x: object) -> str:
    return f"of shape {list(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def samples(images: List[torch.Tensor]) -> int:
    return sum(1 if image.dim() == 3 else image.shape[0] for image in images)


def per_sample(values: List[int], device: torch.device) -> Value:
    """Host values, one a sample or one for all, as a per-sample value: a tensor only where they
    differ (a copy to the device, from pinned memory: a copy from pageable memory would wait
    for the GPU's queue)."""
    if len(set(values)) == 1:
        return values[0]
    values = torch.tensor(values, dtype=torch.long)
    if device.type != "cuda":
        return values.to(device)
    return values.pin_memory().to(device, non_blocking=True)


def column(value: Value, count: int, device: torch.device) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(torch.long).expand(count)
    return torch.full([count], value, dtype=torch.long, device=device)


def _is_zero(value: Value) -> bool:
    return not isinstance(value, torch.Tensor) and value == 0


def _shifted(start: Value, offset: Value, mirrored: Value, size: Value, extent: Value) -> Value:
    """``start + offset + mirrored * (size - 2 * offset - extent)``, without the tensor ops of
    its zero terms (each a kernel launch on the GPU)."""
    moved = offset if _is_zero(start) else (start if _is_zero(offset) else start + offset)
    if _is_zero(mirrored):
        return moved
    return moved + mirrored * (size - 2 * offset - extent)


def uniform_size(owner: str, hs: Optional[List[int]], ws: Optional[List[int]]) -> List[int]:
    """The one size of every sample, else a ValueError naming the transform that made them."""
    if hs is None or ws is None or len(set(zip(hs, ws))) != 1:
        sizes = sorted(set(zip(hs or [], ws or [])))
        raise ValueError(f"gpuaug.{owner}: the samples come out in different sizes "
                         f"{sizes[:4]}{'...' if len(sizes) > 4 else ''}, but a batch has one: "
                         "give a size (height, width), or crop to one size after it")
    return [hs[0], ws[0]]


_FIELDS = ("hs", "ws", "h", "w", "top", "left", "win_h", "win_w", "win_flip", "resized",
           "resized_h", "resized_w", "out_top", "out_left", "out_flip", "interpolation",
           "antialias", "padding_mode", "fill", "fill_used", "cropped", "padded", "owner",
           "nearest", "warp", "warp_mask")


class _Plan:
    """One call of the op being composed. The current image of each sample is, before the
    resize, its source window (``top``, ``left``, ``win_h``, ``win_w``, ``win_flip``), after
    it the output window (``out_top``, ``out_left``, ``out_flip``) in the resized image
    (``resized_h``, ``resized_w``); ``h``, ``w`` its size per sample, ``hs``, ``ws`` on the host
    (None where a transform crops and resizes at once). Each method returns whether the call
    expresses it; the transform then runs on a copy, kept only where all of it is expressed."""

    def __init__(self, images: List[torch.Tensor], hs: List[int], ws: List[int]) -> None:
        self.images = images
        self.count = samples(images)
        self.device = images[0].device
        self.hs: Optional[List[int]] = hs
        self.ws: Optional[List[int]] = ws
        self.h: Value = per_sample(hs, self.device)
        self.w: Value = per_sample(ws, self.device)
        self.top: Value = 0
        self.left: Value = 0
        self.win_h, self.win_w = self.h, self.w
        self.win_flip: Value = 0
        self.resized = False
        self.resized_h, self.resized_w = self.h, self.w
        self.out_top: Value = 0
        self.out_left: Value = 0
        self.out_flip: Value = 0
        self.interpolation = 1
        self.antialias = True
        self.padding_mode = -1  # none yet
        self.fill: Optional[List[float]] = None
        self.fill_used = False
        self.cropped = False  # a crop since the call or its resize began
        self.padded = False   # the current image reaches outside what it was made of
        self.owner = ""
        self.nearest = False  # masks: nearest, whatever the transforms' interpolation
        self.warp: Optional[torch.Tensor] = None  # the op's warp rows [S, 9]
        self.warp_mask = False  # the warp fills through torchvision's mask (its fill given)

    def copy(self) -> "_Plan":
        # field by field: torch.compile traces no __dict__ or copy.copy
        plan = _Plan(self.images, [1], [1])
        for name in _FIELDS:
            setattr(plan, name, getattr(self, name))
        return plan

    def _use_fill(self, fill: Optional[List[float]]) -> bool:
        # one fill a call: the source's constant padding and the output's outside the resize
        fill = fill or [0.0]
        if self.fill_used and self.fill != fill:
            return False
        self.fill, self.fill_used = fill, True
        return True

    def crop(self, top: Value, left: Value, height: Value, width: Value,
             hs: Optional[List[int]], ws: Optional[List[int]], inside: bool) -> bool:
        """The current image cropped to (top, left, height, width); ``inside``: the window is
        within it for every sample (else torchvision pads with 0 there)."""
        if not inside and not self.extend(0, None):
            return False
        if self.resized:
            self.out_top, self.out_left = self._moved(self.out_top, self.out_left,
                                                      self.out_flip, top, left, height, width)
        else:
            self.top, self.left = self._moved(self.top, self.left, self.win_flip, top, left,
                                              height, width)
            self.win_h, self.win_w = height, width
        self.h, self.w, self.hs, self.ws = height, width, hs, ws
        self.cropped = True
        return True

    def _moved(self, top: Value, left: Value, flip: Value, t: Value, l: Value, h: Value,
               w: Value) -> Tuple[Value, Value]:
        # a crop of the current image read mirrored (per flip bit): its window from the far side
        vertical, horizontal = (flip >> 1) & 1, flip & 1
        return _shifted(top, t, vertical, self.h, h), _shifted(left, l, horizontal, self.w, w)

    def extend(self, mode: int, fill: Optional[List[float]]) -> bool:
        """Whether the call can pad the current image with ``mode`` (and ``fill``): the pixels
        it pads must be outside what the call reads (no crop since the call or its resize
        began), of the call's one padding mode and fill; after the resize, constant alone (an
        edge or reflection of the resized image is none of the source's)."""
        if self.cropped:
            return False
        if self.resized:
            if mode != 0:
                return False
        else:
            if self.padding_mode >= 0 and self.padding_mode != mode:
                return False
            if self.padded and mode != 0:  # a reflection of a padded image is not a wider one
                return False
            self.padding_mode = mode
        if mode == 0 and not self._use_fill(fill):
            return False
        self.padded = True
        return True

    def pad(self, left: List[int], top: List[int], right: List[int], bottom: List[int],
            mode: int, fill: Optional[List[float]]) -> bool:
        """The current image padded by these (each one for all samples, or one a sample)."""
        if not self.extend(mode, fill):
            return False
        assert self.hs is not None and self.ws is not None
        hs = _summed(self.hs, top, bottom)
        ws = _summed(self.ws, left, right)
        device = self.device
        t, l = per_sample(top, device), per_sample(left, device)
        cropped = self.cropped
        self.crop(-t, -l, per_sample(hs, device), per_sample(ws, device), hs, ws, True)
        self.cropped = cropped
        return True

    def flip(self, bits: Value) -> None:
        if self.resized:
            self.out_flip = self.out_flip ^ bits
        else:
            self.win_flip = self.win_flip ^ bits

    def resize(self, height: Value, width: Value, hs: Optional[List[int]],
               ws: Optional[List[int]], interpolation: int, antialias: bool) -> bool:
        if self.resized:
            return False
        self.resized = True
        self.resized_h, self.resized_w = height, width
        self.h, self.w, self.hs, self.ws = height, width, hs, ws
        self.interpolation, self.antialias = interpolation, antialias
        self.cropped = self.padded = False
        return True

    def warp_by(self, rows: torch.Tensor, interpolation: int,
                fill: Optional[List[float]]) -> bool:
        """The current image sampled through each sample's warp (``rows``: the op's [S, 9]
        float64 rows), nearest or bilinear, filled with ``fill`` through torchvision's mask (None:
        zeros, no mask): the call's one interpolation, and its fill the call's."""
        if self.resized or self.warp is not None or not self._use_fill(fill):
            return False
        self.warp, self.warp_mask = rows, fill is not None
        return self.resize(self.h, self.w, self.hs, self.ws, interpolation, True)

    def size(self) -> List[int]:
        """The output's size, one for every sample, else a ValueError naming the transform."""
        return uniform_size(self.owner, self.hs, self.ws)

    def geometry(self) -> torch.Tensor:
        """The op's geometry rows."""
        resized_h, resized_w = ((self.resized_h, self.resized_w) if self.resized else
                                (self.win_h, self.win_w))
        values = [self.top, self.left, self.win_h, self.win_w, self.win_flip, resized_h,
                  resized_w, self.out_top, self.out_left, self.out_flip]
        return torch.stack([column(v, self.count, self.device) for v in values], 1)

    def run(self, call: Optional[OpCall] = None) -> torch.Tensor:
        """The op's call: the geometry, then ``call``'s program and conversion."""
        size = self.size()
        if call is None:
            call = OpCall([], None, None, None, None, None, None, None)
        out = torch.ops.gpuaug.augment(
            self.images, self.geometry(), size,
            interpolation=0 if self.nearest else self.interpolation,
            antialias=self.antialias, padding_mode=max(self.padding_mode, 0),
            fill=(self.fill if self.fill_used and (self.fill != [0.0] or self.warp_mask)
                  else None),
            stages=call.stages, factors=call.factors if call.stages else None,
            order=call.order, apply=call.apply, dtype=call.dtype, mean=call.mean,
            std=call.std, factor_ranges=call.factor_ranges, warp=self.warp)
        return out


class _Geometric(TorchvisionInputs, nn.Module):
    """A geometric transform: ``sample_params(images)`` draws each sample's parameters (a dict
    of per-sample tensors) on the images' device, ``forward(images, params=None)`` runs it
    with fresh draws or with those (torchvision's inputs too: samples.py). ``_draw`` makes the
    parameters of images of the given sizes, ``_apply`` adds the transform to a call's plan,
    ``_sizes`` gives the sizes it makes of the given ones and ``_follow`` moves a sample's boxes
    or key points."""

    generator: Optional[torch.Generator]
    geometric = True
    warps = False  # samples through a grid, as torchvision's affine and perspective

    def __init__(self, generator: Optional[torch.Generator] = None) -> None:
        super().__init__()
        self.generator = generator

    def sample_params(self, images: Union[torch.Tensor, List[torch.Tensor]]
                      ) -> Dict[str, torch.Tensor]:
        listed, hs, ws = as_images("transforms." + type(self).__name__, images)
        return self._draw(listed[0], samples(listed), hs, ws)

    def forward(self, images: Union[torch.Tensor, List[torch.Tensor]],
                params: Optional[Dict[str, torch.Tensor]] = None) -> torch.Tensor:
        return run_geometry([self], images, None if params is None else [params])

    def _uniforms(self, count: int, columns: int, image: torch.Tensor) -> torch.Tensor:
        _check_generator(type(self).__name__, self.generator, image)
        return _rand([count, columns], image, self.generator)

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        return {}

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        raise NotImplementedError

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        return hs, ws

    def _stages(self, params: Dict[str, torch.Tensor]
                ) -> Tuple[List["_Geometric"], List[Dict[str, torch.Tensor]]]:
        """The geometric transforms a sample's boxes, masks and key points follow, in order, and
        their params (samples.py)."""
        return [self], [params]

    @staticmethod
    def _masks(transforms: List["_Geometric"], planes: Union[torch.Tensor, List[torch.Tensor]],
               params: List[Dict[str, torch.Tensor]]) -> torch.Tensor:
        """Mask planes (a [P, 1, H, W] batch or [1, H, W] each) through ``transforms``, a
        param row a plane, resized nearest as torchvision resizes masks."""
        return run_geometry(transforms, planes, params, nearest=True)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        """One sample's BoundingBoxes or KeyPoints moved as torchvision's transform moves them
        with the sample's params ``row``."""
        raise NotImplementedError


def functional() -> object:
    """torchvision.transforms.v2.functional: its functions move boxes and key points, which only
    torchvision's samples have."""
    import torchvision.transforms.v2.functional as F
    return F


def pad_points(owner: str, target: torch.Tensor, padding: List[int],
               padding_mode: int) -> torch.Tensor:
    """F.pad of boxes or key points, which torchvision pads with 'constant' alone."""
    if padding_mode != 0:
        mode = [m for m, code in PADDING_MODES.items() if code == padding_mode][0]
        raise ValueError(f"gpuaug.transforms.{owner}: padding_mode '{mode}' does not move "
                         f"{type(target).__name__}: torchvision pads boxes and key points with "
                         "padding_mode 'constant' alone; got a sample holding them")
    return functional().pad(target, padding)


def _check_keys(owner: str, params: Dict[str, torch.Tensor], keys: List[str]) -> None:
    for key in keys:
        if key not in params:
            raise ValueError(f"gpuaug.transforms.{owner}: expected 'params' as sample_params "
                             f"returns them, a dict with the keys {keys}, but it has no '{key}'")


def draw_all(transforms: Sequence[_Geometric], image: torch.Tensor, count: int, hs: List[int],
             ws: List[int]) -> Tuple[List[Dict[str, torch.Tensor]], List[int], List[int]]:
    """Each transform's draws for images of these sizes, and the sizes they come out in."""
    params = []
    for t in transforms:
        params.append(t._draw(image, count, hs, ws))
        hs, ws = t._sizes(hs, ws)
    return params, hs, ws


def run_geometry(transforms: Sequence[_Geometric],
                 images: Union[torch.Tensor, List[torch.Tensor]],
                 params: Optional[List[Dict[str, torch.Tensor]]],
                 call: Optional[OpCall] = None, nearest: bool = False) -> torch.Tensor:
    """``transforms`` on ``images`` in as few calls of the op as they allow, the last running
    ``call`` (a photometric program and conversion) too; ``nearest``: every resize nearest, as
    torchvision resizes masks."""
    listed, hs, ws = as_images("transforms." + type(transforms[0]).__name__, images)
    single = isinstance(images, torch.Tensor) and images.dim() == 3
    if params is None:
        params, _, _ = draw_all(transforms, listed[0], samples(listed), hs, ws)
    plan = _Plan(listed, hs, ws)
    plan.nearest = nearest
    for t, p in zip(transforms, params):
        trial = plan.copy()
        trial.owner = "transforms." + type(t).__name__
        if not t._apply(trial, p):  # a call of its own from here
            out = plan.run()
            trial = _Plan([out], [out.shape[-2]], [out.shape[-1]])
            trial.owner = "transforms." + type(t).__name__
            trial.nearest = nearest
            if not t._apply(trial, p):
                raise AssertionError(f"gpuaug.{trial.owner} does not start a call")
        plan = trial
    out = plan.run(call)
    return out.squeeze(0) if single else out
