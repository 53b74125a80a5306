// gpuaug::auto_augment on the GPU: a kernel decodes the operations (a thread each), then stage by
// stage (chain.h's stage_bases) a kernel writes each chain's stage image from the stage before it
// (blocks of chains with fewer stages return) and, for each reduction number r, a statistics
// kernel gathers the r-th reduction of every chain that has it in that stage (blocks of a span of
// its pixels each); then the output kernel, four pixels a thread, a grid row a sample. The
// statistics combine in a fixed order (warp shuffles, the warps in turn, the blocks in turn): the
// same bits run to run.
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <type_traits>

#include "kernels/auto_augment/auto_augment.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/photometric/cuda/block.cuh"

namespace gpuaug::cuda {
namespace {

using namespace gpuaug::policy;

constexpr int kStatsThreads = 512;
constexpr int kPixelsPerThread = 4;

template <typename T, typename P>
__global__ void decode_kernel(const Call call, Decoded<P>* decoded, int64_t count) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) decoded[j] = decode_at<T, P>(call, j);
}

// What a chain's statistics blocks share: their statistics ([chains, splits, kStats]),
// equalize's histograms ([chains, 3 * kBins], summed by atomics: integers, the same in any order)
// and how many of the blocks are done ([chains]); the last two zero between launches.
struct StatsScratch {
  double* partials;
  unsigned* histograms;
  unsigned* done;
  int64_t block_pixels;  // a block's span
  int splits;            // blocks a chain
};

// The pixels a statistics block takes, at least (the spans are a function of the sizes alone: the
// partials combine in the same order on every GPU).
constexpr int64_t kStatsBlockPixels = 8 * kStatsThreads;

// The r-th reduction of each chain that has it in stage `stage`: a grid column a chain, a block a
// span of its pixels. The chain's last block to finish combines the blocks' statistics in their
// order and writes the reduction's slot.
template <int C, typename T, typename P>
__global__ void __launch_bounds__(kStatsThreads)
    statistics_kernel(const Call call, const Decoded<P>* decoded, ReductionSlot<P>* slots,
                      const StageImages<T> stages, const StatsScratch scratch, int stage, int r) {
  const int64_t i = blockIdx.x;  // the chain
  const int k = reduction_at(decoded + i * call.depth, static_cast<int>(call.depth), r);
  if (k < 0) return;
  int at_stage;
  const Chain<C, T, P> chain = chain_at<C, T, P>(call, i, decoded, slots, stages, k, &at_stage);
  if (at_stage != stage) return;
  const int kind = chain.ops[k].step.kind;
  const bool equalize = kind == photo::kEqualize;
  __shared__ unsigned counts[3 * photo::kBins];
  __shared__ int64_t histograms[3 * photo::kBins];
  __shared__ bool last;
  if (equalize) {
    for (int t = threadIdx.x; t < 3 * photo::kBins; t += blockDim.x) counts[t] = 0;
    __syncthreads();
  }
  double stats[photo::kStats];
  for (int s = 0; s < photo::kStats; ++s) stats[s] = photo::initial_stat(kind, s);
  const int64_t pixels = call.height * call.width;
  const int64_t begin = blockIdx.y * scratch.block_pixels;
  const int64_t end = ::min(pixels, begin + scratch.block_pixels);
  for (int64_t p = begin + threadIdx.x; p < end; p += blockDim.x) {
    const int64_t y = p / call.width, x = p - y * call.width;
    const Pixel<P> v = value_at(chain, k, y, x);
    if (equalize) {
      for (int c = 0; c < C; ++c) atomicAdd(&counts[c * photo::kBins + photo::equalize_bin<T>(v.v[c])], 1u);
    } else {
      photo::add_pixel_stats<C, T>(kind, v.v, stats);
    }
  }
  unsigned* chain_histograms = scratch.histograms + i * 3 * photo::kBins;
  const double* chain_partials = scratch.partials + i * scratch.splits * photo::kStats;
  if (equalize) {
    __syncthreads();
    for (int t = threadIdx.x; t < C * photo::kBins; t += blockDim.x) {
      if (counts[t] != 0) atomicAdd(&chain_histograms[t], counts[t]);
    }
  } else {
    photometric_impl::block_stats<kStatsThreads>(
        kind, stats, scratch.partials + (i * scratch.splits + blockIdx.y) * photo::kStats);
  }
  __threadfence();  // this block's partials visible before it counts itself done
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&scratch.done[i], 1u) == scratch.splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  ReductionSlot<P>& slot = slots[i * call.depth + k];
  if (threadIdx.x == 0) {
    double total[photo::kStats];
    for (int s = 0; s < photo::kStats; ++s) {
      total[s] = photo::initial_stat(kind, s);
      for (int b = 0; !equalize && b < scratch.splits; ++b) {
        const double partial = __ldcg(chain_partials + b * photo::kStats + s);
        total[s] = photo::combine_stat(kind, s, total[s], partial);
      }
    }
    const photo::Reduced<P> reduced = photo::finish_reduction<T, P>(kind, total, pixels);
    slot.mean = reduced.mean;
    for (int c = 0; c < 3; ++c) {
      slot.low[c] = reduced.low[c];
      slot.inv_scale[c] = reduced.inv_scale[c];
    }
    scratch.done[i] = 0;  // for the next launch
  }
  if (!equalize) return;
  for (int t = threadIdx.x; t < C * photo::kBins; t += blockDim.x) {
    histograms[t] = __ldcg(&chain_histograms[t]);
    chain_histograms[t] = 0;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  if (warp < C) photometric_impl::warp_equalize_table(histograms + warp * photo::kBins, slot.table + warp * photo::kBins);
}

