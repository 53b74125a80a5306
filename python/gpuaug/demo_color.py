"""Colour augmentation of real photographs: a PNG grid, and a check against a float64 reference.

Called by ``python -m gpuaug.demo``; ``python -m gpuaug.demo_color [PATH] [--tile PX] [--palette]``
writes the grid alone (examples/color_augment_grid.png: ``--tile 160 --palette``). The photographs
are scikit-image's bundled samples (no download).
"""

import argparse
import os
from typing import Optional

import numpy as np
import skimage.data
import torch
from PIL import Image

from .transforms import ColorAugment

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def load_photos(size: int) -> torch.Tensor:
    """The photographs, centre-cropped square and resized: uint8 [N, 3, size, size]."""
    tiles = []
    for name in PHOTOS:
        image = Image.fromarray(getattr(skimage.data, name)())
        side = min(image.size)
        left, top = (image.width - side) // 2, (image.height - side) // 2
        image = image.crop((left, top, left + side, top + side))
        tiles.append(np.asarray(image.resize((size, size), Image.LANCZOS)))
    return torch.from_numpy(np.stack(tiles)).permute(0, 3, 1, 2).contiguous()


def reference(x: torch.Tensor, params: dict) -> torch.Tensor:
    """The op's formula in float64, for a uint8 [N, C, H, W] batch and per-sample parameters."""
    x = x.double() / 255
    color = params["color"].double()[:, :, None, None]
    brightness, contrast, gamma = (params[k].double().view(-1, 1, 1, 1)
                                   for k in ("brightness", "contrast", "gamma"))
    scale = x.sum(1, keepdim=True) / ((x * color).sum(1, keepdim=True) + 0.01)
    y = (x * color * scale).clamp(0, 1) ** gamma + brightness
    y = (0.5 + (y - 0.5) * contrast).clamp(0, 1)
    y = torch.where(params["apply"].view(-1, 1, 1, 1), y, x)
    mean = torch.tensor(MEAN, dtype=torch.float64, device=x.device).view(-1, 1, 1)
    std = torch.tensor(STD, dtype=torch.float64, device=x.device).view(-1, 1, 1)
    return (y - mean) / std


def write_grid(path: str, device: torch.device, tile: int = 256, rows: int = 3,
               palette: bool = False) -> None:
    """Originals in the first row, `rows` independently augmented versions below; `palette`:
    256 dithered colours, a file about a third the size (for the README's copy)."""
    photos = load_photos(tile).to(device)
    # Somewhat wider ranges than ColorAugment's defaults, so that the effect shows.
    augment = ColorAugment(color=(0.7, 1.3), brightness=(-0.12, 0.12), contrast=(0.75, 1.3),
                           gamma=(0.75, 1.33), generator=torch.Generator(device).manual_seed(0))
    grid = torch.cat([photos] + [augment(photos) for _ in range(rows)])   # uint8 in, uint8 out
    grid = grid.view(rows + 1, len(PHOTOS), 3, tile, tile).permute(0, 3, 1, 4, 2)
    pixels = grid.reshape((rows + 1) * tile, len(PHOTOS) * tile, 3).cpu().numpy()
    image = Image.fromarray(pixels)
    if palette:   # quantize() dithers only onto a given palette
        colors = image.quantize(256, method=Image.Quantize.MEDIANCUT)
        image = image.quantize(palette=colors, dither=Image.Dither.FLOYDSTEINBERG)
    image.save(path, optimize=True)


def run(device: Optional[torch.device] = None,
        path: str = "color_augment_grid.png") -> tuple[str, str, str, float, bool]:
    """Writes the grid and checks ColorAugment on the photographs (uint8 in, float32 out,
    normalised) against the float64 formula. Returns a row of the demo's table:
    (op, device, dtype, max abs error, ok)."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    write_grid(path, device)
    print(f"color_transform: wrote {os.path.abspath(path)}")
    photos = load_photos(224).to(device)
    augment = ColorAugment(p=0.75, dtype=torch.float32, mean=MEAN, std=STD,
                           generator=torch.Generator(device).manual_seed(1))
    params = augment.sample_params(photos)
    out = augment(photos, params)
    error = (out.double() - reference(photos, params)).abs().max().item()
    # 2e-5 on [0, 1] (float32 with a fast pow on the GPU), magnified by 1 / std.
    return ("color_transform", str(out.device), "u8->f32", error, error <= 2e-5 / min(STD))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m gpuaug.demo_color", description=__doc__)
    parser.add_argument("path", nargs="?", default="color_augment_grid.png")
    parser.add_argument("--tile", type=int, default=256, help="pixels per photograph")
    parser.add_argument("--palette", action="store_true", help="256 colours: a smaller file")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    write_grid(args.path, device, args.tile, palette=args.palette)


if __name__ == "__main__":
    main()
