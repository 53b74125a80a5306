// What every CUDA kernel file shares: the block size, the grid arithmetic and the vector types of
// 16-byte loads and stores.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace gpuaug::cuda {

constexpr int kThreads = 256;  // threads per block, every kernel

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// N values of T loaded or stored as one access (16 bytes when N = 16 / sizeof(T)).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// N elements moved through the widest whole words (16, 8 or 4 bytes) that their size allows.
template <typename T, int N>
union Chunk {
  static constexpr int kBytes = N * sizeof(T);
  static_assert(kBytes % 4 == 0, "whole 4-byte words only");
  using Word = std::conditional_t<kBytes % 16 == 0, uint4,
                                  std::conditional_t<kBytes % 8 == 0, uint2, uint32_t>>;
  static constexpr int kWords = kBytes / sizeof(Word);
  T v[N];
  Word w[kWords];
  uint32_t u32[kBytes / 4];
};

template <typename T, int N>
__device__ __forceinline__ void load_chunk(Chunk<T, N>& c, const T* p) {
  using Word = typename Chunk<T, N>::Word;
#pragma unroll
  for (int i = 0; i < Chunk<T, N>::kWords; ++i) c.w[i] = __ldg(reinterpret_cast<const Word*>(p) + i);
}

// Spelled in PTX: nvcc has been seen splitting a plain 16-byte store into four. Streaming:
// st.global.cs, for outputs far larger than L2 that nothing reads soon (L2 evicts them first).
template <bool Streaming = false>
__device__ __forceinline__ void store_word(uint4* p, uint4 v) {
  if constexpr (Streaming) {
    asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
  } else {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
  }
}
template <bool Streaming = false>
__device__ __forceinline__ void store_word(uint2* p, uint2 v) {
  if constexpr (Streaming) {
    asm volatile("st.global.cs.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
  } else {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
  }
}
template <bool Streaming = false>
__device__ __forceinline__ void store_word(uint32_t* p, uint32_t v) {
  if constexpr (Streaming) {
    __stcs(p, v);
  } else {
    *p = v;
  }
}

template <bool Streaming = false, typename T, int N>
__device__ __forceinline__ void store_chunk(T* p, const Chunk<T, N>& c) {
  using Word = typename Chunk<T, N>::Word;
#pragma unroll
  for (int i = 0; i < Chunk<T, N>::kWords; ++i) {
    store_word<Streaming>(reinterpret_cast<Word*>(p) + i, c.w[i]);
  }
}

}  // namespace gpuaug::cuda
