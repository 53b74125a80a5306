// color_transform backward on the GPU: recomputes the forward per pixel, writes the image
// gradient, and sums the parameter gradients per block in a fixed order (warp shuffles, then one
// thread over the warps), so the result is bitwise reproducible: no atomics.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "kernels/color_transform.h"
#include "kernels/cuda/color_common.cuh"

namespace gpuaug::cuda::color {
namespace {

using namespace gpuaug::color;

constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocksPerImage = 64;

// Sums values[0..count) over the block; thread 0 writes them to out. All threads must call.
template <typename P, int N>
__device__ void block_sum_to(P (&values)[N], int count, P* out, P* shared /* [kWarps * N] */) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int i = 0; i < count; ++i) {
    P v = values[i];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) shared[warp * N + i] = v;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 0; i < count; ++i) {
      P total = 0;
      for (int w = 0; w < kWarps; ++w) total += shared[w * N + i];
      out[i] = total;
    }
  }
  __syncthreads();
}

template <typename P, int C>
__device__ __forceinline__ void pack_sums(P (&sums)[kArray<C> + 3], const P (&grad_color)[kArray<C>],
                                          const ScalarGrads<P>& acc, int channels) {
  for (int c = 0; c < channels; ++c) sums[c] = grad_color[c];
  sums[channels] = acc.brightness;
  sums[channels + 1] = acc.contrast;
  sums[channels + 2] = acc.gamma;
}

template <bool Apply, typename in_t, typename g_t, int V, bool Interleaved, typename P>
__device__ __forceinline__ void backward_group(const Group<in_t, V, Interleaved>& x_in,
                                               const Group<g_t, V, Interleaved>& g_in,
                                               Group<in_t, V, Interleaved>& result,
                                               const P* color, const SampleParams<P>& s,
                                               const Params<P>& p, P (&grad_color)[kChannels],
                                               ScalarGrads<P>& acc) {
#pragma unroll
  for (int j = 0; j < V; ++j) {
    P x[kChannels], d[kChannels];
#pragma unroll
    for (int c = 0; c < kChannels; ++c) {
      x[c] = load<P>(x_in.at(c, j));
      d[c] = load<P>(g_in.at(c, j)) * p.inv_std[c];
    }
    if constexpr (Apply) backward_pixel<kChannels>(x, d, kChannels, color, s, grad_color, acc);
#pragma unroll
    for (int c = 0; c < kChannels; ++c) result.at(c, j) = store<in_t>(d[c]);
  }
}

template <typename in_t, typename g_t, typename P, bool Interleaved>
__global__ void __launch_bounds__(kThreads)
backward_vectorized(const in_t* __restrict__ in, const g_t* __restrict__ grad,
                    in_t* __restrict__ grad_in, P* __restrict__ partial_sums, int64_t images,
                    int64_t frames, int64_t pixels, const __grid_constant__ Params<P> p) {
  constexpr int C = kChannels;
  constexpr int V = kPixelsPerGroup<in_t, g_t>;
  __shared__ P shared[kWarps * (C + 3)];
  const int64_t groups = pixels / V;
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const int64_t n = image / frames;
    const bool apply = p.applies(n);
    const P* color_row = p.color_of(n);
    const P color[C] = {color_row[0], color_row[1], color_row[2]};
    const SampleParams<P> s = p.sample(n);
    const int64_t offset = image * C * pixels;
    P grad_color[C] = {};
    ScalarGrads<P> acc;
    for (int64_t g = int64_t(blockIdx.x) * kThreads + threadIdx.x; g < groups;
         g += int64_t(gridDim.x) * kThreads) {
      Group<in_t, V, Interleaved> x;
      Group<g_t, V, Interleaved> dy;
      x.load(in + offset, pixels, g);
      dy.load(grad + offset, pixels, g);
      Group<in_t, V, Interleaved> dx;
      // The branch stays outside the pixel loop so that the group's pixels interleave.
      if (apply) {
        backward_group<true>(x, dy, dx, color, s, p, grad_color, acc);
      } else {
        backward_group<false>(x, dy, dx, color, s, p, grad_color, acc);
      }
      dx.store(grad_in + offset, pixels, g);
    }
    P sums[C + 3];
    pack_sums<P, C>(sums, grad_color, acc, C);
    block_sum_to(sums, C + 3, partial_sums + (image * gridDim.x + blockIdx.x) * (C + 3), shared);
  }
}

