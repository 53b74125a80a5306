// photometric.cu's pixels in and out of a thread: its runs of V pixels per plane (or of
// interleaved pixels), loaded, unpacked into the compute type, converted and stored, and the
// block's loop over its chunks of an image. Included by photometric.cu alone.
#pragma once

#include <cuda_pipeline.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/launch.cuh"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cuda::photometric_impl {
namespace {

using namespace gpuaug::photo;

struct Geometry {
  int64_t pixels;            // per image (H * W)
  int64_t frames;            // images per sample
  int64_t chunks;            // per image: kThreads * V pixels each
  int64_t blocks_per_image;  // every kernel's; block b of an image takes chunks b, b + this, ...
  int64_t channel_step, pixel_step;  // the output's, and the buffers' the kernels allocate
  // The input's: its images and, planar, its planes may lie apart at any stride (a channel
  // slice, a plane expanded to three channels: stride 0), each plane's pixels consecutive.
  int64_t in_image_step, in_channel_step;
};

// Pixels per thread: 16-byte accesses for 2-byte and wider types. uint8 takes 8 (8-byte copies
// per plane): its kernels are bound by the latency of their dependent float operations, which
// two independent chains of four pixels hide better than one (4 pixels at 48 registers and 16 at
// 128 were both slower than 8 at 64).
template <typename T>
constexpr int kVec = sizeof(T) == 1 ? 8 : 16 / sizeof(T);

// A run of V elements in registers. uint8 runs are whole words (launch.cuh's Chunk), read and
// written as such: loaded as a Vec of bytes, nvcc takes each word apart into bytes and puts it
// back together before it is unpacked (60 instructions more per 24 bytes).
template <typename T, int V>
constexpr bool kWordRun = sizeof(T) == 1 && V % 4 == 0;

template <typename T, int V>
using Run = std::conditional_t<kWordRun<T, V>, Chunk<T, V>, Vec<T, V>>;

template <typename T, int V>
__device__ __forceinline__ Run<T, V> read_run(const T* p) {
  if constexpr (kWordRun<T, V>) {
    using Word = typename Chunk<T, V>::Word;
    Chunk<T, V> run;
#pragma unroll
    for (int i = 0; i < Chunk<T, V>::kWords; ++i) run.w[i] = reinterpret_cast<const Word*>(p)[i];
    return run;
  } else {
    return *reinterpret_cast<const Vec<T, V>*>(p);
  }
}

// A thread's run of V pixels of a plane: V consecutive pixels, or, in halves (kRunHalves), two
// runs of V / 2, lane l's at l V / 2 and 16 V + l V / 2 of its warp's 32 V pixels, so that each of
// the warp's stores of a half writes one span. Runs of V consecutive outputs wider than 16 bytes
// (uint8 to float32: 32 bytes a lane) are stored by 16-byte stores at a stride, each writing
// half of every 32-byte sector it touches; halves write whole sectors, which speeds the stores
// (the op gains less, its arithmetic bounding it more than its stores).
template <typename T, typename out_t, int V>
constexpr bool kRunHalves = V % 2 == 0 && V * sizeof(out_t) > 16 && V / 2 * sizeof(T) >= 4;

template <int V, bool Halves>
constexpr int kRunGap = Halves ? 16 * V : V / 2;  // from a run's first half to its second

// Interleaved, resident images whose warps' runs are whole take the same flag (Halves) for pairs:
// a lane's V pixels as V / 2 pairs, lane l's at 2 l + 64 s of its warp's 32 V (s < V / 2), so that
// the warp's pairs s are one span of 64 pixels, staged and stored in one round of whole words
// (uint8 -> float32: 768 bytes, what the warp's pixels took in shared memory), where V consecutive
// pixels take four rounds of eight lanes, whose values stay live throughout (72 registers: 88
// bytes spilled).
template <typename T, typename out_t, int V>
constexpr bool kRunPairs = sizeof(T) == 1 && V == 8 && sizeof(out_t) == 4;

constexpr int kPairGap = 64;  // pixels from a lane's pair s to its pair s + 1

// The pixels from one lane's first to the next lane's.
template <int V, bool Interleaved, bool Halves>
constexpr int kLanePixels = !Halves ? V : (Interleaved ? 2 : V / 2);

// A thread's C runs of V elements: planar, run c is channel c; interleaved, the runs are the
// pixels' C * V consecutive values.
template <typename T, int C, int V, bool Interleaved>
struct Runs {
  Run<T, V> run[C];
  static __device__ __forceinline__ int flat(int c, int j) { return Interleaved ? j * C + c : c * V + j; }
  __device__ __forceinline__ T& at(int c, int j) { return run[flat(c, j) / V].v[flat(c, j) % V]; }
  // The channel and pixel of flat index f, flat's inverse.
  static __device__ __forceinline__ constexpr int channel(int f) { return Interleaved ? f % C : f / V; }
  static __device__ __forceinline__ constexpr int pixel(int f) { return Interleaved ? f / C : f % V; }
  __device__ __forceinline__ int64_t offset(int64_t image_base, int64_t plane_step, int64_t p0, int r) const {
    return Interleaved ? image_base + p0 * C + r * V : image_base + r * plane_step + p0;
  }
};

// Element j of a run in the compute type. uint8 to float: byte j of its word under 2^23's bits
// by one byte permute, less 2^23: the add runs on the FMA pipe, where a conversion (I2FP) would be
// a second instruction on the ALU pipe, the kernels' busiest. 2^23's bits are the permute's
// first word, which must be a register (one for all), so that its selector stays an immediate: as
// its second word, ptxas made 2^23 the immediate and moved each selector into a register, a move
// per byte.
// (A byte cast of the shifted word takes nvcc through 16-bit halves.)
template <int V>
__device__ __forceinline__ float biased_element(const Run<uint8_t, V>& run, int j) {
  return __uint_as_float(__byte_perm(0x4B000000u, run.u32[j / 4], 0x3004u + j % 4));
}

template <typename P, typename T, int V>
__device__ __forceinline__ P load_element(const Run<T, V>& run, int j) {
  if constexpr (std::is_same_v<T, uint8_t> && std::is_same_v<P, float> && V % 4 == 0) {
    return biased_element<V>(run, j) - 8388608.0f;
  }
  return load<P>(run.v[j]);
}

// A uint8 run of a plane from its halves (see kRunHalves), `p` the first's.
template <typename T, int V, bool Halves>
__device__ __forceinline__ Run<T, V> read_run(const T* p) {
  if constexpr (!Halves) {
    return read_run<T, V>(p);
  } else {
    static_assert(kWordRun<T, V> && kWordRun<T, V / 2>, "resident images are uint8");
    const Run<T, V / 2> halves[2] = {read_run<T, V / 2>(p), read_run<T, V / 2>(p + kRunGap<V, true>)};
    constexpr int kHalfWords = V * sizeof(T) / 8;
    Run<T, V> run;
#pragma unroll
    for (int i = 0; i < 2 * kHalfWords; ++i) run.u32[i] = halves[i / kHalfWords].u32[i % kHalfWords];
    return run;
  }
}

// The thread's chunk as loaded: its C runs by vector loads where the image is aligned (nothing
// past the image's end); nothing otherwise, where unpack_pixels loads element by element.
template <int C, typename T, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ Runs<T, C, V, Interleaved> fetch_runs(const T* in, const Geometry& g,
                                                                int64_t image_base, int64_t p0) {
  if constexpr (!Vectorized) {
    return {};
  } else {
    Runs<T, C, V, Interleaved> r;
    if (p0 < g.pixels) {
#pragma unroll
      for (int k = 0; k < C; ++k) {
        r.run[k] = read_run<T, V>(in + r.offset(image_base, g.channel_step, p0, k));
      }
    }
    return r;
  }
}

// The thread's pixels in the compute type, from its fetched runs, or element by element (pixels
// past the image's end read as 0 and are not stored).
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ void unpack_pixels(const Runs<T, C, V, Interleaved>& r, const T* in,
                                              const Geometry& g, int64_t image_base,
                                              int64_t channel_step, int64_t p0, P (&x)[V][3]) {
  if constexpr (Vectorized) {
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int f = r.flat(c, j);
        x[j][c] = load_element<P, T, V>(r.run[f / V], f % V);
      }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t p = p0 + j;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        x[j][c] = p < g.pixels ? load<P>(in[image_base + p * g.pixel_step + c * channel_step]) : P(0);
      }
    }
  }
}

