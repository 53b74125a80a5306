"""What augmentation costs a training step: a ResNet-18 step (bfloat16 autocast, channels_last,
SGD with momentum) on a 256x3x224x224 uint8 batch already on the GPU, through per-sample
ColorJitter(0.4, 0.4, 0.4, 0.1) + Normalize, against the same step fed a batch normalised
beforehand (neither augmentation nor conversion in the step). torchvision's ColorJitter +
Normalize (one draw per batch) and the torch.compile contender (per sample,
photometric_compiled.py) in the same step for comparison.
"""

from typing import Callable, Optional

import torch
import torch.nn.functional as F

from .. import transforms as T
from .harness import median_ms, register_report
from .photometric import MEAN, STD, torchvision_jitter_normalize
from .photometric_compiled import per_sample_jitter_normalize

BATCH = 256


def resnet18_training_step(device: torch.device) -> Optional[Callable[[torch.Tensor], None]]:
    """A fresh ResNet-18's bf16 training step on a batch of BATCH images, or None off the GPU or
    without torchvision."""
    if device.type != "cuda":
        return None
    try:
        from torchvision.models import resnet18
    except ImportError:
        return None
    torch.backends.cudnn.benchmark = True
    model = resnet18(num_classes=1000).to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (BATCH,), device=device)

    def step(x: torch.Tensor) -> None:
        with torch.autocast("cuda", torch.bfloat16):
            loss = F.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


@register_report("photometric resnet18 step")
def resnet18_step(device: torch.device) -> list[dict]:
    step = resnet18_training_step(device)
    if step is None:
        return []
    images = [torch.randint(0, 256, (BATCH, 3, 224, 224), dtype=torch.uint8, device=device)
              .contiguous(memory_format=torch.channels_last) for _ in range(2)]
    mean = torch.tensor(MEAN, device=device).view(3, 1, 1)
    std = torch.tensor(STD, device=device).view(3, 1, 1)
    normalised = [((im.float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)
                  for im in images]
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1, dtype=torch.float32, mean=MEAN, std=STD)
    timing = dict(device=device, warmup=5, runs=30)
    plain = median_ms(step, [(x,) for x in normalised], **timing)
    ours = median_ms(lambda x: step(jitter(x)), [(x,) for x in images], **timing)
    rows = [
        {"name": "ResNet-18 bf16 step, batch normalised beforehand", "value": plain, "unit": "ms"},
        {"name": "ResNet-18 bf16 step with gpuaug ColorJitter+Normalize", "value": ours, "unit": "ms"},
        {"name": "  gpuaug's cost (target: under 2%)", "value": 100 * (ours / plain - 1), "unit": "%"},
    ]
    contenders = [("torch.compile per-sample", per_sample_jitter_normalize(MEAN, STD)),
                  ("torchvision", torchvision_jitter_normalize(0.4, 0.4, 0.4, 0.1))]
    for label, augment in contenders:
        if augment is None:
            continue
        theirs = median_ms(lambda x: step(augment(x)), [(x,) for x in images], **timing)
        rows += [
            {"name": f"ResNet-18 bf16 step with {label} ColorJitter+Normalize", "value": theirs, "unit": "ms"},
            {"name": f"  {label}'s cost", "value": 100 * (theirs / plain - 1), "unit": "%"},
        ]
    return rows
