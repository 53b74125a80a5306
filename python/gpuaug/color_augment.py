"""ColorAugment: random colour augmentation with :func:`gpuaug.color_transform`, per-sample
parameters drawn on the image's device; in a Compose or container, the op's COLOR_AUGMENT stage."""

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ._base import _Photometric
from ._program import Stage, _check_generator, _check_params, _conversion_arguments, _params
from .samples import TorchvisionInputs

__all__ = ["ColorAugment"]

Range = Tuple[float, float]


def _range(name: str, value: Sequence[float], positive: bool = False) -> List[float]:
    low, high = (float(v) for v in value)
    if not low <= high or (positive and low <= 0):
        bound = "0 < low <= high" if positive else "low <= high"
        raise ValueError(f"ColorAugment: expected '{name}' = (low, high) with {bound}, got {value}")
    return [low, high]


class ColorAugment(TorchvisionInputs, nn.Module):
    """Random colour jitter of image batches with :func:`gpuaug.color_transform`.

    Each sample gets its own parameters, drawn on the image's device (no host synchronisation,
    so the module can run inside a CUDA graph):

    - ``color``: a gain per channel, uniform in ``(low, high)``; or one ``(low, high)`` range per
      channel (a sequence of C pairs).
    - ``brightness``: uniform in ``(low, high)``.
    - ``contrast``: uniform in ``(low, high)``.
    - ``gamma``: log-uniform in ``(low, high)``, 0 < low: (0.8, 1.25) is symmetric about 1.
    - ``p``: the probability that a sample is transformed at all.

    A range ``(v, v)`` fixes the parameter. ``generator`` (on the image's device) makes the
    draws reproducible; without it they come from the default generator of that device.
    ``dtype``, ``mean`` and ``std`` are passed to the op: output dtype and a fused normalisation.

    Images are ``[C, H, W]`` (one sample), ``[N, C, H, W]`` or ``[N, T, C, H, W]`` (the T frames
    of a sample share its parameters). ``sample_params(image)`` returns the draws as a dict
    (``color [N, C]``, ``brightness``, ``contrast``, ``gamma`` and ``apply``, each ``[N]``;
    N = 1 for a 3-D image) and ``forward(image, params)`` replays them.

    Works with ``torch.jit.script`` and save/load (without a generator: generators do not
    serialise), ``torch.compile(fullgraph=True)`` (without a generator: Dynamo cannot trace one)
    and CUDA graph capture (with the default generator: each replay draws anew). In a
    :class:`Compose` of the photometric transforms it runs in their op call, as its
    ``COLOR_AUGMENT`` stage (ranges and p as here; 1- or 3-channel images).
    """

    color_low: List[float]
    color_high: List[float]
    dtype: Optional[torch.dtype]
    mean: Optional[List[float]]
    std: Optional[List[float]]
    generator: Optional[torch.Generator]

    def __init__(
        self,
        color: Union[Range, Sequence[Range]] = (0.8, 1.2),
        brightness: Range = (-0.1, 0.1),
        contrast: Range = (0.8, 1.2),
        gamma: Range = (0.8, 1.25),
        p: float = 1.0,
        *,
        generator: Optional[torch.Generator] = None,
        dtype: Optional[torch.dtype] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
    ) -> None:
        super().__init__()
        per_channel = len(color) > 0 and isinstance(color[0], (tuple, list))
        ranges = [_range("color", r) for r in (color if per_channel else [color])]
        self.color_low = [r[0] for r in ranges]
        self.color_high = [r[1] for r in ranges]
        self.brightness_low, self.brightness_high = _range("brightness", brightness)
        self.contrast_low, self.contrast_high = _range("contrast", contrast)
        gamma_low, gamma_high = _range("gamma", gamma, positive=True)
        self.log_gamma_low, self.log_gamma_high = math.log(gamma_low), math.log(gamma_high)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"ColorAugment: expected 0 <= p <= 1, got {p}")
        self.p = float(p)
        if (mean is None) != (std is None):
            raise ValueError("ColorAugment: 'mean' and 'std' normalise together: pass both or "
                             "neither")
        self.generator = generator
        self.dtype = dtype
        self.mean = None if mean is None else [float(m) for m in mean]
        self.std = None if std is None else [float(s) for s in std]

    def sample_params(self, image: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Draws one parameter set per sample of ``image``, on its device."""
        if image.dim() < 3 or image.dim() > 5:
            raise ValueError(
                "ColorAugment: expected an image of shape [C, H, W], [N, C, H, W] or "
                f"[N, T, C, H, W], got {list(image.shape)}")
        channels = image.shape[-3]
        if len(self.color_low) != 1 and len(self.color_low) != channels:
            raise ValueError(
                f"ColorAugment: {len(self.color_low)} colour ranges for an image of {channels} "
                "channels")
        n = 1 if image.dim() == 3 else image.shape[0]
        # One draw for everything: C colour gains, brightness, contrast, gamma, apply.
        generator = self.generator
        if not torch.jit.is_scripting():
            _check_generator("ColorAugment", generator, image)
        if generator is None:  # rand(generator=None) does not trace with symbolic sizes
            u = torch.rand([n, channels + 4], device=image.device)
        else:
            u = torch.rand([n, channels + 4], device=image.device, generator=generator)
        if len(self.color_low) == 1:
            color = u[:, :channels] * (self.color_high[0] - self.color_low[0]) + self.color_low[0]
        else:
            # Scalar arithmetic per column: host-side ranges never become device tensors.
            color = torch.stack([
                u[:, c] * (self.color_high[c] - self.color_low[c]) + self.color_low[c]
                for c in range(channels)
            ], dim=1)
        log_gamma = (u[:, channels + 2] * (self.log_gamma_high - self.log_gamma_low)
                     + self.log_gamma_low)
        return {
            "color": color,
            "brightness": u[:, channels] * (self.brightness_high - self.brightness_low)
            + self.brightness_low,
            "contrast": u[:, channels + 1] * (self.contrast_high - self.contrast_low)
            + self.contrast_low,
            "gamma": torch.exp(log_gamma),
            "apply": u[:, channels + 3] < self.p,
        }

    def forward(self, image: torch.Tensor,
                params: Optional[Dict[str, torch.Tensor]] = None) -> torch.Tensor:
        """Augments ``image`` with fresh parameters, or with ``params`` from
        :meth:`sample_params`."""
        if params is None:
            params = self.sample_params(image)
        _check_params(params, ["color", "brightness", "contrast", "gamma", "apply"])
        return torch.ops.gpuaug.color_transform(
            image, params["color"], params["brightness"], params["contrast"], params["gamma"],
            apply=params["apply"], dtype=self.dtype, mean=self.mean, std=self.std)

    def extra_repr(self) -> str:
        color = [(lo, hi) for lo, hi in zip(self.color_low, self.color_high)]
        gamma = (math.exp(self.log_gamma_low), math.exp(self.log_gamma_high))
        return ", ".join([f"color={color[0] if len(color) == 1 else color}",
                          f"brightness={(self.brightness_low, self.brightness_high)}",
                          f"contrast={(self.contrast_low, self.contrast_high)}",
                          f"gamma={gamma}", f"p={self.p}"]
                         + _conversion_arguments(self.dtype, self.mean, self.std))


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
