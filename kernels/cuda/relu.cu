// gpuaug::relu's CUDA loops; ops/relu.cpp checks, allocates and calls them.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/relu.h"

namespace gpuaug::cuda {

GPUAUG_REGISTER_LOOP(relu_loops, cuda, [](at::TensorIteratorBase& iter) {
  for_each_element<1>(iter, ReluOp{});
});
GPUAUG_REGISTER_LOOP(relu_backward_loops, cuda, [](at::TensorIteratorBase& iter) {
  for_each_element<2>(iter, ReluBackwardOp{});
});

}  // namespace gpuaug::cuda
