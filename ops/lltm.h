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
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_backward_meta(
    const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& linear,
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);

// Calls gpuaug::_lltm_forward: (new_h, new_cell, linear), where linear = cat([old_h, input], 1)
// @ weights^T, the gates before bias and activation, which the backward recomputes them from.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_forward(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);

// Calls gpuaug::_lltm_backward: the gradients of (input, weights, bias, old_h, old_cell) from
// those of (new_h, new_cell).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> lltm_backward(
    const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& linear,
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const at::Tensor& old_h, const at::Tensor& old_cell);

}  // namespace gpuaug
