// gpuaug::photometric on the GPU. A uint8 batch with a reduction stage whose images each fit in a
// block's shared memory (half an image a block, in clusters of two, on Hopper and newer), and that
// fills the GPU with such blocks, runs as one kernel with each image resident in shared memory
// (resident_transform). Otherwise, with a reduction stage, a reduction kernel writes per-block
// partial statistics of each image at that step (contrast's sum of grays, autocontrast's channel
// minima and maxima), or, for equalize, adds to each image's histograms, from which a small kernel
// makes its tables; it also keeps the pixels as they reach that step (an image-sized buffer), so
// that the element-wise kernel resumes there instead of running the earlier steps again. That
// kernel runs every pixel through its sample's program, each block combining its image's partials
// (in a fixed order: the same bits on every run). Each thread takes V pixels (kVec): 16-byte copies
// per channel plane (or per run of interleaved pixels) where the image is aligned, else per element
// (uint8: 8 pixels, see kVec, or 4 where its planes are 4-byte aligned only). A block's pixels
// belong to one image, and it loops over several chunks of them, copying the next chunk into shared
// memory (cp.async) while it computes this one; its sample's program is decoded into shared memory.
// The backward (floating images) runs the same reduction for the mean, then, with contrast, a
// reduction of the mean's gradient (each pixel back to its contrast step), then one kernel that
// takes each pixel back through every step (kernels/photometric_grad.h).
// Built with --fmad=false: torchvision rounds after each multiply and add, and so does this file,
// except where torch itself fuses (its add with alpha, spelled std::fma in photometric_math.h).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/color_transform.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/per_device.h"
#include "kernels/photometric.h"
#include "kernels/photometric_grad.h"
#include "kernels/photometric_math.h"

namespace gpuaug::cuda::photometric_impl {
namespace {

using namespace gpuaug::photo;

struct Geometry {
  int64_t pixels;            // per image (H * W)
  int64_t frames;            // images per sample
  int64_t chunks;            // per image: kThreads * V pixels each
  int64_t blocks_per_image;  // every kernel's; block b of an image takes chunks b, b + this, ...
  int64_t channel_step, pixel_step;
};

// Blocks in all, about: a block pays its prologue (decoding its sample's program, combining its
// image's statistics) once for several chunks. A function of the sizes alone, so that statistics
// combine in the same order on every GPU (uint8 chunks also depend on the planes' alignment, see
// kVec: their sums, of integers, are exact in any order). 1024 or 1536 instead: 0.169 and
// 0.157 ms against 0.157 for ColorJitter on an H100.
constexpr int64_t kTargetBlocks = 2048;

// Pixels per thread: 16-byte accesses for 2-byte and wider types. uint8 takes 8 (8-byte copies
// per plane): its kernels are bound by the latency of their dependent float operations, which
// two independent chains of four pixels hide better than one (H100, ColorJitter u8 -> float32:
// 0.156 ms with 8 at 64 registers, 0.163 ms with 4 at 48, 0.214 ms with 16 at 128).
template <typename T>
constexpr int kVec = sizeof(T) == 1 ? 8 : 16 / sizeof(T);

// A run of V elements in registers. uint8 runs are whole words (launch.cuh's Chunk), read and
// written as such: loaded as a Vec of bytes, nvcc takes each word apart into bytes and puts it
// back together before it is unpacked (60 instructions more per 24 bytes, H100 SASS).
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
// half of every 32-byte sector it touches. H100, 256x3x224x224 uint8 to float32: an image copied
// to shared memory and stored converted (scratch microbenchmark) 102.8 -> 69.4 us; ColorJitter +
// Normalize, the op alone, 104.1 -> 100.0 us (its arithmetic bounds it more than its stores).
template <typename T, typename out_t, int V>
constexpr bool kRunHalves = V % 2 == 0 && V * sizeof(out_t) > 16 && V / 2 * sizeof(T) >= 4;

template <int V, bool Halves>
constexpr int kRunGap = Halves ? 16 * V : V / 2;  // from a run's first half to its second

// Interleaved, resident images whose warps' runs are whole take the same flag (Halves) for pairs:
// a lane's V pixels as V / 2 pairs, lane l's at 2 l + 64 s of its warp's 32 V (s < V / 2), so that
// the warp's pairs s are one span of 64 pixels, staged and stored in one round of whole words
// (uint8 -> float32: 768 bytes, what the warp's pixels took in shared memory), where V consecutive
// pixels take four rounds of eight lanes, whose values stay live throughout (72 registers: 88
// bytes spilled). H200, 256x3x224x224 uint8 channels_last -> float32: ColorJitter + Normalize
// 105.5 -> 97.5 us, without contrast (the kernel's one pass) 80.5 -> 70.8 us.
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
  __device__ __forceinline__ int64_t offset(int64_t image_base, int64_t pixels, int64_t p0, int r) const {
    return Interleaved ? image_base + p0 * C + r * V : image_base + r * pixels + p0;
  }
};

// Element j of a run in the compute type. uint8 to float: byte j of its word under 2^23's bits
// by one byte permute, less 2^23: the add runs on the FMA pipe, where a conversion (I2FP) would be
// a second instruction on the ALU pipe, the kernels' busiest (H100, ColorJitter u8 -> float32:
// 0.1105 ms against 0.1116). 2^23's bits are the permute's first word, which must be a register
// (one for all), so that its selector stays an immediate: as its second word, ptxas made 2^23 the
// immediate and moved each selector into a register, a move per byte (0.1102 ms against 0.1095).
// (A byte cast of the shifted word takes nvcc through 16-bit halves.)
template <typename P, typename T, int V>
__device__ __forceinline__ P load_element(const Run<T, V>& run, int j) {
  if constexpr (std::is_same_v<T, uint8_t> && std::is_same_v<P, float> && V % 4 == 0) {
    return __uint_as_float(__byte_perm(0x4B000000u, run.u32[j / 4], 0x3004u + j % 4)) - 8388608.0f;
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
        r.run[k] = read_run<T, V>(in + r.offset(image_base, g.pixels, p0, k));
      }
    }
    return r;
  }
}

// The thread's pixels in the compute type, from its fetched runs, or element by element (pixels
// past the image's end read as 0 and are not stored).
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ void unpack_pixels(const Runs<T, C, V, Interleaved>& r, const T* in,
                                              const Geometry& g, int64_t image_base, int64_t p0,
                                              P (&x)[V][3]) {
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
        x[j][c] = p < g.pixels ? load<P>(in[image_base + p * g.pixel_step + c * g.channel_step]) : P(0);
      }
    }
  }
}

