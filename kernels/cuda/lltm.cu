// gpuaug::lltm's CUDA loops: the whole pointwise stage of the forward, and of the backward, as one
// kernel each (the backward's with the bias's gradient for B <= 32, a small kernel of its own
// beyond); ops/lltm.cpp does the matrix products (cuBLAS through ATen), checks, allocates and
// calls them. The gates are gate-major ([3S, B]) and the state sample-major ([B, S]), so each
// block works on a 32 x 32 tile of (sample, state column) and turns the state's tiles around in
// shared memory: every global access is coalesced, the gates' along samples and the state's
// along columns.
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

constexpr int kTile = 32;  // samples and state columns per block
constexpr int kRows = 8;   // threadIdx.y: each thread takes kTile / kRows rows of the tile

// A [B, S] operand's tile, transposed: [column][sample], padded against bank conflicts.
template <typename T>
using Tile = T[kTile][kTile + 1];

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

// The tile's elements from `src`, the threads running along whichever index is contiguous
// (columns for a row-major operand, samples for the transposed gradient the backward's product
// returns), so that either layout loads coalesced.
template <typename T, typename OpMath>
__device__ void load_tile(Tile<OpMath>& tile, Strided<T> src, int64_t batch, int64_t state,
                          int64_t b0, int64_t s0) {
  const bool along_samples = src.stride_b == 1 && src.stride_s != 1;  // uniform in the block
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int sample = along_samples ? threadIdx.x : r, column = along_samples ? r : threadIdx.x;
    const int64_t b = b0 + sample, s = s0 + column;
    if (b < batch && s < state) {
      tile[column][sample] =
          src.data ? OpMath(src.data[b * src.stride_b + s * src.stride_s]) : OpMath(0);
    }
  }
}

// The tile back to a contiguous [B, S] output (threads along columns).
template <typename T, typename OpMath>
__device__ void store_tile(T* dst, const Tile<OpMath>& tile, int64_t batch, int64_t state,
                           int64_t b0, int64_t s0) {
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t b = b0 + r, s = s0 + threadIdx.x;
    if (b < batch && s < state) dst[b * state + s] = T(tile[threadIdx.x][r]);
  }
}

// The sum over a warp's 32 lanes, in a fixed order (the same bits every run).
template <typename T>
__device__ T warp_sum(T value) {
  for (int offset = kTile / 2; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;  // in lane 0
}

template <typename T>
__global__ void __launch_bounds__(kTile * kRows)
lltm_forward_kernel(int64_t batch, int64_t state, const T* __restrict__ gates,
                    const T* __restrict__ bias, Strided<T> old_cell, T* __restrict__ new_h,
                    T* __restrict__ new_cell) {
  using opmath_t = at::opmath_type<T>;
  __shared__ Tile<opmath_t> cell_tile, h_tile;
  const int64_t b0 = int64_t(blockIdx.x) * kTile, s0 = int64_t(blockIdx.y) * kTile;
  load_tile(cell_tile, old_cell, batch, state, b0, s0);
  __syncthreads();
  // Threads along samples: the gates' rows are contiguous there.
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t s = s0 + r, b = b0 + threadIdx.x;
    if (b >= batch || s >= state) continue;
    auto gate = [&](int k) {
      const int64_t row = k * state + s;
      return opmath_t(gates[row * batch + b]) + opmath_t(bias[row]);
    };
    const LltmCell<opmath_t> cell(gate(0), gate(1), gate(2), cell_tile[r][threadIdx.x]);
    cell_tile[r][threadIdx.x] = cell.new_cell;
    h_tile[r][threadIdx.x] = cell.new_h();
  }
  __syncthreads();
  store_tile(new_h, h_tile, batch, state, b0, s0);
  store_tile(new_cell, cell_tile, batch, state, b0, s0);
}