// How a thread's four pixels lie in what it writes. Packed: four consecutive pixels a thread,
// written as whole words (planar: a run of four a channel; interleaved: the four pixels' channels
// in one run); else pixels a block apart, so a warp's scalar stores are consecutive (a thread's
// own four would fill a part of each sector a store touches: L2 bound the kernel).
enum class Layout { kStrided, kPlanar, kInterleaved };

__device__ __forceinline__ int64_t block_first_pixel() {
  return static_cast<int64_t>(blockIdx.x) * kThreads * kPixelsPerThread;
}

// Each chain's stage `stage` image from the stage before it: four pixels a thread, a grid row a
// chain. Packed where the image's pixels are a multiple of four (every stage image then starts
// on a whole word).
template <int C, typename T, typename P, bool Packed>
__global__ void __launch_bounds__(kThreads)
    stage_kernel(const Call call, const Decoded<P>* decoded, const ReductionSlot<P>* slots,
                 const StageImages<T> stages, int stage) {
  const int64_t pixels = call.height * call.width;
  for (int64_t i = blockIdx.y; i < call.chains(); i += gridDim.y) {
    int bases[kMaxDepth];
    const int count = stage_bases(decoded + i * call.depth, static_cast<int>(call.depth),
                                  call.interpolation, bases);
    if (count <= stage) continue;
    const Chain<C, T, P> chain =
        chain_of<C, T, P>(call, i, decoded, slots, stages, stage - 1, bases[stage - 1]);
    T* image = stages.of(stage, i);
    if constexpr (Packed) {
      const int64_t first = block_first_pixel() + threadIdx.x * kPixelsPerThread;
      if (first >= pixels) continue;
      Chunk<T, kPixelsPerThread> runs[C];
      for (int j = 0; j < kPixelsPerThread; ++j) {
        const int64_t y = (first + j) / call.width, x = first + j - y * call.width;
        const Pixel<P> v = value_at(chain, bases[stage], y, x);
        for (int c = 0; c < C; ++c) runs[c].v[j] = static_cast<T>(v.v[c]);
      }
      for (int c = 0; c < C; ++c) store_chunk(image + c * pixels + first, runs[c]);
    } else {
      for (int j = 0; j < kPixelsPerThread; ++j) {
        const int64_t p = block_first_pixel() + j * kThreads + threadIdx.x;
        if (p >= pixels) break;
        const int64_t y = p / call.width, x = p - y * call.width;
        const Pixel<P> v = value_at(chain, bases[stage], y, x);
        for (int c = 0; c < C; ++c) image[c * pixels + p] = static_cast<T>(v.v[c]);
      }
    }
  }
}

// The output strides (elements) of a [N, C, H, W] output.
struct OutStrides {
  int64_t sample, channel, row, column;
};

// Sample n's pixel (y, x) before the conversion: its chain's last stage, or AugMix's mixture.
template <int C, typename T, typename P>
__device__ __forceinline__ Pixel<P> output_value(const Call& call, const Decoded<P>* decoded,
                                                 const ReductionSlot<P>* slots,
                                                 const StageImages<T>& stages,
                                                 const Chain<C, T, P>& first, int64_t n,
                                                 int64_t y, int64_t x) {
  const int depth = static_cast<int>(call.depth);
  if (call.weights == nullptr) return value_at(first, depth, y, x);
  const float* w = call.weights + n * (call.branches + 1);
  const Pixel<P> image = sample_pixel<C, T, P>(call, n, y, x);
  P mix[3];
  for (int c = 0; c < C; ++c) mix[c] = static_cast<P>(w[0]) * image.v[c];
  for (int64_t b = 0; b < call.branches; ++b) {
    const Chain<C, T, P> chain =
        chain_at<C, T, P>(call, n * call.branches + b, decoded, slots, stages, depth);
    const Pixel<P> a = value_at(chain, depth, y, x);
    for (int c = 0; c < C; ++c) mix[c] = mix[c] + static_cast<P>(w[b + 1]) * a.v[c];
  }
  Pixel<P> v;
  for (int c = 0; c < C; ++c) v.v[c] = mixed_value<T>(mix[c]);
  return v;
}

