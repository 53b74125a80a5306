// Run-time compiled element-wise kernels over a TensorIterator: compiled by NVRTC on first use for
// each dtype, layout and GPU architecture (one compile per process, however many threads ask at
// once; from $GPUAUG_CACHE_DIR when a previous process compiled it), loaded once, and launched on
// the current stream like any other gpuaug kernel.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>
#include <c10/cuda/CUDAMacros.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/cuda/jit/elementwise_source.h"

namespace gpuaug::jit {

class ElementwiseKernels {
 public:
  // `what` names the operator in error messages.
  ElementwiseKernels(std::string what, ElementwiseSpec spec);

  // Fills the iterator's outputs (spec.outputs of them, first) from its inputs (spec.inputs);
  // every operand has one floating dtype, on one CUDA device.
  void run(at::TensorIteratorBase& iter);

  // The PTX of one variant for compute capability `arch` (inspection and tests; needs no GPU).
  std::string ptx(at::ScalarType dtype, Layout layout, int arch) const;

  const ElementwiseSpec& spec() const { return spec_; }

 private:
  // One (dtype, layout): a loaded kernel per architecture, and per device once it is loaded there.
  struct Variant {
    std::mutex mutex;
    std::map<int, cudaKernel_t> by_arch;
    std::array<std::atomic<cudaKernel_t>, C10_COMPILE_TIME_MAX_GPUS> by_device{};
  };

  cudaKernel_t kernel(at::ScalarType dtype, Layout layout, c10::DeviceIndex device);

  std::string what_;
  ElementwiseSpec spec_;
  std::array<std::unique_ptr<Variant>, 4 * kNumLayouts> variants_;
};

// What the process has done so far: kernels compiled by NVRTC, read from the disk cache, and
// loaded in all (one per spec, dtype, layout and architecture).
struct CacheCounters {
  int64_t compiled = 0;
  int64_t from_disk = 0;
  int64_t loaded = 0;
};
CacheCounters cache_counters();

// The kernels of `spec`, made on the first call with that spec and kept for the process: a
// repeated spec finds them, so the cache grows only with new expressions.
ElementwiseKernels& cached_kernels(const std::string& what, const std::string& name,
                                   c10::ArrayRef<std::string> outputs,
                                   c10::ArrayRef<std::string> inputs);

}  // namespace gpuaug::jit
