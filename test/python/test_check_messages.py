"""Numbers streamed into TORCH_CHECK's message, in a library built with this machine's compiler
and gpuaug's flags (C++20) and raised into Python. An earlier build segfaulted there (GCC 13 on
the GPU machine), which is why ops/checks.h formats numbers itself; this keeps watching for it.
The check runs in a child process, so a crash fails this test alone."""
import subprocess
import sys

PROBE = r'''
import sys, tempfile, torch
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
void fail(int64_t n, double x, const at::Tensor& t) {
  TORCH_CHECK(false, "n=", n, " x=", x, " size=", t.sym_size(0), " dtype=", t.scalar_type());
}
TORCH_LIBRARY(gpuaug_check_messages, m) { m.def("fail(int n, float x, Tensor t) -> ()", &fail); }
"""
load_inline("gpuaug_check_messages", cpp_sources=source, extra_cflags=["-std=c++20", "-O2"],
            build_directory=tempfile.mkdtemp(), is_python_module=False)
try:
    torch.ops.gpuaug_check_messages.fail(7, 0.25, torch.zeros(3))
except RuntimeError as e:
    print(str(e).splitlines()[0])
'''


def test_numbers_streamed_into_torch_check():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr[-3000:]}"
    assert result.stdout.strip() == "n=7 x=0.25 size=3 dtype=Float", result.stdout
