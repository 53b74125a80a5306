// gpuaug::mul's CPU loop; ops/mul.cpp checks, allocates and calls it (the backward too).
#include "kernels/cpu/elementwise.h"
#include "kernels/mul.h"

namespace gpuaug::cpu {

GPUAUG_REGISTER_LOOP(mul_loops, cpu, [](at::TensorIteratorBase& iter) {
  for_each_element<2>(iter, MulOp{});
});

}  // namespace gpuaug::cpu
