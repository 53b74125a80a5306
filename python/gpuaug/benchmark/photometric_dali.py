"""NVIDIA DALI as a contender for per-sample ColorJitter + Normalize, the way a PyTorch user runs
it: a pipeline whose colour twist draws each sample's brightness, contrast, saturation and hue,
then crop_mirror_normalize to normalised float32 CHW, read through DALIGenericIterator into torch
tensors. DALI prefetches: its host work for the next batch overlaps the GPU's work on this one.

DALI's arithmetic is not torchvision's: contrast blends with a fixed centre (the middle of the
range), not the image's mean; hue is a rotation in YIQ, not HSV; the order is fixed; each step
keeps floats, not uint8. So it does less than gpuaug's ColorJitter (no reduction pass) and gives
other values; it is a speed contender only. Its images come in as decoders give them, HWC
(interleaved), so gpuaug's side of the case takes the same memory (channels_last).
"""

import itertools
from typing import List, Optional

import torch

# Batches DALI's source cycles through, so that it does not find its input in L2 (three
# headline-size batches are larger than a Hopper GPU's L2).
SOURCE_BATCHES = 3


def dali_jitter_normalize(brightness: float, contrast: float, saturation: float, hue: float,
                          mean: List[float], std: List[float]) -> Optional["DaliJitterNormalize"]:
    """The contender, or None without DALI."""
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return None
    return DaliJitterNormalize(brightness, contrast, saturation, hue, mean, std)


class DaliJitterNormalize:
    """A callable for the harness: each call returns DALI's next normalised batch, shaped as the
    image it is given. Its pipeline is built at the first call, for that shape and device; it
    reads its own random images of that shape (``batches``, [N, H, W, C]), not the call's."""

    def __init__(self, brightness: float, contrast: float, saturation: float, hue: float,
                 mean: List[float], std: List[float]) -> None:
        self.ranges = brightness, contrast, saturation, hue
        self.mean, self.std = mean, std
        self.batches: list = []
        self.iterator = None

    def _build(self, image: torch.Tensor) -> None:
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.plugin.pytorch import DALIGenericIterator

        n, channels, height, width = image.shape
        on_gpu = image.device.type == "cuda"
        for _ in range(SOURCE_BATCHES):
            batch = torch.randint(0, 256, (n, height, width, channels), dtype=torch.uint8,
                                  device=image.device)
            # DALI takes a CPU torch tensor's stream from torch.cuda, which needs a GPU
            self.batches.append(batch if on_gpu else batch.numpy())
        source = itertools.cycle(self.batches)
        brightness, contrast, saturation, hue = self.ranges

        def drawn(low: float, high: float):  # DALI refuses an empty range
            return fn.random.uniform(range=[low, high]) if high > low else low

        @pipeline_def(batch_size=n, num_threads=4, seed=0,
                      device_id=image.device.index if on_gpu else None)
        def pipeline():
            images = fn.external_source(source=lambda: next(source), batch=True, layout="HWC",
                                        device="gpu" if on_gpu else "cpu", no_copy=True)
            twisted = fn.color_twist(
                images, brightness=drawn(1 - brightness, 1 + brightness),
                contrast=drawn(1 - contrast, 1 + contrast),
                saturation=drawn(1 - saturation, 1 + saturation),
                hue=drawn(-360 * hue, 360 * hue))  # degrees
            return fn.crop_mirror_normalize(twisted, dtype=types.FLOAT, output_layout="CHW",
                                            mean=[255 * m for m in self.mean],
                                            std=[255 * s for s in self.std])

        self.iterator = DALIGenericIterator(pipeline(), ["images"])

    def __call__(self, image: torch.Tensor, *rest) -> torch.Tensor:
        if self.iterator is None:
            self._build(image)
        return next(self.iterator)[0]["images"]