template <int C, typename T, typename out_t, typename P, Layout L>
__global__ void __launch_bounds__(kThreads)
    output_kernel(const Call call, const Decoded<P>* decoded, const ReductionSlot<P>* slots,
                  const StageImages<T> stages, out_t* out, const OutStrides os,
                  const photo::Output<P> o) {
  const int64_t pixels = call.height * call.width;
  for (int64_t n = blockIdx.y; n < call.samples; n += gridDim.y) {
    const Chain<C, T, P> first = chain_at<C, T, P>(call, n * call.branches, decoded, slots,
                                                   stages, static_cast<int>(call.depth));
    out_t* sample = out + n * os.sample;
    if constexpr (L == Layout::kStrided) {
      for (int j = 0; j < kPixelsPerThread; ++j) {
        const int64_t p = block_first_pixel() + j * kThreads + threadIdx.x;
        if (p >= pixels) break;
        const int64_t y = p / call.width, x = p - y * call.width;
        const Pixel<P> v = output_value(call, decoded, slots, stages, first, n, y, x);
        for (int c = 0; c < C; ++c) {
          sample[c * os.channel + y * os.row + x * os.column] =
              photo::convert<T, out_t, P>(v.v[c], o, c);
        }
      }
    } else {
      const int64_t start = block_first_pixel() + threadIdx.x * kPixelsPerThread;
      if (start >= pixels) continue;
      // planar: a run a channel; interleaved: one run of the four pixels' channels
      constexpr int kRuns = L == Layout::kPlanar ? C : 1;
      constexpr int kRun = L == Layout::kPlanar ? kPixelsPerThread : kPixelsPerThread * C;
      Chunk<out_t, kRun> runs[kRuns];
      for (int j = 0; j < kPixelsPerThread; ++j) {
        const int64_t y = (start + j) / call.width, x = start + j - y * call.width;
        const Pixel<P> v = output_value(call, decoded, slots, stages, first, n, y, x);
        for (int c = 0; c < C; ++c) {
          const out_t value = photo::convert<T, out_t, P>(v.v[c], o, c);
          if constexpr (L == Layout::kPlanar) {
            runs[c].v[j] = value;
          } else {
            runs[0].v[j * C + c] = value;
          }
        }
      }
      if constexpr (L == Layout::kPlanar) {
        for (int c = 0; c < C; ++c) store_chunk(sample + c * os.channel + start, runs[c]);
      } else {
        store_chunk(sample + start * C, runs[0]);
      }
    }
  }
}

// The output's layout: packed where a thread's four pixels are consecutive in memory and start on
// a whole word in every sample (and channel).
template <int C>
Layout output_layout(const at::Tensor& out, const OutStrides& os, int64_t height, int64_t width) {
  const int64_t pixels = height * width;
  const auto word_aligned = reinterpret_cast<uintptr_t>(out.const_data_ptr()) % 16 == 0;
  if (pixels % kPixelsPerThread != 0 || os.sample % kPixelsPerThread != 0 || !word_aligned) {
    return Layout::kStrided;
  }
  if (os.column == 1 && os.row == width && os.channel % kPixelsPerThread == 0) {
    return Layout::kPlanar;
  }
  if (os.channel == 1 && os.column == C && os.row == width * C) return Layout::kInterleaved;
  return Layout::kStrided;
}

