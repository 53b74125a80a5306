// The image layouts the colour kernels walk (color_transform's and photometric's): a [C, H, W],
// [N, C, H, W] or [N, T, C, H, W] image whose channels are planes (contiguous) or adjacent in
// memory (channels_last), its geometry as the kernels read it, and outputs and gradients
// allocated in the image's layout.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/SmallVector.h>

#include <cstdint>

namespace gpuaug {

struct ImageGeometry {
  int64_t samples;   // N: parameters are per sample (1 for a [C, H, W] image)
  int64_t frames;    // T: frames of a sample share its parameters (1 unless [N, T, C, H, W])
  int64_t channels;  // C
  int64_t pixels;    // H * W
  bool interleaved;  // channels adjacent in memory (channels_last), else planes (contiguous)
};

// The strides of an image whose channels are adjacent in memory: [..., H, W, C] order.
c10::SymDimVector interleaved_image_strides(const at::Tensor& image);

// The two layouts the kernels walk: planar (contiguous) and interleaved (channels last).
bool is_planar_image(const at::Tensor& image);
bool is_interleaved_image(const at::Tensor& image);

// The geometry of a (checked) image whose layout is planar or interleaved.
ImageGeometry image_geometry(const at::Tensor& image);

// The image itself when it is planar or interleaved, else a contiguous copy.
at::Tensor dense_image(const at::Tensor& image);

// An image of `image`'s shape and dtype `dtype`: planar and interleaved images keep their layout,
// any other strides become planar.
at::Tensor empty_like_image(const at::Tensor& image, at::ScalarType dtype);

// grad in the layout of the image gradient `like` (which the kernels walk in step with the
// image), copied only when its strides differ.
at::Tensor grad_in_image_layout(const at::Tensor& grad, const at::Tensor& like);

}  // namespace gpuaug
