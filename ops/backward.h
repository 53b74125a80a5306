// Typed callers of the registered backward operators, shared by the autograd kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <optional>
#include <tuple>

namespace gpuaug {

at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x);
std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b);
at::Tensor round_ste_backward(const at::Tensor& grad);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> color_transform_backward(
    const at::Tensor& grad, const at::Tensor& image, const at::Tensor& color,
    const at::Tensor& brightness, const at::Tensor& contrast, const at::Tensor& gamma,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev);

}  // namespace gpuaug
