"""Leaks: many calls of each op, forward and backward (torch.autograd.grad), leave memory flat:
CUDA's allocated bytes exactly as before, the process's resident set (RSS) within RSS_TOLERANCE, the
run-time compiled kernels' cache (torch.ops.gpuaug._jit_cache_info) unchanged for sources it has
seen, however many times the same operator object is made anew. 100,000 calls per op on CUDA (the
GPU check's test, test_cuda_100k_calls), 20,000 on the CPU (CI's, RSS only).

RSS_TOLERANCE, 8 MiB: a leak grows with the calls, and every call makes a few tensors (a
TensorImpl with its storage is some hundreds of bytes, autograd's node and saved variables as
much again). 8 MiB is 84 bytes per call over 100,000 calls (any object kept per call), 420 over
20,000 (a tensor kept per call, with or without its data). What is not a leak stays far below
it: after the warm-up, 20,000 CPU calls of each op grew the RSS by 0.0 to 0.1 MiB (2 cores).
"""
import gc
import os
import resource
import time

import pytest
import torch

from gpuaug_testing import (EVERY_OP, assert_same_bits, call_op, forward_backward, jit_fma,
                            on_device, op_case, requires_cuda)

RSS_TOLERANCE = 8 * 2**20
WARMUP = 500


def rss():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:   # no /proc: the peak, which a leak raises as well
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def calls(name, inputs, grads, n):
    # The run-time compiled operator is made anew for every call, from the same source.
    for _ in range(n):
        jit_op = jit_fma("leaks_fma") if name == "jit_elementwise" else None
        torch.autograd.grad(call_op(name, inputs, jit_op), inputs, grads)


def snapshot(device):
    """CUDA's allocated bytes (0 on the CPU), the RSS and the kernel cache's counters, once every
    launched kernel has finished and every unreachable object is freed."""
    if device == "cuda":
        torch.cuda.synchronize()
    gc.collect()
    allocated = torch.cuda.memory_allocated() if device == "cuda" else 0
    return allocated, rss(), list(torch.ops.gpuaug._jit_cache_info())


def check_flat(name, device, n):
    inputs, grads = on_device(op_case(name, seed=3, small=True), device)
    first = forward_backward(name, inputs, grads, jit_fma("leaks_fma"))
    calls(name, inputs, grads, WARMUP)
    allocated, resident, jit_cache = snapshot(device)
    start = time.perf_counter()
    calls(name, inputs, grads, n)
    seconds = time.perf_counter() - start
    allocated_after, resident_after, jit_cache_after = snapshot(device)
    assert allocated_after == allocated, (
        f"{name}: {allocated_after - allocated} bytes of CUDA memory more after {n} calls")
    growth = resident_after - resident
    assert growth < RSS_TOLERANCE, f"{name}: RSS grew by {growth / 2**20:.1f} MiB in {n} calls"
    assert jit_cache_after == jit_cache, f"{name}: kernels compiled or loaded again"
    # And the calls still compute what the first did.
    assert_same_bits(forward_backward(name, inputs, grads, jit_fma("leaks_fma")), first, name)
    print(f"{name} on {device}: {n} calls in {seconds:.1f} s ({seconds / n * 1e6:.0f} us each), "
          f"RSS {growth / 2**20:+.2f} MiB")


@pytest.mark.parametrize("name", [n for n in EVERY_OP if n != "jit_elementwise"])
def test_cpu_20k_calls(name):
    check_flat(name, "cpu", 20_000)


@requires_cuda
@pytest.mark.parametrize("name", EVERY_OP)
def test_cuda_100k_calls(name):
    """The GPU check's leak test: 100,000 calls per op."""
    check_flat(name, "cuda", 100_000)
