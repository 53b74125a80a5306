"""The docs' examples run as written: every Python block of README.md and docs/*.md, and the C++
guide's CMakeLists.txt, main.cpp and shell commands, in a fresh folder with this Python's
environment active. The benchmark tables in the docs are what benchmarks/table.py prints from
the results files."""
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from gpuaug_testing import build_environment

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CPP_GUIDE = ROOT / "docs" / "cpp.md"


def blocks(text, language):
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


PYTHON_BLOCKS = [(doc, index, code) for doc in DOCS
                 for index, code in enumerate(blocks(doc.read_text(), "python"))]


@pytest.mark.parametrize("doc, index, code", PYTHON_BLOCKS,
                         ids=[f"{doc.relative_to(ROOT)}-{index}" for doc, index, _ in PYTHON_BLOCKS])
def test_python_block(doc, index, code, tmp_path):
    if "torchvision" in code and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (none may be released for this PyTorch yet)")
    script = tmp_path / "example.py"   # a file, as TorchScript reads the source
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=600, env=build_environment())
    assert result.returncode == 0, (f"{doc.relative_to(ROOT)}: Python block {index} failed:\n"
                                    f"{code}\n{result.stderr}")


def test_every_doc_has_code():
    assert len(DOCS) > 1 and all(blocks(doc.read_text(), r"\w+") for doc in DOCS
                                 if doc.name not in ("benchmarks.md", "development.md"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_cpp_guide(tmp_path):
    text = CPP_GUIDE.read_text()
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


def table_module():
    spec = importlib.util.spec_from_file_location("benchmark_table", ROOT / "benchmarks" / "table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def between(text, start, end="<!-- end table -->"):
    begin = text.index(start) + len(start)
    return text[begin:text.index(end, begin)].strip("\n")


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_benchmark_tables_match_results(gpu):
    table = table_module()
    path = f"benchmarks/results/{gpu}.json"
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert between(text, f"<!-- table.py {path} -->") == table.full_table(table.load(ROOT / path))


def test_readme_headline_matches_results():
    table = table_module()
    paths = ["benchmarks/results/h100.json", "benchmarks/results/h200.json"]
    expected = table.headline([table.load(ROOT / p) for p in paths])
    text = (ROOT / "README.md").read_text()
    assert between(text, f"<!-- table.py --headline {' '.join(paths)} -->") == expected


def test_links_resolve():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links {target}"