template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ void load_pixels(const T* in, const Geometry& g, int64_t image_base,
                                            int64_t p0, P (&x)[V][3]) {
  unpack_pixels<C, T, P, V, Vectorized, Interleaved>(
      fetch_runs<C, T, V, Vectorized, Interleaved>(in, g, image_base, p0), in, g, image_base, p0, x);
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

// Interleaved stores of 4-byte and wider values go through store_warp_span (in whole words). H200,
// 256x3x224x224 uint8 in channels_last, float32 out: ColorJitter + Normalize 144 -> 106 us
// (planar: 90; 97 with pairs, see kRunPairs), without contrast 120 -> 80 (71), the conversion
// and Normalize alone 134 -> 53 (52); float32 in and out 267 -> 248. bfloat16 and uint8 outputs,
// whose lanes' stores were not what bound them (89 us, as planar), took 2-5% longer staged.
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
            out + R().offset(image_base, g.pixels, p0 + half * kRunGap<V, true>, k), run);
      }
    }
  } else if constexpr (Vectorized && kIsU8<out_t> && std::is_same_v<P, float> && V % 4 == 0) {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      auto* words = reinterpret_cast<uint32_t*>(out + R().offset(image_base, g.pixels, p0, k));
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
      store_run<out_t, V, Streaming>(out + r.offset(image_base, g.pixels, p0, k), r.run[k]);
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
// pixels a thread (64 registers; 6 blocks at 40 registers spilled and took 7% longer), else 5
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

// Calls f(p0, runs) for each of the block's chunks of image_base's image, runs the thread's
// pixels there as fetch_runs loads them. Vectorized, each chunk's runs are copied into shared
// memory by cp.async while the thread computes the chunk before (ncu: a third of the element-wise
// kernel's warps waited on their loads; a prefetch into registers spilled under its register cap).
template <int C, typename T, int V, bool Vectorized, bool Interleaved, typename F>
__device__ __forceinline__ void for_each_chunk_of(const T* in, const Geometry& g,
                                                  int64_t image_base, F&& f) {
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
                                  in + R().offset(image_base, g.pixels, p0, k), sizeof(Vec<T, V>));
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

// The slot a drawn program runs at position j (lane j of the warp), or -1: lane j takes slot j's
// key and coin from the sample's uniforms, and the warp ranks the keys by shuffles.
template <typename P>
__device__ __forceinline__ int64_t drawn_lane_slot(const Program& program, const Rows<P>& rows,
                                                   int64_t n, int k, int j) {
  const P* u = rows.factors[n];
  const double key = j < k ? drawn_key(program, u, j) : 0.0;
  const bool applies = j < k && drawn_applies(program, u, j);
  int rank = 0;
  for (int i = 0; i < k; ++i) rank += key_before(__shfl_sync(0xFFFFFFFFu, key, i), i, key, j);
  int64_t slot = -1;
  for (int other = 0; other < k; ++other) {
    const int other_rank = __shfl_sync(0xFFFFFFFFu, rank, other);
    const bool other_applies = __shfl_sync(0xFFFFFFFFu, applies, other);
    if (other_rank == j && other_applies) slot = other;
  }
  return slot;
}

// Sample n's program into shared memory, by warp 0 (kMaxStages <= 32): lane j takes position j
// of the sample's order, and a ballot gives each applied step its place (decode's loop, without
// its serial chain through local memory, which every block's threads waited on).
template <typename P>
__device__ __forceinline__ void decode_block_program(SampleProgram<P>& prog, const Program& program,
                                                     const Rows<P>& rows, int64_t n) {
  static_assert(kMaxStages <= 32);
  if (threadIdx.x >= 32) return;
  const int k = program.count;
  const int j = threadIdx.x;
  int64_t slot = -1;
  Step<P> s{};
  if (program.drawn) {
    slot = drawn_lane_slot(program, rows, n, k, j);
    if (!has_step(program, slot)) slot = -1;  // parameter slots run nothing
    if (slot >= 0) s = drawn_step(program, rows, n, slot);
  } else {
    if (has_keys(rows)) {  // lane j ranks slot j's key; position j's lane finds its slot
      const int rank = j < k ? key_rank(rows, n, k, j) : -1;
      for (int other = 0; other < k; ++other) {
        if (__shfl_sync(0xFFFFFFFFu, rank, other) == j) slot = if_applied(rows, n, k, other);
      }
    } else if (j < k) {
      slot = applied_slot(rows, n, k, j);
    }
    if (!has_step(program, slot)) slot = -1;
    if (slot >= 0) s = slot_step(program, rows, n, slot);
  }
  const unsigned applied = __ballot_sync(0xFFFFFFFFu, slot >= 0);
  const unsigned reductions = __ballot_sync(0xFFFFFFFFu, slot >= 0 && is_reduction(s.kind));
  const unsigned before = (1u << j) - 1;  // the positions before j (j < 32)
  if (slot >= 0) prog.steps[__popc(applied & before)] = s;
  if (j == 0) {
    prog.count = __popc(applied);
    prog.reduce_at = reductions ? __popc(applied & ((reductions & -reductions) - 1)) : -1;
  }
}

// `image`'s statistics from its blocks' partials ([blocks, kStats]), combined in a fixed order,
// in lane 0 of the calling warp (all of whose lanes must call it).
__device__ __forceinline__ void warp_image_stats(const double* partials, const Geometry& g,
                                                 int64_t image, int kind,
                                                 double (&stats)[kStats]) {
  const int count = stat_count(kind);
#pragma unroll
  for (int i = 0; i < kStats; ++i) stats[i] = initial_stat(kind, i);
  for (int64_t b = threadIdx.x % 32; b < g.blocks_per_image; b += 32) {
    const double* part = partials + (image * g.blocks_per_image + b) * kStats;
#pragma unroll
    for (int i = 0; i < kStats; ++i) {
      if (i < count) stats[i] = combine_stat(kind, i, stats[i], part[i]);
    }
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
#pragma unroll
    for (int i = 0; i < kStats; ++i) {
      if (i < count) {
        stats[i] = combine_stat(kind, i, stats[i], __shfl_down_sync(0xFFFFFFFFu, stats[i], d));
      }
    }
  }
}

// The block's statistics, its threads' combined in a fixed order, into out[0, kStats). Every
// thread of the block (of at most MaxThreads) must call it.
template <int MaxThreads = kThreads>
__device__ __forceinline__ void block_stats(int kind, double (&stats)[kStats], double* out) {
  __shared__ double warp_stats[MaxThreads / 32][kStats];
  const int count = stat_count(kind);
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
#pragma unroll
    for (int i = 0; i < kStats; ++i) {
      if (i < count) {
        stats[i] = combine_stat(kind, i, stats[i], __shfl_down_sync(0xFFFFFFFFu, stats[i], d));
      }
    }
  }
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int i = 0; i < kStats; ++i) warp_stats[threadIdx.x / 32][i] = stats[i];
  }
  __syncthreads();
  if (threadIdx.x < kStats) {
    double total = initial_stat(kind, threadIdx.x);
#pragma unroll
    for (int w = 0; w < blockDim.x / 32; ++w) {
      total = combine_stat(kind, threadIdx.x, total, warp_stats[w][threadIdx.x]);
    }
    out[threadIdx.x] = total;
  }
}

