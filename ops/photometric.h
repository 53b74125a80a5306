// gpuaug::photometric's Meta function: every argument check and the output's allocation.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>

namespace gpuaug {

at::Tensor photometric_meta(const at::Tensor& image, c10::IntArrayRef stages,
                            const at::Tensor& factors, const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev);

}  // namespace gpuaug
