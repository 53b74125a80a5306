"""The independent reference of ``gpuaug::augment``'s geometry (see the op's contract in
docs/geometric.md): each sample through torchvision.transforms.v2.functional, on the image's own
dtype and device, and the helpers of the test_geometric_*.py suites."""

import math
import struct

import pytest
import torch

MODES = {}
try:  # the newest PyTorch may have no torchvision released for it yet
    import torchvision.transforms.v2.functional as F
    from torchvision.transforms import InterpolationMode
    MODES.update({0: InterpolationMode.NEAREST, 1: InterpolationMode.BILINEAR,
             2: InterpolationMode.BICUBIC, 3: InterpolationMode.NEAREST_EXACT})
except ImportError:
    F = None

PADDING_MODES = {0: "constant", 1: "edge", 2: "reflect", 3: "symmetric"}


def _padded(image, left, top, right, bottom, padding_mode, fill):
    """F.pad by (left, top, right, bottom); reflect and symmetric, which torch pads by less than
    the image's size, fold again and again: rounds of at most a whole fold, each side's edge a
    mirror axis of the folded image until its last round."""
    mode = PADDING_MODES[padding_mode]
    if mode in ("constant", "edge"):
        return F.pad(image, [left, top, right, bottom], fill=fill if mode == "constant" else None,
                     padding_mode=mode)
    while left or top or right or bottom:
        h, w = image.shape[-2:]
        limit_h = h - 1 if mode == "reflect" else h
        limit_w = w - 1 if mode == "reflect" else w
        if (limit_h == 0 and (top or bottom)) or (limit_w == 0 and (left or right)):
            # a 1-pixel side reflects onto itself: its edge
            return F.pad(image, [left, top, right, bottom], padding_mode="edge")
        step = [min(left, limit_w), min(top, limit_h), min(right, limit_w), min(bottom, limit_h)]
        image = F.pad(image, step, padding_mode=mode)
        left, top, right, bottom = (left - step[0], top - step[1], right - step[2],
                                    bottom - step[3])
    return image


def _window(image, top, left, height, width, padding_mode, fill):
    """The image padded (padding_mode, fill) as far as the window reaches, then sliced to it."""
    h, w = image.shape[-2:]
    pad_left, pad_top = max(-left, 0), max(-top, 0)
    pad_right, pad_bottom = max(left + width - w, 0), max(top + height - h, 0)
    padded = _padded(image, pad_left, pad_top, pad_right, pad_bottom, padding_mode, fill)
    return padded[..., top + pad_top:top + pad_top + height,
                  left + pad_left:left + pad_left + width]


def _resize(image, size, interpolation, antialias):
    """F.resize; where torch's CPU antialiased kernel resizes to one column and changes the
    height (it repeats the first row then), the height first and the width apart."""
    height, width = image.shape[-2:]
    if (image.device.type == "cpu" and antialias and interpolation in (MODES[1], MODES[2])
            and size[1] == 1 and width != 1 and size[0] != height):
        image = F.resize(image, [size[0], width], interpolation=interpolation, antialias=True)
    return F.resize(image, size, interpolation=interpolation, antialias=antialias)


def reference_augment(images, geometry, size, interpolation=1, antialias=True, padding_mode=0,
                      fill=None):
    """``gpuaug::augment``'s geometry with torchvision's functions, sample by sample: the window
    of the padded image, its flips, the resize (F.resize, nothing done where the size is the
    window's), the output window of the resized image (``fill`` outside it) and the output's
    flips. Returns the [S, C, H, W] batch in the images' dtype."""
    samples = [s for image in images for s in (image.unbind(0) if image.dim() == 4 else [image])]
    rows = geometry.tolist()
    assert len(rows) == len(samples), (len(rows), len(samples))
    height_out, width_out = size
    outs = []
    for sample, row in zip(samples, rows):
        top, left, height, width, window_flip, resized_h, resized_w, out_top, out_left, \
            out_flip = row
        window = _window(sample, top, left, height, width, padding_mode, fill)
        if window_flip & 1:
            window = F.hflip(window)
        if window_flip & 2:
            window = F.vflip(window)
        resized = _resize(window, [resized_h, resized_w], MODES[interpolation], antialias)
        out = _window(resized, out_top, out_left, height_out, width_out, 0, fill)
        if out_flip & 1:
            out = F.hflip(out)
        if out_flip & 2:
            out = F.vflip(out)
        outs.append(out)
    return torch.stack(outs)