// What each image's reduction step reads, into shared `reduced` (zeros without a reduction; the
// equalize tables at `table`), by warp 1, while warp 0 decodes the program.
template <typename T, typename P>
__device__ __forceinline__ void load_reduced(Reduced<P>& reduced, const double* partials,
                                             const Geometry& g, int64_t image, int kind,
                                             const uint8_t* table = nullptr) {
  static_assert(kThreads >= 64);
  if (threadIdx.x / 32 != 1) return;
  double stats[kStats];
  if (partials != nullptr) warp_image_stats(partials, g, image, kind, stats);
  if (threadIdx.x == 32) {
    reduced = partials != nullptr ? finish_reduction<T, P>(kind, stats, g.pixels) : Reduced<P>{};
    reduced.table = table;
  }
}

// The thread's pixels at their sample's reduction step (from steps none of which reads
// statistics); kept in `staged` (the image's dtype holds each step's result exactly) for the
// element-wise pass to resume from, where given and steps precede the reduction.
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__device__ __forceinline__ void reach_reduction(const Runs<T, C, V, Interleaved>& runs, const T* in,
                                                T* staged, const Geometry& g, int64_t image_base,
                                                int64_t p0, const SampleProgram<P>& prog,
                                                const Reduced<P>& none, P (&x)[V][3]) {
  unpack_pixels<C, T, P, V, Vectorized, Interleaved>(runs, in, g, image_base, p0, x);
  run_steps<C, T>(prog, 0, prog.reduce_at, x, none);
  if (staged != nullptr && prog.reduce_at > 0) {
    store_pixels<C, T, T, P, V, Vectorized, Interleaved>(
        staged, g, image_base, p0, x, Output<P>{}, warp_stage<C, T, V, Interleaved>(), g.pixels);
  }
}

// Per block, the statistics of the program's reduction stage (contrast's sum of grays,
// autocontrast's channel minima and maxima) over its pixels at their sample's reduction step.
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM<T, V>)
    reduce_stats(const T* in, T* staged, Geometry g, Program program, Rows<P> rows,
                 double* partials) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> prog_none;  // the steps before the reduction step read no statistics
  const int64_t image = blockIdx.x / g.blocks_per_image;
  const int kind = program.reduction;
  decode_block_program(prog, program, rows, image / g.frames);
  __syncthreads();
  double stats[kStats];
#pragma unroll
  for (int i = 0; i < kStats; ++i) stats[i] = initial_stat(kind, i);
  if (prog.reduce_at < 0) {  // the sample does not run it
    if (threadIdx.x < kStats) partials[blockIdx.x * kStats + threadIdx.x] = stats[threadIdx.x];
    return;
  }
  const int64_t image_base = image * C * g.pixels;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(in, g, image_base, [&](int64_t p0,
                                                                              const auto& runs) {
    P x[V][3];
    reach_reduction<C, T, P, V, Vectorized, Interleaved>(runs, in, staged, g, image_base, p0, prog,
                                                         prog_none, x);
    if (kind == kContrast) {  // the chunk's grays summed first: one double addition per chunk
      P grays = 0;
#pragma unroll
      for (int j = 0; j < V; ++j) grays += p0 + j < g.pixels ? contrast_gray<C, T>(x[j]) : P(0);
      stats[0] += grays;
      return;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (p0 + j < g.pixels) add_pixel_stats<C, T>(kind, x[j], stats);
    }
  });
  block_stats(kind, stats, partials + blockIdx.x * kStats);
}

// Equalize's histograms ([images, 3, kBins], zeroed) of each image's uint8 values at its
// sample's equalize step: per block in shared memory, then added to its image's. Integer counts:
// the same in any order.
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved>
__global__ void __launch_bounds__(kThreads)
    histograms(const T* in, T* staged, Geometry g, Program program, Rows<P> rows,
               int64_t* counts) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> prog_none;
  __shared__ unsigned int block_counts[C * kBins];
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  for (int i = threadIdx.x; i < C * kBins; i += kThreads) block_counts[i] = 0;
  __syncthreads();
  if (prog.reduce_at < 0) return;  // the sample does not equalize
  const int64_t image_base = image * C * g.pixels;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(in, g, image_base, [&](int64_t p0,
                                                                              const auto& runs) {
    P x[V][3];
    reach_reduction<C, T, P, V, Vectorized, Interleaved>(runs, in, staged, g, image_base, p0, prog,
                                                         prog_none, x);
#pragma unroll
    for (int j = 0; j < V; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (p0 + j < g.pixels) atomicAdd(&block_counts[c * kBins + equalize_bin<T>(x[j][c])], 1u);
      }
    }
  });
  __syncthreads();
  auto* image_counts = reinterpret_cast<unsigned long long*>(counts + image * 3 * kBins);
  for (int i = threadIdx.x; i < C * kBins; i += kThreads) {
    if (block_counts[i] != 0) {
      atomicAdd(image_counts + i, static_cast<unsigned long long>(block_counts[i]));
    }
  }
}

// One channel's equalize table from its histogram by the calling warp (every lane), each lane
// taking kBins / 32 consecutive values: equalize_table's, whose one thread walks 256 values and
// their 64-bit divisions in turn, while the resident kernel's other warps waited at the barrier
// after it (H100 ncu, RandomEqualize u8: 56% of the kernel's stall samples).
__device__ __forceinline__ void warp_equalize_table(const int64_t* histogram, uint8_t* table) {
  constexpr int kLaneBins = kBins / 32;
  constexpr unsigned kWarp = 0xFFFFFFFFu;
  const int lane = threadIdx.x % 32, first = lane * kLaneBins;
  int64_t counts[kLaneBins], lane_pixels = 0;
  int largest = 0;  // the largest value present (0 where none is)
#pragma unroll
  for (int i = 0; i < kLaneBins; ++i) {
    counts[i] = histogram[first + i];
    lane_pixels += counts[i];
    if (counts[i] != 0) largest = first + i;
  }
  int64_t through = lane_pixels;  // the pixels of values up to this lane's last, by a warp scan
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int64_t earlier = __shfl_up_sync(kWarp, through, d);
    if (lane >= d) through += earlier;
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) largest = ::max(largest, __shfl_xor_sync(kWarp, largest, d));
  const int64_t pixels = __shfl_sync(kWarp, through, 31);
  const int64_t step = equalize_step(pixels, histogram[largest]);
  const auto fill = [&](auto count) {
    int64_t below = through - lane_pixels;
#pragma unroll
    for (int i = 0; i < kLaneBins; ++i) {
      table[first + i] = equalized<decltype(count)>(first + i, below, step);
      below += counts[i];
    }
  };
  // 32-bit divisions where they hold the values (every resident image): 64-bit ones are routines
  if (pixels + step <= int64_t{UINT32_MAX}) {
    fill(uint32_t{});
  } else {
    fill(int64_t{});
  }
}

