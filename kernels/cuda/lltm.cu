// gpuaug::lltm's CUDA loops: the whole pointwise stage of the forward, and of the backward, as one
// kernel each; ops/lltm.cpp does the matrix products (cuBLAS through ATen), checks, allocates and
// calls them. Rows whose length S is a multiple of the vector width, on 16-byte aligned operands,
// take 16-byte loads and stores; the rest one element at a time.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/lltm.h"

namespace gpuaug::cuda {
namespace {

constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // a grid-stride loop covers the rest

// Element (b, s) of a [B, S] operand and its three gates (b, k * S + s) of a [B, 3S] one, as
// vectors of Width: S counts vectors here.
struct RowIndex {
  int64_t at, gate, column;
  __device__ RowIndex(int64_t v, int64_t state) {
    const int64_t b = v / state;
    column = v - b * state;
    at = v;
    gate = b * 3 * state + column;
  }
};

template <typename T, int Width>
__global__ void __launch_bounds__(kThreads)
lltm_forward_kernel(int64_t vectors, int64_t state, const Vec<T, Width>* __restrict__ linear,
                    const Vec<T, Width>* __restrict__ bias, const Vec<T, Width>* __restrict__ old_cell,
                    Vec<T, Width>* __restrict__ new_h, Vec<T, Width>* __restrict__ new_cell) {
  using opmath_t = at::opmath_type<T>;
  for (int64_t v = int64_t(blockIdx.x) * kThreads + threadIdx.x; v < vectors;
       v += int64_t(gridDim.x) * kThreads) {
    const RowIndex index(v, state);
    const Vec<T, Width> i = linear[index.gate], o = linear[index.gate + state],
                        c = linear[index.gate + 2 * state];
    const Vec<T, Width> bi = bias[index.column], bo = bias[index.column + state],
                        bc = bias[index.column + 2 * state];
    const Vec<T, Width> cell_in = old_cell[index.at];
    Vec<T, Width> h_out, cell_out;
#pragma unroll
    for (int k = 0; k < Width; ++k) {
      const LltmCell<opmath_t> cell(opmath_t(i.v[k]) + opmath_t(bi.v[k]),
                                    opmath_t(o.v[k]) + opmath_t(bo.v[k]),
                                    opmath_t(c.v[k]) + opmath_t(bc.v[k]), opmath_t(cell_in.v[k]));
      h_out.v[k] = T(cell.new_h());
      cell_out.v[k] = T(cell.new_cell);
    }
    new_h[index.at] = h_out;
    new_cell[index.at] = cell_out;
  }
}

template <typename T, int Width>
__global__ void __launch_bounds__(kThreads)
lltm_backward_kernel(int64_t vectors, int64_t state, const Vec<T, Width>* __restrict__ grad_h,
                     const Vec<T, Width>* __restrict__ grad_cell,
                     const Vec<T, Width>* __restrict__ linear, const Vec<T, Width>* __restrict__ bias,
                     const Vec<T, Width>* __restrict__ old_cell, Vec<T, Width>* __restrict__ grad_gates,
                     Vec<T, Width>* __restrict__ grad_old_cell) {
  using opmath_t = at::opmath_type<T>;
  for (int64_t v = int64_t(blockIdx.x) * kThreads + threadIdx.x; v < vectors;
       v += int64_t(gridDim.x) * kThreads) {
    const RowIndex index(v, state);
    const Vec<T, Width> i = linear[index.gate], o = linear[index.gate + state],
                        c = linear[index.gate + 2 * state];
    const Vec<T, Width> bi = bias[index.column], bo = bias[index.column + state],
                        bc = bias[index.column + 2 * state];
    const Vec<T, Width> cell_in = old_cell[index.at], gh = grad_h[index.at],
                        gc = grad_cell[index.at];
    Vec<T, Width> d_i, d_o, d_c, d_cell;
#pragma unroll
    for (int k = 0; k < Width; ++k) {
      const opmath_t c_pre = opmath_t(c.v[k]) + opmath_t(bc.v[k]);
      const LltmCell<opmath_t> cell(opmath_t(i.v[k]) + opmath_t(bi.v[k]),
                                    opmath_t(o.v[k]) + opmath_t(bo.v[k]), c_pre,
                                    opmath_t(cell_in.v[k]));
      const LltmCellGrad<opmath_t> grad{opmath_t(gh.v[k]), opmath_t(gc.v[k]), c_pre, cell};
      d_i.v[k] = T(grad.i);
      d_o.v[k] = T(grad.o);
      d_c.v[k] = T(grad.c);
      d_cell.v[k] = T(grad.old_cell);
    }
    grad_gates[index.gate] = d_i;
    grad_gates[index.gate + state] = d_o;
    grad_gates[index.gate + 2 * state] = d_c;
    grad_old_cell[index.at] = d_cell;
  }
}

// The vector width for these operands: 16 bytes where S allows it and every pointer is aligned.
template <typename T>
int vector_width(int64_t state, std::initializer_list<const at::Tensor*> operands) {
  constexpr int kWidth = 16 / sizeof(T);
  if (state % kWidth != 0) return 1;
  for (const at::Tensor* t : operands) {
    if (reinterpret_cast<uintptr_t>(t->const_data_ptr()) % 16 != 0) return 1;
  }
  return kWidth;
}

// Calls launch(std::integral_constant<int, Width>{}) for the width chosen.
template <typename T, typename Launch>
void with_width(int width, Launch launch) {
  if (width == 16 / int(sizeof(T))) {
    launch(std::integral_constant<int, 16 / sizeof(T)>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
}

template <typename T, int Width>
const Vec<T, Width>* vectors_of(const at::Tensor& t) {
  return reinterpret_cast<const Vec<T, Width>*>(t.const_data_ptr<T>());
}

template <typename T, int Width>
Vec<T, Width>* mutable_vectors_of(const at::Tensor& t) {
  return reinterpret_cast<Vec<T, Width>*>(t.mutable_data_ptr<T>());
}

void lltm_forward(const at::Tensor& linear, const at::Tensor& bias, const at::Tensor& old_cell,
                  const at::Tensor& new_h, const at::Tensor& new_cell) {
  if (old_cell.numel() == 0) return;
  const c10::cuda::CUDAGuard device_guard(old_cell.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, linear.scalar_type(), "gpuaug::lltm", [&] {
    const int width = vector_width<scalar_t>(state, {&linear, &bias, &old_cell, &new_h, &new_cell});
    with_width<scalar_t>(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      const int64_t vectors = old_cell.numel() / W;
      const int64_t blocks = std::min(ceil_div(vectors, kThreads), kMaxBlocks);
      lltm_forward_kernel<scalar_t, W><<<blocks, kThreads, 0, stream>>>(
          vectors, state / W, vectors_of<scalar_t, W>(linear), vectors_of<scalar_t, W>(bias),
          vectors_of<scalar_t, W>(old_cell), mutable_vectors_of<scalar_t, W>(new_h),
          mutable_vectors_of<scalar_t, W>(new_cell));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& linear,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_old_cell) {
  if (old_cell.numel() == 0) return;
  const c10::cuda::CUDAGuard device_guard(old_cell.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, linear.scalar_type(), "gpuaug::_lltm_backward", [&] {
    const int width = vector_width<scalar_t>(
        state, {&grad_h, &grad_cell, &linear, &bias, &old_cell, &grad_gates, &grad_old_cell});
    with_width<scalar_t>(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      const int64_t vectors = old_cell.numel() / W;
      const int64_t blocks = std::min(ceil_div(vectors, kThreads), kMaxBlocks);
      lltm_backward_kernel<scalar_t, W><<<blocks, kThreads, 0, stream>>>(
          vectors, state / W, vectors_of<scalar_t, W>(grad_h), vectors_of<scalar_t, W>(grad_cell),
          vectors_of<scalar_t, W>(linear), vectors_of<scalar_t, W>(bias),
          vectors_of<scalar_t, W>(old_cell), mutable_vectors_of<scalar_t, W>(grad_gates),
          mutable_vectors_of<scalar_t, W>(grad_old_cell));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cuda, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cuda, &lltm_backward);

}  // namespace gpuaug::cuda
