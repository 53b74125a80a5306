"""Data-parallel training with gpuaug.transforms.ColorAugment on PyTorch's own distributed engine.

    torchrun --nproc_per_node=2 examples/ddp_train.py --steps 200

Each rank makes its own synthetic batches on its device, colour-augments them with its own
generator (seeded from the base seed and the rank: the ranks draw different parameters, and the
same ones every run), and trains a small CNN wrapped in DistributedDataParallel, which averages
the gradients across the ranks. The label is where a bright square lies (which quadrant), a
property the colour augmentation keeps. Backend: NCCL when there is a GPU for every rank, else
Gloo on the CPU (`--device cpu` forces that). Exits non-zero unless the loss fell, the ranks drew
different augmentation parameters and the ranks' models ended identical.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from gpuaug.transforms import ColorAugment

SIZE, CLASSES, SIDE = 16, 4, 5   # image side, quadrants, side of the square


def seeded(seed, rank, stream, device):
    """A generator on `device` for one stream of random numbers (0 data, 1 augmentation)."""
    return torch.Generator(device).manual_seed((seed * 1000 + rank) * 2 + stream)


def make_batch(n, generator, device):
    """uint8 images [n, 3, SIZE, SIZE]: a random dark background, a brighter square of random
    colour in quadrant `label` (0 top left, 1 top right, 2 bottom left, 3 bottom right), noise."""
    def rand(*shape):
        return torch.rand(shape, generator=generator, device=device)

    labels = torch.randint(0, CLASSES, (n,), generator=generator, device=device)
    half = SIZE // 2
    top = (labels // 2) * half + (rand(n) * (half - SIDE + 1)).long()
    left = (labels % 2) * half + (rand(n) * (half - SIDE + 1)).long()
    ys = torch.arange(SIZE, device=device).view(1, SIZE, 1)
    xs = torch.arange(SIZE, device=device).view(1, 1, SIZE)
    square = ((ys >= top.view(n, 1, 1)) & (ys < top.view(n, 1, 1) + SIDE)
              & (xs >= left.view(n, 1, 1)) & (xs < left.view(n, 1, 1) + SIDE))
    image = (0.5 * rand(n, 3, 1, 1) + (0.3 + 0.2 * rand(n, 3, 1, 1)) * square.unsqueeze(1)
             + 0.05 * torch.randn((n, 3, SIZE, SIZE), generator=generator, device=device))
    return (image.clamp(0, 1) * 255).round().to(torch.uint8), labels


def say(line):
    sys.stdout.write(line + "\n")   # one write a line, so the ranks' lines do not interleave
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="auto: CUDA with NCCL if there is a GPU for every rank, else CPU")
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    if "RANK" not in os.environ:
        parser.error("start it with torchrun, e.g. torchrun --nproc_per_node=2 " + sys.argv[0])

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = args.device == "cuda" or (
        args.device == "auto" and torch.cuda.is_available()
        and torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo",
                            device_id=device if use_cuda else None)

    torch.manual_seed(args.seed)   # the same initial model everywhere (DDP broadcasts rank 0's)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (SIZE // 4) ** 2, CLASSES)).to(device)
    model = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    data = seeded(args.seed, rank, 0, device)
    augment = ColorAugment(color=(0.7, 1.3), brightness=(-0.2, 0.2), contrast=(0.7, 1.3),
                           generator=seeded(args.seed, rank, 1, device), dtype=torch.float32,
                           mean=[0.5] * 3, std=[0.25] * 3)   # uint8 in, normalised float32 out

    losses = torch.zeros(args.steps, dtype=torch.float64, device=device)
    interval = max(args.steps // 10, 1)
    for step in range(args.steps):
        images, labels = make_batch(args.batch, data, device)
        params = augment.sample_params(images)   # this rank's draws
        if step == 0:
            checksum = sum((i + 1) * v.double().sum()
                           for i, v in enumerate([params["color"], params["brightness"],
                                                  params["contrast"], params["gamma"]]))
        loss = nn.functional.cross_entropy(model(augment(images, params)), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()                          # DDP all-reduces the gradients here
        optimizer.step()
        losses[step] = loss.detach()
        if step % interval == 0 or step == args.steps - 1:
            say(f"rank {rank} step {step} loss {loss.item():.6f}")

    # The ranks drew different augmentation parameters.
    checksums = [torch.zeros(1, dtype=torch.float64, device=device) for _ in range(world)]
    dist.all_gather(checksums, checksum.reshape(1))
    checksums = [c.item() for c in checksums]
    say(f"rank {rank} augment checksum {checksums[rank]:.12g}")
    draws_differ = len(set(checksums)) == world

    # The models stayed in sync: every parameter equals rank 0's, bit for bit.
    difference = torch.zeros((), device=device)
    for p in model.parameters():
        reference = p.detach().clone()
        dist.broadcast(reference, src=0)
        difference = torch.maximum(difference, (p.detach() - reference).abs().max())
    dist.all_reduce(difference, op=dist.ReduceOp.MAX)

    # The loss fell: the mean over the ranks of the last 20 steps' losses against the first 20's.
    dist.all_reduce(losses)
    losses /= world
    k = min(20, max(args.steps // 2, 1))
    first, last = losses[:k].mean().item(), losses[-k:].mean().item()
    fell = last < 0.5 * first
    in_sync = difference.item() == 0
    say(f"rank {rank} final loss {loss.item():.6f}")
    if rank == 0:
        say(f"world {world} backend {dist.get_backend()} device {device.type}: mean loss of the "
            f"first {k} steps {first:.6f}, of the last {k} {last:.6f} "
            f"({'fell' if fell else 'did NOT fall below half'}); augmentation draws "
            f"{'differ' if draws_differ else 'do NOT differ'} between ranks; max parameter "
            f"difference from rank 0: {difference.item():g}")
    dist.destroy_process_group()
    # Every rank reaches the same verdict from the same all-reduced numbers.
    return 0 if fell and draws_differ and in_sync else 1


if __name__ == "__main__":
    code = main()
    # Leave without finalising the interpreter: a Gloo worker thread may still be releasing the
    # last collective's tensors, which needs Python and aborts the process once finalisation has
    # begun ("terminate called without an active exception"; see pytorch/pytorch#179291).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
