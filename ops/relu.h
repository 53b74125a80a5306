// gpuaug::relu's Meta functions (its argument checks and output allocation) and the typed caller
// of its backward op.
#pragma once

#include <ATen/core/Tensor.h>

namespace gpuaug {

at::Tensor relu_meta(const at::Tensor& x);
at::Tensor relu_backward_meta(const at::Tensor& grad, const at::Tensor& x);

// Calls gpuaug::_relu_backward: grad where x > 0, else 0.
at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x);

}  // namespace gpuaug
