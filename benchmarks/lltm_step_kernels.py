"""Where the GPU's time goes in an LLTM training step, and what the products' other orientations
would cost.

    python benchmarks/lltm_step_kernels.py

For each size: the CUDA kernels of one training step (four time steps, MSE, backward, SGD; the
benchmark's `training_step`) under torch.profiler, ours and the plain cell's, as microseconds
per step and calls per step; then the GPU time in a CUDA graph of each product of the cell in
several orientations, under cuBLAS and cuBLASLt. TF32 off.
"""

import torch
from torch.profiler import ProfilerActivity, profile

import gpuaug
from gpuaug.benchmark.lltm import SIZES, TRAIN_STEPS, PlainLLTM, training_step
from lltm_host_costs import graph_us

PROFILED_STEPS = 5


def step_kernels(step, label):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED_STEPS):
            step()
        torch.cuda.synchronize()
    rows = sorted(((e.device_time_total / PROFILED_STEPS, e.count // PROFILED_STEPS, e.key)
                   for e in prof.key_averages() if e.device_time_total > 0), reverse=True)
    print(f"\n{label}: us per training step, calls per step")
    for us, calls, name in rows:
        print(f"  {us:8.1f}  x{calls:3d}  {name[:100]}")
    print(f"  {sum(us for us, _, _ in rows):8.1f}  in all")


def product_variants(b, i, s, w, dev):
    x = torch.randn(b, s + i, device=dev)
    h, x_in = x[:, :s].contiguous(), x[:, s:].contiguous()
    g = torch.randn(3 * s, b, device=dev)       # the gates' gradient, gate-major (ours)
    g_rows = torch.randn(b, 3 * s, device=dev)  # sample-major (the plain cell's)
    w_h = w[:, :s]
    gates = torch.empty(3 * s, b, device=dev)

    def forward_split_along_k():
        torch.mm(w_h, h.t(), out=gates)
        gates.addmm_(w[:, s:], x_in.t())

    return {
        "forward W @ X^T (ours)": lambda: torch.mm(w, x.t()),
        "forward X @ W^T": lambda: torch.mm(x, w.t()),
        "forward as two products along K": forward_split_along_k,
        "grad W: G @ X (ours)": lambda: torch.mm(g, x),
        "grad W: (X^T @ G^T)": lambda: torch.mm(x.t(), g.t()),
        "grad W: sample-major G": lambda: torch.mm(g_rows.t(), x),
        "grad h^T: W_h^T @ G (ours)": lambda: torch.mm(w_h.t(), g),
        "grad h: G^T @ W_h": lambda: torch.mm(g.t(), w_h),
        "grad X^T: W^T @ G (ours)": lambda: torch.mm(w.t(), g),
        "grad X: G @ W, sample-major (plain)": lambda: torch.mm(g_rows, w),
    }


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for b, i, s in SIZES:
        ours = gpuaug.nn.LLTM(i, s, device=dev)
        sequence = torch.randn(TRAIN_STEPS, b, i, device=dev)
        target = torch.randn(b, s, device=dev)
        step_kernels(training_step(ours, sequence, target), f"ours, B, I, S = {b}, {i}, {s}")
        step_kernels(training_step(PlainLLTM(ours), sequence, target),
                     f"plain, B, I, S = {b}, {i}, {s}")
        variants = product_variants(b, i, s, ours.weights.detach(), dev)
        for backend in ["cublas", "cublaslt"]:
            torch.backends.cuda.preferred_blas_library(backend)
            print(f"\nproducts, GPU us in a CUDA graph, {backend}")
            for name, fn in variants.items():
                print(f"  {name:38s} {graph_us(fn):8.1f}")
        torch.backends.cuda.preferred_blas_library("cublas")


if __name__ == "__main__":
    main()
