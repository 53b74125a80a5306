"""Markdown tables from the JSON that `python -m gpuaug.benchmark --json PATH` writes.

    python benchmarks/table.py benchmarks/results/h100.json     # every case and report of one GPU
    python benchmarks/table.py --headline benchmarks/results/h100.json benchmarks/results/h200.json

The first form is the per-GPU table of docs/benchmarks.md, the second the README's headline table
(a column per file). test/python/test_docs.py checks that both docs hold what this prints.
"""
import argparse
import json
import sys

# The README's rows: (case name, start of the baseline's name, what the row says).
HEADLINE = [
    ("photometric jitter u8->f32", "torchvision ColorJitter",
     "ColorJitter + Normalize, uint8 -> float32", "torchvision"),
    ("photometric jitter u8->f32", "Kornia", "ColorJitter + Normalize, uint8 -> float32", "Kornia"),
    ("photometric jitter per sample u8->f32", "torch.compile",
     "ColorJitter + Normalize, uint8 -> float32", "`torch.compile`, per sample"),
    ("photometric distort u8->u8", "torchvision", "RandomPhotometricDistort, uint8", "torchvision"),
    ("photometric 5-transform compose u8->u8", "torchvision", "five-transform Compose, uint8",
     "torchvision"),
    ("photometric jitter gradient f32, hue 0.1", "Kornia", "ColorJitter + Normalize, image gradient",
     "Kornia"),
    ("color fwd", "torch.compile", "`color_transform`, float32", "`torch.compile`"),
    ("round_ste fwd+bwd", "idiom", "`round_ste`, forward + backward",
     "`x + (x.round() - x).detach()`"),
    ("lltm train step (4 steps), CUDA graph", "eager", "LLTM training step (B=16), CUDA graph",
     "the cell in PyTorch"),
]


def load(path):
    with open(path) as f:
        return json.load(f)


def shape(case):
    dims = case["shape"]
    if len(dims) == 1 and dims[0] >= 1024 and dims[0] & (dims[0] - 1) == 0:
        return f"2^{dims[0].bit_length() - 1}"
    return "x".join(str(d) for d in dims)


def number(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def speedup(ratio):
    return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def gpu(results):
    """The device's name without its vendor: "H100 80GB HBM3", "H200"."""
    return results["device"].removeprefix("NVIDIA ")


def full_table(results):
    lines = [f"{gpu(results)}, PyTorch {results['torch']}, device-to-device copy "
             f"{results['copy']['gbps']:.0f} GB/s.", "",
             "| case | shape | dtype | gpuaug ms | %copy | baseline | baseline ms | speedup |",
             "|------|-------|-------|-----------|-------|----------|-------------|---------|"]
    for c in results["cases"]:
        stat = " (mean)" if c.get("statistic") == "mean" else ""
        pct = "-" if c["pct_copy"] is None else f"{c['pct_copy']:.0f}%"
        lines.append(f"| {c['name']}{stat} | {shape(c)} | {c['dtype']} | {number(c['time_ms'])} | "
                     f"{pct} | {c['baseline']} | {number(c['baseline_time_ms'])} | "
                     f"{speedup(c['ratio'])} |")
    if results["reports"]:
        lines.append("")
        for r in results["reports"]:
            lines.append(f"- {r['name'].strip()}: {r['value']:.3f} {r['unit']}")
    return "\n".join(lines)


def find(results, name, baseline):
    for c in results["cases"]:
        if c["name"] == name and c["baseline"].startswith(baseline):
            return c
    return None


def headline(all_results):
    names = [gpu(r).split()[0] for r in all_results]
    lines = ["| workload | against | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for name, baseline, label, against in HEADLINE:
        cells = []
        for results in all_results:
            c = find(results, name, baseline)
            cells.append("-" if c is None else speedup(c["ratio"]))
        lines.append(f"| {label} | {against} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headline", action="store_true", help="the README's table, a column per file")
    parser.add_argument("results", nargs="+", help="JSON written by python -m gpuaug.benchmark --json")
    args = parser.parse_args(argv)
    all_results = [load(p) for p in args.results]
    if args.headline:
        print(headline(all_results))
    else:
        print("\n\n".join(full_table(r) for r in all_results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
