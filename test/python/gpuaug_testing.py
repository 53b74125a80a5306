"""Helpers shared by the gpuaug pytest suites (import them: `from gpuaug_testing import ...`).

References are computed in float64 from the (already rounded) low-precision inputs and rounded
once to the op's dtype: for relu, mul and round_ste that is exactly what the kernels must return
(half types are computed in float32, where a product of two half/bfloat16 values is exact).
"""
import math
import os
import pathlib
import sys

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]

# Absolute/relative tolerance per dtype for ops that are NOT a single correctly rounded step
# (composites, reductions in backward with broadcasting, fused compiled code). The element-wise
# gpuaug ops themselves are compared exactly (see assert_exact).
TOLERANCES = {
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}

CUDA = torch.cuda.is_available()
MULTI_GPU = CUDA and torch.cuda.device_count() >= 2
requires_cuda = pytest.mark.skipif(not CUDA, reason="CUDA is not available")
requires_two_gpus = pytest.mark.skipif(not MULTI_GPU, reason="needs two CUDA devices")

# Use as @pytest.mark.parametrize("device", DEVICES): the CUDA case is reported as skipped
# (not silently missing) on machines without a GPU.
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


def make_input(shape, dtype=torch.float32, device="cpu", seed=0, scale=4.0, requires_grad=False):
    """Random values of both signs, about a quarter of them exact halves (ties of round_ste),
    none of them zero. Generated on the CPU so every device sees the same numbers."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    ties = torch.rand(shape, generator=g) < 0.25
    x = torch.where(ties, torch.round(x * 2) / 2 + 0.5, x)   # k + 0.5, never 0
    x = torch.where(x == 0, torch.full_like(x, 0.75), x)
    return x.to(dtype).to(device).requires_grad_(requires_grad)


def relu_ref(x):
    x64 = x.detach().double()
    # x < 0 -> 0; NaN stays NaN (a comparison with NaN is false).
    return torch.where(x64 < 0, torch.zeros_like(x64), x64).to(x.dtype)


def relu_grad_ref(grad, x):
    return torch.where(x.detach().double() > 0, grad.detach().double(), 0.0).to(grad.dtype)


def mul_ref(a, b):
    return (a.detach().double() * b.detach().double()).to(a.dtype)


def round_ste_ref(x):
    # floor(x + 0.5) in float64 is exact for float32/half inputs of moderate size; float64 inputs
    # are random (never within an ulp of a tie), the hard cases have explicit tests.
    return torch.floor(x.detach().double() + 0.5).to(x.dtype)


def sum_to(t, shape):
    """Sum a broadcast result back to `shape` (reference for the mul gradients)."""
    lead = t.dim() - len(shape)
    t = t.sum(dim=tuple(range(lead))) if lead else t
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1)
    return t.sum(dim=dims, keepdim=True) if dims else t


def assert_sum_close(actual, terms):
    """actual == sum_to(terms, actual.shape) up to a float reduction's error: terms are float64
    values (each already rounded to actual's dtype, as the kernels round their products), and
    an accurate sum of n of them rounded to the dtype may be off by about
    eps * log2(n) * sum(|terms|)."""
    expected = sum_to(terms, actual.shape)
    n = max(terms.numel() // max(actual.numel(), 1), 1)
    eps = torch.finfo(actual.dtype).eps
    bound = eps * (2 + math.log2(n)) * sum_to(terms.abs(), actual.shape)
    error = (actual.double() - expected).abs()
    assert (error <= bound).all(), (
        f"reduction of {n} terms off by {error.max().item():.3g} "
        f"(allowed {bound.flatten()[error.flatten().argmax()].item():.3g})")


def assert_exact(actual, expected):
    """Same dtype, device, shape and values, bit for bit up to the sign of zero; NaN == NaN."""
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def assert_close(actual, expected):
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOLERANCES[expected.dtype])


def build_environment():
    """The environment for building C++ against the installed gpuaug: `python` and the tools pip
    installed (cmake, ninja) are this interpreter's."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    # libtorch_cuda needs the NCCL of torch's own wheel; a CUDA toolkit that carries an older one
    # in its lib folder (the one on CI's machines does) would otherwise be linked against first.
    nccl = pathlib.Path(torch.__file__).parent.parent / "nvidia" / "nccl" / "lib"
    if nccl.is_dir():
        env["LDFLAGS"] = f"-Wl,-rpath-link,{nccl}"
    return env
