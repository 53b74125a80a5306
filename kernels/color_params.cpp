// The parameter conversions and parameter-gradient reduction of kernels/color_params.h.
#include "kernels/color_params.h"

namespace gpuaug {

at::Tensor color_param(const at::Tensor& param, at::ScalarType compute_dtype) {
  // The common case, already right, skips two dispatcher round trips.
  if (param.scalar_type() == compute_dtype && param.is_contiguous()) return param;
  return param.to(compute_dtype).contiguous();
}

at::ScalarType color_compute_dtype(const at::Tensor& image) {
  return image.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

void color_reduce_param_grads(const at::Tensor& partial_sums, const ImageGeometry& geometry,
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
