// gpuaug::photometric's Meta functions (every argument check and the outputs' allocation) and the
// typed caller of its backward op.
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
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges);

at::Tensor photometric_backward_meta(const at::Tensor& grad, const at::Tensor& image,
                                     c10::IntArrayRef stages, const at::Tensor& factors,
                                     const std::optional<at::Tensor>& order,
                                     const std::optional<at::Tensor>& apply,
                                     std::optional<c10::ArrayRef<double>> stddev,
                                     std::optional<c10::ArrayRef<double>> factor_ranges);

// Calls gpuaug::_photometric_backward: the image's gradient from the output's, `grad` (both of the
// image's dtype; std and factor_ranges as the forward's).
at::Tensor photometric_backward(const at::Tensor& grad, const at::Tensor& image,
                                c10::IntArrayRef stages, const at::Tensor& factors,
                                const std::optional<at::Tensor>& order,
                                const std::optional<at::Tensor>& apply,
                                std::optional<c10::ArrayRef<double>> stddev,
                                std::optional<c10::ArrayRef<double>> factor_ranges);

}  // namespace gpuaug
