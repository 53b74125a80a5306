// Autograd kernels of gpuaug::lltm (and of its private forward and backward ops). The forward
// keeps the gates' linear term weights @ X^T, which it computes anyway, and the inputs; the
// backward's fused kernel recomputes the activations from them, which costs no extra pass over
// memory, so nothing else ([3S, B] of activations, X) is stored per step. The backward's matrix
// products are ATen's, and only those whose results are needed run (the input of a recurrent
// cell is data, its gradient mostly unused).
#include <ATen/ops/cat.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros_like.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/lltm.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

enum Input { kInput, kWeights, kBias, kOldH, kOldCell };

class LltmFunction : public torch::autograd::Function<LltmFunction> {
 public:
  // Returns (new_h, new_cell, gates); gates carry no gradient.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weights, const at::Tensor& bias,
                               const at::Tensor& old_h, const at::Tensor& old_cell) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [new_h, new_cell, gates] = gpuaug::lltm_forward(input, weights, bias, old_h, old_cell);
    ctx->save_for_backward({gates, input, weights, bias, old_h, old_cell});
    ctx->mark_non_differentiable({gates});
    // No zeros for the gates' gradient, which is never needed; those of new_h and new_cell are
    // made below when only one of them was used.
    ctx->set_materialize_grads(false);
    return {new_h, new_cell, gates};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &gates = saved[0], &input = saved[1], &weights = saved[2], &bias = saved[3],
                     &old_h = saved[4], &old_cell = saved[5];
    auto defined = [&](const at::Tensor& grad) {
      return grad.defined() ? grad : at::zeros_like(old_cell, at::MemoryFormat::Contiguous);
    };
    auto [grad_gates, grad_old_cell] =
        gpuaug::lltm_backward(defined(grad_outputs[0]), defined(grad_outputs[1]), gates, bias,
                              old_cell);
    auto needs = [&](Input k) { return ctx->needs_input_grad(k); };
    variable_list grads(5);
    if (needs(kWeights)) grads[kWeights] = at::mm(grad_gates, at::cat({old_h, input}, 1));
    if (needs(kBias)) grads[kBias] = grad_gates.sum(1);
    if (needs(kInput) || needs(kOldH)) {
      // d X = (weights^T @ grad_gates)^T, the fast orientation for few samples (see ops/lltm.cpp),
      // over the columns of weights whose gradient is needed; returned as transposed views.
      const c10::SymInt state = old_h.sym_size(1);
      const at::Tensor columns =
          needs(kInput) && needs(kOldH) ? weights
          : needs(kOldH)                ? weights.narrow_symint(1, 0, state)
                                        : weights.narrow_symint(1, state, input.sym_size(1));
      const at::Tensor grad_x = at::mm(columns.t(), grad_gates).t();
      if (needs(kOldH)) grads[kOldH] = needs(kInput) ? grad_x.narrow_symint(1, 0, state) : grad_x;
      if (needs(kInput)) {
        grads[kInput] =
            needs(kOldH) ? grad_x.narrow_symint(1, state, input.sym_size(1)) : grad_x;
      }
    }
    if (needs(kOldCell)) grads[kOldCell] = grad_old_cell;
    return grads;
  }
};

class LltmBackwardFunction : public torch::autograd::Function<LltmBackwardFunction> {
 public:
  static variable_list forward(AutogradContext*, const at::Tensor& grad_h,
                               const at::Tensor& grad_cell, const at::Tensor& gates,
                               const at::Tensor& bias, const at::Tensor& old_cell) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [grad_gates, grad_old_cell] =
        gpuaug::lltm_backward(grad_h, grad_cell, gates, bias, old_cell);
    return {grad_gates, grad_old_cell};
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "gpuaug::lltm: double backward is not supported");
  }
};

void check_args_defined(const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
                        const at::Tensor& old_h, const at::Tensor& old_cell) {
  check_defined("gpuaug::lltm", {{"input", &input}, {"weights", &weights}, {"bias", &bias},
                                 {"old_h", &old_h}, {"old_cell", &old_cell}});
}

std::tuple<at::Tensor, at::Tensor> lltm_autograd(const at::Tensor& input, const at::Tensor& weights,
                                                 const at::Tensor& bias, const at::Tensor& old_h,
                                                 const at::Tensor& old_cell) {
  check_args_defined(input, weights, bias, old_h, old_cell);
  // Without a gradient to compute (no_grad, or no input requiring one), skip building the graph
  // node and saving tensors: at small sizes the host's time is the op's time.
  if (!torch::autograd::compute_requires_grad(input, weights, bias, old_h, old_cell)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::lltm(input, weights, bias, old_h, old_cell);
  }
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

std::tuple<at::Tensor, at::Tensor> lltm_backward_autograd(const at::Tensor& grad_h,
                                                          const at::Tensor& grad_cell,
                                                          const at::Tensor& gates,
                                                          const at::Tensor& bias,
                                                          const at::Tensor& old_cell) {
  check_defined("gpuaug::_lltm_backward", {{"grad_h", &grad_h}, {"grad_cell", &grad_cell},
                                           {"gates", &gates}, {"bias", &bias},
                                           {"old_cell", &old_cell}});
  const auto grads = LltmBackwardFunction::apply(grad_h, grad_cell, gates, bias, old_cell);
  return {grads[0], grads[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("lltm", &lltm_autograd);
  m.impl("_lltm_forward", &lltm_forward_autograd);
  m.impl("_lltm_backward", &lltm_backward_autograd);
}

}  // namespace gpuaug
