#include <torch/library.h>

#include "kernels/cpu/elementwise.h"
#include "kernels/scalar_ops.h"
#include "ops/meta.h"

namespace gpuaug::cpu {
namespace {

at::Tensor round_ste(const at::Tensor& x) {
  at::Tensor out = round_ste_meta(x);
  auto iter = make_iterator(out, x);
  for_each_element<1>(iter, RoundHalfUpOp{});
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { m.impl("round_ste", &round_ste); }

}  // namespace gpuaug::cpu
