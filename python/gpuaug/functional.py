"""torchvision.transforms.v2.functional's photometric functions for image batches, each sample
with a parameter of its own: a number (every sample alike, as torchvision's) or a tensor of one
value per sample, on the image's device. Each is one call of :func:`gpuaug.photometric`, with
torchvision's formulas and rounding (one pass over the batch; two for contrast, autocontrast and
equalize), differentiable in a floating image where torchvision's float path is (brightness,
contrast, saturation, hue, grayscale, invert). Images are ``[C, H, W]``, ``[N, C, H, W]`` or
``[N, T, C, H, W]`` (a video's frames share their sample's value), 1 or 3 channels, uint8 or
floating. Numbers are checked as torchvision checks them; a tensor's values only on the CPU (a
check on the GPU would wait for it). The geometric ones (resized_crop, hflip, vflip, resize,
center_crop, crop, pad, affine, rotate, perspective) live in ``functional_geometry``."""

import numbers
from typing import List, Union

import torch

from ._program import _channels, _check_bits, _check_threshold, _samples, _three_channels
from .functional_geometry import (affine, center_crop, crop, hflip, pad, perspective, resize,
                                  resized_crop, rotate, vflip)

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "rgb_to_grayscale", "solarize", "posterize", "invert", "autocontrast", "equalize",
           "permute_channels", "adjust_sharpness", "resized_crop", "hflip", "vflip", "resize", "center_crop", "crop",
           "pad", "affine", "rotate", "perspective"]


