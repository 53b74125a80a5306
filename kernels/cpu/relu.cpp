// gpuaug::relu's CPU loops; ops/relu.cpp checks, allocates and calls them.
#include "kernels/cpu/elementwise.h"
#include "kernels/relu.h"

namespace gpuaug::cpu {

GPUAUG_REGISTER_LOOP(relu_loops, cpu, [](at::TensorIteratorBase& iter) {
  for_each_element<1>(iter, ReluOp{});
});
GPUAUG_REGISTER_LOOP(relu_backward_loops, cpu, [](at::TensorIteratorBase& iter) {
  for_each_element<2>(iter, ReluBackwardOp{});
});

}  // namespace gpuaug::cpu