// Each image's and channel's equalize table from its histogram: a warp each.
__global__ void equalize_tables(const int64_t* counts, uint8_t* tables, int64_t channels) {
  const int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (i < channels) warp_equalize_table(counts + i * kBins, tables + i * kBins);
}

template <int C, typename T, typename out_t, typename P, int V, bool Vectorized, bool Interleaved>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM<T, V>)
    transform(const T* in, const T* staged, out_t* out, Geometry g, Program program,
              Rows<P> rows, const double* partials, const uint8_t* tables, Output<P> o) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ uint8_t table[3 * kBins];
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  load_reduced<T>(reduced, partials, g, image, program.reduction,
                  tables != nullptr ? table : nullptr);
  if (tables != nullptr) {
    for (int i = threadIdx.x; i < 3 * kBins; i += kThreads) {
      table[i] = tables[image * 3 * kBins + i];
    }
  }
  __syncthreads();
  const int64_t image_base = image * C * g.pixels;
  // resumes at the reduction step where the reduction pass kept the pixels there
  const int first = staged != nullptr && prog.reduce_at > 0 ? prog.reduce_at : 0;
  const T* from = first > 0 ? staged : in;
  for_each_chunk_of<C, T, V, Vectorized, Interleaved>(from, g, image_base, [&](int64_t p0,
                                                                                const auto& runs) {
    P x[V][3];
    unpack_pixels<C, T, P, V, Vectorized, Interleaved>(runs, from, g, image_base, p0, x);
    run_steps<C, T>(prog, first, prog.count, x, reduced);
    store_pixels<C, T, out_t, P, V, Vectorized, Interleaved>(
        out, g, image_base, p0, x, o, warp_stage<C, out_t, V, Interleaved>(), g.pixels);
  });
}

// Resident images: with a reduction stage, one block per image whose pixels fit in the block's
// shared memory (a 224x224 RGB uint8 image takes 147 KiB) copies the image there once, takes its
// pixels to the reduction step in place, combines the image's statistics itself and resumes from
// shared memory: the image is read once, nothing is staged in global memory, and there is no
// second kernel (the two-pass kernels above read the image twice and write and read the staged
// pixels). On Hopper and newer an image is split between a cluster of two blocks, each holding
// half of it, which combine their statistics through distributed shared memory: two blocks then
// share an SM, one computing while the other waits at a barrier or on its stores (H100,
// ColorJitter u8 -> float32: 0.131 ms against 0.151 whole; H200 0.130 against 0.136). Each
// thread only ever touches its own runs, so the copies need no barrier. uint8 only, where the
// statistics are exact (integer sums, extremes, counts, in float32 per thread): the same results
// as the two-pass kernels', whichever the launch picks. Up to kResidentThreads an SM, 72
// registers each (at 64 the kernel spilled), as many as give every thread the same number of runs but for the
// last few threads (half a 224x224 image's 6272 runs of 8 pixels: 448 threads 7 each).
constexpr int kResidentThreads = 896;

// Waits for this thread's copies of a chunk, `later` chunks' copies being committed after it
// (cp.async.wait_group takes an immediate: past the largest here, it waits for more than needed).
__device__ __forceinline__ void wait_for_chunk(int64_t later) {
  switch (later) {
    case 0: __pipeline_wait_prior(0); break;
    case 1: __pipeline_wait_prior(1); break;
    case 2: __pipeline_wait_prior(2); break;
    case 3: __pipeline_wait_prior(3); break;
    case 4: __pipeline_wait_prior(4); break;
    case 5: __pipeline_wait_prior(5); break;
    case 6: __pipeline_wait_prior(6); break;
    default: __pipeline_wait_prior(7); break;
  }
}

template <int C, typename T, int V, bool Interleaved, bool Halves>
__device__ __forceinline__ Runs<T, C, V, Interleaved> resident_runs(const T* pixels, int64_t plane,
                                                                    int64_t q0) {
  Runs<T, C, V, Interleaved> r;
  if constexpr (Interleaved && Halves) {  // pairs (kRunPairs): 2 C bytes each, 2-byte aligned
    constexpr int kHalfWords = C * V / 2;
    uint32_t halves[kHalfWords];
#pragma unroll
    for (int h = 0; h < kHalfWords; ++h) {
      const int pair = h / C, at = h % C;  // a pair's C 16-bit halves
      halves[h] = reinterpret_cast<const uint16_t*>(pixels + (q0 + kPairGap * pair) * C)[at];
    }
#pragma unroll
    for (int w = 0; w < kHalfWords / 2; ++w) {
      r.run[w / (V / 4)].u32[w % (V / 4)] = __byte_perm(halves[2 * w], halves[2 * w + 1], 0x5410u);
    }
  } else {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      r.run[k] = read_run<T, V, Halves>(pixels + r.offset(0, plane, q0, k));
    }
  }
  return r;
}

// The blocks of an image's cluster (Hopper and newer) exchange their statistics by pushing them
// into each other's shared memory (st.async), each block's barrier `arrived` (an mbarrier)
// counting the bytes that reach it: no fence. cluster.sync() here took a GPU-scope fence
// (MEMBAR.ALL.GPU) twice, which waited on the SM's outstanding stores, the other resident block's
// included (H100 ncu: 3.7% of the kernel's stall samples on the fences, 2.1% on the barriers;
// ColorJitter u8 -> float32: 0.1116 ms against 0.1139).
constexpr int kMaxSplit = 2;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Thread 0: the barrier, visible to the cluster once every thread has arrived at the cluster's
// barrier (cluster_arrive, before the block's first wait there).
__device__ __forceinline__ void init_exchange(uint64_t* arrived) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(arrived)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// The address of `p`'s counterpart in block `rank` of the cluster.
__device__ __forceinline__ uint32_t address_in(unsigned rank, const void* p) {
  uint32_t remote;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(shared_address(p)), "r"(rank));
  return remote;
}

