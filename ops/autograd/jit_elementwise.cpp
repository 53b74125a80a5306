// Autograd kernels of gpuaug::jit_elementwise: the gradient expressions the user gave, computed by
// gpuaug::_jit_elementwise_backward in one pass. An operator defined without them is still
// recorded, so that a backward through it fails with its name instead of dropping the gradient.
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/jit_elementwise.h"

namespace gpuaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class JitElementwiseBackwardFunction
    : public torch::autograd::Function<JitElementwiseBackwardFunction> {
 public:
  static variable_list forward(AutogradContext*, const std::string& name,
                               const std::vector<std::string>& grads,
                               const std::vector<std::string>& names, const at::Tensor& grad,
                               at::TensorList inputs) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::jit_elementwise_backward(name, grads, names, grad, inputs);
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "gpuaug::jit_elementwise: double backward is not supported");
  }
};

class JitElementwiseFunction : public torch::autograd::Function<JitElementwiseFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const std::string& name,
                            const std::string& expression, const std::vector<std::string>& names,
                            at::TensorList inputs,
                            const std::optional<std::vector<std::string>>& grads) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->saved_data["name"] = name;
    ctx->saved_data["names"] = names;
    if (grads) {
      ctx->saved_data["grads"] = *grads;
      ctx->save_for_backward(inputs.vec());
    }
    return gpuaug::jit_elementwise(name, expression, names, inputs, grads);
  }

  // The gradients line up with forward's arguments: none for the strings, one per input tensor.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const std::string name = ctx->saved_data["name"].toStringRef();
    TORCH_CHECK(ctx->saved_data.count("grads"), "gpuaug::jit_elementwise '", name,
                "': no gradient is defined (give gpuaug.jit.elementwise its grads)");
    const auto names = ctx->saved_data["names"].to<std::vector<std::string>>();
    const auto all_grads = ctx->saved_data["grads"].to<std::vector<std::string>>();
    const auto inputs = ctx->get_saved_variables();
    // Only the gradients autograd asks for are computed (an empty expression means none).
    std::vector<std::string> grads(all_grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (ctx->needs_input_grad(i)) grads[i] = all_grads[i];  // edges: the tensors alone
    }
    // As a TensorList: Function::apply takes a std::vector for a non-tensor argument.
    const auto computed = JitElementwiseBackwardFunction::apply(name, grads, names, grad_outputs[0],
                                                                at::TensorList(inputs));
    variable_list result(3 + inputs.size() + 1);
    for (size_t i = 0, k = 0; i < grads.size(); ++i) {
      if (!grads[i].empty()) result[3 + i] = computed[k++];
    }
    return result;
  }
};

at::Tensor jit_elementwise_autograd(const std::string& name, const std::string& expression,
                                    const std::vector<std::string>& names, at::TensorList inputs,
                                    const std::optional<std::vector<std::string>>& grads) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_defined("gpuaug::jit_elementwise", i < names.size() ? names[i].c_str() : "inputs", inputs[i]);
  }
  if (!torch::autograd::compute_requires_grad(inputs)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::jit_elementwise(name, expression, names, inputs, grads);
  }
  return JitElementwiseFunction::apply(name, expression, names, inputs, grads);
}

std::vector<at::Tensor> jit_elementwise_backward_autograd(const std::string& name,
                                                          const std::vector<std::string>& grads,
                                                          const std::vector<std::string>& names,
                                                          const at::Tensor& grad,
                                                          at::TensorList inputs) {
  check_defined("gpuaug::_jit_elementwise_backward", "grad", grad);
  return JitElementwiseBackwardFunction::apply(name, grads, names, grad, inputs);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("jit_elementwise", &jit_elementwise_autograd);
  m.impl("_jit_elementwise_backward", &jit_elementwise_backward_autograd);
}

}  // namespace gpuaug
