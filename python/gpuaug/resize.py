"""Resize and Pad, as torchvision.transforms.v2's: the same size for every sample of a batch, a
size each for images of different sizes (Resize with an int keeps each one's aspect ratio)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ._geometry import (_Geometric, _Plan, fill_values, functional, interpolation_code,
                        pad_points, padding_code, parse_padding, per_sample)


def resized_size(height: int, width: int, size: Optional[List[int]],
                 max_size: Optional[int]) -> Tuple[int, int]:
    """torchvision's ``_compute_resized_output_size``: (h, w) of size, or the shorter edge
    made ``size[0]`` (the longer one at most ``max_size``), or the longer one ``max_size``."""
    short, long = (width, height) if width <= height else (height, width)
    if size is None:
        assert max_size is not None
        new_short, new_long = int(max_size * short / long), max_size
    elif len(size) == 1:
        new_short, new_long = size[0], int(size[0] * long / short)
        if max_size is not None and new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    else:
        return size[0], size[1]
    return (new_long, new_short) if width <= height else (new_short, new_long)


class Resize(_Geometric):
    """torchvision.transforms.v2.Resize: ``size`` (h, w), or an int (or one of them) for the
    shorter edge keeping each image's aspect ratio (the longer at most ``max_size``), or None
    with ``max_size`` for the longer edge. An image already of its size is kept as it is, as
    torchvision's. No draws (params: an empty dict)."""

    def __init__(self, size: Union[int, Sequence[int], None], interpolation: object = "bilinear",
                 max_size: Optional[int] = None, antialias: Optional[bool] = True) -> None:
        super().__init__()
        if isinstance(size, int) and not isinstance(size, bool):
            size = [size]
        elif isinstance(size, (list, tuple)) and len(size) in (1, 2):
            size = list(size)
        elif size is None:
            if not isinstance(max_size, int):
                raise ValueError("max_size must be an integer when size is None, but got "
                                 f"{max_size} instead.")
        else:
            raise ValueError("size can be an integer, a sequence of one or two integers, or "
                             f"None, but got {size} instead.")
        if max_size is not None and size is not None:
            if len(size) != 1:
                raise ValueError("max_size should only be passed if size is None or specifies "
                                 "the length of the smaller edge, i.e. size should be an int or "
                                 "a sequence of length 1 in torchscript mode.")
            if max_size <= size[0]:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
        self.size = size
        self.max_size = max_size
        self.interpolation = interpolation_code("transforms.Resize", interpolation)
        self.antialias = bool(antialias)

    def extra_repr(self) -> str:
        return (f"size={self.size}, interpolation={self.interpolation}, "
                f"max_size={self.max_size}, antialias={self.antialias}")

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        sizes = [resized_size(h, w, self.size, self.max_size) for h, w in zip(hs, ws)]
        return [s[0] for s in sizes], [s[1] for s in sizes]

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        assert plan.hs is not None and plan.ws is not None
        hs, ws = self._sizes(plan.hs, plan.ws)
        if hs == plan.hs and ws == plan.ws:  # torchvision returns such images as they are
            return True
        return plan.resize(per_sample(hs, plan.device), per_sample(ws, plan.device), hs, ws,
                           self.interpolation, self.antialias)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return functional().resize(target, self.size, max_size=self.max_size)


class Pad(_Geometric):
    """torchvision.transforms.v2.Pad: ``padding`` (an int, or left/right and top/bottom, or
    left, top, right, bottom) with ``padding_mode`` (constant: ``fill``, a number or one a
    channel; edge, reflect, symmetric). No draws (params: an empty dict)."""

    def __init__(self, padding: Union[int, Sequence[int]], fill: object = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        self.padding = parse_padding("transforms.Pad", padding)
        self.fill = fill_values("transforms.Pad", fill)
        self.padding_mode = padding_code("transforms.Pad", padding_mode, self.fill)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode}"

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        left, top, right, bottom = self.padding
        return [h + top + bottom for h in hs], [w + left + right for w in ws]

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        left, top, right, bottom = self.padding
        if not any(self.padding):  # nothing to pad: nothing that would end the call
            return True
        return plan.pad([left], [top], [right], [bottom], self.padding_mode, self.fill)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return pad_points("Pad", target, self.padding, self.padding_mode)
