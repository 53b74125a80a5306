// Autograd kernels of gpuaug::lltm (and of its private forward and backward ops). The forward
// keeps the gates' linear term X @ weights^T, which it computes anyway, and the inputs; the
// backward's fused kernel recomputes the activations from them, which costs no extra pass over
// memory, so nothing else ([B, 3S] of activations, X) is stored per step.
#include <torch/autograd.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/lltm.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class LltmFunction : public torch::autograd::Function<LltmFunction> {
 public:
  // Returns (new_h, new_cell, linear); linear carries no gradient.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weights, const at::Tensor& bias,
                               const at::Tensor& old_h, const at::Tensor& old_cell) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [new_h, new_cell, linear] = gpuaug::lltm_forward(input, weights, bias, old_h, old_cell);
    ctx->save_for_backward({linear, input, weights, bias, old_h, old_cell});
    ctx->mark_non_differentiable({linear});
    // linear's gradient is never needed: no zeros for it. Those of new_h and new_cell are
    // materialised in backward when only one of them was used.
    ctx->set_materialize_grads(false);
    return {new_h, new_cell, linear};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& old_h = saved[4];
    auto defined = [&](const at::Tensor& grad) {
      return grad.defined() ? grad : at::zeros_like(old_h, at::MemoryFormat::Contiguous);
    };
    auto [grad_input, grad_weights, grad_bias, grad_old_h, grad_old_cell] =
        gpuaug::lltm_backward(defined(grad_outputs[0]), defined(grad_outputs[1]), saved[0],
                              saved[1], saved[2], saved[3], old_h, saved[5]);
    return {grad_input, grad_weights, grad_bias, grad_old_h, grad_old_cell};
  }
};

class LltmBackwardFunction : public torch::autograd::Function<LltmBackwardFunction> {
 public:
  static variable_list forward(AutogradContext*, const at::Tensor& grad_h,
                               const at::Tensor& grad_cell, const at::Tensor& linear,
                               const at::Tensor& input, const at::Tensor& weights,
                               const at::Tensor& bias, const at::Tensor& old_h,
                               const at::Tensor& old_cell) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [a, b, c, d, e] = gpuaug::lltm_backward(grad_h, grad_cell, linear, input, weights, bias,
                                                 old_h, old_cell);
    return {a, b, c, d, e};
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "gpuaug::lltm: double backward is not supported");
  }
};

// Function::apply reads every tensor argument's device before the op's own checks run, which
// fails without naming the op for an undefined tensor (from C++).
void check_args_defined(const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
                        const at::Tensor& old_h, const at::Tensor& old_cell) {
  const std::pair<const char*, const at::Tensor*> args[] = {
      {"input", &input}, {"weights", &weights}, {"bias", &bias}, {"old_h", &old_h},
      {"old_cell", &old_cell}};
  for (const auto& [name, tensor] : args) check_defined("gpuaug::lltm", name, *tensor);
}

std::tuple<at::Tensor, at::Tensor> lltm_autograd(const at::Tensor& input, const at::Tensor& weights,
                                                 const at::Tensor& bias, const at::Tensor& old_h,
                                                 const at::Tensor& old_cell) {
  check_args_defined(input, weights, bias, old_h, old_cell);
  const auto outputs = LltmFunction::apply(input, weights, bias, old_h, old_cell);
  return {outputs[0], outputs[1]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_forward_autograd(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell) {
  check_args_defined(input, weights, bias, old_h, old_cell);
  const auto outputs = LltmFunction::apply(input, weights, bias, old_h, old_cell);
  return {outputs[0], outputs[1], outputs[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_backward_autograd(
    const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& linear,
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell) {
  const auto grads = LltmBackwardFunction::apply(grad_h, grad_cell, linear, input, weights, bias,
                                                 old_h, old_cell);
  return {grads[0], grads[1], grads[2], grads[3], grads[4]};
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("lltm", &lltm_autograd);
  m.impl("_lltm_forward", &lltm_forward_autograd);
  m.impl("_lltm_backward", &lltm_backward_autograd);
}

}  // namespace gpuaug
