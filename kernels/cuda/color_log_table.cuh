// The uint8 -> uint8 fast path of the colour transform, in the log domain. uint8 -> uint8 is
// arithmetic-bound on the special-function unit (a log2 and an exp2 per value), so log2 of the
// 256 possible inputs is read from a shared-memory table instead, and the pixel's clamp and scale
// become additions:
//   log2 z_c = log2(u_c / 255) + log2(color_c) + log2(sum u) - log2(sum u * color + 2.55)
// (z_c = clamp(x_c * color_c * s_in / (s_out + 0.01), 0, 1) with x = u / 255, the 255s cancel),
// and z_c ^ gamma = exp2(gamma * min(log2 z_c, 0)). This holds where every colour and gamma are
// positive and finite (then nothing is negative and log2 of 0 is -inf, giving 0 as it should);
// other samples take the direct formula. uint8 -> floating outputs move 2.5 to 5 times the bytes
// and are memory-bound: there the table's build and the occupancy its 64 KiB cost lose more than
// it saves, so they take the direct formula too.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/color_math.h"
#include "kernels/cuda/color_common.cuh"

namespace gpuaug::cuda::color {

// (u, log2(u / 255)) for u = 0..255, replicated once per lane so that any 32 lookups of a warp
// are free of bank conflicts: entry u of lane l is at byte u * 256 + l * 8.
class U8LogTable {
 public:
  static constexpr int kBytes = 256 * 32 * sizeof(float2);

  // Fills `storage` (kBytes of shared memory); every thread of the block must call it.
  __device__ explicit U8LogTable(char* storage)
      : base_(storage), lane_bits_((threadIdx.x % 32) * sizeof(float2)) {
    static_assert(kThreads == 256, "one table entry per thread");
    const uint32_t u = threadIdx.x;
    const float2 entry = make_float2(float(u), log2f(float(u) * (1.0f / 255.0f)));
    float2* row = reinterpret_cast<float2*>(storage) + u * 32;
    // Rotating the replica by the thread keeps a warp's 32 stores in 32 different banks.
#pragma unroll 8
    for (uint32_t r = 0; r < 32; ++r) row[(r + u) % 32] = entry;
    __syncthreads();
  }

  // The entry of byte k of `word` (k known once unrolled): one byte permute builds its offset
  // u * 256 + lane * 8.
  __device__ __forceinline__ float2 lookup(uint32_t word, int k) const {
    const uint32_t offset = __byte_perm(word, lane_bits_, 0x5504u | (k << 4));
    return *reinterpret_cast<const float2*>(base_ + offset);
  }

 private:
  const char* base_;
  uint32_t lane_bits_;
};

// One sample's parameters for the log-domain path.
struct LogSample {
  bool usable;  // every colour and gamma positive and finite
  float color[kChannels];
  float gamma;
  float gamma_log_color[kChannels];
  float contrast, offset;  // out = clamp(w * contrast + offset, 0, 1)

  LogSample() = default;
  __device__ LogSample(const float* c, const gpuaug::color::SampleParams<float>& s) {
    const auto positive = [](float v) { return v > 0.0f && v < INFINITY; };
    usable = positive(s.gamma);
#pragma unroll
    for (int i = 0; i < kChannels; ++i) {
      usable = usable && positive(c[i]);
      color[i] = c[i];
      gamma_log_color[i] = s.gamma * log2f(c[i]);
    }
    gamma = s.gamma;
    contrast = s.contrast;
    offset = (s.brightness - 0.5f) * s.contrast + 0.5f;
  }
};

// What a kernel for other than uint8 -> uint8 holds instead of the table and LogSample.
struct NoLogTable {
  __device__ explicit NoLogTable(char*) {}
};
struct NoLogSample {
  NoLogSample() = default;
  template <typename Color, typename Sample>
  __device__ NoLogSample(const Color&, const Sample&) {}
};

template <typename in_t, typename out_t>
constexpr bool kLogDomain = std::is_same_v<in_t, uint8_t> && std::is_same_v<out_t, uint8_t>;
template <typename in_t, typename out_t>
using LogTableOf = std::conditional_t<kLogDomain<in_t, out_t>, U8LogTable, NoLogTable>;
template <typename in_t, typename out_t>
using LogSampleOf = std::conditional_t<kLogDomain<in_t, out_t>, LogSample, NoLogSample>;
template <typename in_t, typename out_t>
constexpr int kLogTableBytes = kLogDomain<in_t, out_t> ? U8LogTable::kBytes : 0;

}  // namespace gpuaug::cuda::color
