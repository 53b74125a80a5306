"""examples/cpp built against the installed package: the LLTM training program's loss falls, and
TorchScript models saved from Python (one using gpuaug.nn.LLTM, gpuaug.transforms' pipelines) and
an AOTInductor package of both run from C++ with Python's results."""
import pathlib
import re
import shutil
import subprocess

import pytest
import torch
from torch.utils import _pytree as pytree

import gpuaug
from gpuaug_testing import DEVICES, build_environment

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "cpp"
TARGETS = ["gpuaug_train_lltm", "gpuaug_run_scripted", "gpuaug_run_aoti"]

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


def run_scripted(programs, tmp_path, model, inputs, *seed):
    torch.jit.save(model, str(tmp_path / "model.pt"))
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run([str(programs / "gpuaug_run_scripted"), str(tmp_path / "model.pt"),
                             str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt"),
                             *map(str, seed)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return torch.load(tmp_path / "outputs.pt")


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
    h, c = run_scripted(programs, tmp_path, torch.jit.script(model), inputs)
    expected_h, expected_c = model(*inputs)
    assert h.device.type == device
    torch.testing.assert_close(h, expected_h, rtol=0, atol=0)
    torch.testing.assert_close(c, expected_c, rtol=0, atol=0)


def self_supervised_pipeline(dtype=torch.float32):
    T = gpuaug.transforms
    return T.Compose([T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                      T.RandomGrayscale(0.2)],
                     dtype=dtype, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


# PyTorch 2.11's AOTInductor passes an extern op's ScalarType argument as its serialized number
# read as c10's (pytorch/pytorch#169157, fixed for 2.12): dtype=torch.float32 arrives as float64.
AOTI_DTYPE_ARGUMENTS = tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # TorchScript is deprecated
@pytest.mark.parametrize("device", DEVICES)
def test_scripted_transforms_run_from_cpp(programs, tmp_path, device):
    """A self-supervised colour pipeline, replaying Python's params (a Dict[str, Tensor]
    argument) and drawing its own from a seed, as Python does from the same seed."""
    if device == "cuda" and not gpuaug._build_info.with_cuda:
        pytest.skip("gpuaug was built without CUDA")
    pipeline = self_supervised_pipeline()
    scripted = torch.jit.script(pipeline)
    image = torch.randint(0, 256, (16, 3, 20, 30), dtype=torch.uint8, device=device)
    params = pipeline.sample_params(image)
    replayed = run_scripted(programs, tmp_path, scripted, (image, params))
    assert replayed.device.type == device
    torch.testing.assert_close(replayed, pipeline(image, params), rtol=0, atol=0)

    drawn = run_scripted(programs, tmp_path, scripted, (image,), 7)
    torch.manual_seed(7)
    expected = pipeline(image)
    torch.testing.assert_close(drawn, expected, rtol=0, atol=0)
    assert not torch.equal(expected, pipeline(image, params))


class Deployed(torch.nn.Module):
    """What a C++ deployment might run: augmentation replayed and drawn, and an LLTM step."""

    def __init__(self, dtype):
        super().__init__()
        self.augment = self_supervised_pipeline(dtype)
        self.cell = gpuaug.nn.LLTM(5, 12)

    def forward(self, image, params: dict[str, torch.Tensor], x, h, c):
        return self.augment(image, params), self.augment(image), self.cell(x, (h, c))


@pytest.mark.parametrize("device", DEVICES)
def test_aoti_package_runs_from_cpp(programs, tmp_path, device):
    """torch.export, then AOTInductor's package, run by gpuaug_run_aoti: Python's results, the
    fresh draws too (from the seed: Inductor's fallback_random draws as eager does). On PyTorch
    2.11 the images come as float32 (no dtype argument), normalised all the same."""
    if device == "cuda" and not gpuaug._build_info.with_cuda:
        pytest.skip("gpuaug was built without CUDA")
    torch.manual_seed(5)
    model = Deployed(torch.float32 if AOTI_DTYPE_ARGUMENTS else None).to(device)
    image = torch.randint(0, 256, (8, 3, 20, 30), dtype=torch.uint8, device=device)
    if not AOTI_DTYPE_ARGUMENTS:
        image = image / 255
    args = (image, model.augment.sample_params(image), torch.randn(3, 5, device=device),
            torch.randn(3, 12, device=device), torch.randn(3, 12, device=device))
    package = torch._inductor.aoti_compile_and_package(
        torch.export.export(model, args), package_path=str(tmp_path / "model.pt2"),
        inductor_configs={"fallback_random": True})
    torch.save(pytree.tree_leaves(args), tmp_path / "inputs.pt")
    result = subprocess.run([str(programs / "gpuaug_run_aoti"), package, str(tmp_path / "inputs.pt"),
                             str(tmp_path / "outputs.pt"), "11"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = torch.load(tmp_path / "outputs.pt")
    torch.manual_seed(11)
    expected = pytree.tree_leaves(model(*args))
    assert len(outputs) == len(expected) == 4 and outputs[0].device.type == device
    for output, want in zip(outputs, expected):
        torch.testing.assert_close(output, want, rtol=0, atol=0)
    assert not torch.equal(outputs[0], outputs[1])


def test_run_scripted_usage(programs):
    result = subprocess.run([str(programs / "gpuaug_run_scripted")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "usage:" in result.stderr
