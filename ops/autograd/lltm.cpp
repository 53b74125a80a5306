// Autograd kernels of gpuaug::lltm and of its private forward and backward ops. The forward keeps
// x = cat([old_h, input], 1), which its product read and the weights' gradient reads again (no
// concatenation in the backward), and the gates' linear term weights @ x^T, which it computes
// anyway; the backward's fused kernel recomputes the activations from it, which costs no extra
// pass over memory, so no [3S, B] of activations is stored per step. The backward is one op
// (gpuaug::_lltm_backward), asked for only the gradients the graph needs (the input of a recurrent
// cell is data, its gradient mostly unused).
//
// The graph node is written out, as PyTorch's generated ones are, not a torch::autograd::Function:
// at small sizes the host's time is the step's, and the Function's bookkeeping (metadata of every
// input and output, output wrapping, a context) is a good part of it.
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/lltm.h"

namespace gpuaug {
namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
using In = const at::Tensor&;
using OptIn = const std::optional<at::Tensor>&;

std::optional<at::Tensor> given(at::Tensor& grad) {
  return grad.defined() ? std::optional<at::Tensor>(std::move(grad)) : std::nullopt;
}

// The node of one step; its inputs are the gradients of (new_h, new_cell), its next edges those
// of (input, weights, bias, old_h, old_cell).
struct LltmBackward : public Node {
  SavedVariable gates, x, weights, bias, old_cell;

  variable_list apply(variable_list&& grads) override {
    LltmNeeds needs;
    for (size_t k = 0; k < needs.size(); ++k) needs[k] = task_should_compute_output(k);
    variable_list result(needs.size());
    if (std::none_of(needs.begin(), needs.end(), [](bool need) { return need; })) return result;
    const at::Tensor x_ = x.unpack(), old_cell_ = old_cell.unpack();
    const auto out = gpuaug::lltm_backward(given(grads[0]), given(grads[1]), gates.unpack(), x_,
                                           weights.unpack(), bias.unpack(), old_cell_, needs);
    size_t next = 0;
    if (needs[kLltmInput] || needs[kLltmOldH]) {
      const at::Tensor& grad_x = out[next++];
      if (needs[kLltmInput] && needs[kLltmOldH]) {
        const c10::SymInt state = old_cell_.sym_size(1);
        result[kLltmOldH] = grad_x.narrow_symint(1, 0, state);
        result[kLltmInput] = grad_x.narrow_symint(1, state, x_.sym_size(1) - state);
      } else {
        result[needs[kLltmOldH] ? kLltmOldH : kLltmInput] = grad_x;
      }
    }
    for (const int k : {kLltmWeights, kLltmBias, kLltmOldCell}) {
      if (needs[k]) result[k] = out[next++];
    }
    return result;
  }

  std::string name() const override { return "LltmBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable* saved : {&gates, &x, &weights, &bias, &old_cell}) saved->reset_data();
  }
};

// The node of _lltm_backward's outputs when a graph is built through it (create_graph).
struct LltmDoubleBackward : public Node {
  variable_list apply(variable_list&&) override {
    TORCH_CHECK(false, "gpuaug::lltm: double backward is not supported");
  }
  std::string name() const override { return "LltmDoubleBackward"; }
};

// PyTorch owns graph nodes by c10::intrusive_ptr since pytorch#181139; before, by
// std::shared_ptr with deleteNode, which unrolls the destruction of a long chain of steps.
// Deciding on the type, not on the version, keeps both in one build; deleteNode is looked up by
// argument (its argument depends on NodeType) only where the branch is taken.
template <typename NodeType, typename... Args>
auto make_node(const Args&... inputs) {
  auto node = [] {
    if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, NodeType>) {
      return c10::make_intrusive<NodeType>();
    } else {
      return std::shared_ptr<NodeType>(new NodeType(), [](NodeType* n) { deleteNode(n); });
    }
  }();
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

void check_args(In input, In weights, In bias, In old_h, In old_cell) {
  check_defined("gpuaug::lltm", {{"input", &input}, {"weights", &weights}, {"bias", &bias},
                                 {"old_h", &old_h}, {"old_cell", &old_cell}});
  for (const at::Tensor* t : {&input, &weights, &bias, &old_h, &old_cell}) {
    TORCH_CHECK_NOT_IMPLEMENTED(!t->_fw_grad(/*level=*/0).defined(),
                                "gpuaug::lltm: forward-mode AD is not supported");
  }
}

// _lltm_forward's outputs, with the step's node when a gradient is needed.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> forward_with_graph(
    In input, In weights, In bias, In old_h, In old_cell) {
  auto outputs = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::lltm_forward(input, weights, bias, old_h, old_cell);
  }();
  if (torch::autograd::compute_requires_grad(input, weights, bias, old_h, old_cell)) {
    const auto& [new_h, new_cell, gates, x] = outputs;
    auto node = make_node<LltmBackward>(input, weights, bias, old_h, old_cell);
    node->gates = SavedVariable(gates, /*is_output=*/false);
    node->x = SavedVariable(x, false);
    node->weights = SavedVariable(weights, false);
    node->bias = SavedVariable(bias, false);
    node->old_cell = SavedVariable(old_cell, false);
    torch::autograd::set_history(new_h, node);
    torch::autograd::set_history(new_cell, node);
  }
  return outputs;
}

std::tuple<at::Tensor, at::Tensor> lltm_autograd(In input, In weights, In bias, In old_h,
                                                 In old_cell) {
  check_args(input, weights, bias, old_h, old_cell);
  // Without a gradient to compute (no_grad, or no input requiring one): no node, nothing saved,
  // and the op that skips returning what the backward would keep.
  if (!torch::autograd::compute_requires_grad(input, weights, bias, old_h, old_cell)) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::lltm(input, weights, bias, old_h, old_cell);
  }
  auto [new_h, new_cell, gates, x] = forward_with_graph(input, weights, bias, old_h, old_cell);
  return {std::move(new_h), std::move(new_cell)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_forward_autograd(
    In input, In weights, In bias, In old_h, In old_cell) {
  check_args(input, weights, bias, old_h, old_cell);
  return forward_with_graph(input, weights, bias, old_h, old_cell);
}

std::vector<at::Tensor> lltm_backward_autograd(OptIn grad_h, OptIn grad_cell, In gates, In x,
                                               In weights, In bias, In old_cell, LltmNeeds needs) {
  check_defined("gpuaug::_lltm_backward", {{"gates", &gates}, {"x", &x}, {"weights", &weights},
                                           {"bias", &bias}, {"old_cell", &old_cell}});
  auto grads = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::lltm_backward(grad_h, grad_cell, gates, x, weights, bias, old_cell, needs);
  }();
  if (torch::autograd::compute_requires_grad(grad_h, grad_cell, gates, x, weights, bias,
                                             old_cell)) {
    const auto node =
        make_node<LltmDoubleBackward>(grad_h, grad_cell, gates, x, weights, bias, old_cell);
    for (const at::Tensor& grad : grads) torch::autograd::set_history(grad, node);
  }
  return grads;
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("lltm", &lltm_autograd);
  m.impl("_lltm_forward", &lltm_forward_autograd);
  m.impl("_lltm_backward", &lltm_backward_autograd);
}

}  // namespace gpuaug
