// The CUDA source of a run-time compiled element-wise kernel: one kernel per (expressions, dtype,
// layout), so a first call compiles only the variant it runs.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

namespace gpuaug::jit {

constexpr int kThreads = 256;    // threads per block
// 16-byte vectors per thread and input of the contiguous kernels: one is enough to reach the copy
// bandwidth, and each more costs NVRTC time on a first call.
constexpr int kFlatVectors = 1;
constexpr int kStridedUnroll = 2;  // elements in flight per thread of the 32-bit strided kernel
constexpr int kMaxDims = 25;     // TensorIterator's limit
constexpr int kMaxInputs = 8;

// Element-wise outputs as CUDA C++ expressions of named inputs. The inputs arrive as float for
// float32, float16 and bfloat16, and as double for float64.
struct ElementwiseSpec {
  std::string name;                  // a C identifier: the kernel is gpuaug_<name>_<layout>
  std::vector<std::string> outputs;  // one expression per output
  std::vector<std::string> inputs;   // the names the expressions read, one per input tensor
};

// How the kernel walks its operands (outputs first, then inputs, as a TensorIterator has them).
enum class Layout {
  kVectorized,  // contiguous, every pointer 16-byte aligned: 16-byte loads and stores
  kContiguous,  // contiguous, some pointer not aligned
  kStrided32,   // any strides; offsets and the element count fit in 32 bits
  kStrided64,   // any strides
};
constexpr int kNumLayouts = 4;

std::string kernel_name(const ElementwiseSpec& spec, Layout layout);
std::string elementwise_source(const ElementwiseSpec& spec, at::ScalarType dtype, Layout layout);

}  // namespace gpuaug::jit
