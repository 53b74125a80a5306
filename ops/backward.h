// Typed callers of the registered backward operators, shared by the autograd kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <tuple>

namespace gpuaug {

at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x);
std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b);
at::Tensor round_ste_backward(const at::Tensor& grad);

}  // namespace gpuaug
