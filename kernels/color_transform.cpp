// The layout helpers and parameter-gradient reduction of kernels/color_transform.h.
#include "kernels/color_transform.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>

namespace gpuaug {

Loops<ColorForwardLoop> color_transform_loops;
Loops<ColorBackwardLoop> color_transform_backward_loops;

c10::SymDimVector color_interleaved_strides(const at::Tensor& image) {
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

bool color_is_interleaved(const at::Tensor& image) {
  const auto expected = color_interleaved_strides(image);
  for (int64_t d = 0; d < image.dim(); ++d) {
    if (image.sym_size(d) != 1 && image.sym_stride(d) != expected[d]) return false;
  }
  return true;
}

bool color_is_planar(const at::Tensor& image) { return image.is_contiguous(); }

ColorGeometry color_geometry(const at::Tensor& image) {
  const int64_t dim = image.dim();
  return {dim == 3 ? 1 : image.size(0), dim == 5 ? image.size(1) : 1, image.size(dim - 3),
          image.size(dim - 2) * image.size(dim - 1), !color_is_planar(image) && color_is_interleaved(image)};
}

at::Tensor color_dense_image(const at::Tensor& image) {
  return color_is_planar(image) || color_is_interleaved(image) ? image : image.contiguous();
}

at::Tensor color_empty_like(const at::Tensor& image, at::ScalarType dtype) {
  const auto options = image.options().dtype(dtype);
  if (!color_is_planar(image) && color_is_interleaved(image)) {
    return at::empty_strided_symint(image.sym_sizes(), color_interleaved_strides(image), options);
  }
  return at::empty_symint(image.sym_sizes(), options);
}

at::Tensor color_grad_in_layout(const at::Tensor& grad, const at::Tensor& like) {
  if (grad.strides() == like.strides()) return grad;
  return at::empty_like(like, like.options().dtype(grad.scalar_type())).copy_(grad);
}

at::Tensor color_param(const at::Tensor& param, at::ScalarType compute_dtype) {
  // The common case, already right, skips two dispatcher round trips.
  if (param.scalar_type() == compute_dtype && param.is_contiguous()) return param;
  return param.to(compute_dtype).contiguous();
}

at::ScalarType color_compute_dtype(const at::Tensor& image) {
  return image.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

void color_reduce_param_grads(const at::Tensor& partial_sums, const ColorGeometry& geometry,
                              ColorGrads& grads) {
  const int64_t c = geometry.channels;
  // Fixed-order reductions (no atomics), so the gradients are bitwise reproducible.
  const at::Tensor per_sample =
      partial_sums.sum(1).view({geometry.samples, geometry.frames, c + 3}).sum(1);
  auto fill = [](at::Tensor& out, const at::Tensor& per_sample_grad) {
    out.copy_(out.dim() < per_sample_grad.dim() ? per_sample_grad.sum(0) : per_sample_grad);
  };
  fill(std::get<1>(grads), per_sample.narrow(1, 0, c));
  fill(std::get<2>(grads), per_sample.select(1, c));
  fill(std::get<3>(grads), per_sample.select(1, c + 1));
  fill(std::get<4>(grads), per_sample.select(1, c + 2));
}

}  // namespace gpuaug
