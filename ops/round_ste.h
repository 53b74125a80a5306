// gpuaug::round_ste's Meta function (its argument checks and output allocation) and the typed
// caller of its backward op.
#pragma once

#include <ATen/core/Tensor.h>

namespace gpuaug {

at::Tensor round_ste_meta(const at::Tensor& x);

// Calls gpuaug::_round_ste_backward: the gradient itself (straight through), as an alias.
at::Tensor round_ste_backward(const at::Tensor& grad);

}  // namespace gpuaug
