// gpuaug::augment's Meta functions (every argument check and the outputs' allocation).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <vector>

namespace gpuaug {

at::Tensor augment_meta(at::TensorList images, const at::Tensor& geometry, c10::SymIntArrayRef size,
                        int64_t interpolation, bool antialias, int64_t padding_mode,
                        std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
                        const std::optional<at::Tensor>& factors,
                        const std::optional<at::Tensor>& order,
                        const std::optional<at::Tensor>& apply,
                        std::optional<at::ScalarType> dtype,
                        std::optional<c10::ArrayRef<double>> mean,
                        std::optional<c10::ArrayRef<double>> stddev,
                        std::optional<c10::ArrayRef<double>> factor_ranges,
                        std::optional<at::MemoryFormat> memory_format,
                        const std::optional<at::Tensor>& warp);

std::vector<at::Tensor> augment_backward_meta(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges, const std::optional<at::Tensor>& warp);

}  // namespace gpuaug
