"""Cases of gpuaug.jit: run-time compiled element-wise operators against PyTorch's kernels and
torch.compile of the same expression, and the time of a first call (compile and load) against
torch.cuda.jiterator's, with and without the disk cache."""

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import torch
import torch.nn.functional as F

import gpuaug

from .harness import Case, register, register_report

leaky_relu = gpuaug.jit.elementwise("bench_leaky_relu", "x > 0 ? x : x * opmath_t(0.01)")
fma = gpuaug.jit.elementwise("bench_fma", "x * y + y", inputs=("x", "y"))
silu = gpuaug.jit.elementwise(
    "bench_silu", "x / (1 + expf(-x))",
    grads=["grad / (1 + expf(-x)) * (1 + x * (1 - 1 / (1 + expf(-x))))"])


def python_fma(x, y):
    return x * y + y


def python_silu(x):
    return x / (1 + torch.exp(-x))


def forward_backward(op):
    def run(x, grad):
        return torch.autograd.grad(op(x), x, grad)

    return run


@register
def cases(numel: int, device: torch.device) -> list[Case]:
    if device.type != "cuda":
        return []
    f32 = torch.float32
    nbytes = 4 * numel

    def one():
        return (torch.randn(numel, device=device),)

    def two():
        return (torch.randn(numel, device=device), torch.randn(numel, device=device))

    def with_grad():
        return (torch.randn(numel, device=device, requires_grad=True), torch.randn(numel, device=device))

    def tiny():
        return (torch.randn(16, device=device),)

    compiled_fma = torch.compile(python_fma, fullgraph=True)
    compiled_silu = forward_backward(torch.compile(python_silu, fullgraph=True))
    return [
        Case("jit leaky_relu", (numel,), f32, one, leaky_relu, lambda x: F.leaky_relu(x, 0.01),
             "F.leaky_relu", 2 * nbytes),
        Case("jit x*y+y", (numel,), f32, two, fma, compiled_fma, "compile(x*y+y)", 3 * nbytes),
        # Forward saves x; backward reads x and grad and writes grad_x: 2 + 3 tensors' traffic.
        Case("jit silu fwd+bwd", (numel,), f32, with_grad, forward_backward(silu), compiled_silu,
             "compile(silu) fwd+bwd", 5 * nbytes),
        # A steady stream of calls on 16 elements: the host's cost per call.
        Case("jit leaky_relu tiny", (16,), f32, tiny, leaky_relu, torch.relu, "torch.relu", None,
             hold_gpu=False, rotate_inputs=False),
        Case("relu tiny", (16,), f32, tiny, gpuaug.relu, torch.relu, "torch.relu", None,
             hold_gpu=False, rotate_inputs=False),
    ]


def first_call_ms(call, x) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    call(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def jiterator_first_call(x, k: int) -> float:
    # A new constant is a new source: jiterator caches by source.
    code = f"template <typename T> T leaky_{k}(T x) {{ return x > T(0) ? x : x * T(0.0{k + 1}); }}"
    return first_call_ms(torch.cuda.jiterator._create_jit_fn(code), x)


def gpuaug_first_call(x, k: int) -> float:
    op = gpuaug.jit.elementwise(f"first_call_{k}_{os.getpid()}", f"x > 0 ? x : x * opmath_t(0.0{k + 1})")
    return first_call_ms(op, x)


CACHED_CHILD = textwrap.dedent("""
    import time, torch, gpuaug
    x = torch.randn(1 << 20, device="cuda")
    torch.relu(x); torch.cuda.synchronize()   # the context and PyTorch's own kernels are ready
    op = gpuaug.jit.elementwise("disk_cached_first_call", "x > 0 ? x : x * opmath_t(0.01)")
    start = time.perf_counter(); op(x); torch.cuda.synchronize()
    print((time.perf_counter() - start) * 1e3, list(torch.ops.gpuaug._jit_cache_info()))
""")


def second_process_ms() -> tuple[float, list]:
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, GPUAUG_CACHE_DIR=cache_dir)
        for _ in range(2):   # the first fills the cache
            out = subprocess.run([sys.executable, "-c", CACHED_CHILD], env=env, check=True,
                                 capture_output=True, text=True).stdout.split(maxsplit=1)
    return float(out[0]), out[1].strip()


@register_report("jit first call")
def compile_times(device: torch.device) -> list[dict]:
    if device.type != "cuda":
        return []
    x = torch.randn(1 << 20, device=device)
    jiterator = statistics.median(jiterator_first_call(x, k) for k in range(3))
    ours = statistics.median(gpuaug_first_call(x, k) for k in range(3))
    cached, counters = second_process_ms()
    return [
        {"name": "first call, torch.cuda.jiterator leaky relu (median of 3)", "value": jiterator, "unit": "ms"},
        {"name": "first call, gpuaug.jit leaky relu (median of 3)", "value": ours, "unit": "ms"},
        {"name": f"first call, second process with GPUAUG_CACHE_DIR (compiled, from disk, loaded: {counters})",
         "value": cached, "unit": "ms"},
    ]