// One thread: the bytes the other blocks send this block's barrier `arrived`; then every caller
// waits for the barrier's first phase, which completes once they have all landed.
__device__ __forceinline__ void expect_bytes(uint64_t* arrived, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               ::"r"(shared_address(arrived)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void wait_for_bytes(uint64_t* arrived) {
  for (unsigned done = 0; !done;) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(shared_address(arrived))
        : "memory");
  }
}
#endif

// Each image's statistics from its cluster's blocks' (`split` of them, each holding a part of the
// image), combined in rank order by every block: the same bits in each, and on every run. Every
// thread of the block calls it, after cluster_arrive; `block` is this block's, written by the
// same threads (block_stats), `image` receives the image's.
__device__ __forceinline__ void combine_cluster_stats(int kind, int split, const double* block,
                                                      double (&ranks)[kMaxSplit][kStats],
                                                      uint64_t* arrived, double* image) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cluster_wait();  // every block's barrier is initialised
  if (threadIdx.x >= kStats) return;
  const unsigned rank = cluster_rank();
  const int i = threadIdx.x;
  ranks[rank][i] = block[i];
  for (unsigned other = 0; other < static_cast<unsigned>(split); ++other) {
    if (other == rank) continue;
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                 ::"r"(address_in(other, &ranks[rank][i])), "l"(__double_as_longlong(block[i])),
                 "r"(address_in(other, arrived))
                 : "memory");
  }
  if (i == 0) expect_bytes(arrived, (split - 1) * kStats * static_cast<int>(sizeof(double)));
  wait_for_bytes(arrived);  // every other rank's values
  double total = initial_stat(kind, i);
  for (int r = 0; r < split; ++r) total = combine_stat(kind, i, total, ranks[r][i]);
  image[i] = total;
#endif
}

// Equalize's counts likewise, for a cluster of two: each block pushes its counts into the other's
// histogram `image` (st.async, counted in bytes by `arrived`), then adds its own (integers: any
// order). cluster.sync() before and after reading the other block's counts took, with their
// fences, 8.6% of the kernel's stall samples (H100 ncu, RandomEqualize u8). Every thread calls it,
// after cluster_arrive and a barrier after the block's last count; a barrier must follow before
// `image` is read.
__device__ __forceinline__ void combine_cluster_counts(const unsigned int* block,
                                                       uint64_t* arrived, int64_t* image,
                                                       int values) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(kMaxSplit == 2, "one other block writes each value of `image`");
  cluster_wait();  // the other block's barrier is initialised
  const unsigned other = cluster_rank() ^ 1u;
  for (int i = threadIdx.x; i < values; i += blockDim.x) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                 ::"r"(address_in(other, image + i)), "l"(static_cast<int64_t>(block[i])),
                 "r"(address_in(other, arrived))
                 : "memory");
  }
  if (threadIdx.x == 0) expect_bytes(arrived, values * static_cast<int>(sizeof(int64_t)));
  wait_for_bytes(arrived);
  for (int i = threadIdx.x; i < values; i += blockDim.x) image[i] += block[i];
#endif
}

// A block of `split` (a cluster of them where split > 1, Hopper and newer) takes an equal part
// of its image's runs, blockIdx.x % split the part: parts of half an image let two blocks share
// an SM, so that one computes while the other waits on its barrier or its stores. `program` and
// `rows` are __grid_constant__, read where they lie: about 110 instructions fewer, and on an H100
// the op alone 97.6 -> 97.4 us, ColorAugment and ColorJitter in one call 131.7 -> 129.8.
template <int C, typename T, typename out_t, typename P, int V, bool Interleaved, bool Halves>
__global__ void __launch_bounds__(kResidentThreads, 1)
    resident_transform(const T* in, out_t* out, Geometry g,
                       const __grid_constant__ Program program,
                       const __grid_constant__ Rows<P> rows, Output<P> o, int split) {
  using R = Runs<T, C, V, Interleaved>;
  extern __shared__ __align__(16) unsigned char resident_image[];
  T* pixels = reinterpret_cast<T*>(resident_image);
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ double block_totals[kStats], totals[kStats], rank_totals[kMaxSplit][kStats];
  __shared__ alignas(8) uint64_t totals_arrived;
  __shared__ unsigned int counts[3 * kBins];
  __shared__ int64_t histogram[3 * kBins];
  __shared__ uint8_t table[3 * kBins];
  const int64_t image = blockIdx.x / split;
  const int64_t image_base = image * C * g.pixels;
  const int64_t part_pixels = ceil_div(g.pixels / V, int64_t{split}) * V;  // the plane's stride
  const int64_t begin = blockIdx.x % split * part_pixels;
  const int64_t pixels_here = ::min(part_pixels, g.pixels - begin);  // > 0: see the launch
  const int64_t chunk_pixels = int64_t{blockDim.x} * V;
  const int64_t chunks = ceil_div(pixels_here, chunk_pixels);
  // q: a pixel's index in the block's part (Halves: every warp's lie in it, see the launch).
  // Spelled here: as a helper function it changed nvcc's code for the steps (copies at each case
  // of apply_step's switch; the uint8 -> uint8 kernel 91 -> 96 us, H100).
  const auto first_pixel = [&](int64_t chunk) -> int64_t {  // see kRunHalves, kRunPairs
    constexpr int kStep = kLanePixels<V, Interleaved, Halves>;
    static_assert(!Interleaved || !Halves || 32 * kStep == kPairGap);
    return chunk * chunk_pixels + threadIdx.x / 32 * (32 * V) + threadIdx.x % 32 * kStep;
  };
  // Each thread copies V consecutive pixels, which with Halves belong to two lanes of its warp:
  // their reads follow a __syncwarp after the wait (lane_copies_landed).
  const auto copy_chunk = [&](int64_t chunk) {  // a group per chunk
    const int64_t q0 = chunk * chunk_pixels + threadIdx.x * V;
    if (q0 < pixels_here) {
#pragma unroll
      for (int k = 0; k < C; ++k) {
        __pipeline_memcpy_async(pixels + R().offset(0, part_pixels, q0, k),
                                in + R().offset(image_base, g.pixels, begin + q0, k),
                                sizeof(Vec<T, V>));
      }
    }
    __pipeline_commit();
  };
  const auto lane_copies_landed = [] {
    if constexpr (Halves) __syncwarp();
  };
  // Launched overlapped on Hopper (launch_clustered): the next kernel's blocks may take the
  // slots this one's leave, and this one's blocks set up shared memory while the previous kernel
  // drains, touching global memory only once it has completed.
  allow_next_grid();
  for (int i = threadIdx.x; i < 3 * kBins; i += blockDim.x) counts[i] = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1 && threadIdx.x == 0) init_exchange(&totals_arrived);
