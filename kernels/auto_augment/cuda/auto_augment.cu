// gpuaug::auto_augment on the GPU: a kernel decodes the operations (a thread each), then stage by
// stage (chain.h's stage_bases) a kernel writes each chain's stage image from the stage before it
// (blocks of chains with fewer stages return) and, for each reduction number r, a statistics
// kernel gathers the r-th reduction of every chain that has it in that stage (a block a chain);
// then the output kernel, four pixels a thread, a grid row a sample. Each block's statistics are
// combined in a fixed order (warp shuffles, then the warps in turn): the same bits run to run.
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
constexpr unsigned kFullWarp = 0xFFFFFFFFu;

template <typename T, typename P>
__global__ void decode_kernel(const Call call, Decoded<P>* decoded, int64_t count) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) decoded[j] = decode_at<T, P>(call, j);
}

template <int C, typename T, typename P>
__global__ void __launch_bounds__(kStatsThreads)
    statistics_kernel(const Call call, const Decoded<P>* decoded, ReductionSlot<P>* slots,
                      const StageImages<T> stages, int stage, int r) {
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
  __shared__ double warp_stats[kStatsThreads / 32][photo::kStats];
  if (equalize) {
    for (int t = threadIdx.x; t < 3 * photo::kBins; t += blockDim.x) counts[t] = 0;
    __syncthreads();
  }
  double stats[photo::kStats];
  for (int s = 0; s < photo::kStats; ++s) stats[s] = photo::initial_stat(kind, s);
  const int64_t pixels = call.height * call.width;
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    const int64_t y = p / call.width, x = p - y * call.width;
    const Pixel<P> v = value_at(chain, k, y, x);
    if (equalize) {
      for (int c = 0; c < C; ++c) atomicAdd(&counts[c * photo::kBins + photo::equalize_bin<T>(v.v[c])], 1u);
    } else {
      photo::add_pixel_stats<C, T>(kind, v.v, stats);
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int s = 0; s < photo::kStats; ++s) {
    for (int d = 16; d > 0; d /= 2) {
      stats[s] = photo::combine_stat(kind, s, stats[s], __shfl_down_sync(kFullWarp, stats[s], d));
    }
    if (lane == 0) warp_stats[warp][s] = stats[s];
  }
  __syncthreads();
  ReductionSlot<P>& slot = slots[i * call.depth + k];
  if (threadIdx.x == 0) {
    double total[photo::kStats];
    for (int s = 0; s < photo::kStats; ++s) {
      total[s] = photo::initial_stat(kind, s);
      for (int w = 0; w < kStatsThreads / 32; ++w) {
        total[s] = photo::combine_stat(kind, s, total[s], warp_stats[w][s]);
      }
    }
    const photo::Reduced<P> reduced = photo::finish_reduction<T, P>(kind, total, pixels);
    slot.mean = reduced.mean;
    for (int c = 0; c < 3; ++c) {
      slot.low[c] = reduced.low[c];
      slot.inv_scale[c] = reduced.inv_scale[c];
    }
  }
  if (!equalize) return;
  for (int t = threadIdx.x; t < 3 * photo::kBins; t += blockDim.x) histograms[t] = counts[t];
  __syncthreads();
  if (warp < C) photometric_impl::warp_equalize_table(histograms + warp * photo::kBins, slot.table + warp * photo::kBins);
}

// Each chain's stage `stage` image from the stage before it: four pixels a thread, a grid row a
// chain.
template <int C, typename T, typename P>
__global__ void __launch_bounds__(kThreads)
    stage_kernel(const Call call, const Decoded<P>* decoded, const ReductionSlot<P>* slots,
                 const StageImages<T> stages, int stage) {
  const int64_t pixels = call.height * call.width;
  const int64_t first_pixel =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPixelsPerThread;
  for (int64_t i = blockIdx.y; i < call.chains(); i += gridDim.y) {
    int bases[kMaxDepth];
    const int count = stage_bases(decoded + i * call.depth, static_cast<int>(call.depth),
                                  call.interpolation, bases);
    if (count <= stage) continue;
    const Chain<C, T, P> chain =
        chain_of<C, T, P>(call, i, decoded, slots, stages, stage - 1, bases[stage - 1]);
    T* image = stages.of(stage, i);
    for (int j = 0; j < kPixelsPerThread; ++j) {
      const int64_t p = first_pixel + j;
      if (p >= pixels) break;
      const int64_t y = p / call.width, x = p - y * call.width;
      const Pixel<P> v = value_at(chain, bases[stage], y, x);
      for (int c = 0; c < C; ++c) image[c * pixels + p] = static_cast<T>(v.v[c]);
    }
  }
}