// grad_bias: written here when one block column holds every sample (B <= 32, the host-bound
// sizes: no launch of its own), else null; grad_old_cell: null when not needed.
template <typename T>
__global__ void __launch_bounds__(kTile * kRows)
lltm_backward_kernel(int64_t batch, int64_t state, Strided<T> grad_h, Strided<T> grad_cell,
                     const T* __restrict__ gates, const T* __restrict__ bias, Strided<T> old_cell,
                     T* __restrict__ grad_gates, T* __restrict__ grad_bias,
                     T* __restrict__ grad_old_cell) {
  using opmath_t = at::opmath_type<T>;
  __shared__ Tile<opmath_t> cell_tile, grad_h_tile, grad_cell_tile;
  const int64_t b0 = int64_t(blockIdx.x) * kTile, s0 = int64_t(blockIdx.y) * kTile;
  load_tile(cell_tile, old_cell, batch, state, b0, s0);
  load_tile(grad_h_tile, grad_h, batch, state, b0, s0);
  load_tile(grad_cell_tile, grad_cell, batch, state, b0, s0);
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t s = s0 + r, b = b0 + threadIdx.x;
    if (s >= state) continue;  // the whole warp: threadIdx.y is one per warp
    // The gradients as stored (rounded to T), so that the bias's sum is the one of grad_gates.
    opmath_t sums[3] = {0, 0, 0};
    if (b < batch) {
      auto at_gate = [&](int k) { return (k * state + s) * batch + b; };
      auto gate = [&](int k) {
        return opmath_t(gates[at_gate(k)]) + opmath_t(bias[k * state + s]);
      };
      const opmath_t c = gate(2);
      const LltmCell<opmath_t> cell(gate(0), gate(1), c, cell_tile[r][threadIdx.x]);
      const LltmCellGrad<opmath_t> grad{grad_h_tile[r][threadIdx.x],
                                        grad_cell_tile[r][threadIdx.x], c, cell};
      const T rounded[3] = {T(grad.i), T(grad.o), T(grad.c)};
      for (int k = 0; k < 3; ++k) {
        grad_gates[at_gate(k)] = rounded[k];
        sums[k] = opmath_t(rounded[k]);
      }
      cell_tile[r][threadIdx.x] = grad.old_cell;
    }
    if (grad_bias != nullptr) {
      for (int k = 0; k < 3; ++k) {
        const opmath_t sum = warp_sum(sums[k]);
        if (threadIdx.x == 0) grad_bias[k * state + s] = T(sum);
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
__global__ void __launch_bounds__(kTile * kRows)
lltm_bias_grad_kernel(int64_t rows, int64_t batch, const T* __restrict__ grad_gates,
                      T* __restrict__ grad_bias) {
  using opmath_t = at::opmath_type<T>;
  const int64_t row = int64_t(blockIdx.x) * kRows + threadIdx.y;
  if (row >= rows) return;
  opmath_t sum = 0;
  for (int64_t b = threadIdx.x; b < batch; b += kTile) sum += opmath_t(grad_gates[row * batch + b]);
  sum = warp_sum(sum);
  if (threadIdx.x == 0) grad_bias[row] = T(sum);
}

// One block per tile: samples along x (no practical limit), columns along y (65535 tiles: a
// state of two million columns, far past what the weights' [3S, S + I] allows).
dim3 tile_grid(int64_t batch, int64_t state) {
  return dim3(static_cast<unsigned>(ceil_div(batch, kTile)),
              static_cast<unsigned>(ceil_div(state, kTile)));
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
    lltm_forward_kernel<scalar_t><<<tile_grid(batch, state), dim3(kTile, kRows), 0,
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
  const bool bias_in_block = batch > 0 && batch <= kTile;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::_lltm_backward", [&] {
    if (batch > 0) {
      lltm_backward_kernel<scalar_t><<<tile_grid(batch, state), dim3(kTile, kRows), 0, stream>>>(
          batch, state, strided<scalar_t>(grad_h), strided<scalar_t>(grad_cell),
          gates.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(),
          strided<scalar_t>(old_cell), grad_gates.mutable_data_ptr<scalar_t>(),
          bias_in_block ? mutable_or_null<scalar_t>(grad_bias) : nullptr,
          mutable_or_null<scalar_t>(grad_old_cell));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (grad_bias.defined() && !bias_in_block) {
      const int64_t rows = 3 * state;
      lltm_bias_grad_kernel<scalar_t><<<static_cast<unsigned>(ceil_div(rows, kRows)),
                                        dim3(kTile, kRows), 0, stream>>>(
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