#endif
  wait_for_previous_grid();
  // The first chunk alone, the others once it has landed: a block waited 4.4 us of its 40 for
  // its first chunk when all its copies were in flight together (H100, ColorJitter u8 -> float32:
  // 0.1071 ms against 0.1097).
  copy_chunk(0);
  const int kind = program.reduction;
  decode_block_program(prog, program, rows, image / g.frames);
  __syncthreads();
  __pipeline_wait_prior(0);  // its first chunk; then its others, in order (wait_for_chunk)
  for (int64_t chunk = 1; chunk < chunks; ++chunk) copy_chunk(chunk);
  const auto finish_pixels = [&](int64_t q0, int first_step) {
    P x[V][3];
    unpack_pixels<C, T, P, V, true, Interleaved>(
        resident_runs<C, T, V, Interleaved, Halves>(pixels, part_pixels, q0), pixels, g, 0, q0, x);
    run_steps<C, T>(prog, first_step, prog.count, x, reduced);
    // streaming stores: 0.1072 -> 0.1060 ms (H100, ColorJitter u8 -> float32, whose 154 MB
    // output passes through L2 once). Interleaved, the warp stages them where its pixels were.
    constexpr int kStep = kLanePixels<V, Interleaved, Halves>;
    store_pixels<C, T, out_t, P, V, true, Interleaved, true, Halves, 32 * C * V * int{sizeof(T)}>(
        out, g, image_base, begin + q0, x, o, pixels + (q0 - threadIdx.x % 32 * kStep) * C,
        begin + pixels_here);
  };
  if (prog.reduce_at < 0) {  // the sample skips its reduction stage: one pass, as chunks land
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      wait_for_chunk(chunks - 1 - chunk);
      lane_copies_landed();
      if (first_pixel(chunk) < pixels_here) finish_pixels(first_pixel(chunk), 0);
    }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) cluster_arrive();  // this block's barriers are initialised (see cluster_wait)
#endif
  P stats[kStats];
#pragma unroll
  for (int i = 0; i < kStats; ++i) stats[i] = static_cast<P>(initial_stat(kind, i));
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    wait_for_chunk(chunks - 1 - chunk);
    lane_copies_landed();
    const int64_t q0 = first_pixel(chunk);
    if (q0 >= pixels_here) continue;
    P x[V][3];
    unpack_pixels<C, T, P, V, true, Interleaved>(
        resident_runs<C, T, V, Interleaved, Halves>(pixels, part_pixels, q0), pixels, g, 0, q0, x);
    run_steps<C, T>(prog, 0, prog.reduce_at, x, reduced);
    if (prog.reduce_at > 0) {  // kept in place for the steps after the reduction, as words
#pragma unroll
      for (int k = 0; k < C; ++k) {
        using Word = typename Chunk<T, V>::Word;
        Chunk<T, V> run;
#pragma unroll
        for (int w = 0; w < V / 4; ++w) run.u32[w] = u8_word<T, C, V, Interleaved>(x, k, w);
        T* at = pixels + R().offset(0, part_pixels, q0, k);
        if constexpr (Interleaved && Halves) {  // pairs: the 16-bit halves where they were read
#pragma unroll
          for (int e = 0; e < V / 2; ++e) {
            const int h = k * (V / 2) + e, pair = h / C;  // the run's e-th half of the thread's
            reinterpret_cast<uint16_t*>(pixels + (q0 + kPairGap * pair) * C)[h % C] =
                static_cast<uint16_t>(run.u32[e / 2] >> (16 * (e % 2)));
          }
        } else if constexpr (Halves) {  // half the words at each half
#pragma unroll
          for (int w = 0; w < V / 8; ++w) {
            reinterpret_cast<uint32_t*>(at)[w] = run.u32[w];
            reinterpret_cast<uint32_t*>(at + kRunGap<V, true>)[w] = run.u32[V / 8 + w];
          }
        } else {
#pragma unroll
          for (int i = 0; i < Chunk<T, V>::kWords; ++i) reinterpret_cast<Word*>(at)[i] = run.w[i];
        }
      }
    }
    if (kind == kContrast) {
      P grays = 0;
#pragma unroll
      for (int j = 0; j < V; ++j) grays += contrast_gray<C, T>(x[j]);
      stats[0] += grays;
    } else if (kind == kEqualize) {
#pragma unroll
      for (int j = 0; j < V; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c) atomicAdd(&counts[c * kBins + equalize_bin<T>(x[j][c])], 1u);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c) {  // autocontrast's extremes (uint8: no NaN)
          stats[c] = fminf(stats[c], x[j][c]);
          stats[3 + c] = fmaxf(stats[3 + c], x[j][c]);
        }
    }
  }
  if (kind == kEqualize) {
    __syncthreads();
    if (split > 1) {
      combine_cluster_counts(counts, &totals_arrived, histogram, 3 * kBins);
    } else {
      for (int i = threadIdx.x; i < 3 * kBins; i += blockDim.x) histogram[i] = counts[i];
    }
    __syncthreads();
    for (int c = threadIdx.x / 32; c < C; c += blockDim.x / 32) {
      warp_equalize_table(histogram + c * kBins, table + c * kBins);
    }
    if (threadIdx.x == 0) reduced.table = table;
  } else {
    double thread_stats[kStats];
#pragma unroll
    for (int i = 0; i < kStats; ++i) thread_stats[i] = stats[i];
    block_stats<kResidentThreads>(kind, thread_stats, split > 1 ? block_totals : totals);
    __syncthreads();
    if (split > 1) {
      combine_cluster_stats(kind, split, block_totals, rank_totals, &totals_arrived, totals);
      __syncthreads();
    }
    if (threadIdx.x == 0) reduced = finish_reduction<T, P>(kind, totals, g.pixels);
  }
  __syncthreads();
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (first_pixel(chunk) < pixels_here) finish_pixels(first_pixel(chunk), prog.reduce_at);
  }
}

// The shared memory a resident image may take on the current device (the block's opt-in limit
// less the kernel's own), set as the kernel's limit on first use there.
template <typename Kernel>
int resident_bytes(Kernel kernel) {
  cudaFuncAttributes attributes;
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  const int bytes = static_cast<int>(at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin -
                                     attributes.sharedSizeBytes);
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return bytes;
}

// cudaOccupancyMaxActiveBlocksPerMultiprocessor for the kernel, remembered per device and launch
// shape: the launch path asks on every call, and the query walks the kernel's attributes.
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads, int64_t bytes) {
  static std::mutex mutex;
  static std::map<std::tuple<c10::DeviceIndex, int, int64_t>, int> known;  // a few image sizes
  const auto key = std::make_tuple(c10::cuda::current_device(), threads, bytes);
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(key);
  if (found == known.end()) {
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads,
                                                                 static_cast<size_t>(bytes)));
    found = known.emplace(key, per_sm).first;
  }
  return found->second;
}

