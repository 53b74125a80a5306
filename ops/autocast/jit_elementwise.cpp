// Autocast kernels of gpuaug::jit_elementwise: the "promote" policy, as for gpuaug::mul. Its
// inputs must share one dtype; under autocast those of different floating dtypes all run in the
// widest. The expression is the user's, so autocast does not pick a precision for it: inputs of
// one dtype are left as they are (half types compute in float32 inside the kernel anyway).
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/autocast/autocast.h"

namespace gpuaug {
namespace {

template <c10::DeviceType device>
at::Tensor jit_elementwise_autocast(const std::string& name, const std::string& expression,
                                    const std::vector<std::string>& names, at::TensorList inputs,
                                    const std::optional<std::vector<std::string>>& grads) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast::key(device));
  return gpuaug::jit_elementwise(name, expression, names, autocast::promote(inputs, device), grads);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autocast, m) {
  m.impl("jit_elementwise", &jit_elementwise_autocast<c10::DeviceType::CUDA>);
}
TORCH_LIBRARY_IMPL(gpuaug, AutocastCPU, m) {
  m.impl("jit_elementwise", &jit_elementwise_autocast<c10::DeviceType::CPU>);
}

}  // namespace gpuaug
