// What gpuaug::color_transform's op body (ops/color_transform.cpp) and its CPU and CUDA loops
// share: the image's layout and geometry, the parameters as the kernels read them, the reduction
// of the parameter gradients, and the table of the loops.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <tuple>

#include "kernels/loops.h"

namespace gpuaug {

struct ColorGeometry {
  int64_t samples;   // N: parameters are per sample (1 for a [C, H, W] image)
  int64_t frames;    // T: frames of a sample share its parameters (1 unless [N, T, C, H, W])
  int64_t channels;  // C
  int64_t pixels;    // H * W
  bool interleaved;  // channels adjacent in memory (channels_last), else planes (contiguous)
};

// Gradients for image, color, brightness, contrast and gamma, each of its input's shape and
// dtype, all on the image's device.
using ColorGrads = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// The strides of an image whose channels are adjacent in memory: [..., H, W, C] order.
c10::SymDimVector color_interleaved_strides(const at::Tensor& image);

// The two layouts the kernels walk: planar (contiguous) and interleaved (channels last).
bool color_is_planar(const at::Tensor& image);
bool color_is_interleaved(const at::Tensor& image);

// The geometry of a (checked) image whose layout is planar or interleaved.
ColorGeometry color_geometry(const at::Tensor& image);

// The image itself when it is planar or interleaved, else a contiguous copy.
at::Tensor color_dense_image(const at::Tensor& image);

// An image of `image`'s shape and dtype `dtype`: planar and interleaved images keep their layout,
// any other strides become planar.
at::Tensor color_empty_like(const at::Tensor& image, at::ScalarType dtype);

// grad in the layout of the image gradient `like` (which the kernels walk in step with the
// image), copied only when its strides differ.
at::Tensor color_grad_in_layout(const at::Tensor& grad, const at::Tensor& like);

// Parameters flattened for the kernels, in the compute dtype, on their own device: color as
// [C] or [N, C], the others as [] or [N].
at::Tensor color_param(const at::Tensor& param, at::ScalarType compute_dtype);

// The dtype the per-pixel arithmetic runs in: double for float64 images, else float.
at::ScalarType color_compute_dtype(const at::Tensor& image);

// Turns per-block sums of the parameter gradients, [N * T, blocks, C + 3] laid out as (color...,
// brightness, contrast, gamma), into the parameter gradients of `grads` (which it fills).
void color_reduce_param_grads(const at::Tensor& partial_sums, const ColorGeometry& geometry,
                              ColorGrads& grads);

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