// Whether `blocks` blocks keep the GPU busy: at least 80% of the SMs' slots (`per_sm` blocks
// each) in their waves (the two-pass kernels spread any batch over every SM), in one launch's grid.
bool resident_fills_gpu(int64_t blocks, int per_sm) {
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t slots = sms * per_sm;
  return per_sm > 0 && blocks <= std::numeric_limits<int32_t>::max() &&
         blocks * 5 >= ceil_div(blocks, slots) * slots * 4;
}

// kernel<<<blocks, threads, bytes, stream>>>(args...), with Hopper's code in clusters of `split`
// blocks (a resident image's parts, sharing its statistics: 2, else 1) and launched overlapped
// (overlapped_launch.cuh).
template <typename Kernel, typename... Args>
void launch_clustered(Kernel kernel, bool hopper, int64_t blocks, int64_t threads, int64_t bytes,
                      int split, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = split;
  attributes[0].val.clusterDim.y = 1;
  attributes[0].val.clusterDim.z = 1;
  attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = bytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = hopper ? 2 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// The gradient of each pixel: MeanGradPass sums, per block, the gradient of contrast's mean (each
// pixel taken back to its contrast step); the other pass takes every pixel back to the image and
// writes its gradient. `scale` holds 1 / std. (Autocontrast, the other reduction, has none.)
template <int C, typename T, typename P, bool MeanGradPass, int V, bool Vectorized,
          bool Interleaved>
__global__ void __launch_bounds__(kThreads)
    backward(const T* grad, const T* in, T* grad_in, Geometry g, Program program, Rows<P> rows,
             const double* mean_partials, double* mean_grad_partials, Output<P> scale) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ P mean_grad_per_pixel;
  const int64_t image = blockIdx.x / g.blocks_per_image;
  decode_block_program(prog, program, rows, image / g.frames);
  load_reduced<T>(reduced, mean_partials, g, image, kContrast);
  if (threadIdx.x < 32) {
    double grad_stats[kStats] = {0};
    if (mean_partials != nullptr && !MeanGradPass) {
      warp_image_stats(mean_grad_partials, g, image, kContrast, grad_stats);
    }
    if (threadIdx.x == 0) {
      mean_grad_per_pixel = static_cast<P>(grad_stats[0] / static_cast<double>(g.pixels));
    }
  }
  __syncthreads();
  double sums[kStats] = {0};
  if (MeanGradPass && prog.reduce_at < 0) {
    if (threadIdx.x < kStats) mean_grad_partials[blockIdx.x * kStats + threadIdx.x] = 0;
    return;
  }
  const int64_t image_base = image * C * g.pixels;
  for_each_chunk<V>(g, [&](int64_t p0) {
    P x[V][3], gx[V][3];
    P chunk_sum = 0;
    load_pixels<C, T, P, V, Vectorized, Interleaved>(in, g, image_base, p0, x);
    load_pixels<C, T, P, V, Vectorized, Interleaved>(grad, g, image_base, p0, gx);
    for (int j = 0; j < V; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) gx[j][c] *= scale.inv_std[c];
      P mean_grad = 0;
      backprop_pixel<C, T>(prog, x[j], reduced, MeanGradPass ? prog.reduce_at : 0,
                           mean_grad_per_pixel, gx[j], &mean_grad);
      if (p0 + j < g.pixels) chunk_sum += mean_grad;
    }
    sums[0] += chunk_sum;
    if constexpr (!MeanGradPass) {
      store_pixels<C, T, T, P, V, Vectorized, Interleaved>(grad_in, g, image_base, p0, gx,
                                                          Output<P>{},
                                                          warp_stage<C, T, V, Interleaved>(),
                                                          g.pixels);
    }
  });
  if constexpr (MeanGradPass) block_stats(kContrast, sums, mean_grad_partials + blockIdx.x * kStats);
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Calls f(channels, vectorized, interleaved) as integral constants for the image's layout.
template <typename F>
void with_layout(const ColorGeometry& cg, bool vectorized, F&& f) {
  using Yes = std::true_type;
  using No = std::false_type;
  if (cg.channels == 1) {
    f(std::integral_constant<int, 1>{}, No{}, No{});
  } else if (!vectorized) {
    f(std::integral_constant<int, 3>{}, No{}, No{});
  } else if (cg.interleaved) {
    f(std::integral_constant<int, 3>{}, Yes{}, Yes{});
  } else {
    f(std::integral_constant<int, 3>{}, Yes{}, No{});
  }
}

Geometry kernel_geometry(const ColorGeometry& cg, int pixels_per_thread) {
  const int64_t chunks = ceil_div(cg.pixels, int64_t{kThreads} * pixels_per_thread);
  const int64_t images = std::max<int64_t>(cg.samples * cg.frames, 1);
  const int64_t blocks_per_image =
      std::clamp<int64_t>(ceil_div(kTargetBlocks, images), 1, std::max<int64_t>(chunks, 1));
  return {cg.pixels, cg.frames, chunks, blocks_per_image, cg.interleaved ? 1 : cg.pixels,
          cg.interleaved ? cg.channels : 1};
}

int64_t block_count(const ColorGeometry& cg, const Geometry& g, const char* op) {
  const int64_t blocks = cg.samples * cg.frames * g.blocks_per_image;
  TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), op,
              ": the image is too large for one launch");
  return blocks;
}

