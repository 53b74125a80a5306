"""Benchmarks of gpuaug's ops against PyTorch: run ``python -m gpuaug.benchmark --help``.

Each module here registers its cases with :func:`harness.register`.
"""
