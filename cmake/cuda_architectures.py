"""Prints the CUDA architectures to build for, as a CMake CUDA_ARCHITECTURES list, following
PyTorch's convention for extensions:

1. TORCH_CUDA_ARCH_LIST (the first argument, else the environment), e.g. "8.0 9.0+PTX": machine
   code for each entry, PTX too for entries marked +PTX;
2. else the GPUs visible now: machine code for each, PTX for the newest;
3. else the architectures the installed PyTorch was built for from sm_80 on (gpuaug supports
   sm_80 and newer), PTX for the newest.

Architectures that the nvcc given as the second argument cannot compile are left out (with a
note on stderr). Usage: python cuda_architectures.py [TORCH_CUDA_ARCH_LIST] [NVCC]
"""
import os
import re
import subprocess
import sys


def from_torch_list(text):
    """'8.0 9.0a+PTX' (';' or ' ' separated) -> [('80', False), ('90a', True)]."""
    archs = []
    for entry in re.split(r"[;\s]+", text.strip()):
        match = re.fullmatch(r"(\d+)\.(\d+[af]?)(\+PTX)?", entry)
        if not match:
            sys.exit(f"gpuaug: TORCH_CUDA_ARCH_LIST entry '{entry}' is not like 8.0, 9.0a or 8.0+PTX")
        archs.append((match[1] + match[2], bool(match[3])))
    return archs


def with_ptx_for_newest(numbers):
    numbers = sorted(set(numbers), key=lambda a: int(re.match(r"\d+", a)[0]))
    return [(a, a == numbers[-1]) for a in numbers]


def from_torch():
    import torch

    if torch.cuda.is_available():
        capabilities = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
        return with_ptx_for_newest(f"{major}{minor}" for major, minor in capabilities)
    # get_arch_list() is empty without a GPU; the flags it reads are there all the same.
    flags = torch._C._cuda_getArchFlags().split()
    return with_ptx_for_newest(f[3:] for f in flags
                               if f.startswith("sm_") and int(re.match(r"\d+", f[3:])[0]) >= 80)


def nvcc_can_compile(nvcc):
    try:
        out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return {line.strip()[3:] for line in out.stdout.splitlines() if line.strip().startswith("sm_")}


def main():
    torch_list = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else os.environ.get(
        "TORCH_CUDA_ARCH_LIST", "")
    archs = from_torch_list(torch_list) if torch_list else from_torch()
    known = nvcc_can_compile(sys.argv[2]) if len(sys.argv) > 2 else None
    if known is not None:
        def compiles(arch):  # 'sm_90' stands for 90a and 90f too
            return re.match(r"\d+", arch)[0] in known

        dropped = [a for a, _ in archs if not compiles(a)]
        if dropped:
            print(f"gpuaug: this nvcc cannot compile sm_{', sm_'.join(dropped)}; left out",
                  file=sys.stderr)
        wanted_ptx = any(ptx for _, ptx in archs)
        archs = [(a, ptx) for a, ptx in archs if compiles(a)]
        if wanted_ptx and archs and not any(ptx for _, ptx in archs):
            archs[-1] = (archs[-1][0], True)   # PTX for the newest left, for newer GPUs
    if not archs:
        sys.exit("gpuaug: no CUDA architecture left to build for")
    print(";".join(a if ptx else f"{a}-real" for a, ptx in archs))


if __name__ == "__main__":
    main()
