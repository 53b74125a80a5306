"""RandomResizedCrop, RandomCrop and CenterCrop, as torchvision.transforms.v2's, each sample
drawing its own window on the images' device (no host synchronisation, no loop over samples)."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ._geometry import (Value, _check_keys, _Geometric, _Plan, fill_values, functional,
                        interpolation_code, pad_points, padding_code, parse_padding, parse_size,
                        per_sample)


def resized_crop_windows(u: torch.Tensor, height: Value, width: Value,
                         scale: Sequence[float], ratio: Sequence[float]) -> Dict[str, torch.Tensor]:
    """torchvision's RandomResizedCrop.make_params for each sample of images ``height`` x
    ``width``, of its 22 uniforms ``u`` (float32 [S, 22]): try k takes the scale from column k
    and the log aspect ratio from column 10 + k (as ``uniform_`` in float32), the first of the
    ten tries that fits is the window, placed by columns 20 and 21 (``randint``: ``floor(u n)``);
    where none fits, torchvision's fallback (the whole image, clamped to the ratios, centred).
    One kernel, ``gpuaug::_resized_crop_windows``."""
    # a side alike for all samples goes as an int: no tensor to make, copy or keep on the CPU
    windows = torch.ops.gpuaug._resized_crop_windows(
        u, 0 if isinstance(height, torch.Tensor) else height,
        0 if isinstance(width, torch.Tensor) else width,
        height if isinstance(height, torch.Tensor) else None,
        width if isinstance(width, torch.Tensor) else None, list(scale), list(ratio))
    return dict(zip(("top", "left", "height", "width"), windows.unbind(0)))


class RandomResizedCrop(_Geometric):
    """torchvision.transforms.v2.RandomResizedCrop: a window of each sample (its area a
    fraction in ``scale`` of the image's, its aspect ratio log-uniform in ``ratio``, torchvision's
    ten tries and fallback) resized to ``size``. Params: ``top``, ``left``, ``height``,
    ``width``, int64 ``[N]``."""

    def __init__(self, size: Union[int, Sequence[int]], scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: object = "bilinear", antialias: Optional[bool] = True, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.size = parse_size("transforms.RandomResizedCrop", size)
        if not isinstance(scale, Sequence) or len(scale) != 2:
            raise TypeError("Scale should be a sequence of two floats.")
        if not isinstance(ratio, Sequence) or len(ratio) != 2:
            raise TypeError("Ratio should be a sequence of two floats.")
        if not (ratio[0] > 0 and ratio[1] > 0):
            raise ValueError(f"gpuaug.transforms.RandomResizedCrop: expected positive ratios, "
                             f"got {ratio}")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.interpolation = interpolation_code("transforms.RandomResizedCrop", interpolation)
        self.antialias = bool(antialias)

    def extra_repr(self) -> str:
        return (f"size={self.size}, scale={self.scale}, ratio={self.ratio}, "
                f"interpolation={self.interpolation}, antialias={self.antialias}")

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        u = self._uniforms(count, 22, image)
        return resized_crop_windows(u, per_sample(hs, image.device),
                                    per_sample(ws, image.device), self.scale, self.ratio)

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        return [self.size[0]], [self.size[1]]

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys("RandomResizedCrop", params, ["top", "left", "height", "width"])
        return (plan.crop(params["top"], params["left"], params["height"], params["width"],
                          None, None, True)
                and plan.resize(self.size[0], self.size[1], [self.size[0]], [self.size[1]],
                                self.interpolation, self.antialias))

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return functional().resized_crop(target, row["top"], row["left"], row["height"],
                                         row["width"], self.size)


class RandomCrop(_Geometric):
    """torchvision.transforms.v2.RandomCrop: the image padded by ``padding`` (and, with
    ``pad_if_needed``, on both sides by what it lacks of ``size``) with ``padding_mode`` and
    ``fill``, then a window of ``size`` at a place drawn per sample. Params: ``top``, ``left``
    (in the padded image), int64 ``[N]``."""

    def __init__(self, size: Union[int, Sequence[int]],
                 padding: Optional[Union[int, Sequence[int]]] = None, pad_if_needed: bool = False,
                 fill: object = 0, padding_mode: str = "constant", *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.size = parse_size("transforms.RandomCrop", size)
        self.padding = (parse_padding("transforms.RandomCrop", padding) if padding
                        else [0, 0, 0, 0])
        self.pad_if_needed = pad_if_needed
        self.fill = fill_values("transforms.RandomCrop", fill)
        self.padding_mode = padding_code("transforms.RandomCrop", padding_mode, self.fill)

    def extra_repr(self) -> str:
        return (f"size={self.size}, padding={self.padding}, pad_if_needed={self.pad_if_needed}, "
                f"fill={self.fill}, padding_mode={self.padding_mode}")

    def _paddings(self, hs: List[int], ws: List[int]) -> List[List[int]]:
        """Each sample's [left, top, right, bottom] padding (one for all where alike)."""
        left, top, right, bottom = self.padding
        out = []
        for h, w in zip(hs, ws):
            dh = max(self.size[0] - (h + top + bottom), 0) if self.pad_if_needed else 0
            dw = max(self.size[1] - (w + left + right), 0) if self.pad_if_needed else 0
            ph, pw = h + top + bottom + 2 * dh, w + left + right + 2 * dw
            if ph < self.size[0] or pw < self.size[1]:
                padded = "padded " if any(self.padding) else ""
                raise ValueError(f"Required crop size {tuple(self.size)} is larger than "
                                 f"{padded}input image size {(ph, pw)}.")
            out.append([left + dw, top + dh, right + dw, bottom + dh])
        return out

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        paddings = self._paddings(hs, ws)
        free_h = [h + p[1] + p[3] - self.size[0] + 1 for h, p in zip(hs, paddings)]
        free_w = [w + p[0] + p[2] - self.size[1] + 1 for w, p in zip(ws, paddings)]
        u = self._uniforms(count, 2, image).double()
        top = torch.floor(u[:, 0] * per_sample(free_h, image.device)).long()
        left = torch.floor(u[:, 1] * per_sample(free_w, image.device)).long()
        return {"top": top, "left": left}

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        return [self.size[0]], [self.size[1]]

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys("RandomCrop", params, ["top", "left"])
        assert plan.hs is not None and plan.ws is not None
        paddings = self._paddings(plan.hs, plan.ws)
        if any(any(p) for p in paddings):
            sides = [[p[i] for p in paddings] for i in range(4)]
            if not plan.pad(sides[0], sides[1], sides[2], sides[3], self.padding_mode,
                            self.fill):
                return False
        return plan.crop(params["top"], params["left"], self.size[0], self.size[1],
                         [self.size[0]], [self.size[1]], True)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        # torchvision's RandomCrop.transform: the pad where it pads, the crop where the padded
        # image is larger than the crop (each clamps the boxes)
        height, width = target.canvas_size
        padding = self._paddings([height], [width])[0]
        if any(padding):
            target = pad_points("RandomCrop", target, padding, self.padding_mode)
        if (height + padding[1] + padding[3] > self.size[0]
                or width + padding[0] + padding[2] > self.size[1]):
            target = functional().crop(target, row["top"], row["left"], *self.size)
        return target


