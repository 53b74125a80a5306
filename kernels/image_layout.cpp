// The layout helpers of kernels/image_layout.h.
#include "kernels/image_layout.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>

namespace gpuaug {

c10::SymDimVector interleaved_image_strides(const at::Tensor& image) {
  const auto sizes = image.sym_sizes();
  const int64_t dim = image.dim();
  c10::SymDimVector strides(dim);
  strides[dim - 3] = 1;
  strides[dim - 1] = sizes[dim - 3];
  strides[dim - 2] = sizes[dim - 1] * sizes[dim - 3];
  c10::SymInt next = strides[dim - 2] * sizes[dim - 2];
  for (int64_t d = dim - 4; d >= 0; --d) {
    strides[d] = next;
    next = next * sizes[d];
  }
  return strides;
}

bool is_interleaved_image(const at::Tensor& image) {
  const auto expected = interleaved_image_strides(image);
  for (int64_t d = 0; d < image.dim(); ++d) {
    if (image.sym_size(d) != 1 && image.sym_stride(d) != expected[d]) return false;
  }
  return true;
}

bool is_planar_image(const at::Tensor& image) { return image.is_contiguous(); }

ImageGeometry image_geometry(const at::Tensor& image) {
  const int64_t dim = image.dim();
  return {dim == 3 ? 1 : image.size(0), dim == 5 ? image.size(1) : 1, image.size(dim - 3),
          image.size(dim - 2) * image.size(dim - 1),
          !is_planar_image(image) && is_interleaved_image(image)};
}

at::Tensor dense_image(const at::Tensor& image) {
  return is_planar_image(image) || is_interleaved_image(image) ? image : image.contiguous();
}

at::Tensor empty_like_image(const at::Tensor& image, at::ScalarType dtype) {
  const auto options = image.options().dtype(dtype);
  if (!is_planar_image(image) && is_interleaved_image(image)) {
    return at::empty_strided_symint(image.sym_sizes(), interleaved_image_strides(image), options);
  }
  return at::empty_symint(image.sym_sizes(), options);
}

at::Tensor grad_in_image_layout(const at::Tensor& grad, const at::Tensor& like) {
  if (grad.strides() == like.strides()) return grad;
  return at::empty_like(like, like.options().dtype(grad.scalar_type())).copy_(grad);
}

}  // namespace gpuaug
