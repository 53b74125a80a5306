// Argument checks and output allocation of each operator. These are the Meta kernels (so fake
// tensors, torch.compile and torch.export see the same shapes, layouts and errors) and the first
// step of every CPU and CUDA kernel, which fill what they return.
#pragma once

#include <ATen/core/Tensor.h>
#include <tuple>

namespace gpuaug {

at::Tensor relu_meta(const at::Tensor& x);
at::Tensor relu_backward_meta(const at::Tensor& grad, const at::Tensor& x);
at::Tensor mul_meta(const at::Tensor& a, const at::Tensor& b);
std::tuple<at::Tensor, at::Tensor> mul_backward_meta(const at::Tensor& grad, const at::Tensor& a,
                                                     const at::Tensor& b);
at::Tensor round_ste_meta(const at::Tensor& x);

}  // namespace gpuaug
