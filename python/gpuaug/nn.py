"""Modules built on gpuaug's operators."""

import math
from typing import Tuple

import torch

__all__ = ["LLTM"]


class LLTM(torch.nn.Module):
    """The LLTM recurrent cell: an LSTM with no forget gate and an ELU candidate, one fused
    ``gpuaug::lltm`` call per step (see :func:`gpuaug.lltm`).

    ``forward(input, (h, c))`` takes ``input`` of shape ``[B, input_features]`` and a state of two
    ``[B, state_size]`` tensors, and returns the new state ``(new_h, new_cell)``. Parameters:
    ``weights`` ``[3 * state_size, state_size + input_features]`` (gates i, o, c, acting on
    ``cat([h, input], 1)``) and ``bias`` ``[3 * state_size]``, both uniform in
    ``[-1/sqrt(state_size), 1/sqrt(state_size)]``. Scripts with TorchScript and compiles with
    ``torch.compile(fullgraph=True)``.
    """

    def __init__(self, input_features: int, state_size: int, device=None, dtype=None) -> None:
        super().__init__()
        if input_features < 1 or state_size < 1:
            raise ValueError(f"gpuaug.nn.LLTM: expected positive input_features and state_size, "
                             f"but got {input_features} and {state_size}")
        self.input_features = input_features
        self.state_size = state_size
        factory = {"device": device, "dtype": dtype}
        self.weights = torch.nn.Parameter(
            torch.empty(3 * state_size, state_size + input_features, **factory))
        self.bias = torch.nn.Parameter(torch.empty(3 * state_size, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.state_size)
        for parameter in (self.weights, self.bias):
            torch.nn.init.uniform_(parameter, -bound, bound)

    def forward(self, input: torch.Tensor,
                state: Tuple[torch.Tensor, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        old_h, old_cell = state
        return torch.ops.gpuaug.lltm(input, self.weights, self.bias, old_h, old_cell)

    def extra_repr(self) -> str:
        return f"input_features={self.input_features}, state_size={self.state_size}"
