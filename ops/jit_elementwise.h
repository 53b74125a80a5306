// gpuaug::jit_elementwise, user-defined element-wise operators compiled at run time: the Meta
// functions (argument checks and output allocation) and the typed caller of the backward op.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace gpuaug {

at::Tensor jit_elementwise_meta(const std::string& name, const std::string& expression,
                                const std::vector<std::string>& names, at::TensorList inputs,
                                const std::optional<std::vector<std::string>>& grads);

std::vector<at::Tensor> jit_elementwise_backward_meta(const std::string& name,
                                                      const std::vector<std::string>& grads,
                                                      const std::vector<std::string>& names,
                                                      const at::Tensor& grad, at::TensorList inputs);

// Calls gpuaug::_jit_elementwise_backward: for each non-empty expression of `grads` (one per
// input, of the inputs and `grad`), that input's gradient, summed over the dimensions it was
// broadcast along; all of them from one pass over the inputs.
std::vector<at::Tensor> jit_elementwise_backward(const std::string& name,
                                                 const std::vector<std::string>& grads,
                                                 const std::vector<std::string>& names,
                                                 const at::Tensor& grad, at::TensorList inputs);

}  // namespace gpuaug
