// gpuaug::relu's arithmetic, the same on both backends, and the table of its CPU and CUDA loops.
// T is the compute type (float for the half types).
#pragma once

#include <c10/macros/Macros.h>

#include "kernels/iterator.h"
#include "kernels/loops.h"

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

extern Loops<ElementwiseLoop> relu_loops;           // out = ReluOp(x)
extern Loops<ElementwiseLoop> relu_backward_loops;  // out = ReluBackwardOp(grad, x)

}  // namespace gpuaug
