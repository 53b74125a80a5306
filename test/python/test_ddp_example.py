"""examples/ddp_train.py under torchrun with two ranks: Gloo on the CPU everywhere, NCCL on two
GPUs. The loss falls, the ranks draw different augmentation parameters, their models end
identical, and a second run with the same seed prints the same numbers."""
import os
import pathlib
import re
import signal
import subprocess
import sys

import pytest

from gpuaug_testing import requires_two_gpus

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ddp_train.py"
SUMMARY = re.compile(
    r"^world 2 backend (\w+) device (\w+): mean loss of the first (\d+) steps (\S+), "
    r"of the last \d+ (\S+) \((.*?)\); augmentation draws (.*?) between ranks; "
    r"max parameter difference from rank 0: (\S+)$", re.M)


def run_example(device, steps, seed=0, timeout=300):
    """Runs the example on two ranks; returns (exit code, output, the ranks' numbered lines)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
               "--standalone", str(EXAMPLE), "--steps", str(steps), "--seed", str(seed),
               "--device", device]
    # Its own process group, so that a hung run's ranks are killed with torchrun.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout} s:\n{output[-5000:]}")
    lines = sorted(re.findall(r"^(?:rank \d .*|world .*)$", output, flags=re.M))
    return process.returncode, output, lines


def check_run(returncode, output, backend, device, steps):
    assert returncode == 0, output[-5000:]
    (summary,) = SUMMARY.findall(output)
    got_backend, got_device, k, first, last, verdict, draws, difference = summary
    assert (got_backend, got_device) == (backend, device), output
    assert int(k) == 20 and float(last) < 0.5 * float(first) and verdict == "fell", output
    assert draws == "differ" and float(difference) == 0, output
    for rank in (0, 1):   # both ranks trained and printed their losses, first and last step
        steps_seen = re.findall(rf"^rank {rank} step (\d+) loss \S+$", output, flags=re.M)
        assert {"0", str(steps - 1)} <= set(steps_seen), output
    checksums = dict(re.findall(r"^rank (\d) augment checksum (\S+)$", output, flags=re.M))
    assert len(checksums) == 2 and checksums["0"] != checksums["1"], output
    return checksums


CPU_STEPS = 60


@pytest.fixture(scope="module")
def cpu_runs():
    return [run_example("cpu", CPU_STEPS) for _ in range(2)]


def test_cpu_gloo_loss_falls_ranks_differ_models_in_sync(cpu_runs):
    returncode, output, _ = cpu_runs[0]
    check_run(returncode, output, "gloo", "cpu", CPU_STEPS)


def test_cpu_gloo_reproducible(cpu_runs):
    (_, _, first), (returncode, output, second) = cpu_runs
    assert returncode == 0, output[-5000:]
    # A rank: 11 loss lines, its checksum and final loss; and rank 0's summary.
    assert len(first) == 2 * (11 + 2) + 1 and first == second


def test_cpu_gloo_seed_changes_draws(cpu_runs):
    returncode, output, _ = run_example("cpu", CPU_STEPS, seed=1)
    assert check_run(returncode, output, "gloo", "cpu", CPU_STEPS) != check_run(
        *cpu_runs[0][:2], "gloo", "cpu", CPU_STEPS)


@requires_two_gpus
def test_cuda_nccl_loss_falls_ranks_differ_models_in_sync_reproducible():
    steps = 200
    (rc1, output1, lines1), (rc2, output2, lines2) = (run_example("cuda", steps)
                                                      for _ in range(2))
    check_run(rc1, output1, "nccl", "cuda", steps)
    check_run(rc2, output2, "nccl", "cuda", steps)
    assert lines1 == lines2, f"{output1}\n-----\n{output2}"
