"""The README's examples run as written: every Python block, and the C++ section's CMakeLists.txt,
main.cpp and shell commands, in a fresh folder with this Python's environment active."""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from gpuaug_testing import build_environment

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def blocks(text, language):
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def section(title):
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


@pytest.mark.parametrize("index", range(len(blocks(README.read_text(), "python"))))
def test_python_block(index, tmp_path):
    code = blocks(README.read_text(), "python")[index]
    if "torchvision" in code and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (none may be released for this PyTorch yet)")
    script = tmp_path / "example.py"   # a file, as TorchScript reads the source
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=600, env=build_environment())
    assert result.returncode == 0, f"README Python block {index} failed:\n{code}\n{result.stderr}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_cpp_section(tmp_path):
    text = section("C++")
    (cmake,), (cpp,), (commands,) = blocks(text, "cmake"), blocks(text, "cpp"), blocks(text, "sh")
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    (tmp_path / "main.cpp").write_text(cpp)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path,
                            capture_output=True, text=True, timeout=900, env=build_environment())
    assert result.returncode == 0, f"{commands}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    values = re.findall(r"^\s*(-?[\d.]+(?:e[-+]?\d+)?)\s*$", result.stdout, flags=re.M)
    assert len(values) == 4 and all(float(v) >= 0 for v in values), result.stdout
    # PyTorch's own config warns (kineto, CMAKE_CUDA_ARCHITECTURES); nothing else may.
    for warning in re.findall(r"^CMake Warning.* at (\S+)", result.stderr, flags=re.M):
        assert "/torch/share/cmake/" in warning, result.stderr
