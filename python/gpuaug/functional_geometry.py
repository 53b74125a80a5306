"""torchvision.transforms.v2.functional's geometric functions for image batches and lists of
images of different sizes, each one call of ``gpuaug::augment``: top, left (and resized_crop's
height and width) a number for every sample, or an integer tensor of one a sample on the images'
device (affine, rotate, perspective: their angles, translations, scales, shears and
coefficients a number for every sample or a real tensor of one a sample). The output is one batch:
every sample must come out in one size."""

from typing import List, Optional, Sequence, Union

import torch

from ._geometry import (Value, _Plan, as_images, fill_values, interpolation_code, padding_code,
                        parse_padding, parse_size, per_sample)
from .warp import (_centre, _check_center, affine_rows, perspective_rows, rotation_rows,
                   solved_coefficients, warp_interpolation)
from .crop import center_crop_window
from .resize import resized_size

__all__ = ["resized_crop", "hflip", "vflip", "resize", "center_crop", "crop", "pad", "affine",
           "rotate", "perspective"]

Images = Union[torch.Tensor, List[torch.Tensor]]


def _plan(function: str, images: Images) -> _Plan:
    listed, hs, ws = as_images("functional." + function, images)
    plan = _Plan(listed, hs, ws)
    plan.owner = "functional." + function
    return plan


def _done(plan: _Plan, images: Images) -> torch.Tensor:
    out = plan.run()
    return out.squeeze(0) if isinstance(images, torch.Tensor) and images.dim() == 3 else out


def _value(function: str, name: str, value: Union[int, torch.Tensor], plan: _Plan) -> Value:
    """An int, or an integer tensor of one value or one a sample on the images' device."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if (not isinstance(value, torch.Tensor) or value.is_floating_point() or value.dim() > 1
            or value.numel() not in (1, plan.count) or value.dtype == torch.bool):
        shown = (f"{value.dtype} of shape {list(value.shape)}" if isinstance(value, torch.Tensor)
                 else type(value).__name__)
        raise TypeError(f"gpuaug.functional.{function}: expected '{name}' as an int or an integer "
                        f"tensor of one value or of one a sample ({plan.count}), got {shown}")
    if value.device != plan.device:
        raise ValueError(f"gpuaug.functional.{function}: expected '{name}' on the images' device "
                         f"{plan.device}, got {value.device}")
    return value.reshape(-1).long()


def crop(image: Images, top: Union[int, torch.Tensor], left: Union[int, torch.Tensor],
         height: int, width: int) -> torch.Tensor:
    """torchvision's crop: each sample's window (top, left) of ``height`` x ``width``, 0 where
    it reaches outside the image."""
    plan = _plan("crop", image)
    height, width = parse_size("functional.crop", [height, width], "height and width")
    plan.crop(_value("crop", "top", top, plan), _value("crop", "left", left, plan), height, width,
              [height], [width], False)
    return _done(plan, image)


def resized_crop(image: Images, top: Union[int, torch.Tensor], left: Union[int, torch.Tensor],
                 height: Union[int, torch.Tensor], width: Union[int, torch.Tensor],
                 size: Sequence[int], interpolation: object = "bilinear",
                 antialias: Optional[bool] = True) -> torch.Tensor:
    """torchvision's resized_crop: crop (each sample's window), then resize to ``size``."""
    plan = _plan("resized_crop", image)
    size = parse_size("functional.resized_crop", list(size))
    code = interpolation_code("functional.resized_crop", interpolation)
    plan.crop(_value("resized_crop", "top", top, plan), _value("resized_crop", "left", left, plan),
              _value("resized_crop", "height", height, plan),
              _value("resized_crop", "width", width, plan), None, None, False)
    plan.resize(size[0], size[1], [size[0]], [size[1]], code, bool(antialias))
    return _done(plan, image)


def hflip(image: Images) -> torch.Tensor:
    """torchvision's horizontal_flip of every sample."""
    plan = _plan("hflip", image)
    plan.flip(1)
    return _done(plan, image)


def vflip(image: Images) -> torch.Tensor:
    """torchvision's vertical_flip of every sample."""
    plan = _plan("vflip", image)
    plan.flip(2)
    return _done(plan, image)