// Any channel count and alignment: one pixel per thread, channels in local arrays.
template <typename in_t, typename g_t, typename P>
__global__ void __launch_bounds__(kThreads)
backward_per_pixel(const in_t* __restrict__ in, const g_t* __restrict__ grad,
                   in_t* __restrict__ grad_in, P* __restrict__ partial_sums, int64_t images,
                   int64_t frames, int64_t pixels, int channels, bool interleaved,
                   const __grid_constant__ Params<P> p) {
  __shared__ P shared[kWarps * (kMaxChannels + 3)];
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const PixelImage<P> im(p, image, frames, pixels, channels, interleaved);
    P grad_color[kMaxChannels] = {};
    ScalarGrads<P> acc;
    for (int64_t px = int64_t(blockIdx.x) * kThreads + threadIdx.x; px < pixels;
         px += int64_t(gridDim.x) * kThreads) {
      P x[kMaxChannels], d[kMaxChannels];
      for (int c = 0; c < channels; ++c) {
        x[c] = load<P>(in[im.at(px, c)]);
        d[c] = load<P>(grad[im.at(px, c)]) * p.inv_std[c];
      }
      if (im.apply) backward_pixel<0>(x, d, channels, im.color, im.s, grad_color, acc);
      for (int c = 0; c < channels; ++c) grad_in[im.at(px, c)] = store<in_t>(d[c]);
    }
    P sums[kMaxChannels + 3];
    pack_sums<P, 0>(sums, grad_color, acc, channels);
    block_sum_to(sums, channels + 3,
                 partial_sums + (image * gridDim.x + blockIdx.x) * (channels + 3), shared);
  }
}

template <typename P>
struct ParamGradOutputs {
  P* out[4];                // color, brightness, contrast, gamma
  bool per_sample[4];       // [N, C] / [N] rather than [C] / []

  // Where gradient value v (each colour channel, then brightness, contrast, gamma) of sample n
  // goes, for a per-sample parameter.
  __device__ P* per_sample_slot(int v, int channels, int64_t n) const {
    const int param = v < channels ? 0 : v - channels + 1;
    return per_sample[param] ? out[param] + (param == 0 ? n * channels + v : n) : nullptr;
  }
};

// Block n sums sample n's partials (`rows` rows of `values`): warp w takes values w,
// w + kWarps, ..., its lanes every 32nd row, and a shuffle tree adds the lanes, in the same
// order every run. Writes per-sample gradients, and every sum to sample_sums when not null.
template <typename P>
__global__ void __launch_bounds__(kThreads)
sum_sample_partials(const P* __restrict__ partial_sums, int64_t rows, int channels,
                    ParamGradOutputs<P> grads, P* __restrict__ sample_sums) {
  const int values = channels + 3;
  const int64_t n = blockIdx.x;
  const int lane = threadIdx.x % 32;
  const P* sample = partial_sums + n * rows * values;
  for (int v = threadIdx.x / 32; v < values; v += kWarps) {
    P sum = 0;
    for (int64_t row = lane; row < rows; row += 32) sum += sample[row * values + v];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      if (P* slot = grads.per_sample_slot(v, channels, n)) *slot = sum;
      if (sample_sums) sample_sums[n * values + v] = sum;
    }
  }
}

// Block v adds value v of every sample's sum in a fixed order, for a parameter shared by the
// samples.
template <typename P>
__global__ void __launch_bounds__(kThreads)
total_over_samples(const P* __restrict__ sample_sums, int64_t samples, int channels,
                   ParamGradOutputs<P> grads) {
  __shared__ P shared[kWarps];
  const int values = channels + 3;
  const int v = blockIdx.x;
  const int param = v < channels ? 0 : v - channels + 1;
  if (grads.per_sample[param]) return;
  P total[1] = {0};
  for (int64_t n = threadIdx.x; n < samples; n += kThreads) total[0] += sample_sums[n * values + v];
  P result[1];
  block_sum_to(total, 1, result, shared);
  if (threadIdx.x == 0) grads.out[param][param == 0 ? v : 0] = result[0];
}

