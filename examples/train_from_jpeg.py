"""Training from JPEG bytes with the whole augmentation on the GPU: torchvision decodes a batch of
JPEGs on the device (a list of images of different sizes), one gpuaug call crops, flips, jitters,
converts and normalises them per sample, and a ResNet-18 takes a bf16 step; it prints images/s.

    python examples/train_from_jpeg.py [--folder DIR] [--batch 256] [--steps 20]

Without --folder it encodes random JPEGs of different sizes to stand in for a data set. On a
machine without a GPU it runs on the CPU (slowly: for checking, with a small --batch).
"""

import argparse
import pathlib
import time

import torch
import torch.nn.functional as F
import torchvision
from torchvision.io import decode_jpeg, encode_jpeg

import gpuaug.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def jpeg_bytes(folder, count, seed=0):
    """The files of `folder` as uint8 tensors of their bytes, or `count` random JPEGs."""
    if folder is not None:
        files = sorted(pathlib.Path(folder).glob("*.jp*g"))[:count]
        return [torchvision.io.read_file(str(f)) for f in files]
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(160, 320, (count, 2), generator=g).tolist()
    return [encode_jpeg(torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g))
            for h, w in sizes]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", help="a folder of JPEG files (default: random JPEGs)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    data = jpeg_bytes(args.folder, args.batch)
    pipeline = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(),
                          T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ToDtype(torch.float32, scale=True),
                          T.Normalize(MEAN, STD)])
    model = torchvision.models.resnet18(num_classes=1000).to(device,
                                                               memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = torch.randint(0, 1000, (len(data),), device=device)

    def step():
        images = decode_jpeg(data, device=device)  # a list of [3, H, W] uint8 on the device
        batch = pipeline(images).contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, torch.bfloat16):
            loss = F.cross_entropy(model(batch), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    step()  # warm-up: cuDNN's choices, the decoder's start
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss = loss.item()  # waits for the last step
    seconds = time.perf_counter() - start
    print(f"{args.steps * len(data) / seconds:.0f} images/s on {device} "
          f"(batch {len(data)}, {args.steps} steps, loss {loss:.3f})")


if __name__ == "__main__":
    main()
