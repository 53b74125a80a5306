"""User-defined element-wise operators, compiled at run time for the GPU in use.

``gpuaug.jit.elementwise`` turns a CUDA C++ expression into an operator that broadcasts like
PyTorch's, takes float32, float64, float16 and bfloat16 CUDA tensors, is differentiable when given
gradient expressions, and runs under torch.compile(fullgraph=True) without a graph break: every
call goes through the registered op ``torch.ops.gpuaug.jit_elementwise``.

NVRTC compiles the kernel on first use for each dtype, layout and GPU architecture (a few tens of
milliseconds); the process keeps it, and with ``GPUAUG_CACHE_DIR`` set so does the disk, for the
next process.
"""

from typing import Callable, Optional, Sequence

import torch

__all__ = ["elementwise", "ElementwiseOperator"]

_RESERVED = ("grad", "opmath_t")
_MAX_INPUTS = 8


def _check_identifier(what: str, value) -> None:
    if not isinstance(value, str) or not value.isidentifier() or not value.isascii():
        raise ValueError(f"gpuaug.jit.elementwise: expected {what} to be a C identifier, but got {value!r}")


class ElementwiseOperator:
    """A run-time compiled element-wise operator; call it with one tensor per input name."""

    def __init__(self, name: str, expression: str, inputs: Sequence[str],
                 grads: Optional[Sequence[str]], cpu_fallback: Optional[Callable]):
        _check_identifier("'name'", name)
        if not isinstance(expression, str) or not expression.strip():
            raise ValueError(f"gpuaug.jit.elementwise '{name}': 'expression' must be a non-empty string")
        if isinstance(inputs, str):
            inputs = (inputs,)
        inputs = list(inputs)
        if not 1 <= len(inputs) <= _MAX_INPUTS:
            raise ValueError(f"gpuaug.jit.elementwise '{name}': expected 1 to {_MAX_INPUTS} inputs, "
                             f"but got {len(inputs)}")
        for input_name in inputs:
            _check_identifier("each input name", input_name)
            if input_name in _RESERVED or input_name.lower().startswith("gpuaug_"):
                raise ValueError(f"gpuaug.jit.elementwise '{name}': the input name '{input_name}' is "
                                 "reserved (grad, opmath_t, gpuaug_*)")
        if len(set(inputs)) != len(inputs):
            raise ValueError(f"gpuaug.jit.elementwise '{name}': input names repeat: {inputs}")
        if grads is not None:
            if isinstance(grads, str):
                grads = (grads,)
            grads = list(grads)
            if len(grads) != len(inputs) or not all(isinstance(g, str) and g.strip() for g in grads):
                raise ValueError(f"gpuaug.jit.elementwise '{name}': expected 'grads' to hold one "
                                 f"non-empty expression per input ({', '.join(inputs)}), but got {grads!r}")
        self.name = name
        self.expression = expression
        self.inputs = inputs
        self.grads = grads
        self.cpu_fallback = cpu_fallback

    def __call__(self, *tensors: torch.Tensor) -> torch.Tensor:
        if len(tensors) != len(self.inputs):
            raise TypeError(f"gpuaug.jit operator '{self.name}' takes {len(self.inputs)} tensors "
                            f"({', '.join(self.inputs)}), but got {len(tensors)}")
        for input_name, t in zip(self.inputs, tensors):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"gpuaug.jit operator '{self.name}': expected '{input_name}' to be a "
                                f"torch.Tensor, but got {type(t).__name__}")
        if self.cpu_fallback is not None and tensors[0].device.type == "cpu":
            if self.grads is None and torch.is_grad_enabled() and any(
                    t.requires_grad for t in tensors):
                # autograd would differentiate the fallback's own PyTorch ops, where the
                # operator on CUDA has no gradient: a backward raises on every device alike
                return _WithoutGradient.apply(self.name, self.cpu_fallback, *tensors)
            return self.cpu_fallback(*tensors)
        return torch.ops.gpuaug.jit_elementwise.default(
            self.name, self.expression, self.inputs, list(tensors), self.grads)

    def ptx(self, dtype: torch.dtype = torch.float32, arch: int = 80, layout: str = "vectorized") -> str:
        """The PTX of the kernel for inputs of ``dtype`` and compute capability ``arch`` (80 for
        sm_80), for one ``layout``: "vectorized" (contiguous, 16-byte aligned), "contiguous",
        "strided32" or "strided64". Compiles with NVRTC and needs no GPU."""
        return torch.ops.gpuaug._jit_elementwise_ptx(self.name, self.expression, self.inputs, dtype,
                                                     arch, layout)

    def __repr__(self) -> str:
        return (f"gpuaug.jit.elementwise({self.name!r}, {self.expression!r}, inputs={tuple(self.inputs)!r}"
                f", grads={None if self.grads is None else tuple(self.grads)!r})")


class _WithoutGradient(torch.autograd.Function):
    """A CPU fallback's result for an operator without ``grads``: its backward raises, naming the
    operator, as the CUDA operator's does."""

    @staticmethod
    def forward(ctx, name: str, fallback: Callable[..., torch.Tensor],
                *tensors: torch.Tensor) -> torch.Tensor:
        ctx.name = name
        return fallback(*tensors)

    @staticmethod
    def backward(ctx, *grad_outputs: torch.Tensor):
        raise RuntimeError(f"gpuaug::jit_elementwise '{ctx.name}': no gradient is defined (give "
                           "gpuaug.jit.elementwise its grads); its cpu_fallback ran on the CPU, "
                           "but the operator has no gradient there either")


def elementwise(name: str, expression: str, inputs: Sequence[str] = ("x",),
                grads: Optional[Sequence[str]] = None,
                cpu_fallback: Optional[Callable[..., torch.Tensor]] = None) -> ElementwiseOperator:
    """An element-wise operator from a CUDA C++ expression, compiled at run time by NVRTC.

    Args:
        name: a C identifier naming the operator (its kernels, its error messages).
        expression: the output, a CUDA C++ expression of the inputs, for example
            ``"x > 0 ? x : 0.1f * x"``. Inputs arrive as ``float`` (``double`` for float64
            tensors; ``opmath_t`` names that type) and CUDA's math functions are available
            (``expf``, ``tanh``, ``fma``...).
        inputs: the names of the inputs, one per tensor the operator takes; they broadcast like
            PyTorch's and must share one floating dtype and CUDA device.
        grads: one expression per input for the gradient of the loss with respect to it, of the
            inputs and ``grad`` (the gradient with respect to the output): for ``x * y``,
            ``("grad * y", "grad * x")``. Without them, a backward through the operator raises.
        cpu_fallback: called with the tensors instead when the first one is on the CPU (there is
            no run-time CPU compiler; without it a CPU tensor is an error naming the operator).
    """
    return ElementwiseOperator(name, expression, inputs, grads, cpu_fallback)
