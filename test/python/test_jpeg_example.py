"""examples/train_from_jpeg.py runs: JPEGs decoded to a list of sizes, the gpuaug pipeline, a
ResNet-18 step (on the CPU here, small)."""

import importlib.util
import pathlib

import pytest

pytest.importorskip("torchvision")
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_from_jpeg.py"


def test_train_from_jpeg(capsys):
    spec = importlib.util.spec_from_file_location("train_from_jpeg", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(["--batch", "3", "--steps", "1", "--size", "32"])
    assert "images/s on" in capsys.readouterr().out
