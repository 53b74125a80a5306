// gpuaug::lltm's Meta functions (its argument checks and output allocation) and the typed callers
// of its private forward and backward ops.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>
#include <vector>

namespace gpuaug {

// lltm's arguments, in order; LltmNeeds says which of them need a gradient.
enum LltmArg { kLltmInput, kLltmWeights, kLltmBias, kLltmOldH, kLltmOldCell };
using LltmNeeds = std::array<bool, 5>;

std::tuple<at::Tensor, at::Tensor> lltm_meta(const at::Tensor& input, const at::Tensor& weights,
                                             const at::Tensor& bias, const at::Tensor& old_h,
                                             const at::Tensor& old_cell);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_forward_meta(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);
std::vector<at::Tensor> lltm_backward_meta(
    const std::optional<at::Tensor>& grad_h, const std::optional<at::Tensor>& grad_cell,
    const at::Tensor& gates, const at::Tensor& x, const at::Tensor& weights,
    const at::Tensor& bias, const at::Tensor& old_cell, LltmNeeds needs);

// Calls gpuaug::_lltm_forward: (new_h, new_cell, gates, x), where x = cat([old_h, input], 1) and
// gates = weights @ x^T ([3S, B]: before bias and activation): what the backward keeps, the
// activations being recomputed from gates in its fused kernel, which reads them anyway.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_forward(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);

// Calls gpuaug::_lltm_backward, the whole backward: from the gradients of (new_h, new_cell)
// (absent: zero) and what the forward kept, the gradients `needs` asks for, in this order:
//   - of x's needed columns (old_h's, input's or both, old_h's first): [B, n], strides (1, B),
//     when input or old_h needs one;
//   - of weights [3S, S + I], of bias [3S], of old_cell [B, S], each when needed.
std::vector<at::Tensor> lltm_backward(const std::optional<at::Tensor>& grad_h,
                                      const std::optional<at::Tensor>& grad_cell,
                                      const at::Tensor& gates, const at::Tensor& x,
                                      const at::Tensor& weights, const at::Tensor& bias,
                                      const at::Tensor& old_cell, LltmNeeds needs);

}  // namespace gpuaug
