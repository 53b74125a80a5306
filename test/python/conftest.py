"""pytest set-up for gpuaug: loads the installed package (the library registers torch.ops.gpuaug)
and makes the shared helpers in gpuaug_testing.py importable whatever pytest's import mode."""
import atexit
import os
import shutil
import sys
import tempfile

# Inductor's on-disk caches key a compiled backward on the forward graph alone, so a graph
# compiled against an earlier build of gpuaug would be replayed against this one: start empty.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuaug-test-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

import pytest  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpuaug  # noqa: E402,F401  (the installed package; `pip install .` first)
import gpuaug_testing  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    # Fresh but reproducible random numbers in every test (make_input takes explicit seeds).
    torch.manual_seed(0)


@pytest.fixture
def fresh_dynamo():
    """For torch.compile tests: start and end with empty Dynamo caches and counters."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def pytest_report_header(config):
    return (f"gpuaug from {os.path.dirname(gpuaug.__file__)}; torch {torch.__version__}; "
            f"CUDA devices: {torch.cuda.device_count() if gpuaug_testing.CUDA else 0}")
