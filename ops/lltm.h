// gpuaug::lltm's Meta functions (its argument checks and output allocation) and the typed callers
// of its private forward and backward ops.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace gpuaug {

std::tuple<at::Tensor, at::Tensor> lltm_meta(const at::Tensor& input, const at::Tensor& weights,
                                             const at::Tensor& bias, const at::Tensor& old_h,
                                             const at::Tensor& old_cell);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_forward_meta(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);
std::tuple<at::Tensor, at::Tensor> lltm_backward_meta(const at::Tensor& grad_h,
                                                      const at::Tensor& grad_cell,
                                                      const at::Tensor& gates,
                                                      const at::Tensor& bias,
                                                      const at::Tensor& old_cell);

// Calls gpuaug::_lltm_forward: (new_h, new_cell, gates), where gates = weights @ cat([old_h,
// input], 1)^T ([3S, B]: before bias and activation), which the backward recomputes them from.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_forward(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);

// Calls gpuaug::_lltm_backward, the pointwise stage of the backward: from the gradients of
// (new_h, new_cell), those of the gates ([3S, B], before activation) and of old_cell. The matrix
// products that carry the gates' gradient to input, weights, bias and old_h are the autograd
// kernel's, which knows which of them are needed.
std::tuple<at::Tensor, at::Tensor> lltm_backward(const at::Tensor& grad_h,
                                                 const at::Tensor& grad_cell,
                                                 const at::Tensor& gates, const at::Tensor& bias,
                                                 const at::Tensor& old_cell);

}  // namespace gpuaug
