// color_transform forward on the GPU. Three-channel images whose planes (or pixel rows) are
// 16-byte aligned take the vectorised kernel: each thread moves a group of pixels with 16-byte
// loads and stores and keeps them in registers. It is launched overlapped with the kernel
// before it (overlapped_launch.cuh), which hides its launch gap and its log table's build.
// Everything else takes a per-pixel kernel.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <limits>

#include "kernels/color_transform.h"
#include "kernels/cuda/color_common.cuh"
#include "kernels/cuda/color_log_table.cuh"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/per_device.h"

namespace gpuaug::cuda::color {
namespace {

using namespace gpuaug::color;

// mean/std, which only a floating output can have.
template <typename out_t, typename P>
__device__ __forceinline__ P normalized(const Params<P>& p, P v, int c) {
  if constexpr (std::is_same_v<out_t, uint8_t>) return v;
  return p.normalize ? (v - p.mean[c]) * p.inv_std[c] : v;
}

template <typename out_t, int V, bool Interleaved, typename P>
__device__ __forceinline__ void store_values(Group<out_t, V, Interleaved>& out,
                                             const P (&y)[kChannels][V]) {
  if constexpr (std::is_same_v<out_t, uint8_t>) {
    pack_u8(out, [&](int c, int j) { return y[c][j]; });
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int c = 0; c < kChannels; ++c) out.at(c, j) = store<out_t>(y[c][j]);
  }
}

// One group of pixels from `in` to `out`. uint8 input is read unscaled (forward_pixel folds the
// 1/255 into the pixel's scale); uint8 output is packed by byte permutes.
template <bool Apply, typename in_t, typename out_t, int V, bool Interleaved, typename P>
__device__ __forceinline__ void transform_group(const Group<in_t, V, Interleaved>& in,
                                                Group<out_t, V, Interleaved>& out, const P* color,
                                                const SampleParams<P>& s, const Params<P>& p) {
  constexpr bool kRawInput = std::is_same_v<in_t, uint8_t>;
  P y[kChannels][V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    P x[kChannels];
#pragma unroll
    for (int c = 0; c < kChannels; ++c) {
      if constexpr (kRawInput) {
        x[c] = raw_u8(in, c, j);
      } else {
        x[c] = load<P>(in.at(c, j));
      }
    }
    if constexpr (Apply) {
      forward_pixel<kChannels, P, kRawInput>(x, kChannels, color, s);
    } else if constexpr (kRawInput) {
#pragma unroll
      for (int c = 0; c < kChannels; ++c) x[c] *= P(1.0 / 255.0);
    } else if constexpr (std::is_same_v<out_t, uint8_t>) {
#pragma unroll
      for (int c = 0; c < kChannels; ++c) x[c] = clamp01(x[c]);  // as pack_u8 requires
    }
#pragma unroll
    for (int c = 0; c < kChannels; ++c) y[c][j] = normalized<out_t>(p, x[c], c);
  }
  store_values(out, y);
}

// A group of uint8 pixels of a sample whose parameters allow the log-domain path.
template <typename out_t, int V, bool Interleaved>
__device__ __forceinline__ void transform_group_log(const Group<uint8_t, V, Interleaved>& in,
                                                    Group<out_t, V, Interleaved>& out,
                                                    const U8LogTable& table, const LogSample& s,
                                                    const Params<float>& p) {
  using G = Group<uint8_t, V, Interleaved>;
  float y[kChannels][V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float2 entry[kChannels];  // (u, log2(u / 255))
#pragma unroll
    for (int c = 0; c < kChannels; ++c) {
      const int i = G::index_of(c, j);
      entry[c] = table.lookup(in.run[G::run_of(c)].u32[i / 4], i % 4);
    }
    const float s_in = entry[0].x + entry[1].x + entry[2].x;
    float s_out = float(255 * kSumEpsilon);
#pragma unroll
    for (int c = 0; c < kChannels; ++c) s_out = fmaf(entry[c].x, s.color[c], s_out);
    const float log_scale = log2f(s_in) - log2f(s_out);
#pragma unroll
    for (int c = 0; c < kChannels; ++c) {
      const float exponent =
          fmaf(s.gamma, entry[c].y, fmaf(s.gamma, log_scale, s.gamma_log_color[c]));
      const float w = exp2f(fminf(exponent, 0.0f));
      y[c][j] = normalized<out_t>(p, fma01(w, s.contrast, s.offset), c);
    }
  }
  store_values(out, y);
}

// One sample's parameters as the vectorised kernel uses them.
template <typename in_t, typename out_t, typename P>
struct SampleState {
  bool applies;
  P color[kChannels];
  SampleParams<P> s;
  LogSampleOf<in_t, out_t> log;

