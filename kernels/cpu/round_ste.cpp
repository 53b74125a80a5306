// gpuaug::round_ste's CPU loop; ops/round_ste.cpp checks, allocates and calls it.
#include "kernels/cpu/elementwise.h"
#include "kernels/round_ste.h"

namespace gpuaug::cpu {

GPUAUG_REGISTER_LOOP(round_ste_loops, cpu, [](at::TensorIteratorBase& iter) {
  for_each_element<1>(iter, RoundHalfUpOp{});
});

}  // namespace gpuaug::cpu
