// Runs a per-element functor over a TensorIterator on the GPU. Contiguous operands whose pointers
// are 16-byte aligned take 16-byte loads and stores, several in flight per thread; everything
// else (broadcasts, gaps, odd alignment) takes a strided path: 32-bit offsets where the operands
// allow, 64-bit otherwise.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorIterator.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

#include "kernels/cuda/fast_divider.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/iterator.h"

namespace gpuaug::cuda {

constexpr int kVectorsPerThread = 4;  // independent 16-byte loads in flight per thread
constexpr int kMaxDims = 25;          // TensorIterator's own limit

template <int NumInputs>
struct Inputs {
  const char* ptr[NumInputs];
};

template <typename Op, typename OpMath, int NumInputs>
__device__ __forceinline__ OpMath apply(const Op& op, const OpMath (&x)[NumInputs]) {
  if constexpr (NumInputs == 1) {
    return op(x[0]);
  } else {
    return op(x[0], x[1]);
  }
}

template <typename T, int Width, int NumInputs, typename Op>
__global__ void __launch_bounds__(kThreads)
flat_kernel(int64_t n, T* __restrict__ out, Inputs<NumInputs> in, Op op) {
  using opmath_t = at::opmath_type<T>;
  using V = Vec<T, Width>;
  const int64_t first = (int64_t(blockIdx.x) * kVectorsPerThread * kThreads + threadIdx.x) * Width;
  V x[kVectorsPerThread][NumInputs];
#pragma unroll
  for (int j = 0; j < kVectorsPerThread; ++j) {
    const int64_t i = first + int64_t(j) * kThreads * Width;
#pragma unroll
    for (int a = 0; a < NumInputs; ++a) {
      const T* src = reinterpret_cast<const T*>(in.ptr[a]);
      if (i + Width <= n) {
        x[j][a] = *reinterpret_cast<const V*>(src + i);
      } else {
#pragma unroll
        for (int k = 0; k < Width; ++k) x[j][a].v[k] = i + k < n ? src[i + k] : T(0);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kVectorsPerThread; ++j) {
    const int64_t i = first + int64_t(j) * kThreads * Width;
    V y;
#pragma unroll
    for (int k = 0; k < Width; ++k) {
      opmath_t args[NumInputs];
#pragma unroll
      for (int a = 0; a < NumInputs; ++a) args[a] = static_cast<opmath_t>(x[j][a].v[k]);
      y.v[k] = static_cast<T>(apply(op, args));
    }
    if (i + Width <= n) {
      *reinterpret_cast<V*>(out + i) = y;
    } else {
#pragma unroll
      for (int k = 0; k < Width; ++k) {
        if (i + k < n) out[i + k] = y.v[k];
      }
    }
  }
}

// Byte offsets of each operand (output first) for a linear index, dimension 0 fastest.
template <int NumArgs>
struct StridedLayout {
  int ndim;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][NumArgs];
};

template <typename T, int NumInputs, typename Op>
__global__ void __launch_bounds__(kThreads)
strided_kernel(int64_t n, char* out, Inputs<NumInputs> in, StridedLayout<NumInputs + 1> layout,
               Op op) {
  using opmath_t = at::opmath_type<T>;
  for (int64_t linear = int64_t(blockIdx.x) * kThreads + threadIdx.x; linear < n;
       linear += int64_t(gridDim.x) * kThreads) {
    int64_t offset[NumInputs + 1] = {};
    int64_t rest = linear;
    for (int d = 0; d < layout.ndim; ++d) {
      const int64_t index = rest % layout.sizes[d];
      rest /= layout.sizes[d];
#pragma unroll
      for (int a = 0; a <= NumInputs; ++a) offset[a] += index * layout.strides[d][a];
    }
    opmath_t args[NumInputs];
#pragma unroll
    for (int a = 0; a < NumInputs; ++a) {
      args[a] = static_cast<opmath_t>(*reinterpret_cast<const T*>(in.ptr[a] + offset[a + 1]));
    }
    *reinterpret_cast<T*>(out + offset[0]) = static_cast<T>(apply(op, args));
  }
}

// The same with 32-bit offsets and multiply-high divisions, several elements in flight per
// thread: what broadcasts and other strided operands take when their offsets fit in 32 bits.
template <int NumArgs>
struct StridedLayout32 {
  int ndim;
  FastDivider sizes[kMaxDims];
  uint32_t strides[kMaxDims][NumArgs];
};

constexpr int kStridedUnroll = 4;

template <typename T, int NumInputs, typename Op>
__global__ void __launch_bounds__(kThreads)
strided_kernel32(uint32_t n, char* out, Inputs<NumInputs> in,
                 const __grid_constant__ StridedLayout32<NumInputs + 1> layout, Op op) {
  using opmath_t = at::opmath_type<T>;
  opmath_t args[kStridedUnroll][NumInputs];
  uint32_t out_offset[kStridedUnroll];
  const uint32_t first = blockIdx.x * kThreads * kStridedUnroll + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kStridedUnroll; ++u) {
    const uint32_t linear = first + u * kThreads;
    if (linear >= n) break;
    uint32_t offset[NumInputs + 1] = {};
    uint32_t rest = linear;
    for (int d = 0; d < layout.ndim; ++d) {
      const uint32_t next = layout.sizes[d].div(rest);
      const uint32_t index = rest - next * layout.sizes[d].divisor;
      rest = next;
#pragma unroll
      for (int a = 0; a <= NumInputs; ++a) offset[a] += index * layout.strides[d][a];
    }
    out_offset[u] = offset[0];
#pragma unroll
    for (int a = 0; a < NumInputs; ++a) {
      args[u][a] = static_cast<opmath_t>(*reinterpret_cast<const T*>(in.ptr[a] + offset[a + 1]));
    }
  }
#pragma unroll
  for (int u = 0; u < kStridedUnroll; ++u) {
    if (first + u * kThreads >= n) break;
    *reinterpret_cast<T*>(out + out_offset[u]) = static_cast<T>(apply(op, args[u]));
  }
}

// iter has one output followed by NumInputs inputs, all of dtype T, on one CUDA device.
template <typename T, int NumInputs, typename Op>
void for_each_element_typed(at::TensorIteratorBase& iter, Op op) {
  const int64_t n = iter.numel();
  if (n == 0) return;
  const c10::cuda::CUDAGuard device_guard(iter.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  Inputs<NumInputs> in;
  bool aligned = reinterpret_cast<uintptr_t>(iter.data_ptr(0)) % 16 == 0;
  for (int a = 0; a < NumInputs; ++a) {
    in.ptr[a] = static_cast<const char*>(iter.data_ptr(a + 1));
    aligned &= reinterpret_cast<uintptr_t>(in.ptr[a]) % 16 == 0;
  }
  T* out = static_cast<T*>(iter.data_ptr(0));
  if (iter.is_contiguous()) {
    if (aligned) {
      constexpr int kWidth = 16 / sizeof(T);
      const int64_t blocks = ceil_div(n, int64_t(kThreads) * kVectorsPerThread * kWidth);
      flat_kernel<T, kWidth, NumInputs><<<blocks, kThreads, 0, stream>>>(n, out, in, op);
    } else {
      const int64_t blocks = ceil_div(n, int64_t(kThreads) * kVectorsPerThread);
      flat_kernel<T, 1, NumInputs><<<blocks, kThreads, 0, stream>>>(n, out, in, op);
    }
  } else if (iter.can_use_32bit_indexing()) {
    StridedLayout32<NumInputs + 1> layout{};
    layout.ndim = iter.ndim();
    for (int d = 0; d < iter.ndim(); ++d) {
      layout.sizes[d] = FastDivider(static_cast<uint32_t>(iter.shape()[d]));
      for (int a = 0; a <= NumInputs; ++a) {
        layout.strides[d][a] = static_cast<uint32_t>(iter.strides(a)[d]);
      }
    }
    const int64_t blocks = ceil_div(n, int64_t(kThreads) * kStridedUnroll);
    strided_kernel32<T, NumInputs><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint32_t>(n), reinterpret_cast<char*>(out), in, layout, op);
  } else {
    StridedLayout<NumInputs + 1> layout{};
    layout.ndim = iter.ndim();
    for (int d = 0; d < iter.ndim(); ++d) {
      layout.sizes[d] = iter.shape()[d];
      for (int a = 0; a <= NumInputs; ++a) layout.strides[d][a] = iter.strides(a)[d];
    }
    const int64_t max_blocks = int64_t(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 16;
    const int64_t blocks = std::min(ceil_div(n, kThreads), max_blocks);
    strided_kernel<T, NumInputs><<<blocks, kThreads, 0, stream>>>(n, reinterpret_cast<char*>(out),
                                                                   in, layout, op);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The same over the iterator's floating dtype.
template <int NumInputs, typename Op>
void for_each_element(at::TensorIteratorBase& iter, Op op) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, iter.common_dtype(), "gpuaug", [&] {
    for_each_element_typed<scalar_t, NumInputs>(iter, op);
  });
}

}  // namespace gpuaug::cuda