  SampleState() = default;
  __device__ SampleState(const Params<P>& p, uint32_t n) : applies(p.applies(n)), s(p.sample(n)) {
    const P* row = p.color_of(n);
#pragma unroll
    for (int c = 0; c < kChannels; ++c) color[c] = row[c];
    log = LogSampleOf<in_t, out_t>(color, s);
  }
};

// uint8 output is compute-bound: it runs a grid the GPU holds at once, whose threads take several
// groups each, which speeds uint8 -> uint8 but slows float32 and uint8 -> float32 outputs.
// Memory-bound outputs run one group per thread.
template <typename out_t>
constexpr bool kPersistent = std::is_same_v<out_t, uint8_t>;

// uint8 -> uint8's loads nothing else hides: each thread loads its next group into registers
// before it computes the current one.
template <typename in_t, typename out_t>
constexpr bool kPrefetch = kLogDomain<in_t, out_t>;

// Where a group lies: its image, its index there, its sample.
struct GroupPlace {
  uint32_t image, g, n;
  __device__ GroupPlace(uint32_t i, const FastDivider& groups_per_image, const FastDivider& frames)
      : image(groups_per_image.div(i)),
        g(i - image * groups_per_image.divisor),
        n(frames.div(image)) {}
};

// Groups are numbered across all images (no idle threads at the end of each image); block b
// takes groups [b, b + 1) * groups_per_block, its threads kThreads groups apart, so that a
// thread's next group is mostly in the same sample and its parameters are reused. uint8 -> uint8
// keeps 3 blocks (24 warps) per SM, as many as its table's shared memory allows (at 1024 threads
// a block, one table for 32 warps, the registers were capped at 64 and it ran slower).
template <typename in_t, typename out_t, typename P, bool Interleaved>
__global__ void __launch_bounds__(kThreads, kLogDomain<in_t, out_t> ? 3 : 1)
forward_vectorized(const in_t* __restrict__ in, out_t* __restrict__ out, uint32_t total_groups,
                   uint32_t groups_per_block, const FastDivider groups_per_image,
                   const FastDivider frames, int64_t pixels, const __grid_constant__ Params<P> p) {
  constexpr int C = kChannels;
  constexpr int V = kPixelsPerGroup<in_t, out_t>;
  using InGroup = Group<in_t, V, Interleaved>;
  const uint32_t begin = blockIdx.x * groups_per_block;
  const uint32_t end = min(begin + groups_per_block, total_groups);
  uint32_t i = begin + threadIdx.x;
  allow_next_grid();
  // The table lives in shared memory: it is built while the previous kernel finishes.
  extern __shared__ __align__(16) char dynamic_shared[];
  const LogTableOf<in_t, out_t> table(dynamic_shared);
  wait_for_previous_grid();
  GroupPlace next(i, groups_per_image, frames);
  InGroup prefetched;
  if constexpr (kPrefetch<in_t, out_t>) {
    if (i < end) prefetched.load(in + int64_t(next.image) * C * pixels, pixels, next.g);
  }
  SampleState<in_t, out_t, P> state;
  uint32_t state_of = UINT32_MAX;  // the sample `state` holds
  for (; i < end; i += kThreads) {
    const GroupPlace here =
        kPrefetch<in_t, out_t> ? next : GroupPlace(i, groups_per_image, frames);
    const uint32_t image = here.image, g = here.g, n = here.n;
    if (n != state_of) {
      state = SampleState<in_t, out_t, P>(p, n);
      state_of = n;
    }
    const int64_t offset = int64_t(image) * C * pixels;
    InGroup x;
    if constexpr (kPrefetch<in_t, out_t>) {
      x = prefetched;
      if (i + kThreads < end) {
        next = GroupPlace(i + kThreads, groups_per_image, frames);
        prefetched.load(in + int64_t(next.image) * C * pixels, pixels, next.g);
      }
    } else {
      x.load(in + offset, pixels, g);
    }
    Group<out_t, V, Interleaved> y;
    // The branch stays outside the pixel loop so that the group's pixels interleave.
    if (state.applies) {
      if constexpr (kLogDomain<in_t, out_t>) {
        if (state.log.usable) {
          transform_group_log(x, y, table, state.log, p);
        } else {
          transform_group<true>(x, y, state.color, state.s, p);
        }
      } else {
        transform_group<true>(x, y, state.color, state.s, p);
      }
    } else {
      transform_group<false>(x, y, state.color, state.s, p);
    }
    // Interleaved groups are 48 bytes a thread: stored directly, each 16-byte store of a warp
    // would half-fill 32 sectors. A warp whose 32 groups are consecutive in one image passes
    // them through shared memory and stores 512 contiguous bytes at a time instead.
    constexpr int kWords = sizeof(y.run[0]) / 16;
    if constexpr (Interleaved && sizeof(y.run[0]) % 16 == 0) {
      const uint32_t lane = threadIdx.x % 32;
      const uint32_t first = i - lane;
      // The same for every lane of the warp, which the __syncwarp()s below require.
      const bool whole_warp =
          first + 31 < end && groups_per_image.div(first) == groups_per_image.div(first + 31);
      if (whole_warp) {
        __shared__ uint4 stage[kThreads / 32][32 * kWords];
        uint4* mine = stage[threadIdx.x / 32];
#pragma unroll
        for (int w = 0; w < kWords; ++w) mine[lane * kWords + w] = y.run[0].w[w];
        __syncwarp();
        uint4* dst = reinterpret_cast<uint4*>(out + offset + int64_t(g - lane) * V * C);
#pragma unroll
        for (int w = 0; w < kWords; ++w) store_word(dst + w * 32 + lane, mine[w * 32 + lane]);
        __syncwarp();
        continue;
      }
    }
    y.store(out + offset, pixels, g);
  }
}

// Launches forward_vectorized<..., Interleaved> over total_groups groups.
template <typename in_t, typename out_t, typename P, bool Interleaved>
void launch_vectorized(const in_t* src, out_t* dst, int64_t total_groups, const ImageGeometry& g,
                       const Params<P>& params, cudaStream_t stream) {
  constexpr auto kernel = forward_vectorized<in_t, out_t, P, Interleaved>;
  constexpr int V = kPixelsPerGroup<in_t, out_t>;
  constexpr int shared = kLogTableBytes<in_t, out_t>;
  const int64_t one_per_thread = ceil_div(total_groups, kThreads);
  int64_t grid = one_per_thread;
  if constexpr (kPersistent<out_t>) {
    // The shared memory opt-in (needed above 48 KiB) and the occupancy are per device.
    static PerDevice<int> blocks_per_sm;
    const int per_sm = blocks_per_sm.get([] {
      if (shared > 0) {
        C10_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
      }
      int blocks = 0;
      C10_CUDA_CHECK(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, shared));
      return std::max(blocks, 1);
    });
    const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    grid = std::min(one_per_thread, per_sm * sms);
  }
  const int64_t groups_per_block = ceil_div(one_per_thread, grid) * kThreads;
  const int64_t blocks = ceil_div(total_groups, groups_per_block);
  launch_overlapped<kernel>(dim3(blocks), dim3(kThreads), shared, stream, src, dst,
                            static_cast<uint32_t>(total_groups),
                            static_cast<uint32_t>(groups_per_block),
                            FastDivider(static_cast<uint32_t>(g.pixels / V)),
                            FastDivider(static_cast<uint32_t>(g.frames)), g.pixels, params);
}

