// Device helpers shared by the color_transform forward and backward kernels.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/color_params.h"
#include "kernels/cuda/fast_divider.cuh"
#include "kernels/cuda/launch.cuh"

namespace gpuaug::cuda::color {

constexpr int kChannels = 3;  // the vectorised path's channel count

// Pixels per thread on the vectorised path: 16 bytes of the wider element type, so every access
// is coalesced and the wider (dominant) stream moves in 16-byte vectors.
template <typename A, typename B>
constexpr int kPixelsPerGroup = 16 / static_cast<int>(std::max(sizeof(A), sizeof(B)));

// Whether a group of the narrower type still fills whole 4-byte words (not so for float64 with
// uint8, which takes the per-pixel kernel).
template <typename A, typename B>
constexpr bool kVectorizable =
    kPixelsPerGroup<A, B> * std::min(sizeof(A), sizeof(B)) % 4 == 0;

// The V pixels of one thread, all kChannels channels, as they lie in memory: one run of
// V * kChannels elements (interleaved) or kChannels runs of V, one per plane (planar).
template <typename T, int V, bool Interleaved>
struct Group {
  static constexpr int kRuns = Interleaved ? 1 : kChannels;
  static constexpr int kRun = Interleaved ? V * kChannels : V;
  Chunk<T, kRun> run[kRuns];

  static constexpr __device__ int run_of(int c) { return Interleaved ? 0 : c; }
  static constexpr __device__ int index_of(int c, int j) { return Interleaved ? j * kChannels + c : j; }

  // image: the image's first element; g: the group's index within the image.
  __device__ __forceinline__ void load(const T* image, int64_t pixels, int64_t g) {
#pragma unroll
    for (int r = 0; r < kRuns; ++r) load_chunk(run[r], image + r * pixels + g * kRun);
  }
  __device__ __forceinline__ void store(T* image, int64_t pixels, int64_t g) const {
#pragma unroll
    for (int r = 0; r < kRuns; ++r) store_chunk(image + r * pixels + g * kRun, run[r]);
  }
  __device__ __forceinline__ T& at(int c, int j) { return run[run_of(c)].v[index_of(c, j)]; }
  __device__ __forceinline__ const T& at(int c, int j) const {
    return run[run_of(c)].v[index_of(c, j)];
  }
};

// A uint8 element as its unscaled value 0..255: one byte permute builds the float 2^23 + v,
// one subtraction leaves v (the conversion unit, shared with the special functions, stays free).
template <int V, bool Interleaved>
__device__ __forceinline__ float raw_u8(const Group<uint8_t, V, Interleaved>& g, int c, int j) {
  using G = Group<uint8_t, V, Interleaved>;
  const int i = G::index_of(c, j);
  const uint32_t bits = __byte_perm(g.run[G::run_of(c)].u32[i / 4], 0x4B000000u, 0x7440u | (i % 4));
  return __uint_as_float(bits) - 8388608.0f;
}

// Stores values v in [0, 1] (the caller clamps: every path but one ends in a saturating
// instruction already) as uint8 (v * 255 rounded to nearest even): adding 1.5 * 2^23 leaves the
// rounded value in the low byte, packed four at a time by byte permutes.
template <int V, bool Interleaved, typename Value>
__device__ __forceinline__ void pack_u8(Group<uint8_t, V, Interleaved>& g, Value value) {
  using G = Group<uint8_t, V, Interleaved>;
  uint32_t bits[kChannels][V];
#pragma unroll
  for (int j = 0; j < V; ++j)
#pragma unroll
    for (int c = 0; c < kChannels; ++c) {
      bits[c][j] = __float_as_uint(fmaf(value(c, j), 255.0f, 12582912.0f));
    }
  // Byte i of run r holds channel c, pixel j with r == run_of(c) and i == index_of(c, j).
#pragma unroll
  for (int r = 0; r < G::kRuns; ++r)
#pragma unroll
    for (int w = 0; w < G::kRun / 4; ++w) {
      uint32_t b[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int i = 4 * w + k;
        const int c = Interleaved ? i % kChannels : r;
        const int j = Interleaved ? i / kChannels : i;
        b[k] = bits[c][j];
      }
      g.run[r].u32[w] = __byte_perm(__byte_perm(b[0], b[1], 0x0040u), __byte_perm(b[2], b[3], 0x0040u),
                                    0x5410u);
    }
}

// One image as the per-pixel kernels see it: its sample's parameters, and where each pixel's
// channels lie (planar or interleaved, any channel count).
template <typename P>
struct PixelImage {
  bool apply;
  const P* color;
  gpuaug::color::SampleParams<P> s;
  int64_t offset, channel_step, pixel_step;

  __device__ PixelImage(const gpuaug::color::Params<P>& p, int64_t image, int64_t frames,
                        int64_t pixels, int channels, bool interleaved)
      : apply(p.applies(image / frames)),
        color(p.color_of(image / frames)),
        s(p.sample(image / frames)),
        offset(image * channels * pixels),
        channel_step(interleaved ? 1 : pixels),
        pixel_step(interleaved ? channels : 1) {}

  // The element index of channel c of pixel px.
  __device__ __forceinline__ int64_t at(int64_t px, int c) const {
    return offset + px * pixel_step + c * channel_step;
  }
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Grid: x spans the pixel groups of one image, y the images (looped past the grid's limit).
inline dim3 image_grid(int64_t groups, int64_t images, int64_t max_x) {
  return dim3(static_cast<unsigned>(std::max<int64_t>(1, std::min(ceil_div(groups, kThreads), max_x))),
              static_cast<unsigned>(std::min<int64_t>(images, 65535)));
}

}  // namespace gpuaug::cuda::color
