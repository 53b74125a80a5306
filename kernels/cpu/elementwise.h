// Runs a per-element functor over a TensorIterator on the CPU: tight loops (which the compiler
// vectorises) where every operand is contiguous, strided loops otherwise, in parallel.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorIterator.h>

#include "kernels/iterator.h"

namespace gpuaug::cpu {

// iter has one output followed by NumInputs inputs, all of dtype T; op takes and returns
// at::opmath_type<T> (float for the half types).
template <typename T, int NumInputs, typename Op>
void for_each_element_typed(at::TensorIteratorBase& iter, Op op) {
  static_assert(NumInputs == 1 || NumInputs == 2, "unary or binary ops only");
  using opmath_t = at::opmath_type<T>;
  auto apply = [op](char* const* data, const int64_t* strides, int64_t i) {
    auto load = [&](int arg) {
      return static_cast<opmath_t>(*reinterpret_cast<const T*>(data[arg] + i * strides[arg]));
    };
    T* out = reinterpret_cast<T*>(data[0] + i * strides[0]);
    if constexpr (NumInputs == 1) {
      *out = static_cast<T>(op(load(1)));
    } else {
      *out = static_cast<T>(op(load(1), load(2)));
    }
  };
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    bool contiguous = true;
    for (int arg = 0; arg <= NumInputs; ++arg) contiguous &= strides[arg] == sizeof(T);
    if (contiguous) {
      T* out = reinterpret_cast<T*>(data[0]);
      const T* in0 = reinterpret_cast<const T*>(data[1]);
      if constexpr (NumInputs == 1) {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(op(static_cast<opmath_t>(in0[i])));
      } else {
        const T* in1 = reinterpret_cast<const T*>(data[2]);
        for (int64_t i = 0; i < n; ++i) {
          out[i] = static_cast<T>(op(static_cast<opmath_t>(in0[i]), static_cast<opmath_t>(in1[i])));
        }
      }
    } else {
      for (int64_t i = 0; i < n; ++i) apply(data, strides, i);
    }
  });
}

// The same over the iterator's floating dtype.
template <int NumInputs, typename Op>
void for_each_element(at::TensorIteratorBase& iter, Op op) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, iter.common_dtype(), "gpuaug", [&] {
    for_each_element_typed<scalar_t, NumInputs>(iter, op);
  });
}

}  // namespace gpuaug::cpu
