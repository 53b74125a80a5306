"""gpuaug.color_transform: the fused colour augmentation with Python-friendly parameters."""

from typing import Optional, Sequence, Union

import torch

__all__ = ["color_transform"]

Param = Union[float, Sequence[float], torch.Tensor]


def _as_tensor(name: str, value: Param, channels: int = 0) -> torch.Tensor:
    # Floats and sequences become float32 CPU tensors: the op reads 0-d and [C] CPU parameters by
    # value, so even beside a CUDA image there is no host-device copy and no synchronisation.
    # A float colour gain is repeated over the `channels` (the op takes colour as [C] or [N, C]).
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (int, float)):
        if channels:
            return torch.full([channels], float(value), dtype=torch.float32)
        return torch.tensor(float(value), dtype=torch.float32)
    try:
        return torch.tensor([float(v) for v in value], dtype=torch.float32)
    except (TypeError, ValueError):
        raise TypeError(f"gpuaug.color_transform: expected '{name}' to be a float, a sequence of "
                        f"floats or a tensor, but got {value!r}") from None


def color_transform(
    image: torch.Tensor,
    color: Param = 1.0,
    brightness: Param = 0.0,
    contrast: Param = 1.0,
    gamma: Param = 1.0,
    *,
    apply: Optional[torch.Tensor] = None,
    dtype: Optional[torch.dtype] = None,
    mean: Optional[Sequence[float]] = None,
    std: Optional[Sequence[float]] = None,
) -> torch.Tensor:
    r"""Colour jitter (colour balance, gamma, brightness, contrast) in one pass over the image.

    For each pixel with channels :math:`x_0 \dots x_{C-1}` (values on [0, 1]) of sample ``n``,
    with that sample's parameters:

    .. code-block:: text

        y_c   = clamp(x_c * color_c * sum(x) / (sum(x * color) + 0.01), 0, 1)  # keeps luminance
        y_c   = y_c ** gamma + brightness
        out_c = clamp(0.5 + (y_c - 0.5) * contrast, 0, 1)
        out_c = (out_c - mean_c) / std_c                            # when mean / std are given

    Samples whose ``apply`` entry is false are only converted (and normalised).

    Args:
        image: ``[C, H, W]``, ``[N, C, H, W]`` or ``[N, T, C, H, W]`` (the T frames of a sample
            share its parameters), 1 <= C <= 32; float32, float64, float16, bfloat16, or uint8
            (read as ``v / 255``); contiguous or channels-last (channels adjacent in memory), a
            layout the output keeps. Arithmetic is float32 (float64 for float64 images).
        color: per-channel gains, ``[C]`` shared or ``[N, C]`` per sample (a float: the same
            gain for every channel). 1 leaves colours.
        brightness: added after the gamma; ``[]`` or ``[N]``. 0 leaves the image.
        contrast: stretch about 0.5; ``[]`` or ``[N]``. 1 leaves the image.
        gamma: exponent, > 0; ``[]`` or ``[N]``. 1 leaves the image. A gamma on the CPU is
            checked (0, a negative value or NaN raises); a per-sample gamma on the GPU is not, as
            that would synchronise: there the formula is applied as it stands (gamma 0 gives
            ``z ** 0 = 1``, a negative gamma makes dark pixels saturate to white).
        apply: optional bool ``[N]`` on the image's device: which samples are transformed.
        dtype: output dtype (default: the image's); uint8 output is ``round(255 * v)``, half
            to even, saturated.
        mean, std: optional per-channel normalisation (length C) fused at the end, both or
            neither; floating output only.

    Each parameter is a Python float (shared by all channels and samples), a sequence of C floats
    (``color`` only) or a floating tensor. Floats and sequences become CPU float32 tensors, which
    the op reads by value; per-sample tensors must be on the image's device.

    Returns:
        the transformed image, of the image's shape and layout.

    Values outside [0, 1] in a floating image are clamped by the colour step: an image on a 0-255
    scale comes out white (pass it as uint8, or divide it by 255 first). A pixel with a NaN or
    infinite channel comes out as a black pixel put through brightness and contrast, in every
    channel (the colour balance mixes them), on every device; its image gradient and its
    sample's colour gradient are NaN.

    Gradients (floating image and output): for the image and for every parameter given as a
    tensor that requires grad, reduced to that parameter's shape. Clamps pass the gradient where
    their input lies in [0, 1], bounds included, whatever the PyTorch (torch.clamp did so up to
    2.14; 2.15's passes none at the bounds). Where ``y ** gamma`` has an infinite derivative
    (``y`` exactly 0, gamma < 1) the gradient is taken as 0, so gradients of finite images are
    always finite. The backward is deterministic. Double backward is not supported.
    """
    if not isinstance(image, torch.Tensor):
        raise TypeError("gpuaug.color_transform: expected 'image' to be a torch.Tensor, but got "
                        f"{type(image).__name__}")
    if apply is not None and not isinstance(apply, torch.Tensor):
        raise TypeError("gpuaug.color_transform: expected 'apply' to be None or a bool tensor of "
                        f"shape [N] on the image's device, but got {type(apply).__name__}")
    # Any channel count will do for an image of the wrong rank: the op reports that.
    channels = image.shape[-3] if image.dim() >= 3 else 1
    return torch.ops.gpuaug.color_transform(
        image,
        _as_tensor("color", color, channels),
        _as_tensor("brightness", brightness),
        _as_tensor("contrast", contrast),
        _as_tensor("gamma", gamma),
        apply=apply,
        dtype=dtype,
        mean=None if mean is None else [float(m) for m in mean],
        std=None if std is None else [float(s) for s in std],
    )
