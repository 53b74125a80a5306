// A broadcast gradient summed back to its operand's shape on the CPU, with the same bits on any
// number of threads (at::sum_to's reductions split their sums by the thread count).
#pragma once

#include <ATen/core/Tensor.h>

namespace gpuaug::cpu {

// `full` summed over the dimensions along which a tensor of shape `size` was broadcast to it.
at::Tensor deterministic_sum_to(const at::Tensor& full, at::IntArrayRef size);

}  // namespace gpuaug::cpu
