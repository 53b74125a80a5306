"""examples/cpp built against the installed package: the LLTM training program's loss falls, and
a TorchScript model using gpuaug.nn.LLTM, saved from Python, runs from C++ with Python's results."""
import pathlib
import re
import shutil
import subprocess

import pytest
import torch

import gpuaug
from gpuaug_testing import DEVICES, build_environment

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "cpp"
TARGETS = ["gpuaug_train_lltm", "gpuaug_run_scripted"]

pytestmark = pytest.mark.skipif(shutil.which("cmake", path=build_environment()["PATH"]) is None,
                                reason="needs cmake")


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    build = tmp_path_factory.mktemp("examples")
    env = build_environment()
    prefix = f"{gpuaug.cmake_prefix_path};{torch.utils.cmake_prefix_path}"
    for command in (["cmake", "-S", str(EXAMPLES), "-B", str(build), "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"],
                    ["cmake", "--build", str(build), "--target", *TARGETS]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=1200, env=env)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return build


def test_training_program_loss_falls(programs):
    result = subprocess.run([str(programs / "gpuaug_train_lltm")], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", result.stdout, flags=re.M)]
    assert len(losses) >= 6 and losses[-1] < 0.5 * losses[0], result.stdout


class Sequence(torch.nn.Module):
    """An LLTM run over a sequence [T, B, I] from a given state; returns the last state."""

    def __init__(self):
        super().__init__()
        self.cell = gpuaug.nn.LLTM(5, 12)

    def forward(self, sequence: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        for x in sequence.unbind(0):
            state = self.cell(x, state)
        return state


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # TorchScript is deprecated
@pytest.mark.parametrize("device", DEVICES)
def test_scripted_model_runs_from_cpp(programs, tmp_path, device):
    if device == "cuda" and not gpuaug._build_info.with_cuda:
        pytest.skip("gpuaug was built without CUDA")
    torch.manual_seed(4)
    model = Sequence().to(device)
    inputs = (torch.randn(6, 3, 5, device=device),
              (torch.randn(3, 12, device=device), torch.randn(3, 12, device=device)))
    torch.jit.save(torch.jit.script(model), str(tmp_path / "model.pt"))
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run([str(programs / "gpuaug_run_scripted"), str(tmp_path / "model.pt"),
                             str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    h, c = torch.load(tmp_path / "outputs.pt")
    expected_h, expected_c = model(*inputs)
    assert h.device.type == device
    torch.testing.assert_close(h, expected_h, rtol=0, atol=0)
    torch.testing.assert_close(c, expected_c, rtol=0, atol=0)


def test_run_scripted_usage(programs):
    result = subprocess.run([str(programs / "gpuaug_run_scripted")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "usage:" in result.stderr
