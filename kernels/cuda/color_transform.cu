// color_transform forward on the GPU. Three-channel images whose planes (or pixel rows) are
// 16-byte aligned take the vectorised kernel: each thread moves a group of pixels with 16-byte
// loads and stores and keeps them in registers. Everything else takes a per-pixel kernel.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "kernels/cuda/color_common.cuh"
#include "ops/color_transform.h"

namespace gpuaug::cuda::color {
namespace {

using namespace gpuaug::color;

template <typename P>
__device__ __forceinline__ P normalized(const Params<P>& p, P v, int c) {
  return p.normalize ? (v - p.mean[c]) * p.inv_std[c] : v;
}

template <bool Apply, int V, typename in_t, typename out_t, typename P>
__device__ __forceinline__ void transform_group(const in_t (&raw)[kChannels][V],
                                                out_t (&result)[kChannels][V], const P* color,
                                                const SampleParams<P>& s, const Params<P>& p) {
#pragma unroll
  for (int j = 0; j < V; ++j) {
    P x[kChannels];
#pragma unroll
    for (int c = 0; c < kChannels; ++c) x[c] = load<P>(raw[c][j]);
    if constexpr (Apply) forward_pixel<kChannels>(x, kChannels, color, s);
#pragma unroll
    for (int c = 0; c < kChannels; ++c) result[c][j] = store<out_t>(normalized(p, x[c], c));
  }
}

template <typename in_t, typename out_t, typename P, bool Interleaved>
__global__ void __launch_bounds__(kThreads)
forward_vectorized(const in_t* __restrict__ in, out_t* __restrict__ out, int64_t images,
                   int64_t frames, int64_t pixels, const __grid_constant__ Params<P> p) {
  constexpr int C = kChannels;
  constexpr int V = kPixelsPerGroup<in_t, out_t>;
  const int64_t groups = pixels / V;
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const int64_t n = image / frames;
    const bool apply = p.applies(n);
    const P* color_row = p.color_of(n);
    const P color[C] = {color_row[0], color_row[1], color_row[2]};
    const SampleParams<P> s = p.sample(n);
    const in_t* src = in + image * C * pixels;
    out_t* dst = out + image * C * pixels;
    for (int64_t g = int64_t(blockIdx.x) * kThreads + threadIdx.x; g < groups;
         g += int64_t(gridDim.x) * kThreads) {
      // raw[c][j] is channel c of pixel j of the group, whatever the memory layout.
      in_t raw[C][V];
      if constexpr (Interleaved) {
        const auto chunk = load_chunk<in_t, C * V>(src + g * V * C);
#pragma unroll
        for (int j = 0; j < V; ++j)
#pragma unroll
          for (int c = 0; c < C; ++c) raw[c][j] = chunk.v[j * C + c];
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const auto chunk = load_chunk<in_t, V>(src + c * pixels + g * V);
#pragma unroll
          for (int j = 0; j < V; ++j) raw[c][j] = chunk.v[j];
        }
      }
      out_t result[C][V];
      // The branch stays outside the pixel loop so that the group's pixels interleave.
      if (apply) {
        transform_group<true, V>(raw, result, color, s, p);
      } else {
        transform_group<false, V>(raw, result, color, s, p);
      }
      if constexpr (Interleaved) {
        Chunk<out_t, C * V> chunk;
#pragma unroll
        for (int j = 0; j < V; ++j)
#pragma unroll
          for (int c = 0; c < C; ++c) chunk.v[j * C + c] = result[c][j];
        store_chunk(dst + g * V * C, chunk);
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          Chunk<out_t, V> chunk;
#pragma unroll
          for (int j = 0; j < V; ++j) chunk.v[j] = result[c][j];
          store_chunk(dst + c * pixels + g * V, chunk);
        }
      }
    }
  }
}

// Any channel count and alignment: one pixel per thread, channels in local arrays.
template <typename in_t, typename out_t, typename P>
__global__ void __launch_bounds__(kThreads)
forward_per_pixel(const in_t* __restrict__ in, out_t* __restrict__ out, int64_t images,
                  int64_t frames, int64_t pixels, int channels, bool interleaved,
                  const __grid_constant__ Params<P> p) {
  const int64_t channel_step = interleaved ? 1 : pixels;
  const int64_t pixel_step = interleaved ? channels : 1;
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const int64_t n = image / frames;
    const bool apply = p.applies(n);
    const P* color = p.color_of(n);
    const SampleParams<P> s = p.sample(n);
    const int64_t offset = image * channels * pixels;
    for (int64_t px = int64_t(blockIdx.x) * kThreads + threadIdx.x; px < pixels;
         px += int64_t(gridDim.x) * kThreads) {
      const int64_t at = offset + px * pixel_step;
      P x[kMaxChannels];
      for (int c = 0; c < channels; ++c) x[c] = load<P>(in[at + c * channel_step]);
      if (apply) forward_pixel<0>(x, channels, color, s);
      for (int c = 0; c < channels; ++c) {
        out[at + c * channel_step] = store<out_t>(normalized(p, x[c], c));
      }
    }
  }
}

at::Tensor color_transform(const at::Tensor& image, const at::Tensor& color,
                           const at::Tensor& brightness, const at::Tensor& contrast,
                           const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                           std::optional<at::ScalarType> dtype,
                           std::optional<c10::ArrayRef<double>> mean,
                           std::optional<c10::ArrayRef<double>> stddev) {
  at::Tensor out = color_transform_meta(image, color, brightness, contrast, gamma, apply, dtype,
                                        mean, stddev);
  if (out.numel() == 0) return out;
  const c10::cuda::CUDAGuard device_guard(image.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const at::Tensor in = color_dense_image(image);
  const ColorGeometry g = color_geometry(in);
  const int64_t images = g.samples * g.frames;
  dispatch_dtypes<true>(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using in_t = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = compute_t<in_t>;
    const auto params = make_params<P>(in, color, brightness, contrast, gamma, apply, mean, stddev);
    const auto* src = in.const_data_ptr<in_t>();
    auto* dst = out.mutable_data_ptr<out_t>();
    constexpr int V = kPixelsPerGroup<in_t, out_t>;
    if (g.channels == kChannels && g.pixels % V == 0 && aligned16(src) && aligned16(dst)) {
      const dim3 grid = image_grid(g.pixels / V, images, 65535);
      auto kernel = g.interleaved ? forward_vectorized<in_t, out_t, P, true>
                                  : forward_vectorized<in_t, out_t, P, false>;
      kernel<<<grid, kThreads, 0, stream>>>(src, dst, images, g.frames, g.pixels, params.params);
    } else {
      const dim3 grid = image_grid(g.pixels, images, 65535);
      forward_per_pixel<in_t, out_t, P><<<grid, kThreads, 0, stream>>>(
          src, dst, images, g.frames, g.pixels, static_cast<int>(g.channels), g.interleaved,
          params.params);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace
}  // namespace gpuaug::cuda::color

TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) {
  m.impl("color_transform", &gpuaug::cuda::color::color_transform);
}
