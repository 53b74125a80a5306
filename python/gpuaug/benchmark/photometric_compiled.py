"""The torch.compile contender for per-sample ColorJitter: what a user would write without
gpuaug. torchvision's uint8 formulas (transforms.v2.functional 0.26) on the whole batch, each
sample's factors a [N, 1, 1, 1] tensor, in one fixed order (brightness, contrast, saturation,
hue: torchvision's draws a random order per batch, gpuaug's per sample), then ToDtype and
Normalize, compiled by Inductor. test_benchmark.py checks it against gpuaug's replay of the
same factors in that order."""

from typing import Callable, Sequence

import torch


def _blend(image: torch.Tensor, other: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    # a uint8 image blended in float32, clamped, truncated back to uint8
    return (image * ratio + other * (1.0 - ratio)).clamp(0, 255).to(torch.uint8)


def _gray(image: torch.Tensor) -> torch.Tensor:
    r, g, b = image.float().unbind(-3)
    return torch.add(torch.add(r * 0.2989, g, alpha=0.587), b, alpha=0.114).unsqueeze(-3)


def _hue(image: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    x = image.float() / 255
    r, g, b = x.unbind(-3)
    high, low = x.amax(-3), x.amin(-3)
    flat = high == low
    spread = high - low
    s = spread / torch.where(flat, 1.0, high)
    divisor = torch.where(flat, 1.0, spread)
    rc, gc, bc = (high - r) / divisor, (high - g) / divisor, (high - b) / divisor
    h = torch.where(high == r, bc - gc, torch.where(high == g, (rc + 2.0) - bc, (gc + 4.0) - rc))
    h = torch.fmod(h * (1.0 / 6.0) + 1.0, 1.0)
    h = torch.remainder(h + shift.squeeze(-3), 1.0)
    h6 = h * 6
    sector = torch.floor(h6)
    f = h6 - sector
    sector = sector.to(torch.int32) % 6
    q = ((1.0 - s * f) * high).clamp(0.0, 1.0)
    t = ((s * f + (1.0 - s)) * high).clamp(0.0, 1.0)
    p = ((1.0 - s) * high).clamp(0.0, 1.0)
    # per sector (0..5): r (v, q, p, p, t, v), g (t, v, v, q, p, p), b (p, p, t, v, v, q)
    choices = torch.stack([high, q, p, t])
    picks = torch.tensor([[0, 1, 2, 2, 3, 0], [3, 0, 0, 1, 2, 2], [2, 2, 3, 0, 0, 1]],
                         device=image.device)
    rgb = torch.stack([choices.gather(0, picks[c][sector].unsqueeze(0)).squeeze(0)
                       for c in range(3)], dim=-3)
    return (rgb * 255.999).to(torch.uint8)


def jitter(image: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """uint8 [N, 3, H, W] through brightness, contrast, saturation and hue, the factors [N, 4]."""
    b, c, s, h = (factors[:, k].view(-1, 1, 1, 1) for k in range(4))
    image = (image * b).clamp(0, 255).to(torch.uint8)
    mean = _gray(image).floor().mean(dim=(-3, -2, -1), keepdim=True)
    image = _blend(image, mean, c)
    image = _blend(image, _gray(image).floor(), s)
    return _hue(image, h)


def per_sample_jitter_normalize(mean: Sequence[float], std: Sequence[float]) -> Callable:
    """Draws ColorJitter(0.4, 0.4, 0.4, 0.1)'s factors per sample, jitters, normalises."""
    def run(image: torch.Tensor, *rest) -> torch.Tensor:
        u = torch.rand(image.shape[0], 4, device=image.device)
        factors = torch.cat([0.6 + 0.8 * u[:, :3], -0.1 + 0.2 * u[:, 3:]], dim=1)
        out = jitter(image, factors).float() / 255
        m = torch.tensor(mean, device=image.device).view(-1, 1, 1)
        s = torch.tensor(std, device=image.device).view(-1, 1, 1)
        return (out - m) / s
    return torch.compile(run, dynamic=False)
