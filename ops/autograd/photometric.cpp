// Autograd kernel of gpuaug::photometric: the forward, below autograd, and a clear error where a
// gradient is asked for (the hand-written backward is not written yet), instead of PyTorch's
// generic warning and a silently missing gradient.
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"

namespace gpuaug {
namespace {

at::Tensor photometric_autograd(const at::Tensor& image, c10::IntArrayRef stages,
                                const at::Tensor& factors, const std::optional<at::Tensor>& order,
                                const std::optional<at::Tensor>& apply,
                                std::optional<at::ScalarType> dtype,
                                std::optional<c10::ArrayRef<double>> mean,
                                std::optional<c10::ArrayRef<double>> stddev) {
  check_defined("gpuaug::photometric", {{"image", &image}, {"factors", &factors}});
  TORCH_CHECK(!torch::autograd::compute_requires_grad(image, factors),
              "gpuaug::photometric: gradients are not implemented yet: 'image' and 'factors' must "
              "not require grad (or call it under torch.no_grad())");
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return gpuaug::photometric(image, stages, factors, order, apply, dtype, mean, stddev);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) { m.impl("photometric", &photometric_autograd); }

}  // namespace gpuaug
