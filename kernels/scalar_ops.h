// The per-element arithmetic of the element-wise operators, shared by the CPU and CUDA kernels so
// both backends compute the same function. T is the compute type (float for the half types).
#pragma once

#include <c10/macros/Macros.h>
#include <cmath>

namespace gpuaug {

struct ReluOp {
  // x < 0 is false for NaN, so NaN passes through.
  template <typename T>
  C10_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

struct ReluBackwardOp {
  template <typename T>
  C10_HOST_DEVICE T operator()(T grad, T x) const { return x > T(0) ? grad : T(0); }
};

struct MulOp {
  template <typename T>
  C10_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};

struct RoundHalfUpOp {
  // floor(x + 0.5) as exact arithmetic: the sum itself can round (0.49999997f + 0.5f == 1.0f,
  // and odd integers past 2^23 gain 1), but x - floor(x) is exact.
  template <typename T>
  C10_HOST_DEVICE T operator()(T x) const {
    const T down = std::floor(x);
    return x - down >= T(0.5) ? down + T(1) : down + T(0);  // + 0: -0.0 rounds to +0.0
  }
};

}  // namespace gpuaug