// Any channel count and alignment: one pixel per thread, channels in local arrays.
template <typename in_t, typename out_t, typename P>
__global__ void __launch_bounds__(kThreads)
forward_per_pixel(const in_t* __restrict__ in, out_t* __restrict__ out, int64_t images,
                  int64_t frames, int64_t pixels, int channels, bool interleaved,
                  const __grid_constant__ Params<P> p) {
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const PixelImage<P> im(p, image, frames, pixels, channels, interleaved);
    for (int64_t px = int64_t(blockIdx.x) * kThreads + threadIdx.x; px < pixels;
         px += int64_t(gridDim.x) * kThreads) {
      P x[kMaxChannels];
      for (int c = 0; c < channels; ++c) x[c] = load<P>(in[im.at(px, c)]);
      if (im.apply) forward_pixel<0>(x, channels, im.color, im.s);
      for (int c = 0; c < channels; ++c) {
        out[im.at(px, c)] = store<out_t>(normalized<out_t>(p, x[c], c));
      }
    }
  }
}

void color_transform(const at::Tensor& out, const at::Tensor& image, const at::Tensor& color,
                     const at::Tensor& brightness, const at::Tensor& contrast,
                     const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                     std::optional<c10::ArrayRef<double>> mean,
                     std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(image.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const at::Tensor in = dense_image(image);
  const ImageGeometry g = image_geometry(in);
  const int64_t images = g.samples * g.frames;
  dispatch_dtypes<true>(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using in_t = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = compute_t<in_t>;
    const auto params = make_params<P>(in, color, brightness, contrast, gamma, apply, mean, stddev);
    const auto* src = in.const_data_ptr<in_t>();
    auto* dst = out.mutable_data_ptr<out_t>();
    constexpr int V = kPixelsPerGroup<in_t, out_t>;
    const int64_t total_groups = images * (g.pixels / V);
    const bool vectorized = kVectorizable<in_t, out_t> && g.channels == kChannels &&
                            g.pixels % V == 0 && aligned16(src) && aligned16(dst) &&
                            total_groups <= std::numeric_limits<int32_t>::max();
    if constexpr (kVectorizable<in_t, out_t>) {
      if (vectorized) {
        (g.interleaved ? launch_vectorized<in_t, out_t, P, true>
                       : launch_vectorized<in_t, out_t, P, false>)(src, dst, total_groups, g,
                                                                   params.params, stream);
      }
    }
    if (!vectorized) {
      const dim3 grid = image_grid(g.pixels, images, 65535);
      forward_per_pixel<in_t, out_t, P><<<grid, kThreads, 0, stream>>>(
          src, dst, images, g.frames, g.pixels, static_cast<int>(g.channels), g.interleaved,
          params.params);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(color_transform_loops, cuda, &color_transform);

}  // namespace gpuaug::cuda::color
