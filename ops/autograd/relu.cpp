// Autograd kernels of gpuaug::relu and of its backward (for double backward).
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/relu.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ReluBackwardFunction : public torch::autograd::Function<ReluBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x});
    return gpuaug::relu_backward(grad, x);
  }

  // Linear in grad with the same mask; piecewise constant in x, so x gets no gradient.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto x = ctx->get_saved_variables()[0];
    return {gpuaug::relu_backward(grad_outputs[0], x), at::Tensor()};
  }
};

class ReluFunction : public torch::autograd::Function<ReluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x});
    return gpuaug::relu(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto x = ctx->get_saved_variables()[0];
    return {gpuaug::relu_backward(grad_outputs[0], x)};
  }
};

at::Tensor relu_autograd(const at::Tensor& x) {
  check_defined("gpuaug::relu", {{"x", &x}});
  // Nothing to differentiate: no graph node, nothing saved (the host's time is a small call's).
  if (!torch::autograd::compute_requires_grad(x)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::relu(x);
  }
  return ReluFunction::apply(x);
}

at::Tensor relu_backward_autograd(const at::Tensor& grad, const at::Tensor& x) {
  check_defined("gpuaug::_relu_backward", {{"grad", &grad}, {"x", &x}});
  return ReluBackwardFunction::apply(grad, x);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("relu", &relu_autograd);
  m.impl("_relu_backward", &relu_backward_autograd);
}

}  // namespace gpuaug