// The parameters' gradients from the backward kernel's partial sums: per sample in one kernel,
// over the samples in a second one only where a parameter is shared. (One kernel whose threads
// each walked a sample's partials was latency-bound, a large share of the backward.)
template <typename P>
void finish_param_grads(const at::Tensor& partial_sums, const ImageGeometry& g,
                        ColorGrads& grads, cudaStream_t stream) {
  at::Tensor* targets[4] = {&std::get<1>(grads), &std::get<2>(grads), &std::get<3>(grads),
                            &std::get<4>(grads)};
  ParamGradOutputs<P> outputs;
  at::Tensor staged[4];  // parameters of another dtype get the gradient through a P copy
  bool any_shared = false;
  for (int i = 0; i < 4; ++i) {
    at::Tensor& target = *targets[i];
    staged[i] = target.scalar_type() == partial_sums.scalar_type()
                    ? target
                    : at::empty(target.sizes(), partial_sums.options());
    outputs.out[i] = staged[i].mutable_data_ptr<P>();
    outputs.per_sample[i] = target.dim() == (i == 0 ? 2 : 1);
    any_shared = any_shared || !outputs.per_sample[i];
  }
  const int channels = static_cast<int>(g.channels);
  at::Tensor sample_sums;
  if (any_shared) sample_sums = at::empty({g.samples, channels + 3}, partial_sums.options());
  P* sums = any_shared ? sample_sums.mutable_data_ptr<P>() : nullptr;
  if (g.samples > 0) {
    sum_sample_partials<P><<<g.samples, kThreads, 0, stream>>>(
        partial_sums.const_data_ptr<P>(), g.frames * partial_sums.size(1), channels, outputs,
        sums);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (any_shared) {
    total_over_samples<P><<<channels + 3, kThreads, 0, stream>>>(sums, g.samples, channels,
                                                                 outputs);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  for (int i = 0; i < 4; ++i) {
    if (!staged[i].is_same(*targets[i])) targets[i]->copy_(staged[i]);
  }
}

void color_transform_backward(ColorGrads& grads, const at::Tensor& grad, const at::Tensor& image,
                              const at::Tensor& color, const at::Tensor& brightness,
                              const at::Tensor& contrast, const at::Tensor& gamma,
                              const std::optional<at::Tensor>& apply,
                              std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor& grad_image = std::get<0>(grads);
  const at::Tensor in = dense_image(image);
  const at::Tensor grad_in = grad_in_image_layout(grad, grad_image);
  const ImageGeometry g = image_geometry(in);
  const int64_t images = g.samples * g.frames;
  const auto compute_dtype = color_compute_dtype(in);
  at::Tensor partial_sums;
  dispatch_dtypes<false>(in.scalar_type(), grad.scalar_type(), [&](auto in_tag, auto g_tag) {
    using in_t = typename decltype(in_tag)::type;
    using g_t = typename decltype(g_tag)::type;
    using P = compute_t<in_t>;
    constexpr int V = kPixelsPerGroup<in_t, g_t>;
    const auto* x = in.const_data_ptr<in_t>();
    const auto* dy = grad_in.const_data_ptr<g_t>();
    auto* dx = grad_image.mutable_data_ptr<in_t>();
    const bool vectorized = g.channels == kChannels && g.pixels % V == 0 && aligned16(x) &&
                            aligned16(dy) && aligned16(dx);
    const dim3 grid =
        image_grid(vectorized ? g.pixels / V : g.pixels, images, kMaxBlocksPerImage);
    partial_sums = at::empty({images, grid.x, g.channels + 3}, in.options().dtype(compute_dtype));
    if (in.numel() == 0) {
      partial_sums.zero_();
      return;
    }
    const auto params =
        make_params<P>(in, color, brightness, contrast, gamma, apply, std::nullopt, stddev);
    P* sums = partial_sums.mutable_data_ptr<P>();
    if (vectorized) {
      auto kernel = g.interleaved ? backward_vectorized<in_t, g_t, P, true>
                                  : backward_vectorized<in_t, g_t, P, false>;
      kernel<<<grid, kThreads, 0, stream>>>(x, dy, dx, sums, images, g.frames, g.pixels,
                                            params.params);
    } else {
      backward_per_pixel<in_t, g_t, P><<<grid, kThreads, 0, stream>>>(
          x, dy, dx, sums, images, g.frames, g.pixels, static_cast<int>(g.channels),
          g.interleaved, params.params);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if (compute_dtype == at::kDouble) {
    finish_param_grads<double>(partial_sums, g, grads, stream);
  } else {
    finish_param_grads<float>(partial_sums, g, grads, stream);
  }
}

}  // namespace

GPUAUG_REGISTER_LOOP(color_transform_backward_loops, cuda, &color_transform_backward);

}  // namespace gpuaug::cuda::color
