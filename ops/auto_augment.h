// gpuaug::auto_augment's Meta function: its argument checks and output allocation.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>

namespace gpuaug {

at::Tensor auto_augment_meta(const at::Tensor& image, const at::Tensor& operations,
                             const at::Tensor& magnitudes,
                             const std::optional<at::Tensor>& weights, int64_t interpolation,
                             std::optional<c10::ArrayRef<double>> fill,
                             std::optional<at::ScalarType> dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev);

}  // namespace gpuaug
