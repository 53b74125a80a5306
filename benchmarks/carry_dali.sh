#!/usr/bin/env bash
# Packs NVIDIA DALI for the GPU machine, which has no network and takes 64 MiB a call: DALI's
# wheel is 199 MB, so it travels as xz-compressed parts (.dali/partNN, 45 MB each, 133 MB in all
# for 2.4.0), one a call on one warm machine, its Python dependencies in .whl beside Kornia's.
# Run here, in the repository's root (.dali/ and .whl/ are in .git/info/exclude); then, each
# call within 30 s of the last:
#   call k (carry [".dali/partNN"]):  mkdir -p /tmp/dali && cp .dali/partNN /tmp/dali/
#   the last (carry [".dali/partNN", ".whl"]):
#     cp .dali/partNN /tmp/dali/ && python3 -m pip install -q --no-index --no-deps --no-compile \
#       --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
#     cat /tmp/dali/part* | python3 -c 'import sys, tarfile;
#       tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz").extractall("/tmp/site")' &&
#     export PYTHONPATH=/tmp/site && GPU_CHECK_BENCH_ARGS="--only photometric" bash .ci/gpu_check bench
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=${DALI_VERSION:-2.4.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
download() {  # the GPU machine's Python is 3.12
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" "$@"
}
download -d "$work" "nvidia-dali-cuda130==$VERSION"
# what `import nvidia.dali` needs that the GPU machine lacks (six, numpy, packaging it has)
mkdir -p .whl
download -d .whl astunparse "gast<=0.7.0" optree
mkdir "$work/tree"
unzip -q "$work"/nvidia_dali_*.whl -d "$work/tree"
# the other Pythons' extension modules: a fifth of the wheel
find "$work/tree/nvidia/dali" -maxdepth 1 -name '*.cpython-*.so' ! -name '*cpython-312-*' -delete
rm -rf .dali && mkdir .dali
tar -C "$work/tree" -cf - nvidia | xz -9 -T0 | split -b 45M -d - .dali/part
ls -l .dali
