// gpuaug::lltm's CUDA loops: the whole pointwise stage of the forward, and of the backward, as one
// kernel each; ops/lltm.cpp does the matrix products (cuBLAS through ATen), checks, allocates and
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

// The tile's elements from the [B, S] operand (threads along columns), or back to it.
template <typename T, typename OpMath>
__device__ void load_tile(Tile<OpMath>& tile, const T* src, int64_t batch, int64_t state,
                          int64_t b0, int64_t s0) {
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t b = b0 + r, s = s0 + threadIdx.x;
    if (b < batch && s < state) tile[threadIdx.x][r] = OpMath(src[b * state + s]);
  }
}

template <typename T, typename OpMath>
__device__ void store_tile(T* dst, const Tile<OpMath>& tile, int64_t batch, int64_t state,
                           int64_t b0, int64_t s0) {
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t b = b0 + r, s = s0 + threadIdx.x;
    if (b < batch && s < state) dst[b * state + s] = T(tile[threadIdx.x][r]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kTile * kRows)
lltm_forward_kernel(int64_t batch, int64_t state, const T* __restrict__ gates,
                    const T* __restrict__ bias, const T* __restrict__ old_cell,
                    T* __restrict__ new_h, T* __restrict__ new_cell) {
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

template <typename T>
__global__ void __launch_bounds__(kTile * kRows)
lltm_backward_kernel(int64_t batch, int64_t state, const T* __restrict__ grad_h,
                     const T* __restrict__ grad_cell, const T* __restrict__ gates,
                     const T* __restrict__ bias, const T* __restrict__ old_cell,
                     T* __restrict__ grad_gates, T* __restrict__ grad_old_cell) {
  using opmath_t = at::opmath_type<T>;
  __shared__ Tile<opmath_t> cell_tile, grad_h_tile, grad_cell_tile;
  const int64_t b0 = int64_t(blockIdx.x) * kTile, s0 = int64_t(blockIdx.y) * kTile;
  load_tile(cell_tile, old_cell, batch, state, b0, s0);
  load_tile(grad_h_tile, grad_h, batch, state, b0, s0);
  load_tile(grad_cell_tile, grad_cell, batch, state, b0, s0);
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    const int64_t s = s0 + r, b = b0 + threadIdx.x;
    if (b >= batch || s >= state) continue;
    auto at_gate = [&](int k) { return (k * state + s) * batch + b; };
    auto gate = [&](int k) { return opmath_t(gates[at_gate(k)]) + opmath_t(bias[k * state + s]); };
    const opmath_t c = gate(2);
    const LltmCell<opmath_t> cell(gate(0), gate(1), c, cell_tile[r][threadIdx.x]);
    const LltmCellGrad<opmath_t> grad{grad_h_tile[r][threadIdx.x], grad_cell_tile[r][threadIdx.x],
                                      c, cell};
    grad_gates[at_gate(0)] = T(grad.i);
    grad_gates[at_gate(1)] = T(grad.o);
    grad_gates[at_gate(2)] = T(grad.c);
    cell_tile[r][threadIdx.x] = grad.old_cell;
  }
  __syncthreads();
  store_tile(grad_old_cell, cell_tile, batch, state, b0, s0);
}

// One block per tile: samples along x (no practical limit), columns along y (65535 tiles: a
// state of two million columns, far past what the weights' [3S, S + I] allows).
dim3 tile_grid(int64_t batch, int64_t state) {
  return dim3(static_cast<unsigned>(ceil_div(batch, kTile)),
              static_cast<unsigned>(ceil_div(state, kTile)));
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
        old_cell.const_data_ptr<scalar_t>(), new_h.mutable_data_ptr<scalar_t>(),
        new_cell.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& gates,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_old_cell) {
  if (old_cell.numel() == 0) return;
  const c10::cuda::CUDAGuard device_guard(old_cell.device());
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::_lltm_backward", [&] {
    lltm_backward_kernel<scalar_t><<<tile_grid(batch, state), dim3(kTile, kRows), 0,
                                     at::cuda::getCurrentCUDAStream()>>>(
        batch, state, grad_h.const_data_ptr<scalar_t>(), grad_cell.const_data_ptr<scalar_t>(),
        gates.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(),
        old_cell.const_data_ptr<scalar_t>(), grad_gates.mutable_data_ptr<scalar_t>(),
        grad_old_cell.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cuda, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cuda, &lltm_backward);

}  // namespace gpuaug::cuda
