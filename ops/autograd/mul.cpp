// Autograd kernels of gpuaug::mul and of its backward (for double backward).
#include <ATen/ExpandUtils.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/mul.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// mul_backward returns grad_a = sum_to(grad * b, a) and grad_b = sum_to(grad * a, b); its own
// gradient is built from gpuaug::mul, so every order of derivative is available.
class MulBackwardFunction : public torch::autograd::Function<MulBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& grad, const at::Tensor& a,
                               const at::Tensor& b) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({grad, a, b});
    auto [grad_a, grad_b] = gpuaug::mul_backward(grad, a, b);
    return {grad_a, grad_b};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &grad = saved[0], &a = saved[1], &b = saved[2];
    const auto &gg_a = grad_outputs[0], &gg_b = grad_outputs[1];
    at::Tensor d_grad, d_a, d_b;
    if (gg_a.defined()) {
      d_grad = gpuaug::mul(gg_a, b);
      d_b = at::sum_to(gpuaug::mul(gg_a, grad), b.sym_sizes());
    }
    if (gg_b.defined()) {
      const auto from_b = gpuaug::mul(gg_b, a);
      d_grad = d_grad.defined() ? d_grad.add(from_b) : from_b;
      d_a = at::sum_to(gpuaug::mul(gg_b, grad), a.sym_sizes());
    }
    return {d_grad, d_a, d_b};
  }
};

class MulFunction : public torch::autograd::Function<MulFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({a, b});
    return gpuaug::mul(a, b);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_a, grad_b] = gpuaug::mul_backward(grad_outputs[0], saved[0], saved[1]);
    return {grad_a, grad_b};
  }
};

at::Tensor mul_autograd(const at::Tensor& a, const at::Tensor& b) {
  check_defined("gpuaug::mul", {{"a", &a}, {"b", &b}});
  // Nothing to differentiate: no graph node, nothing saved (the host's time is a small call's).
  if (!torch::autograd::compute_requires_grad(a, b)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::mul(a, b);
  }
  return MulFunction::apply(a, b);
}

std::tuple<at::Tensor, at::Tensor> mul_backward_autograd(const at::Tensor& grad,
                                                         const at::Tensor& a, const at::Tensor& b) {
  check_defined("gpuaug::_mul_backward", {{"grad", &grad}, {"a", &a}, {"b", &b}});
  auto grads = MulBackwardFunction::apply(grad, a, b);
  return {grads[0], grads[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("mul", &mul_autograd);
  m.impl("_mul_backward", &mul_backward_autograd);
}

}  // namespace gpuaug
