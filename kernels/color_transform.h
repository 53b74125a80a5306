// What gpuaug::color_transform's op body (ops/color_transform.cpp) and its CPU and CUDA loops
// share: the gradients' type and the table of the loops (the image's layout and geometry are
// kernels/image_layout.h's, the parameters as the kernels read them kernels/color_params.h's).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <tuple>

#include "kernels/loops.h"

namespace gpuaug {

// Gradients for image, color, brightness, contrast and gamma, each of its input's shape and
// dtype, all on the image's device.
using ColorGrads = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// The loops fill what the op's body has checked and allocated: `out` (of the output dtype) and
// `grads`.
using ColorForwardLoop = void (*)(const at::Tensor& out, const at::Tensor& image,
                                  const at::Tensor& color, const at::Tensor& brightness,
                                  const at::Tensor& contrast, const at::Tensor& gamma,
                                  const std::optional<at::Tensor>& apply,
                                  std::optional<c10::ArrayRef<double>> mean,
                                  std::optional<c10::ArrayRef<double>> stddev);
using ColorBackwardLoop = void (*)(ColorGrads& grads, const at::Tensor& grad,
                                   const at::Tensor& image, const at::Tensor& color,
                                   const at::Tensor& brightness, const at::Tensor& contrast,
                                   const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                                   std::optional<c10::ArrayRef<double>> stddev);
extern Loops<ColorForwardLoop> color_transform_loops;
extern Loops<ColorBackwardLoop> color_transform_backward_loops;

}  // namespace gpuaug
