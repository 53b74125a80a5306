"""python -m gpuaug.demo: every op checked against PyTorch, with torch alone (the picture's
packages, the `demo` extra, blocked) and with them; python -m gpuaug.demo_color without them
names the extra."""

import os
import subprocess
import sys

import pytest

# Runs a module as python -m does, with the demo extra's packages unimportable.
WITHOUT_EXTRA = """
import runpy, sys
for name in ("numpy", "PIL", "skimage"):
    sys.modules[name] = None
runpy.run_module(sys.argv[1], run_name="__main__", alter_sys=True)
"""


def run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))


def check_table(out):
    # every op has its rows, and every row passed
    for op in ("relu", "mul", "round_ste", "lltm h", "lltm grad weights", "jit",
               "color_transform", "photometric"):
        assert f"\n{op}" in out, (op, out)
    assert "MISMATCH" not in out, out


def test_demo_with_torch_alone(tmp_path):
    result = run(["-c", WITHOUT_EXTRA, "gpuaug.demo"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    check_table(result.stdout)
    assert "pip install gpuaug[demo]" in result.stdout
    assert not list(tmp_path.iterdir())  # no picture


def test_demo_with_the_extra(tmp_path):
    pytest.importorskip("skimage")
    pytest.importorskip("PIL")
    result = run(["-m", "gpuaug.demo"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    check_table(result.stdout)
    assert (tmp_path / "color_augment_grid.png").stat().st_size > 0


def test_demo_color_names_the_extra(tmp_path):
    result = run(["-c", WITHOUT_EXTRA, "gpuaug.demo_color"], tmp_path)
    assert result.returncode != 0
    assert "pip install gpuaug[demo]" in result.stderr, result.stderr
