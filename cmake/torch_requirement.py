"""scikit-build-core metadata provider: the package depends on exactly the PyTorch release it is
compiled against (libgpuaug links libtorch's C++ ABI, which changes between releases), so pip
refuses, or replaces, any other torch instead of installing a library that cannot load; and on
numpy."""


def dynamic_metadata(field, settings):
    try:
        import torch
    except ImportError:
        raise RuntimeError(
            "gpuaug compiles against the PyTorch it will run with, and this build cannot import "
            "torch: pip's isolated build environment hides the installed one. Install torch "
            "first, then build without build isolation:\n"
            "    pip install torch scikit-build-core cmake ninja\n"
            "    pip install --no-build-isolation .") from None
    release = torch.__version__.split("+")[0]   # 2.11.0+cu130 is release 2.11.0 on PyPI
    # numpy: torch warns on every import without it ("Failed to initialize NumPy").
    return [f"torch=={release}", "numpy"]