def center_crop_window(height: int, width: int, crop_h: int, crop_w: int) -> Tuple[int, int]:
    """torchvision's center_crop: the window's top and left (negative where it pads with 0)."""
    top = -((crop_h - height) // 2) if crop_h > height else int(round((height - crop_h) / 2.0))
    left = -((crop_w - width) // 2) if crop_w > width else int(round((width - crop_w) / 2.0))
    return top, left


class CenterCrop(_Geometric):
    """torchvision.transforms.v2.CenterCrop: the window of ``size`` at the centre of each
    sample, the image padded with 0 where it is smaller. No draws (params: an empty dict)."""

    def __init__(self, size: Union[int, Sequence[int]]) -> None:
        super().__init__()
        self.size = parse_size("transforms.CenterCrop", size)

    def extra_repr(self) -> str:
        return f"size={self.size}"

    def _sizes(self, hs: List[int], ws: List[int]) -> Tuple[List[int], List[int]]:
        return [self.size[0]], [self.size[1]]

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        assert plan.hs is not None and plan.ws is not None
        ch, cw = self.size
        windows = [center_crop_window(h, w, ch, cw) for h, w in zip(plan.hs, plan.ws)]
        inside = all(ch <= h and cw <= w for h, w in zip(plan.hs, plan.ws))
        return plan.crop(per_sample([t for t, _ in windows], plan.device),
                         per_sample([l for _, l in windows], plan.device), ch, cw, [ch], [cw],
                         inside)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return functional().center_crop(target, self.size)
