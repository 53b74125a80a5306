// gpuaug's C++ API: typed functions that call the registered operators through the dispatcher,
// so they take the same CPU, CUDA and autograd paths as torch.ops.gpuaug.* in Python.
#pragma once

#include <ATen/core/Tensor.h>

namespace gpuaug {

// max(x, 0); NaN stays NaN. Gradient: grad where x > 0, else 0.
at::Tensor relu(const at::Tensor& x);

// a * b with broadcasting; a and b share dtype and device.
at::Tensor mul(const at::Tensor& a, const at::Tensor& b);

// floor(x + 0.5) (ties round up, unlike torch.round); straight-through gradient.
at::Tensor round_ste(const at::Tensor& x);

}  // namespace gpuaug
