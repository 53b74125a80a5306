// gpuaug::round_ste's CUDA loop; ops/round_ste.cpp checks, allocates and calls it.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/round_ste.h"

namespace gpuaug::cuda {

GPUAUG_REGISTER_LOOP(round_ste_loops, cuda, [](at::TensorIteratorBase& iter) {
  for_each_element<1>(iter, RoundHalfUpOp{});
});

}  // namespace gpuaug::cuda
