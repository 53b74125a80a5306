// Autograd kernel of gpuaug::round_ste: the straight-through estimator.
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/round_ste.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class RoundSteFunction : public torch::autograd::Function<RoundSteFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::round_ste(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return {gpuaug::round_ste_backward(grad_outputs[0])};
  }
};

at::Tensor round_ste_autograd(const at::Tensor& x) {
  check_defined("gpuaug::round_ste", {{"x", &x}});
  // Nothing to differentiate: no graph node, nothing saved (the host's time is a small call's).
  if (!torch::autograd::compute_requires_grad(x)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::round_ste(x);
  }
  return RoundSteFunction::apply(x);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) { m.impl("round_ste", &round_ste_autograd); }

}  // namespace gpuaug
