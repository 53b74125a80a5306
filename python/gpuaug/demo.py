"""python -m gpuaug.demo: runs every gpuaug op on random inputs, on the GPU if there is one,
and checks values and gradients against PyTorch. Exits non-zero on a mismatch. Needs torch
alone; with the `demo` extra (pip install gpuaug[demo]) it also writes the picture of the colour
augmentation of real photographs."""

import sys

import torch
import torch.nn.functional as F

import gpuaug
from gpuaug import demo_color

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


def lltm(device: torch.device, dtype: torch.dtype) -> list:
    """One LLTM step and its gradients against the cell written in PyTorch (in float64)."""
    batch, features, state = 16, 24, 32
    g = torch.Generator().manual_seed(4)
    shapes = [(batch, features), (3 * state, state + features), (3 * state,), (batch, state),
              (batch, state)]
    args = [(torch.rand(shape, generator=g) * 2 - 1).to(device, dtype).requires_grad_()
            for shape in shapes]
    new_h, new_cell = gpuaug.lltm(*args)
    grads = [torch.randn_like(new_h), torch.randn_like(new_cell)]
    got = torch.autograd.grad((new_h, new_cell), args, grads)

    wide = [a.detach().double().requires_grad_() for a in args]
    x, weights, bias, old_h, old_cell = wide
    gates = torch.cat([old_h, x], 1) @ weights.t() + bias
    i, o, c = gates.chunk(3, dim=1)
    want_cell = old_cell + F.elu(c) * torch.sigmoid(i)
    want_h = torch.tanh(want_cell) * torch.sigmoid(o)
    want = torch.autograd.grad((want_h, want_cell), wide, [t.double() for t in grads])
    rows = [compare("lltm h", new_h, want_h.to(dtype)),
            compare("lltm cell", new_cell, want_cell.to(dtype))]
    names = ("input", "weights", "bias", "old_h", "old_cell")
    rows += [compare(f"lltm grad {name}", a, b.to(dtype)) for name, a, b in zip(names, got, want)]
    return rows


# A leaky ReLU compiled at run time (NVRTC, on CUDA); on the CPU its fallback runs.
LEAKY = gpuaug.jit.elementwise(
    "demo_leaky_relu", "x > 0 ? x : x * opmath_t(0.01)",
    grads=["x > 0 ? grad : grad * opmath_t(0.01)"],
    cpu_fallback=lambda x: F.leaky_relu(x, 0.01))


def jit(device: torch.device, dtype: torch.dtype) -> list:
    """gpuaug.jit.elementwise's operator and its gradient against F.leaky_relu."""
    x = torch.randn(8, 3, 64, 64, device=device, dtype=dtype, requires_grad=True)
    grad = torch.randn_like(x)
    y = LEAKY(x)
    (dx,) = torch.autograd.grad(y, x, grad)
    want = F.leaky_relu(x, 0.01)
    (want_dx,) = torch.autograd.grad(want, x, grad)
    op = "jit" if device.type == "cuda" else "jit fallback"
    return [compare(op, y, want), compare(f"{op} grad", dx, want_dx)]


# A section per family of ops: (device, dtype) -> rows of compare().
SECTIONS = [elementwise, lltm, jit]


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
    print(f"{'op':<22}{'device':<8}{'dtype':<10}{'max abs error':<15}status")
    for op, dev, dtype, error, ok in rows:
        print(f"{op:<22}{dev:<8}{dtype:<10}{error:<15.3g}{'ok' if ok else 'MISMATCH'}")
    failed = sum(not row[-1] for row in rows)
    print(f"\n{len(rows) - failed}/{len(rows)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
