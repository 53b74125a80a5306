"""How many uint8 values of gpuaug.transforms' photometric transforms differ from torchvision's
(applied image by image with the same draws), on the GPU (or the device given), planar and
channels-last:
    python benchmarks/photometric_uint8_mismatch.py [cpu]
(from the repo root, torchvision installed)
"""
import sys

import torch

sys.path.insert(0, "test/python")
from gpuaug_testing import make_image  # noqa: E402
from photometric_testing import every_transform, torchvision_batch  # noqa: E402

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
for layout in ("contiguous", "channels_last"):
    for name in every_transform(torch.uint8):
        differ = total = worst = 0
        for seed in range(3):
            image = make_image([16, 3, 224, 224], torch.uint8, device, seed=seed)
            if layout == "channels_last":
                image = image.contiguous(memory_format=torch.channels_last)
            transform = every_transform(torch.uint8)[name]
            params = transform.sample_params(image)
            diff = (transform(image, params).cpu().int()
                    - torchvision_batch(image, transform.stages, params).int()).abs()
            differ += (diff > 0).sum().item()
            total += diff.numel()
            worst = max(worst, diff.max().item())
        print(f"{device} {layout} {name}: {differ} of {total} uint8 values differ from torchvision "
              f"(max {worst})", flush=True)
