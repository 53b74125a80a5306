"""Cases of the element-wise operators: relu, mul and round_ste against PyTorch."""

import torch

import gpuaug

from .harness import Case, register


def round_idiom(x: torch.Tensor) -> torch.Tensor:
    """The usual straight-through rounding in plain PyTorch (three kernels)."""
    return x + (x.round() - x).detach()


def forward_backward(op):
    def run(x: torch.Tensor, grad: torch.Tensor):
        return torch.autograd.grad(op(x), x, grad)

    return run


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    f32 = torch.float32
    nbytes = 4 * numel
    cols = 1024 if numel % 1024 == 0 else 1

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device)

    def one():
        return (randn(numel),)

    def two():
        return (randn(numel), randn(numel))

    def matrix_and_row():
        return (randn(numel // cols, cols), randn(cols))

    def spread():  # several units apart, so that rounding changes most values
        return (randn(numel).mul_(8),)

    def spread_with_grad():
        return (randn(numel).mul_(8).requires_grad_(), randn(numel))

    return [
        Case("relu", (numel,), f32, one, gpuaug.relu, torch.relu, "torch.relu", 2 * nbytes),
        Case("mul", (numel,), f32, two, gpuaug.mul, torch.mul, "torch.mul", 3 * nbytes),
        Case("mul broadcast", (numel // cols, cols), f32, matrix_and_row, gpuaug.mul, torch.mul,
             "torch.mul", 2 * nbytes + 4 * cols),
        Case("round_ste", (numel,), f32, spread, gpuaug.round_ste, round_idiom,
             "x + (x.round() - x).detach()", 2 * nbytes),
        # The gradient is the identity, so the minimum is the forward's traffic: x read, y written.
        Case("round_ste fwd+bwd", (numel,), f32, spread_with_grad,
             forward_backward(gpuaug.round_ste), forward_backward(round_idiom),
             "idiom fwd+bwd", 2 * nbytes),
    ]