void photometric(const at::Tensor& out, const at::Tensor& image, const Program& program,
                 const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
                 std::optional<c10::ArrayRef<double>> mean,
                 std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const at::Tensor in = color_dense_image(image);
  const ColorGeometry cg = color_geometry(in);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  photometric_dispatch(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    constexpr int V = kVec<T>;
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    const T* src = in.const_data_ptr<T>();
    out_t* dst = out.mutable_data_ptr<out_t>();
    const auto aligned_runs = [&](int pixels) {
      return cg.pixels % pixels == 0 && aligned(src, sizeof(T) * pixels) &&
             aligned(dst, sizeof(out_t) * pixels);
    };
    // uint8 images whose planes are not 8-byte aligned take runs of 4 pixels
    const bool wide = aligned_runs(V);
    const bool narrow = !wide && kIsU8<T> && aligned_runs(4);
    const bool equalize = program.reduction == kEqualize;
    const int64_t images = cg.samples * cg.frames;
    with_layout(cg, wide || narrow, [&](auto channels, auto vector, auto interleaved) {
      constexpr int C = decltype(channels)::value;
      constexpr bool kVectorized = decltype(vector)::value;
      constexpr bool kInterleaved = decltype(interleaved)::value;
      // true where it launched resident_transform (with runs in halves, Halves)
      const auto resident = [&](auto halves) {
        constexpr bool kHalves = decltype(halves)::value;
        constexpr auto kernel = resident_transform<C, T, out_t, P, V, kInterleaved, kHalves>;
        static PerDevice<int> max_bytes;
        const bool hopper_here = hopper_code<kernel>();
        const int split = hopper_here ? kMaxSplit : 1;
        const int64_t runs = cg.pixels / V, part_runs = ceil_div(runs, int64_t{split});
        // whole warps' runs where a warp stages its stores where its runs were
        const int64_t held_runs =
            kStagedStores<C, out_t, V, kInterleaved> ? ceil_div(part_runs, 32) * 32 : part_runs;
        const int64_t bytes = C * held_runs * V * static_cast<int64_t>(sizeof(T));
        // halves: every warp's runs in one part, whole (chunks are whole warps' runs)
        if (kHalves && (part_runs % 32 != 0 || (runs - (split - 1) * part_runs) % 32 != 0)) {
          return false;
        }
        if (!wide || !program.reduction || part_runs * (split - 1) >= runs ||
            bytes > max_bytes.get([&] { return resident_bytes(kernel); })) {
          return false;
        }
        // at most kResidentThreads an SM, where `split` blocks share one
        const int64_t rounds = ceil_div(part_runs, kResidentThreads / split);
        const int64_t threads = ceil_div(ceil_div(part_runs, rounds), 32) * 32;
        const int per_sm = resident_blocks_per_sm(kernel, static_cast<int>(threads), bytes);
        if (!resident_fills_gpu(images * split, per_sm)) return false;
        launch_clustered(kernel, hopper_here, images * split, threads, bytes, split, stream, src,
                         dst, kernel_geometry(cg, V), program, rows, o, split);
        return true;
      };
      if constexpr (kIsU8<T> && kVectorized) {
        if constexpr (kInterleaved ? kRunPairs<T, out_t, V> : kRunHalves<T, out_t, V>) {
          if (resident(std::true_type{})) return;
        }
        if (resident(std::false_type{})) return;
      }
      at::Tensor staged, counts, tables;
      if (program.reduction) staged = at::empty_like(in);  // the pixels at the reduction step
      if (equalize) {
        counts = at::zeros({images, 3, kBins}, in.options().dtype(at::kLong));
        tables = at::empty({images, 3, kBins}, in.options().dtype(at::kByte));
      }
      const auto launch = [&](auto width) {
        constexpr int W = decltype(width)::value;
        const Geometry g = kernel_geometry(cg, W);
        const int64_t blocks = block_count(cg, g, "gpuaug::photometric");
        at::Tensor partials;
        if (program.reduction && !equalize) {
          partials = at::empty({blocks, kStats}, in.options().dtype(at::kDouble));
        }
        double* sums = partials.defined() ? partials.mutable_data_ptr<double>() : nullptr;
        if (sums != nullptr) {
          reduce_stats<C, T, P, W, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
              src, staged.mutable_data_ptr<T>(), g, program, rows, sums);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        if (equalize) {
          histograms<C, T, P, W, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
              src, staged.mutable_data_ptr<T>(), g, program, rows,
              counts.mutable_data_ptr<int64_t>());
          C10_CUDA_KERNEL_LAUNCH_CHECK();
          equalize_tables<<<ceil_div(images * 3 * 32, kThreads), kThreads, 0, stream>>>(
              counts.const_data_ptr<int64_t>(), tables.mutable_data_ptr<uint8_t>(), images * 3);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        transform<C, T, out_t, P, W, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
            src, staged.defined() ? staged.const_data_ptr<T>() : nullptr, dst, g, program, rows,
            sums, equalize ? tables.const_data_ptr<uint8_t>() : nullptr, o);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      };
      if constexpr (kIsU8<T> && kVectorized) {
        if (narrow) return launch(std::integral_constant<int, 4>{});
      }
      launch(std::integral_constant<int, V>{});
    });
  });
}

void photometric_backward(const at::Tensor& grad_image, const at::Tensor& grad,
                          const at::Tensor& image, const Program& program,
                          const at::Tensor& factors, const at::Tensor& order,
                          const at::Tensor& apply, std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const at::Tensor in = color_dense_image(image);
  const at::Tensor grad_out = color_grad_in_layout(grad, grad_image);
  const ColorGeometry cg = color_geometry(in);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                  "gpuaug::_photometric_backward", [&] {
    using T = scalar_t;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    constexpr int V = kVec<T>;
    const Geometry g = kernel_geometry(cg, V);
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> scale = photometric_grad_scale<P>(stddev);
    const T* src = in.const_data_ptr<T>();
    const T* grad_src = grad_out.const_data_ptr<T>();
    T* dst = grad_image.mutable_data_ptr<T>();
    const bool vectorized = cg.pixels % V == 0 && aligned(src, sizeof(T) * V) &&
                            aligned(grad_src, sizeof(T) * V) && aligned(dst, sizeof(T) * V);
    const int64_t blocks = block_count(cg, g, "gpuaug::_photometric_backward");
    at::Tensor partials;  // the means', then their gradients'
    if (program.reduction) {  // contrast: autocontrast has no gradient
      partials = at::empty({2, blocks, kStats}, in.options().dtype(at::kDouble));
    }
    with_layout(cg, vectorized, [&](auto channels, auto vector, auto interleaved) {
      constexpr int C = decltype(channels)::value;
      constexpr bool kVectorized = decltype(vector)::value;
      constexpr bool kInterleaved = decltype(interleaved)::value;
      double* means = partials.defined() ? partials.mutable_data_ptr<double>() : nullptr;
      double* mean_grads = partials.defined() ? means + blocks * kStats : nullptr;
      if (means != nullptr) {
        reduce_stats<C, T, P, V, kVectorized, kInterleaved>
            <<<blocks, kThreads, 0, stream>>>(src, nullptr, g, program, rows, means);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        backward<C, T, P, true, V, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
            grad_src, src, dst, g, program, rows, means, mean_grads, scale);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      backward<C, T, P, false, V, kVectorized, kInterleaved><<<blocks, kThreads, 0, stream>>>(
          grad_src, src, dst, g, program, rows, means, mean_grads, scale);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace
}  // namespace gpuaug::cuda::photometric_impl

namespace gpuaug {
GPUAUG_REGISTER_LOOP(photometric_loops, cuda, &cuda::photometric_impl::photometric);
GPUAUG_REGISTER_LOOP(photometric_backward_loops, cuda,
                     &cuda::photometric_impl::photometric_backward);
}  // namespace gpuaug
