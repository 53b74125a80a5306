// gpuaug::_auto_augment_backward's GPU loop for one level: a kernel decodes each chain's
// operation; a block a chain gathers its reduction's statistics and then the sums of the
// gradient through them (combined in a fixed order); a kernel keeps sharpness's clamped
// gradients; the adjoint kernel then takes a pixel a thread, a grid row a chain.
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "kernels/auto_augment/grad.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/photometric/cuda/block.cuh"

namespace gpuaug::cuda {
namespace {

using namespace gpuaug::policy;

template <typename T>
__global__ void decode_level_kernel(const LevelCall call, Decoded<T>* decoded) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < call.chains) {
    decoded[i] = decode<T, T>(static_cast<int>(call.operations[i]), call.magnitudes[i],
                              call.width, call.height);
  }
}

// The block's kStats sums, combined in a fixed order, into out (shared) by its first threads.
__device__ __forceinline__ void block_sums(double (&v)[photo::kStats], double* out) {
  __shared__ double warp_sums[kThreads / 32][photo::kStats];
  for (int d = 16; d > 0; d /= 2) {
    for (int s = 0; s < photo::kStats; ++s) v[s] += __shfl_down_sync(0xFFFFFFFFu, v[s], d);
  }
  if (threadIdx.x % 32 == 0) {
    for (int s = 0; s < photo::kStats; ++s) warp_sums[threadIdx.x / 32][s] = v[s];
  }
  __syncthreads();
  if (threadIdx.x < photo::kStats) {
    double total = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w][threadIdx.x];
    out[threadIdx.x] = total;
  }
  __syncthreads();
}

template <int C, typename T>
__device__ __forceinline__ void load_pixel(const T* planes, int64_t plane, int64_t p, T (&v)[3]) {
  for (int c = 0; c < 3; ++c) v[c] = c < C ? planes[c * plane + p] : T(0);
}

template <typename T>
__device__ __forceinline__ void load_grad(const LevelCall& call, const T* grad_out, int64_t i,
                                          int64_t p, T (&g)[3]) {
  for (int c = 0; c < 3; ++c) {
    g[c] = c < call.channels ? output_grad<T>(call, grad_out, i, c, p) : T(0);
  }
}

// A block a chain whose operation is a reduction: its statistics, then its gradient's sums.
template <int C, typename T>
__global__ void __launch_bounds__(kThreads)
    sums_kernel(const LevelCall call, const Decoded<T>* decoded, const T* grad_out,
                const T* level, LevelSums<T>* out) {
  const int64_t i = blockIdx.x;
  const Decoded<T>& op = decoded[i];
  if (!sums_level(op)) return;
  __shared__ double totals[photo::kStats], tie_totals[photo::kStats];
  const int kind = op.step.kind;
  const int64_t pixels = call.pixels();
  const T* in = level + i * C * pixels;
  double stats[photo::kStats];
  for (int s = 0; s < photo::kStats; ++s) stats[s] = photo::initial_stat(kind, s);
  T x[3], g[3];
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    load_pixel<C>(in, pixels, p, x);
    photo::add_pixel_stats<C, T>(kind, x, stats);
  }
  photometric_impl::block_stats<kThreads>(kind, stats, totals);
  __syncthreads();
  for (int s = 0; s < photo::kStats; ++s) stats[s] = totals[s];
  LevelSums<T> sums = level_statistics<T, T>(kind, stats, pixels);
  double gradient_sums[photo::kStats] = {}, ties[photo::kStats] = {};
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    load_pixel<C>(in, pixels, p, x);
    load_grad(call, grad_out, i, p, g);
    add_gradient_sums<C, T>(op, sums, x, g, gradient_sums, ties);
  }
  __syncthreads();  // totals read by every thread before block_sums writes them
  block_sums(gradient_sums, totals);
  block_sums(ties, tie_totals);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < photo::kStats; ++s) gradient_sums[s] = totals[s], ties[s] = tie_totals[s];
  finish_sums(op, pixels, gradient_sums, ties, sums);
  out[i] = sums;
}

// Sharpness's clamped output gradients at the inner pixels, 0 on the border.
template <int C, typename T>
__global__ void __launch_bounds__(kThreads)
    sharpen_kernel(const LevelCall call, const Decoded<T>* decoded, const T* grad_out,
                   const T* level, T* passed) {
  const int64_t pixels = call.pixels();
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels || call.height <= 2 || call.width <= 2) return;
  const int64_t y = p / call.width, x = p - y * call.width;
  for (int64_t i = blockIdx.y; i < call.chains; i += gridDim.y) {
    const Decoded<T>& op = decoded[i];
    if (op.kind != kSharpen) continue;
    T g[3] = {T(0), T(0), T(0)};
    if (!sharpen_keeps(call.height, call.width, y, x)) {
      load_grad(call, grad_out, i, p, g);
      sharpen_passed<C>(level + i * C * pixels, pixels, call.width, op.alpha, y, x, g);
    }
    for (int c = 0; c < C; ++c) passed[(i * C + c) * pixels + p] = g[c];
  }
}

