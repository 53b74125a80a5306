// gpuaug::mul's CUDA loop; ops/mul.cpp checks, allocates and calls it (the backward too).
#include "kernels/cuda/elementwise.cuh"
#include "kernels/mul.h"

namespace gpuaug::cuda {

GPUAUG_REGISTER_LOOP(mul_loops, cuda, [](at::TensorIteratorBase& iter) {
  for_each_element<2>(iter, MulOp{});
});

}  // namespace gpuaug::cuda
