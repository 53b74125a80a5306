"""Cases of lltm: the fused cell against the same cell in plain PyTorch.

Sizes (B, I, S): 16, 32, 128 (host-bound) and 256, 512, 1024 (matrix products dominate). TF32 is
off for every contender. Calls are timed as a steady stream (no GPU hold): at these sizes the
host's dispatch is most of the cost, and it is what a training loop pays. Baselines: the plain
cell eagerly, torch.compile of it (default mode, static shapes), and, for work captured in a CUDA
graph, the same plain cell captured the same way, which leaves the GPU's time alone. The 32-step
sequence is reported beside nn.LSTMCell of the same state size.
"""

import functools
from typing import Callable

import torch
import torch.nn.functional as F

import gpuaug

from .harness import Case, register

SIZES = [(16, 32, 128), (256, 512, 1024)]
TRAIN_STEPS = 4      # time steps per training step
SEQUENCE_STEPS = 32


def plain_lltm(input, weights, bias, old_h, old_cell):
    gates = F.linear(torch.cat([old_h, input], dim=1), weights, bias)
    i, o, c = gates.chunk(3, dim=1)
    new_cell = old_cell + F.elu(c) * torch.sigmoid(i)
    return torch.tanh(new_cell) * torch.sigmoid(o), new_cell


class PlainLLTM(torch.nn.Module):
    def __init__(self, cell: gpuaug.nn.LLTM):
        super().__init__()
        self.weights = torch.nn.Parameter(cell.weights.detach().clone())
        self.bias = torch.nn.Parameter(cell.bias.detach().clone())

    def forward(self, input, state):
        return plain_lltm(input, self.weights, self.bias, *state)


def without_grad(fn: Callable) -> Callable:
    def run(*args):
        with torch.no_grad():
            return fn(*args)
    return run


def forward_backward(cell: Callable) -> Callable:
    def run(input, weights, bias, old_h, old_cell, grad_h, grad_cell):
        outputs = cell(input, weights, bias, old_h, old_cell)
        return torch.autograd.grad(outputs, (input, weights, bias, old_h, old_cell),
                                   (grad_h, grad_cell))
    return run


def cell_inputs(b: int, i: int, s: int, device: torch.device, requires_grad: bool):
    cell = gpuaug.nn.LLTM(i, s, device=device)
    args = [torch.randn(b, i, device=device), cell.weights.detach(), cell.bias.detach(),
            torch.randn(b, s, device=device), torch.randn(b, s, device=device)]
    args = [a.clone().requires_grad_(requires_grad) for a in args]
    if requires_grad:
        args += [torch.randn(b, s, device=device), torch.randn(b, s, device=device)]
    return tuple(args)


def capture(fn: Callable[[], object]) -> torch.cuda.CUDAGraph:
    """fn captured in a CUDA graph after warm-up on a side stream (PyTorch's recipe)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def training_step(cell: torch.nn.Module, sequence, target) -> Callable[[], object]:
    """Forward over the sequence, MSE loss, backward, SGD step, as one callable."""
    optimizer = torch.optim.SGD(cell.parameters(), lr=0.01, momentum=0.9)
    zeros = torch.zeros_like(target)

    def step():
        optimizer.zero_grad(set_to_none=False)
        state = (zeros, zeros)
        for x in sequence.unbind(0):
            state = cell(x, state)
        F.mse_loss(state[0], target).backward()
        optimizer.step()
    return step


def graphed_training_steps(b, i, s, device):
    ours = gpuaug.nn.LLTM(i, s, device=device)
    plain = PlainLLTM(ours)
    sequence = torch.randn(TRAIN_STEPS, b, i, device=device)
    target = torch.randn(b, s, device=device)
    return (capture(training_step(ours, sequence, target)),
            capture(training_step(plain, sequence, target)))


def replay_first(ours_graph, plain_graph):  # the Case's `ours`
    ours_graph.replay()


def replay_second(ours_graph, plain_graph):  # its baseline
    plain_graph.replay()


def sequence_cells(b: int, i: int, s: int, device: torch.device):
    """Ours, the plain LLTM and nn.LSTMCell of the same sizes, and a sequence for them."""
    ours = gpuaug.nn.LLTM(i, s, device=device)
    return ours, PlainLLTM(ours), torch.nn.LSTMCell(i, s, device=device), \
        torch.randn(SEQUENCE_STEPS, b, i, device=device)


def unrolled_forward_backward(cell: torch.nn.Module, sequence: torch.Tensor):
    state_size = cell.hidden_size if isinstance(cell, torch.nn.LSTMCell) else cell.bias.shape[0] // 3
    h = c = sequence.new_zeros(sequence.shape[1], state_size)
    for x in sequence.unbind(0):
        h, c = cell(x, (h, c))
    return torch.autograd.grad(h.sum(), list(cell.parameters()))


def sequence_ours(ours, plain, lstm, sequence):
    return unrolled_forward_backward(ours, sequence)


def sequence_plain(ours, plain, lstm, sequence):
    return unrolled_forward_backward(plain, sequence)


def sequence_lstm(ours, plain, lstm, sequence):
    return unrolled_forward_backward(lstm, sequence)


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    f32 = torch.float32
    ours_fwd, plain_fwd = without_grad(gpuaug.lltm), without_grad(plain_lltm)
    compiled_fwd = without_grad(torch.compile(plain_lltm, fullgraph=True, dynamic=False))
    ours_train = forward_backward(gpuaug.lltm)
    plain_train = forward_backward(plain_lltm)
    compiled_train = forward_backward(torch.compile(plain_lltm, fullgraph=True, dynamic=False))
    steady = dict(bytes_moved=None, hold_gpu=False)
    result = []
    for b, i, s in SIZES:
        shape = (b, i, s)
        no_grad_inputs = functools.partial(cell_inputs, b, i, s, device, False)
        grad_inputs = functools.partial(cell_inputs, b, i, s, device, True)
        result += [
            Case("lltm fwd", shape, f32, no_grad_inputs, ours_fwd, plain_fwd, "eager", **steady),
            Case("lltm fwd", shape, f32, no_grad_inputs, ours_fwd, compiled_fwd, "torch.compile",
                 **steady),
            Case("lltm fwd+bwd", shape, f32, grad_inputs, ours_train, plain_train, "eager",
                 **steady),
            Case("lltm fwd+bwd", shape, f32, grad_inputs, ours_train, compiled_train,
                 "torch.compile", **steady),
        ]
        if device.type == "cuda":
            def graphed_cell(grad_inputs=grad_inputs):
                ours_args, plain_args = grad_inputs(), grad_inputs()
                return (capture(lambda: ours_train(*ours_args)),
                        capture(lambda: plain_train(*plain_args)))
            result += [
                Case("lltm fwd+bwd, CUDA graph", shape, f32, graphed_cell, replay_first,
                     replay_second, "eager, same graph", rotate_inputs=False, **steady),
                Case(f"lltm train step ({TRAIN_STEPS} steps), CUDA graph", shape, f32,
                     functools.partial(graphed_training_steps, b, i, s, device), replay_first,
                     replay_second, "eager, same graph", rotate_inputs=False, **steady),
            ]
        cells = functools.partial(sequence_cells, b, i, s, device)
        name = f"lltm {SEQUENCE_STEPS}-step sequence fwd+bwd"
        result += [
            Case(name, shape, f32, cells, sequence_ours, sequence_plain, "eager",
                 rotate_inputs=False, **steady),
            Case(name, shape, f32, cells, sequence_ours, sequence_lstm, "nn.LSTMCell (4 gates)",
                 rotate_inputs=False, **steady),
        ]
    return result
