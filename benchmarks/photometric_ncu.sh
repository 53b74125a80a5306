#!/usr/bin/env bash
# Nsight Compute profile of the photometric op alone on the GPU machine, in one device call
# (310 s with a fresh build; after `bash .ci/gpu_check` on the same machine the build is
# incremental): ColorJitter(0.4, 0.4, 0.4, 0.1) and ColorJitter(0.4, 0, 0.4, 0.1) (no contrast:
# the one-pass program), uint8 -> float32 + Normalize, 256x3x224x224, draws made beforehand,
# three calls each, every call profiled with `--set full` at the GPU's own clocks. Writes
# $OUT/details.txt and $OUT/raw.csv (a few MB each); prints each kernel's headline numbers.
#   OUT=/some/dir bash benchmarks/photometric_ncu.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-build/ncu}
mkdir -p "$OUT"
# gpu_check's build (the GPU's own architecture), so that after it this one is incremental
unset TORCH_CUDA_ARCH_LIST
python3 -m pip install -q --no-build-isolation --no-deps --no-index -Cbuild-dir=build/gpu \
  -Ccmake.define.GPUAUG_BUILD_TESTS=ON . > "$OUT/build.log" 2>&1
cat > "$OUT/calls.py" <<'PY'
import torch
from gpuaug import transforms as T
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
x = torch.randint(0, 256, (256, 3, 224, 224), device="cuda", dtype=torch.uint8)
for args in [(0.4, 0.4, 0.4, 0.1), (0.4, 0, 0.4, 0.1)]:
    jitter = T.ColorJitter(*args, dtype=torch.float32, mean=MEAN, std=STD)
    params = jitter.sample_params(x)
    for _ in range(3):
        jitter(x, params)
torch.cuda.synchronize()
PY
ncu --clock-control none --set full --kernel-name regex:transform --launch-count 6 \
  -o "$OUT/profile" -f python3 "$OUT/calls.py" > "$OUT/ncu.log" 2>&1
ncu -i "$OUT/profile.ncu-rep" --page raw --csv --print-metric-instances values > "$OUT/raw.csv"
ncu -i "$OUT/profile.ncu-rep" --page details --print-details all > "$OUT/details.txt"
rm "$OUT/profile.ncu-rep"   # too large to bring back from the device
grep -E "^  [a-z_]|^    (Duration|Elapsed Cycles|SM Active Cycles|Issued Instructions|Issue Slots Busy|SM: Pipe (Alu|Fma) Cycles Active|Stall (Barrier|No Instruction)) " \
  "$OUT/details.txt" | awk '/^  [a-z_]/ { delete seen } !seen[$0]++'   # each kernel's lines once
