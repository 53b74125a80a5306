"""gpuaug: fused PyTorch custom operators in C++/CUDA.

The operators live in ``torch.ops.gpuaug`` and work in eager mode, TorchScript, torch.compile
and torch.export; the functions here are thin typed wrappers over them.
"""

import os

import torch

try:
    from . import _build_info
except ImportError as e:  # the source tree, not an installed build
    raise ImportError(
        "gpuaug is not built: install it with `pip install --no-build-isolation .` "
        "from the gpuaug source folder"
    ) from e

__all__ = ["relu", "mul", "round_ste", "lltm", "color_transform", "photometric", "Stage", "jit",
           "nn", "transforms", "library_path", "cmake_prefix_path"]

__version__: str = _build_info.version

# The install prefix of the C++ library: pass it as CMAKE_PREFIX_PATH to find_package(gpuaug).
cmake_prefix_path: str = os.path.dirname(os.path.abspath(__file__))
library_path: str = os.path.join(cmake_prefix_path, "lib", "libgpuaug.so")


def _check_torch() -> None:
    # libgpuaug links against libtorch's C++ ABI, which changes between releases: a mismatch
    # would fail later with unresolved symbols or crash, so refuse up front.
    built = _build_info.torch_version
    running = torch.__version__
    problem = None
    if built.split("+")[0] != running.split("+")[0]:
        problem = f"it was built against PyTorch {built}, but PyTorch {running} is running"
    elif _build_info.with_cuda:
        running_cuda = torch.version.cuda
        built_cuda = _build_info.torch_cuda
        if running_cuda is None:
            problem = f"it was built with CUDA against PyTorch {built}, but PyTorch {running} has no CUDA"
        elif built_cuda and built_cuda.split(".")[0] != running_cuda.split(".")[0]:
            problem = (
                f"it was built against PyTorch {built} (CUDA {built_cuda}), but PyTorch "
                f"{running} uses CUDA {running_cuda}"
            )
    if problem:
        raise ImportError(
            f"gpuaug {__version__} cannot be loaded: {problem}. Rebuild it against this PyTorch "
            "with `pip install --no-build-isolation .` from the gpuaug source folder."
        )


_check_torch()
torch.ops.load_library(library_path)

from . import functional, jit, nn, transforms  # noqa: E402
from ._program import Stage, photometric  # noqa: E402
from .color import color_transform  # noqa: E402


def relu(x: torch.Tensor) -> torch.Tensor:
    """Rectified linear unit, ``max(x, 0)``.

    NaN stays NaN. The gradient is ``grad`` where ``x > 0`` and 0 elsewhere (0 at ``x == 0``).
    Floating dtypes (float32, float64, float16, bfloat16) on CPU or CUDA.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"gpuaug.relu: expected 'x' to be a torch.Tensor, but got {type(x).__name__}")
    return torch.ops.gpuaug.relu(x)


def mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element-wise product ``a * b`` with PyTorch broadcasting.

    ``a`` and ``b`` must have the same floating dtype and device (no type promotion). The
    gradients are ``grad * b`` and ``grad * a``, summed back to the shapes of ``a`` and ``b``.
    """
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"gpuaug.mul: expected 'a' to be a torch.Tensor, but got {type(a).__name__}")
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"gpuaug.mul: expected 'b' to be a torch.Tensor, but got {type(b).__name__}")
    return torch.ops.gpuaug.mul(a, b)


def round_ste(x: torch.Tensor) -> torch.Tensor:
    """Round half up, ``floor(x + 0.5)``, with a straight-through (identity) gradient.

    Ties round up (0.5 -> 1, -0.5 -> 0, 2.5 -> 3), unlike ``torch.round``, which rounds half to
    even. The result is exact: ``x + 0.5`` is never rounded first. One fused kernel for what
    the idiom ``x + (x.round() - x).detach()`` does in three.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"gpuaug.round_ste: expected 'x' to be a torch.Tensor, but got {type(x).__name__}")
    return torch.ops.gpuaug.round_ste(x)


def lltm(input: torch.Tensor, weights: torch.Tensor, bias: torch.Tensor, old_h: torch.Tensor,
         old_cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of the LLTM cell, fused; returns ``(new_h, new_cell)``::

        gates = cat([old_h, input], 1) @ weights.T + bias     # [B, 3S]: i, o, c in that order
        new_cell = old_cell + elu(c) * sigmoid(i)
        new_h = tanh(new_cell) * sigmoid(o)

    ``input`` ``[B, I]``, ``weights`` ``[3S, S + I]``, ``bias`` ``[3S]``, ``old_h`` and
    ``old_cell`` ``[B, S]``, all of one floating dtype (float32, float64, float16, bfloat16:
    the half types compute in float32) on one device. Differentiable in all five. The module
    form is :class:`gpuaug.nn.LLTM`.
    """
    # One chained test on the common path: a step of a small cell takes a few microseconds of the
    # host's time, and a dict and a loop here were a fair part of them.
    if not (isinstance(input, _Tensor) and isinstance(weights, _Tensor) and
            isinstance(bias, _Tensor) and isinstance(old_h, _Tensor) and
            isinstance(old_cell, _Tensor)):
        for name, value in zip(("input", "weights", "bias", "old_h", "old_cell"),
                               (input, weights, bias, old_h, old_cell)):
            if not isinstance(value, _Tensor):
                raise TypeError(f"gpuaug.lltm: expected '{name}' to be a torch.Tensor, but got "
                                f"{type(value).__name__}")
    return _lltm(input, weights, bias, old_h, old_cell)


_Tensor = torch.Tensor
_lltm = torch.ops.gpuaug.lltm.default   # the overload itself: no lookup through the packet