def uint8_tolerance(device, interpolation):
    """How far uint8 values may be off torchvision's: 1 (torch's resizes round differently from
    the op's float arithmetic), 2 for bicubic on the CPU, where torch's native uint8 kernel
    (whose two passes the op follows) computes in fixed point, and bicubic's second pass can
    double a difference of one in the first."""
    return 2 if device == "cpu" and interpolation == 2 else 1


def assert_close_images(actual, expected, what="", uint8_off=1):
    """uint8 within uint8_off (the fraction off printed), floating within 1e-5."""
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    if actual.dtype == torch.uint8:
        diff = (actual.int() - expected.int()).abs()
        assert diff.max().item() <= uint8_off, (what, diff.max().item())
        if diff.numel():
            off = (diff > 0).double().mean().item()
            if off:
                print(f"{what}: {off:.2%} of the values off")
    else:
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0, msg=what)


def make_images(shape, dtype, device="cpu", seed=0):
    """Random images: uint8 of all values, or floating in [0, 1]."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8).to(device)
    return torch.rand(shape, generator=g, dtype=torch.float64).to(dtype).to(device)


def _float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def resized_crop_windows_reference(u, height, width, scale, ratio, exp=torch.exp):
    """gpuaug.crop.resized_crop_windows as torch ops (what it was before its kernel,
    ``gpuaug::_resized_crop_windows``): each sample's [top, left, height, width] rows, int64
    [S, 4], of its uniforms ``u`` (float32 [S, 22]) in images ``height`` x ``width`` (ints or
    int64 [S] tensors). ``exp``: the float32 exp of the log aspect ratios."""
    scale_low, ratio_low = _float32(scale[0]), _float32(math.log(ratio[0]))
    scale_width = _float32(_float32(scale[1]) - scale_low)
    ratio_width = _float32(_float32(math.log(ratio[1])) - ratio_low)

    def as_double(value):
        if isinstance(value, torch.Tensor):
            return value.double()
        return torch.full_like(u[:, 0], float(value), dtype=torch.float64)

    h_img, w_img = as_double(height), as_double(width)
    area = (h_img * w_img).unsqueeze(1)
    target = area * (u[:, :10] * scale_width + scale_low).double()
    aspect = exp(u[:, 10:20] * ratio_width + ratio_low).double()
    w = torch.round(torch.sqrt(target * aspect))
    h = torch.round(torch.sqrt(target / aspect))
    fits = (w > 0) & (w <= w_img.unsqueeze(1)) & (h > 0) & (h <= h_img.unsqueeze(1))
    first = fits.to(torch.uint8).argmax(1, keepdim=True)  # the first that fits
    found = fits.any(1)
    w = w.gather(1, first).squeeze(1)
    h = h.gather(1, first).squeeze(1)
    top = torch.floor(u[:, 20].double() * (h_img - h + 1))
    left = torch.floor(u[:, 21].double() * (w_img - w + 1))
    # the fallback: the image's aspect ratio clamped to the ratios' range
    low, high = min(ratio), max(ratio)
    in_ratio = w_img / h_img
    narrow, wide = in_ratio < low, in_ratio > high
    fw = torch.where(wide, torch.round(h_img * high), w_img)
    fh = torch.where(narrow, torch.round(w_img / low), h_img)
    h, w = torch.where(found, h, fh), torch.where(found, w, fw)
    top = torch.where(found, top, torch.floor((h_img - fh) / 2))
    left = torch.where(found, left, torch.floor((w_img - fw) / 2))
    return torch.stack([top, left, h, w], 1).long()
