// gpuaug::auto_augment on the GPU: a kernel decodes the operations (a thread each), then for each
// reduction position r (the r-th reduction of every chain: it reads the statistics of the ones
// before it) a statistics kernel, a block a chain (blocks of chains without one return), then the
// output kernel, four pixels a thread, a grid row a sample. Each block's statistics are combined
// in a fixed order (warp shuffles, then the warps in turn): the same bits run to run.
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
    statistics_kernel(const Call call, const Decoded<P>* decoded, ReductionSlot<P>* slots, int r) {
  const int64_t i = blockIdx.x;  // the chain
  const int k = reduction_at(decoded + i * call.depth, static_cast<int>(call.depth), r);
  if (k < 0) return;
  const Chain<C, T, P> chain = chain_of<C, T, P>(call, i, decoded, slots);
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
    const Pixel<P> v = walk<kMaxDepth, true>(chain, k, y, x);
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

// The output strides (elements) of a [N, C, H, W] output.
struct OutStrides {
  int64_t sample, channel, row, column;
};

template <int C, typename T, typename out_t, typename P>
__global__ void __launch_bounds__(kThreads)
    output_kernel(const Call call, const Decoded<P>* decoded, const ReductionSlot<P>* slots,
                  out_t* out, const OutStrides os, const photo::Output<P> o) {
  const int64_t pixels = call.height * call.width;
  const int64_t first_pixel =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPixelsPerThread;
  const int depth = static_cast<int>(call.depth);
  for (int64_t n = blockIdx.y; n < call.samples; n += gridDim.y) {
    const Chain<C, T, P> first = chain_of<C, T, P>(call, n * call.branches, decoded, slots);
    for (int j = 0; j < kPixelsPerThread; ++j) {
      const int64_t p = first_pixel + j;
      if (p >= pixels) break;
      const int64_t y = p / call.width, x = p - y * call.width;
      Pixel<P> v;
      if (call.weights == nullptr) {
        v = walk<kMaxDepth, true>(first, depth, y, x);
      } else {
        const float* w = call.weights + n * (call.branches + 1);
        const Pixel<P> image = first.source(y, x);
        P mix[3];
        for (int c = 0; c < C; ++c) mix[c] = static_cast<P>(w[0]) * image.v[c];
        for (int64_t b = 0; b < call.branches; ++b) {
          const Chain<C, T, P> chain = chain_of<C, T, P>(call, n * call.branches + b, decoded, slots);
          const Pixel<P> a = walk<kMaxDepth, true>(chain, depth, y, x);
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
  // the decoded operations and the reductions' slots: scratch from the caching allocator
  const auto bytes = [](int64_t n, size_t size) { return static_cast<int64_t>(n * size); };
  at::Tensor scratch = at::empty({bytes(count, sizeof(Decoded<P>)) + bytes(count, sizeof(ReductionSlot<P>)) + 16},
                                 image.options().dtype(at::kByte));
  auto* decoded = reinterpret_cast<Decoded<P>*>(scratch.mutable_data_ptr<uint8_t>());
  auto* slots = reinterpret_cast<ReductionSlot<P>*>(
      scratch.mutable_data_ptr<uint8_t>() + (bytes(count, sizeof(Decoded<P>)) + 15) / 16 * 16);
  decode_kernel<T, P><<<static_cast<unsigned>(ceil_div(count, kThreads)), kThreads, 0, stream>>>(
      call, decoded, count);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  for (int r = 0; r < call.depth; ++r) {
    statistics_kernel<C, T, P><<<static_cast<unsigned>(call.chains()), kStatsThreads, 0, stream>>>(
        call, decoded, slots, r);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  const int64_t pixels = call.height * call.width;
  const dim3 grid(static_cast<unsigned>(ceil_div(pixels, int64_t{kThreads} * kPixelsPerThread)),
                  static_cast<unsigned>(std::min<int64_t>(call.samples, 65535)));
  const OutStrides os{out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
  output_kernel<C, T, out_t, P><<<grid, kThreads, 0, stream>>>(
      call, decoded, slots, out.mutable_data_ptr<out_t>(), os, photometric_output<P>(mean, stddev));
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