template <int C, typename T, typename out_t>
void run(const at::Tensor& out, const at::Tensor& image, const Call& call,
         std::optional<c10::ArrayRef<double>> mean, std::optional<c10::ArrayRef<double>> stddev) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t count = call.chains() * call.depth;
  // the decoded operations, the reductions' slots, the stage images and the statistics blocks'
  // scratch: from the caching allocator
  const int64_t pixels = call.height * call.width;
  const int64_t image_size = call.channels * pixels;
  const int64_t stage_elements = StageImages<T>::count(call.depth) * call.chains() * image_size;
  const int64_t block_pixels = std::max(kStatsBlockPixels, ceil_div(pixels, 65535));
  const int splits = static_cast<int>(ceil_div(pixels, block_pixels));
  const auto aligned = [](int64_t bytes) { return (bytes + 15) / 16 * 16; };
  const int64_t decoded_bytes = aligned(count * static_cast<int64_t>(sizeof(Decoded<P>)));
  const int64_t slot_bytes = aligned(count * static_cast<int64_t>(sizeof(ReductionSlot<P>)));
  const int64_t stage_bytes = aligned(stage_elements * static_cast<int64_t>(sizeof(T)));
  const int64_t partial_bytes = call.chains() * splits * photo::kStats * int64_t{sizeof(double)};
  const int64_t zeroed_bytes = call.chains() * (3 * photo::kBins + 1) * int64_t{sizeof(unsigned)};
  at::Tensor scratch =
      at::empty({decoded_bytes + slot_bytes + stage_bytes + partial_bytes + zeroed_bytes},
                image.options().dtype(at::kByte));
  uint8_t* base = scratch.mutable_data_ptr<uint8_t>();
  auto* decoded = reinterpret_cast<Decoded<P>*>(base);
  auto* slots = reinterpret_cast<ReductionSlot<P>*>(base + decoded_bytes);
  const StageImages<T> stages{reinterpret_cast<T*>(base + decoded_bytes + slot_bytes),
                              call.chains(), image_size};
  uint8_t* partials = base + decoded_bytes + slot_bytes + stage_bytes;
  auto* histograms = reinterpret_cast<unsigned*>(partials + partial_bytes);
  const StatsScratch stats{reinterpret_cast<double*>(partials), histograms,
                           histograms + call.chains() * 3 * photo::kBins, block_pixels, splits};
  C10_CUDA_CHECK(cudaMemsetAsync(histograms, 0, zeroed_bytes, stream));
  decode_kernel<T, P><<<static_cast<unsigned>(ceil_div(count, kThreads)), kThreads, 0, stream>>>(
      call, decoded, count);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const unsigned pixel_blocks =
      static_cast<unsigned>(ceil_div(pixels, int64_t{kThreads} * kPixelsPerThread));
  const int depth = static_cast<int>(call.depth);
  for (int s = 0; s < depth; ++s) {
    if (s > 0) {
      const dim3 grid(pixel_blocks,
                      static_cast<unsigned>(std::min<int64_t>(call.chains(), 65535)));
      if (pixels % kPixelsPerThread == 0) {
        stage_kernel<C, T, P, true><<<grid, kThreads, 0, stream>>>(call, decoded, slots, stages, s);
      } else {
        stage_kernel<C, T, P, false><<<grid, kThreads, 0, stream>>>(call, decoded, slots, stages,
                                                                    s);
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    // the r-th reduction in stage s lies past r reductions and s stage bases: r + s < depth
    for (int r = 0; r + s < depth; ++r) {
      const dim3 grid(static_cast<unsigned>(call.chains()), static_cast<unsigned>(splits));
      statistics_kernel<C, T, P><<<grid, kStatsThreads, 0, stream>>>(call, decoded, slots, stages,
                                                                      stats, s, r);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
  const dim3 grid(pixel_blocks, static_cast<unsigned>(std::min<int64_t>(call.samples, 65535)));
  const OutStrides os{out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
  const auto launch = [&](auto layout) {
    output_kernel<C, T, out_t, P, decltype(layout)::value><<<grid, kThreads, 0, stream>>>(
        call, decoded, slots, stages, out.mutable_data_ptr<out_t>(), os,
        photometric_output<P>(mean, stddev));
  };
  switch (output_layout<C>(out, os, call.height, call.width)) {
    case Layout::kPlanar:
      launch(std::integral_constant<Layout, Layout::kPlanar>{});
      break;
    case Layout::kInterleaved:
      launch(std::integral_constant<Layout, Layout::kInterleaved>{});
      break;
    case Layout::kStrided:
      launch(std::integral_constant<Layout, Layout::kStrided>{});
      break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void auto_augment_cuda(const at::Tensor& out, const at::Tensor& image, const Call& call,
                       std::optional<c10::ArrayRef<double>> mean,
                       std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  AT_DISPATCH_FLOATING_TYPES_AND(at::kByte, image.scalar_type(), "gpuaug::auto_augment", [&] {
    using T = scalar_t;
    with_output_type<T>(out.scalar_type(), [&](auto out_type) {
      using out_t = decltype(out_type);
      if (call.channels == 1) {
        run<1, T, out_t>(out, image, call, mean, stddev);
      } else {
        run<3, T, out_t>(out, image, call, mean, stddev);
      }
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(auto_augment_loops, cuda, &auto_augment_cuda);

}  // namespace gpuaug::cuda
