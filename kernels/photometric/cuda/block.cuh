// What photometric.cu's blocks share before and at the reduction step: the sample's program
// decoded into shared memory, the image's statistics combined in a fixed order, what the
// reduction step reads, the pixels taken to that step, and equalize's tables. Included by
// photometric.cu alone.
#pragma once

#include <cstdint>

#include "kernels/photometric/cuda/pixels.cuh"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cuda::photometric_impl {
namespace {

using namespace gpuaug::photo;

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

// The first `count` statistics of the warp's lanes combined into lane 0's, in a fixed order.
__device__ __forceinline__ void warp_combine_stats(int kind, int count, double (&stats)[kStats]) {
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
  warp_combine_stats(kind, count, stats);
}

// The block's statistics, its threads' combined in a fixed order, into out[0, kStats). Every
// thread of the block (of at most MaxThreads) must call it.
template <int MaxThreads = kThreads>
__device__ __forceinline__ void block_stats(int kind, double (&stats)[kStats], double* out) {
  __shared__ double warp_stats[MaxThreads / 32][kStats];
  warp_combine_stats(kind, stat_count(kind), stats);
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
// statistics), from the input's image at in_base; kept in `staged` at image_base (the image's
// dtype holds each step's result exactly) for the element-wise pass to resume from, where given
// and steps precede the reduction. JitterKinds: the steps are all jitter kinds (run_steps').
template <int C, typename T, typename P, int V, bool Vectorized, bool Interleaved,
          bool JitterKinds = false>
__device__ __forceinline__ void reach_reduction(const Runs<T, C, V, Interleaved>& runs, const T* in,
                                                int64_t in_base, T* staged, const Geometry& g,
                                                int64_t image_base, int64_t p0,
                                                const SampleProgram<P>& prog,
                                                const Reduced<P>& none, P (&x)[V][3]) {
  unpack_pixels<C, T, P, V, Vectorized, Interleaved>(runs, in, g, in_base, g.in_channel_step, p0,
                                                     x);
  run_steps<C, T, JitterKinds>(prog, 0, prog.reduce_at, x, none);
  if (staged != nullptr && prog.reduce_at > 0) {
    store_pixels<C, T, T, P, V, Vectorized, Interleaved>(
        staged, g, image_base, p0, x, Output<P>{}, warp_stage<C, T, V, Interleaved>(), g.pixels);
  }
}

// One channel's equalize table from its histogram by the calling warp (every lane), each lane
// taking kBins / 32 consecutive values: equalize_table's, whose one thread walks 256 values and
// their 64-bit divisions in turn, while the resident kernel's other warps waited at the barrier
// after it (most of equalize's stalls).
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

}  // namespace
}  // namespace gpuaug::cuda::photometric_impl