template <int C, typename T>
__global__ void __launch_bounds__(kThreads)
    adjoint_kernel(const LevelCall call, const Decoded<T>* decoded, const LevelSums<T>* sums,
                   const T* grad_out, const T* level, const T* passed, T* grad_in) {
  const int64_t pixels = call.pixels();
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  const int64_t y = p / call.width, x = p - y * call.width;
  for (int64_t i = blockIdx.y; i < call.chains; i += gridDim.y) {
    const Decoded<T>& op = decoded[i];
    T* out = grad_in + i * C * pixels;
    T g[3];
    load_grad(call, grad_out, i, p, g);
    if (op.kind == kWarp) {
      const auto grad_at = [&](int64_t q, int c) {
        return output_grad<T>(call, grad_out, i, c, q);
      };
      warp_gather<C>(op, warp_inverse(op, call), call, y, x, grad_at, g);
    } else if (op.kind == kStep) {
      T v[3];
      load_pixel<C>(level + i * C * pixels, pixels, p, v);
      step_adjoint<C, T>(op, sums[i], v, g);
    } else if (op.kind == kSharpen) {
      sharpen_adjoint<C>(passed + i * C * pixels, pixels, call.height, call.width, op.alpha, y,
                         x, g);
    }
    for (int c = 0; c < C; ++c) out[c * pixels + p] = g[c];
  }
}

template <int C, typename T>
void run(const at::Tensor& grad_in, const at::Tensor& grad_out, const at::Tensor& level,
         const LevelCall& call) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t pixels = call.pixels();
  // the decoded operations, the reductions' sums and sharpness's gradients: from the caching
  // allocator
  const auto aligned = [](int64_t bytes) { return (bytes + 15) / 16 * 16; };
  const int64_t decoded_bytes = aligned(call.chains * int64_t{sizeof(Decoded<T>)});
  const int64_t sums_bytes = aligned(call.chains * int64_t{sizeof(LevelSums<T>)});
  const int64_t passed_bytes = call.chains * C * pixels * int64_t{sizeof(T)};
  at::Tensor scratch = at::empty({decoded_bytes + sums_bytes + passed_bytes},
                                 level.options().dtype(at::kByte));
  uint8_t* base = scratch.mutable_data_ptr<uint8_t>();
  auto* decoded = reinterpret_cast<Decoded<T>*>(base);
  auto* sums = reinterpret_cast<LevelSums<T>*>(base + decoded_bytes);
  auto* passed = reinterpret_cast<T*>(base + decoded_bytes + sums_bytes);
  const T* out = grad_out.const_data_ptr<T>();
  const T* image = level.const_data_ptr<T>();
  decode_level_kernel<T><<<static_cast<unsigned>(ceil_div(call.chains, kThreads)), kThreads, 0,
                           stream>>>(call, decoded);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sums_kernel<C, T><<<static_cast<unsigned>(call.chains), kThreads, 0, stream>>>(
      call, decoded, out, image, sums);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const dim3 grid(static_cast<unsigned>(ceil_div(pixels, kThreads)),
                  static_cast<unsigned>(std::min<int64_t>(call.chains, 65535)));
  sharpen_kernel<C, T><<<grid, kThreads, 0, stream>>>(call, decoded, out, image, passed);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  adjoint_kernel<C, T><<<grid, kThreads, 0, stream>>>(call, decoded, sums, out, image, passed,
                                                      grad_in.mutable_data_ptr<T>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void level_adjoint_cuda(const at::Tensor& grad_in, const at::Tensor& grad_out,
                        const at::Tensor& level, const LevelCall& call) {
  const c10::cuda::CUDAGuard device_guard(level.device());
  AT_DISPATCH_FLOATING_TYPES(level.scalar_type(), "gpuaug::_auto_augment_backward", [&] {
    if (call.channels == 1) {
      run<1, scalar_t>(grad_in, grad_out, level, call);
    } else {
      run<3, scalar_t>(grad_in, grad_out, level, call);
    }
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(auto_augment_level_loops, cuda, &level_adjoint_cuda);

}  // namespace gpuaug::cuda
