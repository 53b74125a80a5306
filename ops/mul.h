// gpuaug::mul's Meta functions (its argument checks and output allocation) and the typed caller
// of its backward op.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace gpuaug {

at::Tensor mul_meta(const at::Tensor& a, const at::Tensor& b);
std::tuple<at::Tensor, at::Tensor> mul_backward_meta(const at::Tensor& grad, const at::Tensor& a,
                                                     const at::Tensor& b);

// Calls gpuaug::_mul_backward: grad * b and grad * a, summed to the shapes of a and b.
std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b);

}  // namespace gpuaug
