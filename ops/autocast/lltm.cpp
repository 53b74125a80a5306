// Autocast kernels of gpuaug::lltm: PyTorch's "lower_precision_fp" policy, that of lstm_cell and
// gru_cell on CUDA and of mm, linear and the fused RNN layer (mkldnn_rnn_layer) on the CPU. The
// cell's cost is its matrix product, which runs on tensor cores (AMX or AVX512-BF16 on the CPU) in
// the lower precision with float32 accumulation, and its pointwise stage computes in float32 for
// the half types, so all five inputs are cast to the autocast dtype (float16 or bfloat16) and the
// new state comes back in it. float64 inputs are left alone, as autocast leaves float64.
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/autocast/autocast.h"

namespace gpuaug {
namespace {

using In = const at::Tensor&;

template <c10::DeviceType device>
std::tuple<at::Tensor, at::Tensor> lltm_autocast(In input, In weights, In bias, In old_h,
                                                 In old_cell) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast::key(device));
  const at::ScalarType dtype = autocast::lower_precision(device);
  auto cast = [&](In t) { return autocast::cast(dtype, t, device); };
  return gpuaug::lltm(cast(input), cast(weights), cast(bias), cast(old_h), cast(old_cell));
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autocast, m) { m.impl("lltm", &lltm_autocast<c10::DeviceType::CUDA>); }
TORCH_LIBRARY_IMPL(gpuaug, AutocastCPU, m) {
  m.impl("lltm", &lltm_autocast<c10::DeviceType::CPU>);
}

}  // namespace gpuaug
