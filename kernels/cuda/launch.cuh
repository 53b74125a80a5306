// What every CUDA kernel file shares: the block size and the grid arithmetic.
#pragma once

#include <cstdint>

namespace gpuaug::cuda {

constexpr int kThreads = 256;  // threads per block, every kernel

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace gpuaug::cuda