def resize(image: Images, size: Optional[Union[int, Sequence[int]]],
           interpolation: object = "bilinear", max_size: Optional[int] = None,
           antialias: Optional[bool] = True) -> torch.Tensor:
    """torchvision's resize: to ``size`` (h, w), or the shorter edge to an int keeping each
    image's aspect ratio (then every image must come out in one size)."""
    plan = _plan("resize", image)
    assert plan.hs is not None and plan.ws is not None
    if isinstance(size, int) and not isinstance(size, bool):
        size = [size]
    if size is not None:
        size = list(size)
        if len(size) not in (1, 2):
            raise ValueError("size can be an integer, a sequence of one or two integers, or "
                             f"None, but got {size} instead.")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size is None or specifies the "
                             "length of the smaller edge, i.e. size should be an int or a "
                             "sequence of length 1 in torchscript mode.")
        if max_size is not None and max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested "
                             f"size for the smaller edge size = {size}")
    elif not isinstance(max_size, int):
        raise ValueError(f"max_size must be an integer when size is None, but got {max_size} "
                         "instead.")
    sizes = [resized_size(h, w, size, max_size) for h, w in zip(plan.hs, plan.ws)]
    hs, ws = [s[0] for s in sizes], [s[1] for s in sizes]
    plan.resize(per_sample(hs, plan.device), per_sample(ws, plan.device), hs, ws,
                interpolation_code("functional.resize", interpolation), bool(antialias))
    return _done(plan, image)


def center_crop(image: Images, output_size: Union[int, Sequence[int]]) -> torch.Tensor:
    """torchvision's center_crop: the window of ``output_size`` at each sample's centre, 0
    where the image is smaller."""
    plan = _plan("center_crop", image)
    assert plan.hs is not None and plan.ws is not None
    ch, cw = parse_size("functional.center_crop", output_size, "output_size")
    windows = [center_crop_window(h, w, ch, cw) for h, w in zip(plan.hs, plan.ws)]
    plan.crop(per_sample([t for t, _ in windows], plan.device),
              per_sample([l for _, l in windows], plan.device), ch, cw, [ch], [cw], False)
    return _done(plan, image)


def pad(image: Images, padding: Union[int, Sequence[int]],
        fill: Optional[Union[float, Sequence[float]]] = None,
        padding_mode: str = "constant") -> torch.Tensor:
    """torchvision's pad: ``padding`` (an int, or left/right and top/bottom, or left, top,
    right, bottom) with ``padding_mode`` (constant with ``fill``, edge, reflect, symmetric)."""
    plan = _plan("pad", image)
    left, top, right, bottom = parse_padding("functional.pad", padding)
    fills = fill_values("functional.pad", fill)
    plan.pad([left], [top], [right], [bottom], padding_code("functional.pad", padding_mode, fills),
             fills)
    return _done(plan, image)