template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ void load_pixels(const T* in, const Geometry& g, int64_t image_base,
                                            int64_t p0, P (&x)[V][3]) {
  unpack_pixels<C, T, P, V, Vectorized, Interleaved>(
      fetch_runs<C, T, V, Vectorized, Interleaved>(in, g, image_base, p0), in, g, image_base,
      g.channel_step, p0, x);
}

// A run stored as whole words (launch.cuh's chunks): a plain store of a 16-byte Vec comes out of
// nvcc as four 4-byte stores.
template <typename T, int V, bool Streaming = false>
__device__ __forceinline__ void store_run(T* p, const Run<T, V>& run) {
  if constexpr (kWordRun<T, V>) {
    store_chunk<Streaming>(p, run);
  } else if constexpr (V * sizeof(T) % 4 == 0) {
    Chunk<T, V> chunk;
#pragma unroll
    for (int j = 0; j < V; ++j) chunk.v[j] = run.v[j];
    store_chunk<Streaming>(p, chunk);
  } else {
    *reinterpret_cast<Vec<T, V>*>(p) = run;
  }
}

// Word w of run k of the thread's values as uint8 (T's, converted as its output would be): four
// bytes, each the low byte of 2^23 + its value, by three byte permutes.
template <typename T, int C, int V, bool Interleaved, typename P>
__device__ __forceinline__ uint32_t u8_word(const P (&x)[V][3], int k, int w) {
  using R = Runs<uint8_t, C, V, Interleaved>;
  uint32_t bits[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int f = k * V + 4 * w + e;
    bits[e] = __float_as_uint(u8_value<T>(x[R::pixel(f)][R::channel(f)]) + 8388608.0f);
  }
  return __byte_perm(__byte_perm(bits[0], bits[1], 0x0040u), __byte_perm(bits[2], bits[3], 0x0040u),
                     0x5410u);
}

