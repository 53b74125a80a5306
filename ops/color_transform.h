// gpuaug::color_transform's Meta functions (every argument check and the outputs' allocation)
// and the typed caller of its backward op.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>

#include "kernels/color_transform.h"

namespace gpuaug {

at::Tensor color_transform_meta(const at::Tensor& image, const at::Tensor& color,
                                const at::Tensor& brightness, const at::Tensor& contrast,
                                const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                                std::optional<at::ScalarType> dtype,
                                std::optional<c10::ArrayRef<double>> mean,
                                std::optional<c10::ArrayRef<double>> stddev);

ColorGrads color_transform_backward_meta(const at::Tensor& grad, const at::Tensor& image,
                                         const at::Tensor& color, const at::Tensor& brightness,
                                         const at::Tensor& contrast, const at::Tensor& gamma,
                                         const std::optional<at::Tensor>& apply,
                                         std::optional<c10::ArrayRef<double>> stddev);

// Calls gpuaug::_color_transform_backward: the gradients of image, color, brightness, contrast
// and gamma.
ColorGrads color_transform_backward(const at::Tensor& grad, const at::Tensor& image,
                                    const at::Tensor& color, const at::Tensor& brightness,
                                    const at::Tensor& contrast, const at::Tensor& gamma,
                                    const std::optional<at::Tensor>& apply,
                                    std::optional<c10::ArrayRef<double>> stddev);

}  // namespace gpuaug