// The output strides (elements) of a [N, C, H, W] output.
struct OutStrides {
  int64_t sample, channel, row, column;
};

template <int C, typename T, typename out_t, typename P>
__global__ void __launch_bounds__(kThreads)
    output_kernel(const Call call, const Decoded<P>* decoded, const ReductionSlot<P>* slots,
                  const StageImages<T> stages, out_t* out, const OutStrides os,
                  const photo::Output<P> o) {
  const int64_t pixels = call.height * call.width;
  const int64_t first_pixel =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPixelsPerThread;
  const int depth = static_cast<int>(call.depth);
  for (int64_t n = blockIdx.y; n < call.samples; n += gridDim.y) {
    const Chain<C, T, P> first =
        chain_at<C, T, P>(call, n * call.branches, decoded, slots, stages, depth);
    for (int j = 0; j < kPixelsPerThread; ++j) {
      const int64_t p = first_pixel + j;
      if (p >= pixels) break;
      const int64_t y = p / call.width, x = p - y * call.width;
      Pixel<P> v;
      if (call.weights == nullptr) {
        v = value_at(first, depth, y, x);
      } else {
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
        for (int c = 0; c < C; ++c) v.v[c] = mixed_value<T>(mix[c]);
      }
      for (int c = 0; c < C; ++c) {
        out[n * os.sample + c * os.channel + y * os.row + x * os.column] =
            photo::convert<T, out_t, P>(v.v[c], o, c);
      }
    }
  }
}

template <int C, typename T, typename out_t>
void run(const at::Tensor& out, const at::Tensor& image, const Call& call,
         std::optional<c10::ArrayRef<double>> mean, std::optional<c10::ArrayRef<double>> stddev) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t count = call.chains() * call.depth;
  // the decoded operations, the reductions' slots and the stage images: scratch from the
  // caching allocator
  const int64_t image_size = call.channels * call.height * call.width;
  const int64_t stage_elements = StageImages<T>::count(call.depth) * call.chains() * image_size;
  const auto aligned = [](int64_t bytes) { return (bytes + 15) / 16 * 16; };
  const int64_t decoded_bytes = aligned(count * static_cast<int64_t>(sizeof(Decoded<P>)));
  const int64_t slot_bytes = aligned(count * static_cast<int64_t>(sizeof(ReductionSlot<P>)));
  const int64_t stage_bytes = stage_elements * static_cast<int64_t>(sizeof(T));
  at::Tensor scratch = at::empty({decoded_bytes + slot_bytes + stage_bytes},
                                 image.options().dtype(at::kByte));
  uint8_t* base = scratch.mutable_data_ptr<uint8_t>();
  auto* decoded = reinterpret_cast<Decoded<P>*>(base);
  auto* slots = reinterpret_cast<ReductionSlot<P>*>(base + decoded_bytes);
  const StageImages<T> stages{reinterpret_cast<T*>(base + decoded_bytes + slot_bytes),
                              call.chains(), image_size};
  decode_kernel<T, P><<<static_cast<unsigned>(ceil_div(count, kThreads)), kThreads, 0, stream>>>(
      call, decoded, count);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t pixels = call.height * call.width;
  const unsigned pixel_blocks =
      static_cast<unsigned>(ceil_div(pixels, int64_t{kThreads} * kPixelsPerThread));
  const int depth = static_cast<int>(call.depth);
  for (int s = 0; s < depth; ++s) {
    if (s > 0) {
      const dim3 grid(pixel_blocks,
                      static_cast<unsigned>(std::min<int64_t>(call.chains(), 65535)));
      stage_kernel<C, T, P><<<grid, kThreads, 0, stream>>>(call, decoded, slots, stages, s);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    // the r-th reduction in stage s lies past r reductions and s stage bases: r + s < depth
    for (int r = 0; r + s < depth; ++r) {
      statistics_kernel<C, T, P>
          <<<static_cast<unsigned>(call.chains()), kStatsThreads, 0, stream>>>(
              call, decoded, slots, stages, s, r);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
  const dim3 grid(pixel_blocks, static_cast<unsigned>(std::min<int64_t>(call.samples, 65535)));
  const OutStrides os{out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
  output_kernel<C, T, out_t, P><<<grid, kThreads, 0, stream>>>(
      call, decoded, slots, stages, out.mutable_data_ptr<out_t>(), os,
      photometric_output<P>(mean, stddev));
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