// Interleaved, a warp's lanes' values lie one after the other (lane l's C V at its first pixel's),
// but a lane's own stores, at a stride of its C V values, each write part of every 32-byte sector
// they touch, spread over the warp's whole span. So the warp stores its span in contiguous words,
// staged through shared memory: `stage` (the warp's, StageBytes of it) takes as many lanes' values
// as it holds a round, and then every lane stores words of them. `lanes`: the lanes that store, a
// prefix of the warp.
template <int StageBytes, bool Streaming, typename Word, int kWords>
__device__ __forceinline__ void store_warp_span(Word* warp_out, const Word (&mine)[kWords],
                                                Word* stage, int lanes) {
  constexpr int kSpanBytes = 32 * kWords * static_cast<int>(sizeof(Word));
  constexpr int kRounds = (kSpanBytes + StageBytes - 1) / StageBytes;
  static_assert(32 % kRounds == 0, "whole lanes a round");
  constexpr int kLanes = 32 / kRounds, kRoundWords = kLanes * kWords;
  const int lane = threadIdx.x % 32;
  const unsigned mask = lanes >= 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
  __syncwarp(mask);  // the lanes have read what `stage` held
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    if (lane / kLanes == r) {
#pragma unroll
      for (int i = 0; i < kWords; ++i) stage[lane % kLanes * kWords + i] = mine[i];
    }
    __syncwarp(mask);
    if (lanes == 32) {
#pragma unroll
      for (int first = 0; first < kRoundWords; first += 32) {
        const int i = first + lane;
        if (i < kRoundWords) store_word<Streaming>(warp_out + r * kRoundWords + i, stage[i]);
      }
    } else {  // the lanes that store, this round's words
      const int round_lanes = lanes - r * kLanes;
      const int words = (round_lanes < kLanes ? round_lanes : kLanes) * kWords;
      for (int i = lane; i < words; i += lanes) {
        store_word<Streaming>(warp_out + r * kRoundWords + i, stage[i]);
      }
    }
    __syncwarp(mask);  // read before the next round (or the caller) writes there
  }
}

