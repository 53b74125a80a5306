"""The boxes, masks and key points of a geometric transform's samples (samples.py), each moved
as torchvision.transforms.v2 moves it with its sample's parameters: boxes and key points through
torchvision's own functions, transform by transform, a sample at a time (their formats, clamping
and canvas sizes as torchvision makes them); masks through ``gpuaug::augment`` with the image's
geometry resized nearest, as torchvision resizes masks, every mask of one dtype in one call."""

import sys
from typing import Any, Dict, List, Sequence, Tuple

import torch

_NAMES = ("BoundingBoxes", "Mask", "KeyPoints")


def _tv_tensors() -> Any:
    return sys.modules.get("torchvision.tv_tensors")  # none without torchvision's inputs


def is_target(x: Any) -> bool:
    tv_tensors = _tv_tensors()
    return tv_tensors is not None and isinstance(
        x, tuple(getattr(tv_tensors, name) for name in _NAMES if hasattr(tv_tensors, name)))


def _is_mask(x: Any) -> bool:
    return isinstance(x, _tv_tensors().Mask)


def _size(target: torch.Tensor) -> Tuple[int, int]:
    if _is_mask(target):
        return tuple(target.shape[-2:])
    return tuple(target.canvas_size)


def check_sizes(owner: str, targets: Sequence[torch.Tensor], samples: Sequence[int],
                sizes: Sequence[Tuple[int, int]]) -> None:
    """Each target of its image's size: torchvision's sample has one size."""
    for target, sample in zip(targets, samples):
        if _size(target) != sizes[sample]:
            raise ValueError(f"gpuaug.transforms.{owner}: a {type(target).__name__} follows its "
                             f"image, so it must be of the image's size {sizes[sample]} (its "
                             f"canvas_size, a mask's last two dimensions); got {_size(target)}")


def follow(module: Any, params: Dict[str, torch.Tensor], targets: Sequence[torch.Tensor],
           samples: Sequence[int], size: Tuple[int, int]) -> List[torch.Tensor]:
    """``targets`` moved by ``module``'s geometric transforms with ``params``, each with the
    draw of its sample (an index of the params' rows); ``size``: the images' output size."""
    transforms, stage_params = module._stages(params)
    out = list(targets)
    points = [i for i, target in enumerate(targets) if not _is_mask(target)]
    if points:  # the params on the host, once
        rows = [{key: value.tolist() for key, value in p.items()} for p in stage_params]
        for i in points:
            out[i] = _moved(transforms, rows, targets[i], samples[i])
    masks = [i for i, target in enumerate(targets) if _is_mask(target)]
    if masks:
        moved = _moved_masks(transforms, stage_params, [targets[i] for i in masks],
                             [samples[i] for i in masks], size)
        for i, mask in zip(masks, moved):
            out[i] = mask
    return out


def _moved(transforms: Sequence[Any], rows: List[Dict[str, list]], target: torch.Tensor,
           sample: int) -> torch.Tensor:
    for t, row in zip(transforms, rows):
        target = t._follow(target, {key: values[sample] for key, values in row.items()})
    return target


def _working_dtype(dtype: torch.dtype, warped: bool) -> torch.dtype:
    # the op's dtypes: integer labels as float64, exact to 2^53, which nearest copies as they
    # are; through a warp as float32, as torchvision's grid transform takes them (its grid, in
    # the image's float type, rounds positions on a pixel's edge as a float32 grid does)
    if dtype == torch.bool:
        return torch.uint8
    if dtype == torch.uint8 or dtype.is_floating_point:
        return dtype
    return torch.float32 if warped else torch.float64


def _check_fills(transforms: Sequence[Any]) -> None:
    for t in transforms:
        fill = getattr(t, "fill", None)
        if fill is not None and len(fill) > 1:
            raise ValueError(f"gpuaug.transforms.{type(t).__name__}: a Mask is padded with one "
                             "value, as torchvision pads it: expected 'fill' as a number for "
                             f"samples with masks, got {fill}")


def _moved_masks(transforms: Sequence[Any], params: List[Dict[str, torch.Tensor]],
                 masks: List[torch.Tensor], samples: List[int],
                 size: Tuple[int, int]) -> List[torch.Tensor]:
    """Every plane of the masks ([..., H, W]) a sample of the op, with its mask's row of the
    params: one call for the masks of one dtype and device."""
    _check_fills(transforms)
    wrap = _tv_tensors().wrap
    out: List[torch.Tensor] = [
        wrap(mask.new_zeros(list(mask.shape[:-2]) + list(size)), like=mask) for mask in masks]
    warped = any(t.warps for t in transforms)
    groups: Dict[Tuple[torch.dtype, torch.device], List[int]] = {}
    for j, mask in enumerate(masks):
        if mask.numel():
            groups.setdefault((_working_dtype(mask.dtype, warped), mask.device), []).append(j)
    for (dtype, device), members in groups.items():
        planes = [masks[j].as_subclass(torch.Tensor).reshape(-1, 1, *masks[j].shape[-2:])
                  .to(dtype) for j in members]
        counts = [p.shape[0] for p in planes]
        index = torch.tensor([samples[j] for j, c in zip(members, counts) for _ in range(c)],
                             device=device)
        rows = [{key: value.to(device).index_select(0, index) for key, value in p.items()}
                for p in params]
        if len({p.shape[-2:] for p in planes}) == 1:
            images: Any = torch.cat(planes)
        else:  # masks of images of different sizes: the op's list of them
            images = [plane for p in planes for plane in p.unbind(0)]
        moved = transforms[0]._masks(list(transforms), images, rows)
        for j, piece in zip(members, moved.split(counts)):
            shape = list(masks[j].shape[:-2]) + list(moved.shape[-2:])
            out[j] = wrap(piece.reshape(shape).to(masks[j].dtype), like=masks[j])
    return out