def _floats(function: str, name: str, value: object, plan: _Plan, columns: int) -> torch.Tensor:
    """A number (or a sequence of ``columns`` of them: one for every sample) or a real tensor of
    one value or one a sample ([S] or [S, columns]) on the images' device, as float64
    [S, columns]."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [float(value)] * columns
    if isinstance(value, (list, tuple)) and len(value) == columns and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return torch.tensor([float(v) for v in value], dtype=torch.float64,
                            device=plan.device).expand(plan.count, columns)
    if (isinstance(value, torch.Tensor) and value.dtype != torch.bool
            and not value.is_complex() and value.numel() in (columns, plan.count * columns)):
        if value.device != plan.device:
            raise ValueError(f"gpuaug.functional.{function}: expected '{name}' on the images' "
                             f"device {plan.device}, got {value.device}")
        return value.double().reshape(-1, columns).expand(plan.count, columns)
    shown = (f"{value.dtype} of shape {list(value.shape)}" if isinstance(value, torch.Tensor)
             else repr(value))
    raise TypeError(f"gpuaug.functional.{function}: expected '{name}' as "
                    f"{'a number' if columns == 1 else f'{columns} numbers'} or a tensor of them "
                    f"for one or each sample ({plan.count}), got {shown}")


def _shear(function: str, shear: object, plan: _Plan) -> torch.Tensor:
    # torchvision's _affine_parse_args: a number is (x, 0), one of them (x, x)
    if isinstance(shear, (int, float)) and not isinstance(shear, bool):
        shear = [float(shear), 0.0]
    elif isinstance(shear, (list, tuple)) and len(shear) == 1:
        shear = [shear[0], shear[0]]
    return _floats(function, "shear", shear, plan, 2)


def affine(image: Images, angle: Union[float, torch.Tensor],
           translate: Union[Sequence[float], torch.Tensor], scale: Union[float, torch.Tensor],
           shear: Union[float, Sequence[float], torch.Tensor], interpolation: object = "nearest",
           fill: Optional[Union[float, Sequence[float]]] = None,
           center: Optional[Sequence[float]] = None) -> torch.Tensor:
    """torchvision's affine: each sample's angle, translate (x, y), scale and shear (x, y) a
    number (or pair) for all or a tensor of one a sample ([S], [S, 2]); ``fill`` None leaves
    zeros where it samples outside, as torchvision's (a value: its fill through the mask)."""
    plan = _plan("affine", image)
    angle_ = _floats("affine", "angle", angle, plan, 1)[:, 0]
    translate_ = _floats("affine", "translate", translate, plan, 2)
    scale_ = _floats("affine", "scale", scale, plan, 1)[:, 0]
    if not isinstance(scale, torch.Tensor) and scale <= 0.0:
        raise ValueError("scale value should be positive")
    cx, cy = _centre(_check_center(center), plan, angle_)
    rows = affine_rows(angle_, translate_, scale_, _shear("affine", shear, plan), cx, cy)
    plan.warp_by(rows, warp_interpolation("functional.affine", interpolation),
                 fill_values("functional.affine", fill))
    return _done(plan, image)


def rotate(image: Images, angle: Union[float, torch.Tensor], interpolation: object = "nearest",
           expand: bool = False, center: Optional[Sequence[float]] = None,
           fill: Optional[Union[float, Sequence[float]]] = None) -> torch.Tensor:
    """torchvision's rotate: each sample's angle a number or a tensor of one a sample [S];
    ``expand=True`` is refused (each angle would give its sample a size of its own)."""
    if expand:
        raise ValueError("gpuaug.functional.rotate: expand=True is not supported: each sample's "
                         "angle would give it a size of its own")
    plan = _plan("rotate", image)
    angle_ = _floats("rotate", "angle", angle, plan, 1)[:, 0]
    cx, cy = _centre(_check_center(center), plan, angle_)
    plan.warp_by(rotation_rows(angle_, cx, cy),
                 warp_interpolation("functional.rotate", interpolation),
                 fill_values("functional.rotate", fill))
    return _done(plan, image)


def perspective(image: Images, startpoints: Optional[Union[Sequence, torch.Tensor]],
                endpoints: Optional[Union[Sequence, torch.Tensor]],
                interpolation: object = "bilinear",
                fill: Optional[Union[float, Sequence[float]]] = None,
                coefficients: Optional[Union[Sequence[float], torch.Tensor]] = None
                ) -> torch.Tensor:
    """torchvision's perspective: ``startpoints`` and ``endpoints`` (four (x, y) points each, for
    all samples or a [S, 4, 2] tensor of them), or ``coefficients`` (8 numbers or [S, 8])."""
    plan = _plan("perspective", image)
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be "
                             "defined concurrently.")
        coeffs = _floats("perspective", "coefficients", coefficients, plan, 8)
    elif startpoints is not None and endpoints is not None:
        start = _floats("perspective", "startpoints", _flat(startpoints), plan, 8)
        end = _floats("perspective", "endpoints", _flat(endpoints), plan, 8)
        coeffs = solved_coefficients(start.reshape(-1, 4, 2), end.reshape(-1, 4, 2))
    else:
        raise ValueError("Either the startpoints/endpoints or the coefficients must have non "
                         "`None` values.")
    apply = torch.ones([plan.count], dtype=torch.bool, device=plan.device)
    plan.warp_by(perspective_rows(coeffs, apply),
                 warp_interpolation("functional.perspective", interpolation),
                 fill_values("functional.perspective", fill))
    return _done(plan, image)


def _flat(points: object) -> object:
    # four (x, y) points as 8 numbers; tensors as they are
    if isinstance(points, (list, tuple)) and all(isinstance(p, (list, tuple)) for p in points):
        return [float(v) for p in points for v in p]
    return points
