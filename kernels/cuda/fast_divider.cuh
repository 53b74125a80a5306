#pragma once

#include <cstdint>

namespace gpuaug::cuda {

// n / divisor for n < 2^31 by a multiply-high and a shift (Granlund and Montgomery), for index
// arithmetic in kernels, where a real division is a long instruction sequence.
struct FastDivider {
  FastDivider() = default;
  uint32_t divisor, magic, shift;
  explicit FastDivider(uint32_t d) : divisor(d), shift(0) {
    while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
#ifdef __CUDACC__  // the run-time compiled kernels divide in their own source
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, magic) + n) >> shift;
  }
#endif
};

}  // namespace gpuaug::cuda
