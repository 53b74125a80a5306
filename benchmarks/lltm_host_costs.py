"""Where an LLTM call's time goes, per call: the host's time in a steady stream of calls (the
stream's pace when the GPU keeps up) and, for the products, the GPU's time in a CUDA graph.

    python benchmarks/lltm_host_costs.py

Each row is timed under ATen's cuBLASLt and its cuBLAS backend
(torch.backends.cuda.preferred_blas_library), TF32 off.
"""

import time

import torch

import gpuaug
from gpuaug.benchmark.lltm import cell_inputs, plain_lltm

CALLS = 2000


def host_us(fn, calls=CALLS):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def graph_us(fn, calls=50, replays=20):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (calls * replays) * 1e3


def rows(b, i, s):
    dev = torch.device("cuda")
    x_in, w, bias, h, c = cell_inputs(b, i, s, dev, False)
    x = torch.cat([h, x_in], 1)
    g = torch.randn(3 * s, b, device=dev)
    grad_args = cell_inputs(b, i, s, dev, True)
    ours_out = gpuaug.lltm(*grad_args[:5])
    plain_out = plain_lltm(*grad_args[:5])
    one = torch.randn(b, s, device=dev, requires_grad=True)
    two = one * 2
    tiny = torch.randn(16, device=dev)
    products = {
        "mm W @ X^T (forward)": lambda: torch.mm(w, x.t()),
        "mm G @ X (grad W)": lambda: torch.mm(g, x),
        "mm W^T @ G (grad X^T)": lambda: torch.mm(w.t(), g),
    }
    cases = {
        "torch.empty": lambda: torch.empty(b, s, device=dev),
        "torch.relu (16 floats)": lambda: torch.relu(tiny),
        # A custom operator's own floor: one registered op, one kernel.
        "gpuaug.mul (16 floats)": lambda: gpuaug.mul(tiny, tiny),
        "torch.ops.gpuaug.mul.default": lambda: torch.ops.gpuaug.mul.default(tiny, tiny),
        "torch.mul (16 floats)": lambda: torch.mul(tiny, tiny),
        "torch.cat": lambda: torch.cat([h, x_in], 1),
        **products,
        "gpuaug.lltm no_grad": lambda: gpuaug.lltm(x_in, w, bias, h, c),
        "plain lltm no_grad": lambda: plain_lltm(x_in, w, bias, h, c),
        "autograd.grad of x * 2": lambda: torch.autograd.grad(two, one, one, retain_graph=True),
        "gpuaug.lltm fwd+bwd": lambda: torch.autograd.grad(
            gpuaug.lltm(*grad_args[:5]), grad_args[:5], grad_args[5:]),
        "gpuaug backward alone": lambda: torch.autograd.grad(
            ours_out, grad_args[:5], grad_args[5:], retain_graph=True),
        "plain lltm fwd+bwd": lambda: torch.autograd.grad(
            plain_lltm(*grad_args[:5]), grad_args[:5], grad_args[5:]),
        "plain backward alone": lambda: torch.autograd.grad(
            plain_out, grad_args[:5], grad_args[5:], retain_graph=True),
    }
    out = []
    for name, fn in cases.items():
        with torch.no_grad() if "no_grad" in name else torch.enable_grad():
            host = host_us(fn)
            gpu = graph_us(fn) if name in products else float("nan")
        out.append((name, host, gpu))
    return out


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"default BLAS backend {torch.backends.cuda.preferred_blas_library()}")
    for size in [(16, 32, 128), (256, 512, 1024)]:
        table = {}
        for backend in ["cublaslt", "cublas"]:
            torch.backends.cuda.preferred_blas_library(backend)
            for name, host, gpu in rows(*size):
                table.setdefault(name, []).append((host, gpu))
        print(f"\nB, I, S = {size}: host us per call (GPU us in a graph)  cuBLASLt | cuBLAS")
        for name, runs in table.items():
            cells = "  |  ".join(f"{h:7.1f}" + (f" ({g:6.1f})" if g == g else "         ")
                                 for h, g in runs)
            print(f"  {name:28s} {cells}")


if __name__ == "__main__":
    main()
