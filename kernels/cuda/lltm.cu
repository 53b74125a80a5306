// gpuaug::lltm's CUDA loops: the whole pointwise stage of the forward, and of the backward, as one
// kernel each (the backward's with the bias's gradient for B <= 32, a small kernel of its own
// beyond); ops/lltm.cpp does the matrix products (cuBLAS through ATen), checks, allocates and
// calls them. The gates are gate-major ([3S, B]) and the state sample-major ([B, S]), so each
// block works on a tile of (sample, state column) and turns the state's tiles around in shared
// memory: the gates are read and written along samples, the state along columns.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

#include "kernels/cuda/launch.cuh"
#include "kernels/lltm.h"

namespace gpuaug::cuda {
namespace {

// A block is one thread per element of a tile of 32 samples by 8 state columns, each thread's
// loads issued before its arithmetic. (Tiles of 32 x 32, four elements a thread, were slower at
// every size tried, by far for small batches.)
constexpr int kSamples = 32;  // threadIdx.x: a warp's samples, along which the gates are contiguous
constexpr int kColumns = kThreads / kSamples;  // threadIdx.y: 8

// A [B, S] operand's tile, transposed: [column][sample]. The row pitch of 36 words puts the
// 32 elements a warp touches in 32 banks both ways: 32 samples of a column, or 4 samples by 8
// columns.
template <typename T>
using Tile = T[kColumns][kSamples + 4];

// A [B, S] operand of any strides; null data reads as zeros.
template <typename T>
struct Strided {
  const T* data;
  int64_t stride_b, stride_s;
};

template <typename T>
Strided<T> strided(const at::Tensor& t) {
  if (!t.defined()) return {nullptr, 0, 0};
  return {t.const_data_ptr<T>(), t.stride(0), t.stride(1)};
}

// The (sample, column) in the tile of the block's thread when the threads run along columns,
// as they must to read or write a row-major [B, S] operand in whole 32-byte sectors.
__device__ int2 along_columns() {
  const int t = threadIdx.y * kSamples + threadIdx.x;
  return {t / kColumns, t % kColumns};
}

// The tile's elements from `src`, the threads running along whichever index is contiguous
// (columns for a row-major operand, samples for the transposed gradient the backward's product
// returns).
template <typename T, typename OpMath>
__device__ void load_tile(Tile<OpMath>& tile, Strided<T> src, int64_t batch, int64_t state,
                          int64_t b0, int64_t s0) {
  const bool along_samples = src.stride_b == 1 && src.stride_s != 1;  // uniform in the block
  const int2 at = along_samples ? int2{int(threadIdx.x), int(threadIdx.y)} : along_columns();
  const int64_t b = b0 + at.x, s = s0 + at.y;
  if (b < batch && s < state) {
    tile[at.y][at.x] =
        src.data ? OpMath(src.data[b * src.stride_b + s * src.stride_s]) : OpMath(0);
  }
}

// The tile back to a contiguous [B, S] output.
template <typename T, typename OpMath>
__device__ void store_tile(T* dst, const Tile<OpMath>& tile, int64_t batch, int64_t state,
                           int64_t b0, int64_t s0) {
  const int2 at = along_columns();
  const int64_t b = b0 + at.x, s = s0 + at.y;
  if (b < batch && s < state) dst[b * state + s] = T(tile[at.y][at.x]);
}

// The thread's three gate pre-activations (linear term plus bias), loaded before the state's
// tiles so that all of its loads are in flight together; zeros outside the operands (unused).
template <typename T, typename OpMath>
__device__ void load_gates(OpMath (&pre)[3], const T* __restrict__ gates,
                           const T* __restrict__ bias, int64_t batch, int64_t state, int64_t b,
                           int64_t s) {
#pragma unroll
  for (int g = 0; g < 3; ++g) {
    const int64_t row = g * state + s;
    pre[g] = b < batch && s < state ? OpMath(gates[row * batch + b]) + OpMath(bias[row])
                                    : OpMath(0);
  }
}

// The sum over a warp's 32 lanes, in a fixed order (the same bits every run).
template <typename T>
__device__ T warp_sum(T value) {
  for (int offset = kSamples / 2; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;  // in lane 0
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
lltm_forward_kernel(int64_t batch, int64_t state, const T* __restrict__ gates,
                    const T* __restrict__ bias, Strided<T> old_cell, T* __restrict__ new_h,
                    T* __restrict__ new_cell) {
  using opmath_t = at::opmath_type<T>;
  __shared__ Tile<opmath_t> cell_tile, h_tile;
  const int64_t b0 = int64_t(blockIdx.x) * kSamples, s0 = int64_t(blockIdx.y) * kColumns;
  const int64_t b = b0 + threadIdx.x, s = s0 + threadIdx.y;
  opmath_t pre[3];
  load_gates(pre, gates, bias, batch, state, b, s);
  load_tile(cell_tile, old_cell, batch, state, b0, s0);
  __syncthreads();
  if (b < batch && s < state) {
    const LltmCell<opmath_t> cell(pre[0], pre[1], pre[2], cell_tile[threadIdx.y][threadIdx.x]);
    cell_tile[threadIdx.y][threadIdx.x] = cell.new_cell;
    h_tile[threadIdx.y][threadIdx.x] = cell.new_h();
  }
  __syncthreads();
  store_tile(new_h, h_tile, batch, state, b0, s0);
  store_tile(new_cell, cell_tile, batch, state, b0, s0);
}

// grad_bias: written here when one block column holds every sample (B <= 32, the host-bound
// sizes: no launch of its own), else null; grad_old_cell: null when not needed.
template <typename T>
__global__ void __launch_bounds__(kThreads)
lltm_backward_kernel(int64_t batch, int64_t state, Strided<T> grad_h, Strided<T> grad_cell,
                     const T* __restrict__ gates, const T* __restrict__ bias, Strided<T> old_cell,
                     T* __restrict__ grad_gates, T* __restrict__ grad_bias,
                     T* __restrict__ grad_old_cell) {
  using opmath_t = at::opmath_type<T>;
  __shared__ Tile<opmath_t> cell_tile, grad_h_tile, grad_cell_tile;
  const int64_t b0 = int64_t(blockIdx.x) * kSamples, s0 = int64_t(blockIdx.y) * kColumns;
  const int64_t b = b0 + threadIdx.x, s = s0 + threadIdx.y;
  opmath_t pre[3];
  load_gates(pre, gates, bias, batch, state, b, s);
  load_tile(cell_tile, old_cell, batch, state, b0, s0);
  load_tile(grad_h_tile, grad_h, batch, state, b0, s0);
  load_tile(grad_cell_tile, grad_cell, batch, state, b0, s0);
  __syncthreads();
  if (s < state) {  // the whole warp: threadIdx.y is one per warp
    // The gradients as stored (rounded to T), so that the bias's sum is the one of grad_gates.
    opmath_t sums[3] = {0, 0, 0};
    if (b < batch) {
      const int y = threadIdx.y, x = threadIdx.x;
      const LltmCell<opmath_t> cell(pre[0], pre[1], pre[2], cell_tile[y][x]);
      const LltmCellGrad<opmath_t> grad{grad_h_tile[y][x], grad_cell_tile[y][x], pre[2], cell};
      const T rounded[3] = {T(grad.i), T(grad.o), T(grad.c)};
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        grad_gates[(g * state + s) * batch + b] = rounded[g];
        sums[g] = opmath_t(rounded[g]);
      }
      cell_tile[y][x] = grad.old_cell;
    }
    if (grad_bias != nullptr) {
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        const opmath_t sum = warp_sum(sums[g]);
        if (threadIdx.x == 0) grad_bias[g * state + s] = T(sum);
      }
    }
  }
  if (grad_old_cell == nullptr) return;
  __syncthreads();
  store_tile(grad_old_cell, cell_tile, batch, state, b0, s0);
}

// grad_bias = grad_gates.sum(1) for B > 32: a warp per row of grad_gates [rows, B], each lane
// summing every 32nd sample, then warp_sum; the same bits every run, and for B <= 32 the same as
// the backward kernel's in-block sums. B = 0 gives zeros.
template <typename T>
__global__ void __launch_bounds__(kThreads)
lltm_bias_grad_kernel(int64_t rows, int64_t batch, const T* __restrict__ grad_gates,
                      T* __restrict__ grad_bias) {
  using opmath_t = at::opmath_type<T>;
  const int64_t row = int64_t(blockIdx.x) * kColumns + threadIdx.y;
  if (row >= rows) return;
  opmath_t sum = 0;
#pragma unroll 4  // loads in flight together; the additions keep their order
  for (int64_t b = threadIdx.x; b < batch; b += kSamples) {
    sum += opmath_t(grad_gates[row * batch + b]);
  }
  sum = warp_sum(sum);
  if (threadIdx.x == 0) grad_bias[row] = T(sum);
}

// One block per tile: samples along x (no practical limit), columns along y (65535 tiles: a
// state of half a million columns, whose weights [3S, S + I] would take terabytes).
dim3 tile_grid(int64_t batch, int64_t state) {
  return dim3(static_cast<unsigned>(ceil_div(batch, kSamples)),
              static_cast<unsigned>(ceil_div(state, kColumns)));
}

template <typename T>
T* mutable_or_null(const at::Tensor& t) {
  return t.defined() ? t.mutable_data_ptr<T>() : nullptr;
}

void lltm_forward(const at::Tensor& gates, const at::Tensor& bias, const at::Tensor& old_cell,
                  const at::Tensor& new_h, const at::Tensor& new_cell) {
  if (old_cell.numel() == 0) return;
  const c10::cuda::CUDAGuard device_guard(old_cell.device());
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::lltm", [&] {
    lltm_forward_kernel<scalar_t><<<tile_grid(batch, state), dim3(kSamples, kColumns), 0,
                                    at::cuda::getCurrentCUDAStream()>>>(
        batch, state, gates.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(),
        strided<scalar_t>(old_cell), new_h.mutable_data_ptr<scalar_t>(),
        new_cell.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& gates,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_bias, const at::Tensor& grad_old_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  if (state == 0) return;
  const c10::cuda::CUDAGuard device_guard(old_cell.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const bool bias_in_block = batch > 0 && batch <= kSamples;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::_lltm_backward", [&] {
    if (batch > 0) {
      lltm_backward_kernel<scalar_t><<<tile_grid(batch, state), dim3(kSamples, kColumns), 0,
                                       stream>>>(
          batch, state, strided<scalar_t>(grad_h), strided<scalar_t>(grad_cell),
          gates.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(),
          strided<scalar_t>(old_cell), grad_gates.mutable_data_ptr<scalar_t>(),
          bias_in_block ? mutable_or_null<scalar_t>(grad_bias) : nullptr,
          mutable_or_null<scalar_t>(grad_old_cell));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (grad_bias.defined() && !bias_in_block) {
      const int64_t rows = 3 * state;
      lltm_bias_grad_kernel<scalar_t><<<static_cast<unsigned>(ceil_div(rows, kColumns)),
                                        dim3(kSamples, kColumns), 0, stream>>>(
          rows, batch, grad_gates.const_data_ptr<scalar_t>(),
          grad_bias.mutable_data_ptr<scalar_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cuda, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cuda, &lltm_backward);

}  // namespace gpuaug::cuda
