// Autocast kernels of gpuaug::mul: PyTorch's "promote" policy (that of addcmul, atan2, dot). mul
// needs one dtype for both operands and has no type promotion of its own, so a float16 activation
// times a float32 tensor, which autocast itself produces, would be an error: both run in the wider
// dtype instead, the dtype torch.mul gives them. Operands of one dtype are left as they are (a
// product is exact in float32 for half operands, so there is nothing to gain from a cast).
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/autocast/autocast.h"

namespace gpuaug {
namespace {

template <c10::DeviceType device>
at::Tensor mul_autocast(const at::Tensor& a, const at::Tensor& b) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast::key(device));
  const auto operands = autocast::promote({a, b}, device);
  return gpuaug::mul(operands[0], operands[1]);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autocast, m) { m.impl("mul", &mul_autocast<c10::DeviceType::CUDA>); }
TORCH_LIBRARY_IMPL(gpuaug, AutocastCPU, m) { m.impl("mul", &mul_autocast<c10::DeviceType::CPU>); }

}  // namespace gpuaug
