"""Timing harness of ``python -m gpuaug.benchmark``.

A benchmark module registers a factory of cases::

    @register
    def cases(numel: int, device: torch.device) -> list[Case]:
        return [Case("relu", (numel,), torch.float32, make_inputs, gpuaug.relu,
                     torch.relu, "torch.relu", bytes_moved=2 * 4 * numel)]

Every module of this package is imported by ``__main__``, so a new module is picked up as is.
"""

import dataclasses
import math
import statistics
import time
from typing import Any, Callable, Sequence

import torch


@dataclasses.dataclass
class Case:
    """Our op against a PyTorch baseline on the same inputs."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    make_inputs: Callable[[], tuple[Any, ...]]  # fresh random inputs, never zeros
    ours: Callable[..., Any]
    baseline: Callable[..., Any]
    baseline_name: str
    bytes_moved: int | None  # minimal traffic (each input read once, each output written once),
    # or None where the time is not a matter of bandwidth
    latency: bool = False  # time single calls (launch included), not back-to-back bursts
    # Bursts queued behind a kernel that holds the GPU measure the GPU's time; without the hold,
    # the pace of a steady stream of calls, host included (what a training loop sees).
    hold_gpu: bool = True
    rotate_inputs: bool = True  # several input sets, so that none is found in L2
    # Calls whose work depends on random choices (torchvision's coin flips, one per batch) take
    # times of several programs: the median jumps between them from run to run. Such a case is
    # timed as the mean over four times the runs, from one seed, for both sides: what a training
    # loop pays per batch, and the same draws in every run.
    random_programs: bool = False


Factory = Callable[[int, torch.device], Sequence[Case]]
FACTORIES: list[Factory] = []
# Measurements that are not one op against a baseline (compile times), by name: each returns
# rows of {"name": ..., "value": ..., "unit": ...}, printed after the table.
Report = Callable[[torch.device], list[dict]]
REPORTS: dict[str, Report] = {}


def register(factory: Factory) -> Factory:
    FACTORIES.append(factory)
    return factory


def register_report(name: str) -> Callable[[Report], Report]:
    def add(report: Report) -> Report:
        REPORTS[name] = report
        return report

    return add


def input_sets(make_inputs: Callable[[], tuple[Any, ...]],
               device: torch.device) -> list[tuple[Any, ...]]:
    """Enough input sets that rotating through them never finds the previous one in L2."""
    first = make_inputs()
    nbytes = sum(t.numel() * t.element_size() for t in first if isinstance(t, torch.Tensor))
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 0
    count = min(64, max(1, math.ceil(2 * l2 / max(nbytes, 1))))
    return [first] + [make_inputs() for _ in range(count - 1)]


# What the GPU is held for per call of a burst, at least: more than the host needs to launch one
# call of most cases. Where a calibration burst shows the host needs longer, the hold is longer:
# HOST_MARGIN times that burst's time, since a later burst may take the host longer.
HOLD_US_PER_CALL = 30
HOST_MARGIN = 3.0


@dataclasses.dataclass
class Timing:
    # The median (with Case.random_programs, the mean) over the runs of:
    gpu_ms: float   # the time of one call between CUDA events (the host clock on a CPU)
    host_ms: float  # the time the host took to launch one call (and, for a call that
    # synchronises with the GPU, to wait for it: the hold then lengthens that wait)


def median_ms(fn: Callable[..., Any], sets: list[tuple[Any, ...]], device: torch.device,
              warmup: int, runs: int, latency: bool = False, hold_gpu: bool = True) -> float:
    return timed(fn, sets, device, warmup, runs, latency, hold_gpu).gpu_ms


def timed(fn: Callable[..., Any], sets: list[tuple[Any, ...]], device: torch.device,
          warmup: int, runs: int, latency: bool = False, hold_gpu: bool = True,
          mean: bool = False) -> Timing:
    """Median (with `mean`, mean) time of one call, from CUDA events on a GPU (the host clock on
    a CPU), and the host's time to launch it. Each sample times a burst of calls lasting about
    half a millisecond, queued behind a kernel that holds the GPU until the host has enqueued
    them all (nvbench's blocking kernel), so that the number is the GPU's time per call, not the
    host's (launching a short kernel can take the host longer than the GPU takes to run it). The
    hold is HOLD_US_PER_CALL per call of the burst, or longer where a calibration burst took the
    host longer (draws of random parameters, a Python loop, the autograd engine), so that such
    calls too are timed at the GPU's pace; their host time is reported beside. With `latency`,
    single synchronised calls instead; without `hold_gpu`, no hold: the pace of a steady stream,
    each burst timed from the end of the one before (a burst's own start would leave out the
    host's time to launch its first call, and add the GPU's tail after its last)."""
    average = statistics.mean if mean else statistics.median
    for i in range(warmup):
        fn(*sets[i % len(sets)])
    if device.type != "cuda":
        times = []
        for i in range(runs):
            t0 = time.perf_counter()
            fn(*sets[i % len(sets)])
            times.append((time.perf_counter() - t0) * 1e3)
        return Timing(average(times), average(times))
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*sets[0])
    end.record()
    end.synchronize()
    burst = 1 if latency else max(1, min(100, math.ceil(0.5 / max(start.elapsed_time(end), 1e-3))))
    hold_us = burst * HOLD_US_PER_CALL
    if hold_gpu and not latency:
        t0 = time.perf_counter()
        for j in range(burst):
            fn(*sets[j % len(sets)])
        hold_us = max(hold_us, HOST_MARGIN * 1e6 * (time.perf_counter() - t0) + 50)
    clock_khz = torch.cuda.get_device_properties(device).clock_rate
    hold_cycles = int(hold_us * 1e-3 * clock_khz)
    steady = not hold_gpu and not latency
    if steady:  # a chain of marks: each burst starts where the one before ended
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(runs + 1)]
        events = list(zip(marks, marks[1:]))
        marks[0].record()
    else:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(runs)]
    host = []
    held = hold_gpu and not latency
    # A burst the host queued more slowly than its hold ran (a stall, a slower draw) is timed
    # again, with the same draws (coin flips decide a random program's work) and the hold doubled
    # from then on, twice at most: a call that waits on the GPU itself is always late.
    doublings = 2 if held else 0
    for i, (start, end) in enumerate(events):
        rng = (torch.get_rng_state(), torch.cuda.get_rng_state(device)) if held else None
        while True:
            if held:
                # Each burst starts on an idle GPU: queued behind the earlier bursts and their
                # holds, the host filled CUDA's launch queue and then launched at the GPU's pace,
                # and the GPU's time read the blocked host's waits. One untimed
                # call after the wait, so that the burst's host time is that of a warm host, on
                # the input set before the burst's first (whose input it would leave in L2).
                torch.cuda.synchronize()
                fn(*sets[(i * burst - 1) % len(sets)])
                torch.cuda._sleep(hold_cycles)
            t0 = time.perf_counter()
            if not steady:
                start.record()
            for j in range(burst):
                fn(*sets[(i * burst + j) % len(sets)])
            end.record()
            elapsed = time.perf_counter() - t0
            if doublings == 0 or not start.query():
                break
            doublings -= 1
            hold_cycles *= 2
            torch.set_rng_state(rng[0])
            torch.cuda.set_rng_state(rng[1], device)
        host.append(elapsed * 1e3 / burst)
        if latency:
            end.synchronize()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) / burst for start, end in events]
    return Timing(average(times), average(host))


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def copy_bandwidth(numel: int, device: torch.device, warmup: int, runs: int) -> dict:
    """Device-to-device copy of a float32 buffer: the practical bandwidth ceiling."""
    sets = input_sets(lambda: (torch.randn(numel, device=device),), device)
    ms = median_ms(lambda x: torch.empty_like(x).copy_(x), sets, device, warmup, runs)
    nbytes = 2 * 4 * numel  # read once, written once
    return {"numel": numel, "bytes": nbytes, "time_ms": ms, "gbps": gbps(nbytes, ms)}


def measure(case: Case, device: torch.device, copy_gbps: float, warmup: int, runs: int) -> dict:
    sets = input_sets(case.make_inputs, device) if case.rotate_inputs else [case.make_inputs()]
    timing = dict(latency=case.latency, hold_gpu=case.hold_gpu, mean=case.random_programs)
    if case.random_programs:
        runs *= 4
    timings = []
    for fn in (case.ours, case.baseline):
        if case.random_programs:
            torch.manual_seed(0)
        timings.append(timed(fn, sets, device, warmup, runs, **timing))
    ours, base = timings
    ours_ms, base_ms = ours.gpu_ms, base.gpu_ms
    ours_gbps = None if case.bytes_moved is None else gbps(case.bytes_moved, ours_ms)
    return {
        "name": case.name,
        "shape": list(case.shape),
        "dtype": str(case.dtype).removeprefix("torch."),
        "time_ms": ours_ms,
        "host_ms": ours.host_ms,
        "bytes": case.bytes_moved,
        "gbps": ours_gbps,
        "pct_copy": None if ours_gbps is None else 100 * ours_gbps / copy_gbps,
        "baseline": case.baseline_name,
        "baseline_time_ms": base_ms,
        "baseline_host_ms": base.host_ms,
        "ratio": base_ms / ours_ms,
        "statistic": "mean" if case.random_programs else "median",
    }


def format_table(results: list[dict]) -> str:
    header = ("case", "shape", "dtype", "ms", "host ms", "GB/s", "%copy", "baseline", "base ms",
              "speedup")
    rows = [header] + [
        (r["name"], "x".join(map(str, r["shape"])), r["dtype"], f"{r['time_ms']:.3f}",
         f"{r['host_ms']:.3f}", "-" if r["gbps"] is None else f"{r['gbps']:.0f}",
         "-" if r["pct_copy"] is None else f"{r['pct_copy']:.0f}%", r["baseline"],
         f"{r['baseline_time_ms']:.3f}", f"{r['ratio']:.2f}x")
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
