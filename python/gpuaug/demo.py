"""python -m gpuaug.demo: runs every gpuaug op on random inputs, on the GPU if there is one,
and checks values and gradients against PyTorch. Exits non-zero on a mismatch."""

import sys

import torch

import gpuaug

try:
    from gpuaug import demo_color
except ImportError as missing:  # the photographs and the PNG need what a plain install lacks
    sys.exit(f"python -m gpuaug.demo needs {missing.name}: pip install numpy pillow scikit-image")

DTYPES = (torch.float32, torch.bfloat16)
# Relative to the largest reference value: the ops round like PyTorch, but gradients summed over
# broadcast dimensions may add in another order.
RTOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def compare(op: str, got: torch.Tensor, want: torch.Tensor) -> tuple[str, str, str, float, bool]:
    assert got.shape == want.shape and got.dtype == want.dtype, (op, got.shape, want.shape)
    error = (got.double() - want.double()).abs().max().item()
    limit = RTOL[want.dtype] * max(1.0, want.double().abs().max().item())
    return op, str(got.device), str(got.dtype).removeprefix("torch."), error, error <= limit


def elementwise(device: torch.device, dtype: torch.dtype) -> list:
    """relu, mul (a per-channel gain, broadcast over an image batch) and round_ste."""
    images = torch.randn(8, 3, 64, 64, device=device, dtype=dtype, requires_grad=True)
    gains = torch.rand(3, 1, 1, device=device, dtype=dtype).add_(0.5).requires_grad_()
    grad = torch.randn_like(images)

    y = gpuaug.relu(images)
    (dx,) = torch.autograd.grad(y, images, grad)
    want = torch.relu(images)
    (want_dx,) = torch.autograd.grad(want, images, grad)
    rows = [compare("relu", y, want), compare("relu grad", dx, want_dx)]

    y = gpuaug.mul(images, gains)
    da, db = torch.autograd.grad(y, (images, gains), grad)
    want = torch.mul(images, gains)
    want_da, want_db = torch.autograd.grad(want, (images, gains), grad)
    rows += [compare("mul", y, want), compare("mul grad a", da, want_da),
             compare("mul grad b", db, want_db)]

    # Spread over several units, with exact ties (k + 0.5), which round up.
    x = images.detach().mul(4)
    x.view(-1)[::7] = torch.randint_like(x.view(-1)[::7], -8, 8).add_(0.5)
    x.requires_grad_()
    y = gpuaug.round_ste(x)
    (dx,) = torch.autograd.grad(y, x, grad)
    want = torch.floor(x.detach().double() + 0.5).to(dtype)
    rows += [compare("round_ste", y, want), compare("round_ste grad", dx, grad)]
    return rows


# A section per family of ops: (device, dtype) -> rows of compare().
SECTIONS = [elementwise]


def main() -> int:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"gpuaug {gpuaug.__version__}, torch {torch.__version__}, running on {name}")
    ties = torch.tensor([-1.5, -0.5, 0.5, 1.5, 2.5], device=device)
    print(f"ties {ties.tolist()}: round_ste {gpuaug.round_ste(ties).tolist()}, "
          f"torch.round {torch.round(ties).tolist()}\n")

    torch.manual_seed(0)
    rows = [row for section in SECTIONS for dtype in DTYPES for row in section(device, dtype)]
    rows += demo_color.run(device)
    print(f"{'op':<16}{'device':<8}{'dtype':<10}{'max abs error':<15}status")
    for op, dev, dtype, error, ok in rows:
        print(f"{op:<16}{dev:<8}{dtype:<10}{error:<15.3g}{'ok' if ok else 'MISMATCH'}")
    failed = sum(not row[-1] for row in rows)
    print(f"\n{len(rows) - failed}/{len(rows)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
