"""Colour augmentation of real photographs: a PNG grid (ColorAugment's rows, then gpuaug.transforms'
photometric pipeline's), and checks of both against float64 references.

Called by ``python -m gpuaug.demo``; ``python -m gpuaug.demo_color [PATH] [--tile PX] [--palette]``
writes the grid alone (examples/color_augment_grid.png: ``--tile 160 --palette``). The photographs
are scikit-image's bundled samples (no download); they and the PNG need the `demo` extra
(``pip install gpuaug[demo]``), without which ``gpuaug.demo`` checks on a synthetic batch.
"""

import argparse
import os
import sys
from typing import Optional

import torch

from . import transforms as T
from ._program import Stage, photometric
from .transforms import ColorAugment

# The photographs and the PNG need the `demo` extra; the checks run without it, on a synthetic
# batch.
try:
    import numpy as np
    import skimage.data
    from PIL import Image
except ImportError as error:
    MISSING: Optional[str] = error.name
else:
    MISSING = None
EXTRA_HINT = "pip install gpuaug[demo] (numpy, pillow and scikit-image)"

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def require_extra() -> None:
    """A clear error where the photographs' packages are missing."""
    if MISSING is not None:
        raise ModuleNotFoundError(f"gpuaug.demo_color: the photographs and the picture need "
                                  f"{MISSING}, which is not installed: {EXTRA_HINT}",
                                  name=MISSING)


def load_photos(size: int) -> torch.Tensor:
    """The photographs, centre-cropped square and resized: uint8 [N, 3, size, size]."""
    require_extra()
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


def photometric_pipeline(generator: torch.Generator) -> T.Compose:
    """torchvision's photometric transforms, each sample drawing its own: the grid's last rows."""
    return T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=generator),
                      T.RandomGrayscale(0.15, generator=generator),
                      T.RandomSolarize(192.0, 0.2, generator=generator),
                      T.RandomEqualize(0.3, generator=generator)])


def write_grid(path: str, device: torch.device, tile: int = 256, rows: int = 2,
               palette: bool = False) -> None:
    """Originals in the first row, then `rows` independently augmented versions by ColorAugment
    and `rows` by the photometric pipeline; `palette`: 256 dithered colours, a file about a third
    the size (for the README's copy)."""
    require_extra()
    photos = load_photos(tile).to(device)
    # Somewhat wider ranges than ColorAugment's defaults, so that the effect shows.
    augment = ColorAugment(color=(0.7, 1.3), brightness=(-0.12, 0.12), contrast=(0.75, 1.3),
                           gamma=(0.75, 1.33), generator=torch.Generator(device).manual_seed(0))
    pipeline = photometric_pipeline(torch.Generator(device).manual_seed(0))
    augmented = [augment(photos) for _ in range(rows)] + [pipeline(photos) for _ in range(rows)]
    grid = torch.cat([photos] + augmented)   # uint8 in, uint8 out
    rows = len(augmented)
    grid = grid.view(rows + 1, len(PHOTOS), 3, tile, tile).permute(0, 3, 1, 4, 2)
    pixels = grid.reshape((rows + 1) * tile, len(PHOTOS) * tile, 3).cpu().numpy()
    image = Image.fromarray(pixels)
    if palette:   # quantize() dithers only onto a given palette
        colors = image.quantize(256, method=Image.Quantize.MEDIANCUT)
        image = image.quantize(palette=colors, dither=Image.Dither.FLOYDSTEINBERG)
    image.save(path, optimize=True)


def photometric_check(photos: torch.Tensor) -> tuple[str, str, str, float, bool]:
    """photometric on the images in float64 (brightness, saturation, contrast, invert, each
    sample its own factors) against torchvision's formulas written out in float64."""
    x = photos.double() / 255
    n = x.shape[0]
    g = torch.Generator().manual_seed(2)
    factors = torch.cat([0.6 + 0.8 * torch.rand(n, 3, generator=g, dtype=torch.float64),
                         torch.zeros(n, 1, dtype=torch.float64)], dim=1)
    stages = [Stage.BRIGHTNESS, Stage.SATURATION, Stage.CONTRAST, Stage.INVERT]
    out = photometric(x, stages, factors.to(x.device))
    brightness, saturation, contrast = (factors[:, i].to(x.device).view(-1, 1, 1, 1) for i in range(3))

    def gray(y: torch.Tensor) -> torch.Tensor:
        return 0.2989 * y[:, :1] + 0.587 * y[:, 1:2] + 0.114 * y[:, 2:]
    y = (x * brightness).clamp(0, 1)
    y = (saturation * y + (1 - saturation) * gray(y)).clamp(0, 1)
    y = (contrast * y + (1 - contrast) * gray(y).mean(dim=(1, 2, 3), keepdim=True)).clamp(0, 1)
    error = (out - (1 - y)).abs().max().item()
    return ("photometric", str(out.device), "f64", error, error <= 1e-12)


def synthetic_photos(size: int) -> torch.Tensor:
    """Smooth random colour fields in place of the photographs: uint8 [4, 3, size, size]."""
    g = torch.Generator().manual_seed(3)
    coarse = torch.rand([len(PHOTOS), 3, 8, 8], generator=g)
    fine = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bilinear",
                                           align_corners=False)
    return fine.mul(255).round().to(torch.uint8)


def run(device: Optional[torch.device] = None,
        path: str = "color_augment_grid.png") -> list[tuple[str, str, str, float, bool]]:
    """Writes the grid (with the `demo` extra) and checks ColorAugment on the photographs, or on
    a synthetic batch without them (uint8 in, float32 out, normalised), and photometric
    (float64) against float64 formulas. Returns rows of the demo's table: (op, device, dtype,
    max abs error, ok)."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if MISSING is None:
        write_grid(path, device)
        print(f"color_transform: wrote {os.path.abspath(path)}")
        photos = load_photos(224).to(device)
    else:
        print(f"color_transform: no picture ({MISSING} is missing: {EXTRA_HINT}); checking "
              "on a synthetic batch")
        photos = synthetic_photos(224).to(device)
    augment = ColorAugment(p=0.75, dtype=torch.float32, mean=MEAN, std=STD,
                           generator=torch.Generator(device).manual_seed(1))
    params = augment.sample_params(photos)
    out = augment(photos, params)
    error = (out.double() - reference(photos, params)).abs().max().item()
    # 2e-5 on [0, 1] (float32 with a fast pow on the GPU), magnified by 1 / std.
    return [("color_transform", str(out.device), "u8->f32", error, error <= 2e-5 / min(STD)),
            photometric_check(photos)]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m gpuaug.demo_color", description=__doc__)
    parser.add_argument("path", nargs="?", default="color_augment_grid.png")
    parser.add_argument("--tile", type=int, default=256, help="pixels per photograph")
    parser.add_argument("--palette", action="store_true", help="256 colours: a smaller file")
    args = parser.parse_args()
    if MISSING is not None:
        sys.exit(f"python -m gpuaug.demo_color needs {MISSING} for the photographs: {EXTRA_HINT}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    write_grid(args.path, device, args.tile, palette=args.palette)


if __name__ == "__main__":
    main()
