// Device helpers shared by the color_transform forward and backward kernels.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/color_params.h"

namespace gpuaug::cuda::color {

constexpr int kThreads = 256;
constexpr int kChannels = 3;  // the vectorised path's channel count

// N elements moved as whole 16-byte vectors (N * sizeof(T) is a multiple of 16).
template <typename T, int N>
union Chunk {
  static_assert(N * sizeof(T) % 16 == 0, "whole 16-byte vectors only");
  T v[N];
  uint4 q[N * sizeof(T) / 16];
};

template <typename T, int N>
__device__ __forceinline__ Chunk<T, N> load_chunk(const T* p) {
  Chunk<T, N> c;
#pragma unroll
  for (int i = 0; i < int(sizeof(c.q) / 16); ++i) c.q[i] = __ldg(reinterpret_cast<const uint4*>(p) + i);
  return c;
}

// The store is spelled in PTX: nvcc has been seen splitting a plain uint4 store here into four.
template <typename T, int N>
__device__ __forceinline__ void store_chunk(T* p, const Chunk<T, N>& c) {
#pragma unroll
  for (int i = 0; i < int(sizeof(c.q) / 16); ++i) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(reinterpret_cast<uint4*>(p) + i),
                 "r"(c.q[i].x), "r"(c.q[i].y), "r"(c.q[i].z), "r"(c.q[i].w)
                 : "memory");
  }
}

// Pixels per thread on the vectorised path: 16 bytes of the narrower of the two element types.
template <typename A, typename B>
constexpr int kPixelsPerGroup = 16 / static_cast<int>(std::min(sizeof(A), sizeof(B)));

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid: x spans the pixel groups of one image, y the images (looped past the grid's limit).
inline dim3 image_grid(int64_t groups, int64_t images, int64_t max_x) {
  return dim3(static_cast<unsigned>(std::max<int64_t>(1, std::min(ceil_div(groups, kThreads), max_x))),
              static_cast<unsigned>(std::min<int64_t>(images, 65535)));
}

}  // namespace gpuaug::cuda::color
