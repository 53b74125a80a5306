"""Cases of color_transform: per-sample colour jitter against the same formula in PyTorch.

Baselines: torch.compile of the formula (default mode, static shapes, compiled once per layout
during the warm-up), the formula in eager PyTorch, torchvision's ColorJitter (one parameter set
for the whole batch: a reference point, not the same work), a Python loop over the images and,
for uint8 -> uint8, a plain copy of the same tensor (what moving those bytes costs at that size).

The batch sizes are those below at the default --size (2^28) and shrink with it (--quick: 1/16),
except the latency case's.
"""

import functools
from typing import Callable, Optional

import torch

from .harness import Case, register

op = torch.ops.gpuaug.color_transform
DEFAULT_SIZE = 2**28
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def formula(x: torch.Tensor, color: torch.Tensor, brightness: torch.Tensor,
            contrast: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """The op's steps 1-6 on a floating [N, C, H, W] batch with per-sample parameters."""
    def per_sample(p: torch.Tensor) -> torch.Tensor:
        return p.view(-1, 1, 1, 1)

    s_in = x.sum(1, keepdim=True)
    y = x * color[:, :, None, None]
    s_out = y.sum(1, keepdim=True)
    y = (y * (s_in / (s_out + 0.01))).clamp(0, 1)
    y = y.pow(per_sample(gamma)) + per_sample(brightness)
    return (0.5 + (y - 0.5) * per_sample(contrast)).clamp(0, 1)


def formula_u8(x, color, brightness, contrast, gamma):
    y = formula(x.float() / 255, color, brightness, contrast, gamma)
    return (y * 255).round().to(torch.uint8)


def formula_u8_normalized(x, color, brightness, contrast, gamma):
    mean = torch.tensor(MEAN, device=x.device).view(3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(3, 1, 1)
    return (formula(x.float() / 255, color, brightness, contrast, gamma) - mean) / std


def copy_of_image(x, *params):
    """A plain copy of the same tensor: what moving these bytes costs at this size."""
    return torch.empty_like(x).copy_(x)


def per_image_loop(x, color, brightness, contrast, gamma):
    return torch.cat([formula(x[i:i + 1], color[i:i + 1], brightness[i:i + 1],
                              contrast[i:i + 1], gamma[i:i + 1]) for i in range(x.shape[0])])


def ours(x, color, brightness, contrast, gamma):
    return op(x, color, brightness, contrast, gamma)


def ours_u8_normalized(x, color, brightness, contrast, gamma):
    return op(x, color, brightness, contrast, gamma, dtype=torch.float32, mean=MEAN, std=STD)


def backward_op(grad, x, color, brightness, contrast, gamma):
    """The registered backward op alone: what autograd launches, without the engine around it."""
    return torch.ops.gpuaug._color_transform_backward(grad, x, color, brightness, contrast, gamma,
                                                     None, None)


def backward_only(fn: Callable) -> Callable:
    """fn's backward alone: the forward runs once per input set and its graph is kept (the
    harness keeps every input set alive, so their ids stay unique)."""
    graphs = {}

    def run(grad, x, *params):
        if id(x) not in graphs:
            graphs[id(x)] = fn(x, *params)
        return torch.autograd.grad(graphs[id(x)], (x, *params), grad, retain_graph=True)

    return run


def torchvision_jitter() -> Optional[Callable]:
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    jitter = v2.ColorJitter(brightness=0.1, contrast=0.2, saturation=0.2)
    return lambda x, *params: jitter(x)


def inputs(shape, device, dtype=torch.float32, channels_last=False, with_grad=False):
    """A factory of random (image, color [N, 3], brightness, contrast, gamma [N]) sets; with a
    gradient first and everything requiring grad when with_grad."""
    n = shape[0]

    def uniform(size, low, high):
        return torch.rand(size, device=device) * (high - low) + low

    def make():
        if dtype == torch.uint8:
            x = torch.randint(0, 256, shape, device=device, dtype=torch.uint8)
        else:
            x = torch.rand(shape, device=device, dtype=dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        params = [uniform((n, 3), 0.8, 1.2), uniform(n, -0.1, 0.1), uniform(n, 0.8, 1.2),
                  uniform(n, 0.8, 1.25)]
        if not with_grad:
            return (x, *params)
        return (torch.randn_like(x), x.requires_grad_(),
                *(p.requires_grad_() for p in params))

    return make


@functools.cache
def compiled(fn: Callable) -> Callable:
    # One compiled function per formula, shared by the cases (it recompiles once per layout and
    # shape, during each case's warm-up).
    return torch.compile(fn, dynamic=False)


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    def batch(n: int) -> int:
        return max(1, n * numel // DEFAULT_SIZE)

    f32, u8 = torch.float32, torch.uint8
    result = []
    for n, side in [(batch(128), 224), (batch(64), 512)]:
        shape = (n, 3, side, side)
        for channels_last in (False, True):
            name = "color fwd" + (" channels_last" if channels_last else "")
            make = inputs(shape, device, channels_last=channels_last)
            nbytes = 2 * 4 * n * 3 * side * side
            baselines = [(compiled(formula), "torch.compile"), (formula, "eager")]
            if side == 224 and not channels_last:
                jitter = torchvision_jitter()
                baselines += [(jitter, "torchvision ColorJitter")] if jitter else []
                baselines += [(per_image_loop, "per-image loop")]
            result += [Case(name, shape, f32, make, ours, fn, label, nbytes)
                       for fn, label in baselines]

    n = batch(128)
    shape, numel_image = (n, 3, 224, 224), n * 3 * 224 * 224
    u8_compiled = compiled(formula_u8)
    large = (batch(64), 3, 512, 512)
    result += [
        Case("color u8->u8", shape, u8, inputs(shape, device, u8), ours, u8_compiled,
             "torch.compile", 2 * numel_image),
        Case("color u8->u8", shape, u8, inputs(shape, device, u8), ours, copy_of_image,
             "copy of the same tensor", 2 * numel_image),
        Case("color u8->u8", large, u8, inputs(large, device, u8), ours, u8_compiled,
             "torch.compile", 2 * large[0] * 3 * 512 * 512),
        Case("color u8->f32 mean/std", shape, u8, inputs(shape, device, u8), ours_u8_normalized,
             compiled(formula_u8_normalized), "torch.compile", 5 * numel_image),
        # Read grad and image, write the image's gradient (the parameters' are negligible).
        Case("color bwd", shape, f32, inputs(shape, device, with_grad=True),
             backward_only(ours), backward_only(compiled(formula)), "torch.compile",
             12 * numel_image),
        Case("color bwd op", shape, f32, inputs(shape, device, with_grad=True),
             backward_op, backward_only(compiled(formula)), "torch.compile",
             12 * numel_image),
    ]
    latency = (32, 3, 224, 224)
    result.append(Case("color fwd latency", latency, f32, inputs(latency, device), ours,
                       compiled(formula), "torch.compile", 2 * 4 * 32 * 3 * 224 * 224,
                       latency=True))
    return result