def adjust_brightness(image: torch.Tensor,
                      brightness_factor: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's adjust_brightness: the image times the factor (>= 0), clamped."""
    return _adjusted("adjust_brightness", image, 1,  # Stage.BRIGHTNESS
                     brightness_factor, "brightness_factor")


def adjust_contrast(image: torch.Tensor,
                    contrast_factor: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's adjust_contrast: a blend with the mean of each image's grayscale."""
    return _adjusted("adjust_contrast", image, 2,  # Stage.CONTRAST
                     contrast_factor, "contrast_factor")


def adjust_saturation(image: torch.Tensor,
                      saturation_factor: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's adjust_saturation: a blend with each pixel's grayscale."""
    return _adjusted("adjust_saturation", image, 3,  # Stage.SATURATION
                     saturation_factor, "saturation_factor")


def adjust_hue(image: torch.Tensor, hue_factor: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's adjust_hue: the hue shifted by the factor (in [-0.5, 0.5]) through HSV."""
    if not torch.jit.is_scripting():
        _check_value("adjust_hue", "hue_factor", hue_factor)
    if not isinstance(hue_factor, torch.Tensor) and not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    return _call(image, 4, _factors(image, hue_factor, "hue_factor"))  # Stage.HUE


def rgb_to_grayscale(image: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """torchvision's rgb_to_grayscale: 1 or 3 channels of the image's grayscale (3 of a
    1-channel image: its plane repeated, as torchvision's)."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    if num_output_channels == 3 and _channels(image, "gpuaug.functional.rgb_to_grayscale") == 1:
        return _three_channels(image)
    gray = _call(image, 5, _zero(image))  # Stage.GRAYSCALE
    if num_output_channels == 1:
        return gray.narrow(-3, 0, 1).contiguous()
    return gray


def solarize(image: torch.Tensor, threshold: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's solarize: values at or above the threshold (in the image's range: 0..255 for
    uint8) inverted."""
    if not torch.jit.is_scripting():
        _check_value("solarize", "threshold", threshold)
    if not isinstance(threshold, torch.Tensor):
        _check_threshold(threshold, image.dtype)
    return _call(image, 6, _factors(image, threshold, "threshold"))  # Stage.SOLARIZE


def posterize(image: torch.Tensor, bits: Union[int, torch.Tensor]) -> torch.Tensor:
    """torchvision's posterize: each value kept to its ``bits`` (0..8) highest bits."""
    if isinstance(bits, torch.Tensor):
        return _call(image, 7, _factors(image, bits.double(), "bits"))  # Stage.POSTERIZE
    _check_bits(bits)
    return _call(image, 7, _factors(image, float(bits), "bits"))  # Stage.POSTERIZE


def invert(image: torch.Tensor) -> torch.Tensor:
    """torchvision's invert: the image's maximum less each value."""
    return _call(image, 8, _zero(image))  # Stage.INVERT


def autocontrast(image: torch.Tensor) -> torch.Tensor:
    """torchvision's autocontrast: each image's channels stretched from their minimum and
    maximum to the dtype's range."""
    return _call(image, 10, _zero(image))  # Stage.AUTOCONTRAST


def equalize(image: torch.Tensor) -> torch.Tensor:
    """torchvision's equalize: each image's channels through their histogram's equalisation
    (floating images through their uint8 values)."""
    return _call(image, 11, _zero(image))  # Stage.EQUALIZE


def permute_channels(image: torch.Tensor,
                     permutation: Union[List[int], torch.Tensor]) -> torch.Tensor:
    """torchvision's permute_channels: output channel c is input channel ``permutation[c]``.
    ``permutation``: a list, or integer tensors ``[C]`` or ``[N, C]`` (one per sample); a
    permutation of the channels (torchvision's indexing also takes repeats; the op does not)."""
    channels = _channels(image, "gpuaug.functional.permute_channels")
    if isinstance(permutation, torch.Tensor):
        if (permutation.is_floating_point() or permutation.dim() not in (1, 2)
                or permutation.shape[-1] != channels):
            raise ValueError("gpuaug.functional.permute_channels: expected 'permutation' as "
                             f"integers of shape [{channels}] or [N, {channels}], got "
                             f"{permutation.dtype} of shape {list(permutation.shape)}")
        # the op's code p0 + 3 p1 + 9 p2 (one channel: p0, 0)
        code = permutation.select(-1, 0)
        if channels == 3:
            code = code + 3 * permutation.select(-1, 1) + 9 * permutation.select(-1, 2)
        return _call(image, 9,  # Stage.PERMUTE_CHANNELS
                     _factors(image, code.double(), "permutation"))
    if len(permutation) != channels:
        raise ValueError("Length of permutation does not match number of channels: "
                         f"{len(permutation)} != {channels}")
    if sorted(permutation) != list(range(channels)):
        raise ValueError("gpuaug.functional.permute_channels: expected a permutation of the "
                         f"channels 0..{channels - 1}, got {permutation}")
    code, weight = 0, 1
    for p in permutation:
        code, weight = code + p * weight, weight * 3
    return _call(image, 9, _factors(image, float(code), "permutation"))  # Stage.PERMUTE_CHANNELS


def adjust_sharpness(image: torch.Tensor,
                     sharpness_factor: Union[float, torch.Tensor]) -> torch.Tensor:
    """torchvision's adjust_sharpness: a blend with the image's 3x3 smoothing (rounded for
    uint8), the border rows and columns kept, images of at most two rows or columns unchanged.
    One call of ``gpuaug::auto_augment`` (uint8, float32 or float64 images); a floating image's
    gradient is the formula's derivative (torchvision's cannot be differentiated), the factor
    has none."""
    if isinstance(sharpness_factor, numbers.Number):
        if sharpness_factor < 0:
            raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    elif not isinstance(sharpness_factor, torch.Tensor):
        raise TypeError("gpuaug.functional.adjust_sharpness: expected 'sharpness_factor' as a "
                        f"number or a tensor, got {type(sharpness_factor).__name__}")
    batch = image.unsqueeze(0) if image.dim() == 3 else image.flatten(0, -4)
    samples = 1 if image.dim() == 3 else image.shape[0]
    frames = batch.shape[0] // max(samples, 1)
    factor = torch.as_tensor(sharpness_factor, dtype=torch.float64, device=image.device)
    factor = factor.expand(samples).repeat_interleave(frames) if factor.dim() == 0 else \
        factor.double().reshape(samples).repeat_interleave(frames)
    n = batch.shape[0]
    operations = torch.full([n, 1, 1], 9, dtype=torch.int64, device=image.device)  # Sharpness
    out = torch.ops.gpuaug.auto_augment(batch, operations, (factor - 1.0).view(n, 1, 1))
    return out.reshape(image.shape)


def _adjusted(function: str, image: torch.Tensor, stage: int,
              factor: Union[float, torch.Tensor], name: str) -> torch.Tensor:
    # brightness, contrast and saturation: a factor >= 0
    if not torch.jit.is_scripting():
        _check_value(function, name, factor)
    if not isinstance(factor, torch.Tensor) and factor < 0:
        raise ValueError(f"{name} ({factor}) is not non-negative.")
    return _call(image, stage, _factors(image, factor, name))


def _check_value(function: str, name: str, value: object) -> None:
    """A number or a tensor, else a clear error (a list would fail at a comparison with a
    message that names neither the function nor the argument). Eager Python only: TorchScript
    checks the types itself."""
    if isinstance(value, (numbers.Real, torch.Tensor)):
        return
    hint = ""
    if isinstance(value, (list, tuple)):
        hint = (f" (one value a sample: pass them as a tensor, torch.tensor({list(value)!r}, "
                "device=image.device))")
    raise TypeError(f"gpuaug.functional.{function}: expected '{name}' as a number, or a floating "
                    "tensor of one value or of one a sample on the image's device, but got "
                    f"{type(value).__name__}{hint}")


def _call(image: torch.Tensor, stage: int, factors: torch.Tensor) -> torch.Tensor:
    # ``stage``: a code of gpuaug.Stage, written out where it is passed (TorchScript reads no
    # global constants)
    return torch.ops.gpuaug.photometric(image, [stage], factors)


def _zero(image: torch.Tensor) -> torch.Tensor:
    # the factor of a stage that takes none
    return torch.zeros([1], dtype=torch.float64, device=image.device)


def _factors(image: torch.Tensor, value: Union[float, torch.Tensor], name: str) -> torch.Tensor:
    """The op's factors of one slot: ``[1]`` for a number or one value, ``[N, 1]`` for one per
    sample. A number is filled on the image's device (a CUDA graph can capture that), in float64:
    the op rounds it as torchvision's arithmetic does."""
    if not isinstance(value, torch.Tensor):
        return torch.full([1], float(value), dtype=torch.float64, device=image.device)
    n = _samples(image)
    if not value.is_floating_point():
        raise TypeError(f"gpuaug.functional: expected '{name}' as a number or a floating tensor, "
                        f"got {value.dtype}")
    if value.dim() > 1 or value.numel() not in (1, n):
        raise ValueError(f"gpuaug.functional: expected '{name}' as a number, or a tensor of one "
                         f"value or of one a sample ({n}), got shape {list(value.shape)}")
    if value.device != image.device:
        raise ValueError(f"gpuaug.functional: expected '{name}' on the image's device "
                         f"{image.device}, got {value.device}")
    return value.reshape([1]) if value.numel() == 1 else value.reshape([n, 1])
