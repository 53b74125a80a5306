// NVRTC, opened on first use: libgpuaug has no link to libnvrtc (or libcuda), so it loads on a
// machine without either, and the library is looked for only when a kernel must be compiled.
#pragma once

#include <string>

namespace gpuaug::jit {

// What one compile produced: a cubin (SASS for one architecture) or PTX text.
struct CompiledCode {
  std::string binary;
  bool is_cubin;
};

// "major.minor" of the NVRTC that compiles, loading it if needed.
const std::string& nvrtc_version();

// Compiles `source` for compute capability `arch` (80 for sm_80): to SASS when this NVRTC knows
// the architecture (unless `ptx_only`), else to PTX for the newest architecture it knows below
// it, which the driver then finishes. A compile error throws, with NVRTC's log and the numbered
// source, under `what` (the operator's name, for the message).
CompiledCode nvrtc_compile(const std::string& what, const std::string& source, int arch,
                           bool ptx_only = false);

}  // namespace gpuaug::jit