// Interleaved stores of 4-byte and wider values go through store_warp_span (in whole words),
// which makes channels_last outputs much faster. bfloat16 and uint8 outputs, whose lanes' stores
// were not what bound them, were slower staged.
template <int C, typename out_t, int V, bool Interleaved>
constexpr bool kStagedStores = Interleaved && sizeof(out_t) >= 4 && C * V * sizeof(out_t) % 4 == 0;

// The shared memory a warp of the element-wise kernels stages its interleaved stores in
// (store_warp_span): its lanes' values, up to 3 KiB (24 KiB a block).
template <int C, typename out_t, int V>
constexpr int kStageBytes = std::min(3072, 32 * C * V * static_cast<int>(sizeof(out_t)));

template <int C, typename out_t, int V, bool Interleaved>
__device__ __forceinline__ void* warp_stage() {
  if constexpr (kStagedStores<C, out_t, V, Interleaved>) {
    __shared__ uint4 stage[kThreads / 32][kStageBytes<C, out_t, V> / sizeof(uint4)];
    return stage[threadIdx.x / 32];
  } else {
    return nullptr;
  }
}

// Stores the thread's pixels p0.. of image_base's image. Interleaved (and vectorized, in whole
// words), its warp's lanes take consecutive pixels, those below `end`, and stage them in `stage`.
template <int C, typename T, typename out_t, typename P, int V, bool Vectorized, bool Interleaved,
          bool Streaming = false, bool Halves = false, int StageBytes = kStageBytes<C, out_t, V>>
__device__ __forceinline__ void store_pixels(out_t* out, const Geometry& g, int64_t image_base,
                                             int64_t p0, const P (&x)[V][3], const Output<P>& o,
                                             void* stage, int64_t end) {
  using R = Runs<out_t, C, V, Interleaved>;
  if constexpr (Halves && Interleaved) {  // pairs (see kRunPairs): a round of whole words each
    const int64_t warp_p0 = p0 - threadIdx.x % 32 * 2;
#pragma unroll
    for (int pair = 0; pair < V / 2; ++pair) {
      Chunk<out_t, 2 * C> values;
#pragma unroll
      for (int f = 0; f < 2 * C; ++f) {
        values.v[f] = convert<T, out_t>(x[2 * pair + f / C][f % C], o, f % C);
      }
      using Word = typename Chunk<out_t, 2 * C>::Word;
      store_warp_span<StageBytes, Streaming>(
          reinterpret_cast<Word*>(out + image_base + (warp_p0 + kPairGap * pair) * C), values.w,
          static_cast<Word*>(stage), 32);
    }
  } else if constexpr (kStagedStores<C, out_t, V, Vectorized && Interleaved>) {
    Chunk<out_t, C * V> span;
#pragma unroll
    for (int f = 0; f < C * V; ++f) {
      span.v[f] = convert<T, out_t>(x[R::pixel(f)][R::channel(f)], o, R::channel(f));
    }
    using Word = typename Chunk<out_t, C * V>::Word;
    const int64_t warp_p0 = p0 - threadIdx.x % 32 * V;
    const int64_t lanes_before_end = (end - warp_p0) / V;
    const int lanes = lanes_before_end < 32 ? static_cast<int>(lanes_before_end) : 32;
    store_warp_span<StageBytes, Streaming>(reinterpret_cast<Word*>(out + image_base + warp_p0 * C),
                                           span.w, static_cast<Word*>(stage), lanes);
  } else if constexpr (Halves) {  // planar runs in halves (see kRunHalves)
    static_assert(Vectorized && !Interleaved && kRunHalves<T, out_t, V>);
#pragma unroll
    for (int k = 0; k < C; ++k) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        Vec<out_t, V / 2> run;
#pragma unroll
        for (int j = 0; j < V / 2; ++j) run.v[j] = convert<T, out_t>(x[half * (V / 2) + j][k], o, k);
        store_run<out_t, V / 2, Streaming>(
            out + R().offset(image_base, g.channel_step, p0 + half * kRunGap<V, true>, k), run);
      }
    }
  } else if constexpr (Vectorized && kIsU8<out_t> && std::is_same_v<P, float> && V % 4 == 0) {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      auto* words = reinterpret_cast<uint32_t*>(out + R().offset(image_base, g.channel_step, p0, k));
#pragma unroll
      for (int w = 0; w < V / 4; ++w) {
        store_word<Streaming>(words + w, u8_word<T, C, V, Interleaved>(x, k, w));
      }
    }
  } else if constexpr (Vectorized) {
    R r;
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) r.at(c, j) = convert<T, out_t>(x[j][c], o, c);
#pragma unroll
    for (int k = 0; k < C; ++k) {
      store_run<out_t, V, Streaming>(out + r.offset(image_base, g.channel_step, p0, k), r.run[k]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t p = p0 + j;
      if (p >= g.pixels) break;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        out[image_base + p * g.pixel_step + c * g.channel_step] = convert<T, out_t>(x[j][c], o, c);
      }
    }
  }
}

