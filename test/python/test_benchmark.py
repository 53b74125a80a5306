"""The benchmark harness (python -m gpuaug.benchmark), on the CPU (host clock) and, where there is
one, on the GPU (CUDA events behind a hold sized to the host's launch time)."""
import itertools
import json
import subprocess
import sys
import time

import pytest
import torch

from gpuaug.benchmark import __main__ as bench
from gpuaug.benchmark import harness

from gpuaug_testing import CUDA


def test_main_writes_every_selected_case(tmp_path):
    path = tmp_path / "bench.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "3", "--warmup", "1",
                       "--only", "relu", "mul", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    names = {case["name"] for case in report["cases"]}
    assert names == {"relu", "mul", "mul broadcast"}
    for case in report["cases"]:
        assert case["time_ms"] > 0 and case["host_ms"] > 0 and case["baseline_host_ms"] > 0
        assert case["ratio"] == pytest.approx(case["baseline_time_ms"] / case["time_ms"])
        assert 0 < case["pct_copy"]


def test_runs_without_the_contenders():
    """torchvision, kornia and DALI are no dependencies: without them every module of the
    benchmark imports, and a run leaves their cases out, saying so."""
    code = """
import sys
for name in ("torchvision", "kornia", "nvidia"):
    sys.modules[name] = None
from gpuaug.benchmark import __main__ as bench
bench.load_case_modules()
sys.exit(bench.main(["--device", "cpu", "--size", "4096", "--runs", "2", "--warmup", "1",
                     "--only", "relu"]))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "torchvision, kornia, nvidia.dali" in result.stdout, result.stdout


def test_photometric_color_augment_case_runs(tmp_path):
    """The fused ColorAugment + ColorJitter case and its two-call baseline build and run (here on
    the CPU: one 224x224 image)."""
    path = tmp_path / "bench.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "2", "--warmup", "1",
                       "--only", "photometric ColorAugment", "--json", str(path)]) == 0
    cases = json.loads(path.read_text())["cases"]
    assert [case["name"] for case in cases] == ["photometric ColorAugment+jitter u8->f32, one call"]
    assert cases[0]["time_ms"] > 0 and cases[0]["baseline_time_ms"] > 0


def test_photometric_container_cases_run(tmp_path):
    """The containers' cases (a choice and an order; containers nested) and their torchvision
    baselines build and run (here on the CPU: one 224x224 image)."""
    pytest.importorskip("torchvision")
    path = tmp_path / "bench.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "2", "--warmup", "1",
                       "--only", "photometric choice", "photometric nested", "--json",
                       str(path)]) == 0
    cases = json.loads(path.read_text())["cases"]
    assert [case["name"] for case in cases] == ["photometric choice+order u8->u8",
                                                "photometric nested containers u8->u8"]
    assert all(case["time_ms"] > 0 and case["baseline_time_ms"] > 0 for case in cases)


def test_photometric_gradient_cases_run(tmp_path):
    """The jitter's gradient cases (forward and backward) and their baselines build and run (here
    on the CPU: one 224x224 image), and each side's call returns the image's gradient."""
    pytest.importorskip("torchvision")
    from gpuaug.benchmark.photometric import image_gradient
    x, grad = torch.rand(2, 3, 4, 5, requires_grad=True), torch.randn(2, 3, 4, 5)
    torch.testing.assert_close(image_gradient(lambda image: 3 * image)(x, grad), 3 * grad)
    path = tmp_path / "bench.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "2", "--warmup", "1",
                       "--only", "photometric jitter gradient", "--json", str(path)]) == 0
    cases = json.loads(path.read_text())["cases"]
    assert "photometric jitter gradient f32, hue 0.0" in [case["name"] for case in cases]
    assert all(case["time_ms"] > 0 and case["baseline_time_ms"] > 0 for case in cases)


def test_a_missing_baseline_package_is_named(tmp_path, monkeypatch, capsys):
    """Without Kornia its baseline's row is left out, and the run says so."""
    monkeypatch.setitem(sys.modules, "kornia", None)  # import kornia now raises ImportError
    path = tmp_path / "bench.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "1", "--warmup", "0",
                       "--only", "photometric jitter u8->f32", "--json", str(path)]) == 0
    notice = [line for line in capsys.readouterr().out.splitlines() if "left out" in line]
    assert len(notice) == 1 and "kornia" in notice[0]
    report = json.loads(path.read_text())
    assert "kornia" in report["baselines_left_out"]
    assert "Kornia ColorJiggle+Normalize" not in {case["baseline"] for case in report["cases"]}


