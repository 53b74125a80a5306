"""python -m gpuaug.benchmark: times gpuaug's ops against PyTorch on a CUDA device."""

import argparse
import importlib
import json
import pkgutil
import sys

import torch

import gpuaug
import gpuaug.benchmark

from . import harness

# The packages of the baselines: a case whose baseline's package does not import is left out, so
# the run says which are missing rather than leaving a row silently absent.
BASELINE_PACKAGES = ("torchvision", "kornia", "nvidia.dali")


def importable(package: str) -> bool:
    try:
        importlib.import_module(package)
    except ImportError:
        return False
    return True


def size(text: str) -> int:
    """An element count: 1048576, 0x100000 or 2^20."""
    base, caret, exponent = text.partition("^")
    return int(base, 0) ** int(exponent) if caret else int(text, 0)


def load_case_modules() -> None:
    """Imports every module of this package: each registers its cases."""
    for module in pkgutil.iter_modules(gpuaug.benchmark.__path__):
        if not module.name.startswith("_") and module.name != "harness":
            importlib.import_module(f"gpuaug.benchmark.{module.name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuaug.benchmark", description=__doc__)
    parser.add_argument("--size", type=size, default=2**28,
                        help="elements per tensor (default 2^28: 1 GiB of float32)")
    parser.add_argument("--quick", action="store_true", help="2^24 elements and fewer runs")
    parser.add_argument("--runs", type=int, default=50,
                        help="timed runs per op (median; cases that flip coins: the mean of 4x)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="cases (and reports) whose name starts so")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    # Tests of the harness (test_benchmark.py) run it on the CPU, timed by the host clock.
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.runs = min(args.size, 2**24), min(args.runs, 20)

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device; nothing to benchmark")
        return 0

    load_case_modules()
    cases = [c for factory in harness.FACTORIES for c in factory(args.size, device)]
    if args.only:
        cases = [c for c in cases if c.name.startswith(tuple(args.only))]

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {name}; torch {torch.__version__}; gpuaug {gpuaug.__version__}")
    copy = harness.copy_bandwidth(args.size, device, args.warmup, args.runs)
    print(f"copy bandwidth: {copy['gbps']:.0f} GB/s ({copy['time_ms']:.3f} ms for "
          f"{copy['bytes'] / 1e6:.4g} MB moved)")
    left_out = [package for package in BASELINE_PACKAGES if not importable(package)]
    if left_out:
        print(f"not importable, so their baselines are left out: {', '.join(left_out)}")
    print()

    results = []
    for case in cases:
        results.append(harness.measure(case, device, copy["gbps"], args.warmup, args.runs))
    print(harness.format_table(results))
    reports = [row for name, report in harness.REPORTS.items()
               if not args.only or name.startswith(tuple(args.only)) for row in report(device)]
    for row in reports:
        print(f"{row['name']}: {row['value']:.3f} {row['unit']}")

    if args.json:
        report = {"device": name, "torch": torch.__version__, "gpuaug": gpuaug.__version__,
                  "size": args.size, "runs": args.runs, "copy": copy, "cases": results, "reports": reports,
                  "baselines_left_out": left_out}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
