// gpuaug::auto_augment's Meta function (its argument checks and output allocation), and the
// checks its backward shares.
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

// The call's arguments, checked as the op `op` names them, for an output of `out_dtype`.
void check_auto_augment_call(const char* op, const at::Tensor& image, const at::Tensor& operations,
                             const at::Tensor& magnitudes,
                             const std::optional<at::Tensor>& weights, int64_t interpolation,
                             std::optional<c10::ArrayRef<double>> fill, at::ScalarType out_dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev);

// Where the operations are on the CPU, their codes (on the GPU an unknown code is the identity:
// reading them would synchronise).
void check_operation_values(const char* op, const at::Tensor& operations);

}  // namespace gpuaug