// Resident blocks per SM the element-wise kernels ask the compiler for: 4 for uint8's eight
// pixels a thread (64 registers; 6 blocks at 40 registers spilled and were slower), else 5
// (48 registers: their arithmetic needs 56-64 unbounded, which leaves 4 blocks, half the SM's
// warps, too few to hide the latency of their dependent float operations).
template <typename T, int V>
constexpr int kBlocksPerSM = sizeof(T) == 1 && V == 8 ? 4 : 5;

// Calls f(p0) for each of the block's chunks of its image, p0 the thread's first pixel in it.
template <int V, typename F>
__device__ __forceinline__ void for_each_chunk(const Geometry& g, F&& f) {
  for (int64_t chunk = blockIdx.x % g.blocks_per_image; chunk < g.chunks;
       chunk += g.blocks_per_image) {
    const int64_t p0 = (chunk * kThreads + threadIdx.x) * V;
    if (p0 < g.pixels) f(p0);
  }
}

// Calls f(p0, runs) for each of the block's chunks of image_base's image (its planes
// channel_step apart), runs the thread's pixels there as fetch_runs loads them. Vectorized, each
// chunk's runs are copied into shared memory by cp.async while the thread computes the chunk
// before (otherwise many of the element-wise kernel's warps wait on their loads; a prefetch into
// registers spilled under its register cap).
template <int C, typename T, int V, bool Vectorized, bool Interleaved, typename F>
__device__ __forceinline__ void for_each_chunk_of(const T* in, const Geometry& g,
                                                  int64_t image_base, int64_t channel_step,
                                                  F&& f) {
  using R = Runs<T, C, V, Interleaved>;
  if constexpr (!Vectorized) {
    for_each_chunk<V>(g, [&](int64_t p0) { f(p0, R{}); });
  } else {
    __shared__ Vec<T, V> staged_runs[2][C][kThreads];  // [buffer][run][thread]
    const auto first_pixel = [&](int64_t chunk) { return (chunk * kThreads + threadIdx.x) * V; };
    const auto copy_async = [&](int64_t chunk, int buffer) {
      const int64_t p0 = first_pixel(chunk);
      if (p0 < g.pixels) {
#pragma unroll
        for (int k = 0; k < C; ++k) {
          __pipeline_memcpy_async(&staged_runs[buffer][k][threadIdx.x],
                                  in + R().offset(image_base, channel_step, p0, k),
                                  sizeof(Vec<T, V>));
        }
      }
      __pipeline_commit();  // a group even when empty: wait_prior counts groups
    };
    int64_t chunk = blockIdx.x % g.blocks_per_image;
    copy_async(chunk, 0);
    for (int buffer = 0; chunk < g.chunks; chunk += g.blocks_per_image, buffer ^= 1) {
      // the other buffer's runs were read (and used) in the last iteration
      copy_async(chunk + g.blocks_per_image, buffer ^ 1);
      __pipeline_wait_prior(1);  // this chunk's copies have landed
      const int64_t p0 = first_pixel(chunk);
      if (p0 >= g.pixels) continue;
      R r;
#pragma unroll
      for (int k = 0; k < C; ++k) r.run[k] = read_run<T, V>(staged_runs[buffer][k][threadIdx.x].v);
      f(p0, r);
    }
  }
}

}  // namespace
}  // namespace gpuaug::cuda::photometric_impl
