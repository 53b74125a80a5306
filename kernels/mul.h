// gpuaug::mul's arithmetic, the same on both backends, and the table of its CPU and CUDA loops.
// T is the compute type (float for the half types).
#pragma once

#include <c10/macros/Macros.h>

#include "kernels/iterator.h"
#include "kernels/loops.h"

namespace gpuaug {

struct MulOp {
  template <typename T>
  C10_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};

extern Loops<ElementwiseLoop> mul_loops;  // out = MulOp(a, b); the backward's products too

}  // namespace gpuaug
