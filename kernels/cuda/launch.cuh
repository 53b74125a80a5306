// What every CUDA kernel file shares: the block size, the grid arithmetic and the vector type of
// 16-byte loads.
#pragma once

#include <cstdint>

namespace gpuaug::cuda {

constexpr int kThreads = 256;  // threads per block, every kernel

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// N values of T loaded or stored as one access (16 bytes when N = 16 / sizeof(T)).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

}  // namespace gpuaug::cuda
