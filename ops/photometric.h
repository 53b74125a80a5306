// gpuaug::photometric's Meta functions (every argument check and the outputs' allocation) and the
// typed caller of its backward op.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>

#include "kernels/photometric/photometric.h"

namespace gpuaug {

// The checks of a photometric program's arguments, their messages naming `op`, for an image like
// `image` (its samples, channels, device and dtype; its values unread), and the program they give.
photo::Program check_program(const char* op, const at::Tensor& image, c10::IntArrayRef stages,
                             const at::Tensor& factors, const std::optional<at::Tensor>& order,
                             const std::optional<at::Tensor>& apply, at::ScalarType out_dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev,
                             std::optional<c10::ArrayRef<double>> factor_ranges);

// The checks of the factors' and order's values where they are on the CPU (no synchronisation).
void check_program_values(const char* op, const photo::Program& program, const at::Tensor& image,
                          const at::Tensor& factors, const std::optional<at::Tensor>& order);

// A [K] or [N, K] parameter in `dtype` with contiguous rows, as photometric_rows reads it: a copy
// only where needed (not for a row expanded over the samples, stride 0, nor for a wider tensor's
// column slices).
at::Tensor per_sample_rows(const at::Tensor& t, at::ScalarType dtype);

// The order as the loops take it: int64 permutations, or keys of float32 or float64 (the
// narrower floating dtypes converted to float32, which holds them exactly); undefined for none.
at::Tensor order_rows(const std::optional<at::Tensor>& order);

// The apply mask as the loops take it (bool rows), undefined for none.
at::Tensor apply_rows(const std::optional<at::Tensor>& apply);

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