def sleeper(ms: float):
    def run(*args):
        time.sleep(ms * 1e-3)
    return run


def test_cpu_time_is_the_call_time():
    timing = harness.timed(sleeper(2.0), [()], torch.device("cpu"), warmup=1, runs=5)
    assert 2.0 <= timing.gpu_ms < 20 and timing.host_ms == timing.gpu_ms


def test_random_programs_take_the_mean_of_one_seeded_sequence():
    # A call that takes 1 ms or 6 ms by a coin flip: the median of its times is one of the two
    # (which one, from run to run, as the flips fall); the mean is their mix, and both sides
    # of the case see the same flips.
    def coin_flip(*args):
        time.sleep((6.0 if torch.rand(()) < 0.5 else 1.0) * 1e-3)

    case = harness.Case("coin", (1,), torch.float32, lambda: (), coin_flip, coin_flip, "coin", None,
                        rotate_inputs=False, random_programs=True)
    result = harness.measure(case, torch.device("cpu"), 1.0, warmup=1, runs=8)
    assert result["statistic"] == "mean"
    assert 2.0 < result["time_ms"] < 5.5
    assert result["ratio"] == pytest.approx(1.0, rel=0.2)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_time_excludes_a_slow_host():
    # A call that spends 1 ms on the host and about 0.02 ms on the GPU: the hold grows to cover
    # the host's time, so the events measure the GPU's; the host's time is reported apart.
    x = torch.randn(2**20, device="cuda")

    def slow_host(x):
        time.sleep(1e-3)
        x.mul_(1.0)

    timing = harness.timed(slow_host, [(x,)], x.device, warmup=2, runs=7)
    assert timing.host_ms >= 1.0
    assert timing.gpu_ms < 0.5
    steady = harness.timed(slow_host, [(x,)], x.device, warmup=2, runs=7, hold_gpu=False)
    assert steady.gpu_ms >= 0.9  # without the hold, the host's pace


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_host_time_excludes_a_full_launch_queue():
    # 1 ms of GPU work in 40 launches: 100 bursts of one call queue 4000 launches behind their
    # holds, more than CUDA's launch queue takes. The host's time must stay its launching, not
    # the GPU's pace it falls to once the queue is full (over 1.5 ms a call with the holds).
    device = torch.device("cuda")
    cycles = int(torch.cuda.get_device_properties(device).clock_rate) // 40  # kHz: 1 ms / 40

    def many_launches():
        for _ in range(40):
            torch.cuda._sleep(cycles)

    timing = harness.timed(many_launches, [()], device, warmup=2, runs=100)
    assert 0.9 <= timing.gpu_ms < 1.5
    assert timing.host_ms < 0.6


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_gpu_time_excludes_host_stalls():
    # 0.6 ms of GPU work a call; one call stalls the host for 5 ms first, far past the hold its
    # calibration asked for: the burst it falls in is timed again with a longer hold, so that the
    # mean stays the GPU's time (with the GPU waiting on the stall, about 0.85 ms).
    device = torch.device("cuda")
    cycles = int(0.6 * torch.cuda.get_device_properties(device).clock_rate)  # kHz: 0.6 ms
    calls = itertools.count()

    def stalling():
        if next(calls) == 15:
            time.sleep(5e-3)
        torch.cuda._sleep(cycles)

    timing = harness.timed(stalling, [()], device, warmup=2, runs=20, mean=True)
    assert 0.55 <= timing.gpu_ms < 0.7


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_steady_stream_is_the_pace_of_calls():
    # 0.5 ms of host work, then 1 ms of GPU work: a stream of such calls runs at the GPU's pace
    # (the host prepares the next call while the GPU runs this one), 1 ms a call, not the 1.5 ms
    # from one call's launch to its end.
    device = torch.device("cuda")
    cycles = int(torch.cuda.get_device_properties(device).clock_rate)  # kHz: 1 ms

    def host_then_gpu():
        time.sleep(0.5e-3)
        torch.cuda._sleep(cycles)

    steady = harness.timed(host_then_gpu, [()], device, warmup=2, runs=9, hold_gpu=False)
    assert 0.9 <= steady.gpu_ms < 1.3


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if CUDA else []))
def test_compiled_contender_computes_colorjitter(device):
    """The torch.compile contender does the work it is timed for: gpuaug's result for the same
    factors in its fixed order, but for a rare uint8 rounding (its float32 mean, its blends
    unfused), which a later stage's factor (up to 1.4) can make 2."""
    from gpuaug import transforms as T
    from gpuaug.benchmark.photometric_compiled import jitter
    image = torch.randint(0, 256, (32, 3, 37, 41), dtype=torch.uint8, device=device)
    t = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    params = t.sample_params(image)
    params["order"] = torch.arange(4, device=device).expand(32, 4).contiguous()
    difference = (t(image, params).int() - jitter(image, params["factors"]).int()).abs()
    assert difference.max() <= 2
    assert (difference > 0).float().mean() < 1e-3


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if CUDA else []))
def test_dali_contender_normalizes_and_brightens_per_sample(device):
    """The DALI contender does the work it is timed for: its source's batches, in turn, as
    normalised float32 CHW; with a brightness range, each sample scaled by its own factor."""
    pytest.importorskip("nvidia.dali")
    from gpuaug.benchmark.photometric_dali import SOURCE_BATCHES, DaliJitterNormalize
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    scale = torch.tensor(std, dtype=torch.float64).view(3, 1, 1) * 255
    shift = torch.tensor(mean, dtype=torch.float64).view(3, 1, 1) * 255
    image = torch.empty(6, 3, 20, 28, dtype=torch.uint8, device=device)

    def sources(contender):  # what each call reads, [N, C, H, W] float64
        return [torch.as_tensor(b).cpu().permute(0, 3, 1, 2).double() for b in contender.batches]

    plain = DaliJitterNormalize(0, 0, 0, 0, mean, std)
    outputs = [plain(image) for _ in range(SOURCE_BATCHES + 1)]
    for out, source in zip(outputs, sources(plain) + sources(plain)[:1]):
        assert out.shape == image.shape and out.dtype == torch.float32
        assert out.device == image.device
        torch.testing.assert_close(out.cpu().double(), (source - shift) / scale, rtol=0, atol=1e-5)

    bright = DaliJitterNormalize(0.4, 0, 0, 0, mean, std)
    out = bright(image).cpu().double() * scale + shift  # the twisted uint8 values
    source = sources(bright)[0]
    factors = []
    for x, y in zip(source, out):
        inside = (x > 20) & (y < 250)  # away from the clamp, and large enough to read a ratio
        factor = (y[inside] / x[inside]).median()
        assert 0.6 - 0.02 <= factor <= 1.4 + 0.02
        assert ((x * factor).clamp(0, 255) - y).abs().max() <= 1.5
        factors.append(float(factor))
    assert max(factors) - min(factors) > 0.05, factors


@pytest.mark.skipif(not CUDA, reason="the training step report runs on CUDA")
def test_training_step_report_times_every_contender(monkeypatch):
    pytest.importorskip("torchvision")
    from gpuaug.benchmark import photometric_step
    monkeypatch.setattr(photometric_step, "BATCH", 8)
    rows = {row["name"]: row["value"] for row in photometric_step.resnet18_step(torch.device("cuda"))}
    for contender in ["gpuaug", "torch.compile per-sample", "torchvision"]:
        assert rows[f"ResNet-18 bf16 step with {contender} ColorJitter+Normalize"] > 0


def test_policy_cases_run(tmp_path):
    """The AutoAugment policies' cases against torchvision's (on the batch and per image)."""
    pytest.importorskip("torchvision")
    path = tmp_path / "policies.json"
    assert bench.main(["--device", "cpu", "--size", "4096", "--runs", "1", "--warmup", "0",
                       "--only", "policy TrivialAugmentWide", "policy AugMix u8->f32",
                       "--json", str(path)]) == 0
    cases = json.loads(path.read_text())["cases"]
    assert len(cases) == 6 and sum("per image" in c["baseline"] for c in cases) == 3, cases
