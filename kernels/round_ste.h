// gpuaug::round_ste's arithmetic, the same on both backends, and the table of its CPU and CUDA
// loops. T is the compute type (float for the half types).
#pragma once

#include <c10/macros/Macros.h>

#include <cmath>

#include "kernels/iterator.h"
#include "kernels/loops.h"

namespace gpuaug {

struct RoundHalfUpOp {
  // floor(x + 0.5) as exact arithmetic: the sum itself can round (0.49999997f + 0.5f == 1.0f,
  // and odd integers past 2^23 gain 1), but x - floor(x) is exact.
  template <typename T>
  C10_HOST_DEVICE T operator()(T x) const {
    const T down = std::floor(x);
    return x - down >= T(0.5) ? down + T(1) : down + T(0);  // + 0: -0.0 rounds to +0.0
  }
};

extern Loops<ElementwiseLoop> round_ste_loops;  // out = RoundHalfUpOp(x)

}  // namespace gpuaug
