// gpuaug::color_transform: schema, C++ API, argument checks and Meta kernels.
#include "ops/color_transform.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/backward.h"
#include "ops/checks.h"

namespace gpuaug {

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "color_transform(Tensor image, Tensor color, Tensor brightness, Tensor contrast, "
      "Tensor gamma, *, Tensor? apply=None, ScalarType? dtype=None, float[]? mean=None, "
      "float[]? std=None) -> Tensor");
  m.def(
      "color_transform_backward(Tensor grad, Tensor image, Tensor color, Tensor brightness, "
      "Tensor contrast, Tensor gamma, Tensor? apply, float[]? std) "
      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
}

at::Tensor color_transform(const at::Tensor& image, const at::Tensor& color,
                           const at::Tensor& brightness, const at::Tensor& contrast,
                           const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                           std::optional<at::ScalarType> dtype,
                           std::optional<c10::ArrayRef<double>> mean,
                           std::optional<c10::ArrayRef<double>> stddev) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::color_transform", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                            std::optional<at::ScalarType>, std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(image, color, brightness, contrast, gamma, apply, dtype, mean, stddev);
}

ColorGrads color_transform_backward(const at::Tensor& grad, const at::Tensor& image,
                                    const at::Tensor& color, const at::Tensor& brightness,
                                    const at::Tensor& contrast, const at::Tensor& gamma,
                                    const std::optional<at::Tensor>& apply,
                                    std::optional<c10::ArrayRef<double>> stddev) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::color_transform_backward", "")
          .typed<ColorGrads(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const std::optional<at::Tensor>&,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(grad, image, color, brightness, contrast, gamma, apply, stddev);
}

namespace {

constexpr const char* kOp = "gpuaug::color_transform";

bool is_image_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16 ||
         t == at::kByte;
}

bool is_floating_dtype(at::ScalarType t) { return is_image_dtype(t) && t != at::kByte; }

// The strides of an image whose channels are adjacent in memory: [..., H, W, C] order.
c10::SymDimVector interleaved_strides(const at::Tensor& image) {
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

bool is_interleaved(const at::Tensor& image) {
  const auto expected = interleaved_strides(image);
  for (int64_t d = 0; d < image.dim(); ++d) {
    if (image.sym_size(d) != 1 && image.sym_stride(d) != expected[d]) return false;
  }
  return true;
}

bool is_planar(const at::Tensor& image) { return image.is_contiguous(); }

c10::SymInt sample_count(const at::Tensor& image) {
  return image.dim() == 3 ? c10::SymInt(1) : image.sym_size(0);
}

void check_image(const at::Tensor& image) {
  TORCH_CHECK(image.dim() >= 3 && image.dim() <= 5, kOp,
              ": expected 'image' of shape [C, H, W], [N, C, H, W] or [N, T, C, H, W], but got ",
              std::to_string(image.dim()), "-d shape ", shape_str(image.sym_sizes()));
  TORCH_CHECK(is_image_dtype(image.scalar_type()), kOp,
              ": expected 'image' of dtype float32, float64, float16, bfloat16 or uint8, but got ",
              image.scalar_type());
  const auto channels = image.sym_size(image.dim() - 3);
  TORCH_CHECK(channels >= 1 && channels <= kColorMaxChannels, kOp,
              ": expected 'image' to have 1 to ", std::to_string(kColorMaxChannels),
              " channels (dimension ", std::to_string(image.dim() - 3), "), but got ",
              size_str(channels));
}

// color: [C] or [N, C]; the scalar parameters: [] or [N]. Per-sample parameters live on the
// image's device; shared ones may also be CPU tensors (read by value, no host-device copy).
void check_param(const char* name, const at::Tensor& param, const at::Tensor& image,
                 bool per_channel) {
  TORCH_CHECK(is_floating_dtype(param.scalar_type()), kOp, ": expected '", name,
              "' to be a floating tensor, but got ", param.scalar_type());
  const auto n = sample_count(image);
  const auto c = image.sym_size(image.dim() - 3);
  bool shared;
  if (per_channel) {
    shared = param.dim() == 1 && param.sym_size(0) == c;
    const bool batched = param.dim() == 2 && param.sym_size(0) == n && param.sym_size(1) == c;
    TORCH_CHECK(shared || batched, kOp, ": expected 'color' of shape [", size_str(c), "] or [",
                size_str(n), ", ", size_str(c), "] for an image of shape ",
                shape_str(image.sym_sizes()), ", but got ", shape_str(param.sym_sizes()));
  } else {
    shared = param.dim() == 0;
    TORCH_CHECK(shared || (param.dim() == 1 && param.sym_size(0) == n), kOp, ": expected '", name,
                "' of shape [] or [", size_str(n), "] for an image of shape ",
                shape_str(image.sym_sizes()), ", but got ", shape_str(param.sym_sizes()));
  }
  const bool device_ok = param.device() == image.device() || (shared && param.device().is_cpu());
  TORCH_CHECK(device_ok, kOp, ": expected '", name, "' on ", image.device(),
              shared ? " (or the CPU)" : "", " like 'image', but got ", param.device());
}

// A gamma on the CPU is read here (cheaply, no device involved); one on the GPU is not, as that
// would synchronise: the kernels apply the formula to whatever it holds (see gpuaug/color.py).
void check_gamma_values(const at::Tensor& gamma) {
  if (!gamma.device().is_cpu() || gamma.numel() == 0) return;
  const at::Tensor invalid = gamma.le(0).logical_or_(gamma.isnan());
  if (!invalid.any().item<bool>()) return;
  const double first = gamma.masked_select(invalid).select(0, 0).item<double>();
  TORCH_CHECK(false, kOp, ": expected 'gamma' > 0 (it is an exponent on [0, 1]), but got ",
              number_str(first));
}

void check_arguments(const at::Tensor& image, const at::Tensor& color,
                     const at::Tensor& brightness, const at::Tensor& contrast,
                     const at::Tensor& gamma, const std::optional<at::Tensor>& apply) {
  check_image(image);
  check_param("color", color, image, /*per_channel=*/true);
  check_param("brightness", brightness, image, false);
  check_param("contrast", contrast, image, false);
  check_param("gamma", gamma, image, false);
  check_gamma_values(gamma);
  if (apply.has_value()) {
    const auto n = sample_count(image);
    TORCH_CHECK(apply->scalar_type() == at::kBool && apply->dim() == 1 && apply->sym_size(0) == n,
                kOp, ": expected 'apply' to be a bool tensor of shape [", size_str(n), "], but got ",
                apply->scalar_type(), " of shape ", shape_str(apply->sym_sizes()));
    TORCH_CHECK(apply->device() == image.device(), kOp, ": expected 'apply' on ", image.device(),
                " like 'image', but got ", apply->device());
  }
}

void check_normalization(const at::Tensor& image, at::ScalarType out_dtype,
                         std::optional<c10::ArrayRef<double>> mean,
                         std::optional<c10::ArrayRef<double>> stddev) {
  if (!mean.has_value() && !stddev.has_value()) return;
  TORCH_CHECK(is_floating_dtype(out_dtype), kOp,
              ": 'mean' and 'std' need a floating output dtype, but the output is ", out_dtype);
  const auto c = image.sym_size(image.dim() - 3);
  for (const auto& [name, values] : {std::pair{"mean", mean}, std::pair{"std", stddev}}) {
    if (!values.has_value()) continue;
    TORCH_CHECK(c == static_cast<int64_t>(values->size()), kOp, ": expected '", name, "' of length ",
                size_str(c), " (one value per channel), but got ", std::to_string(values->size()));
  }
  if (stddev.has_value()) {
    for (double s : *stddev) {
      TORCH_CHECK(s != 0.0, kOp, ": 'std' must not contain 0, but got ", values_str(*stddev));
    }
  }
}

// Planar and interleaved images keep their layout; any other strides become planar.
at::Tensor empty_image_like(const at::Tensor& image, at::ScalarType dtype) {
  const auto options = image.options().dtype(dtype);
  if (!is_planar(image) && is_interleaved(image)) {
    return at::empty_strided_symint(image.sym_sizes(), interleaved_strides(image), options);
  }
  return at::empty_symint(image.sym_sizes(), options);
}

}  // namespace

at::Tensor color_transform_meta(const at::Tensor& image, const at::Tensor& color,
                                const at::Tensor& brightness, const at::Tensor& contrast,
                                const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                                std::optional<at::ScalarType> dtype,
                                std::optional<c10::ArrayRef<double>> mean,
                                std::optional<c10::ArrayRef<double>> stddev) {
  check_arguments(image, color, brightness, contrast, gamma, apply);
  const auto out_dtype = dtype.value_or(image.scalar_type());
  TORCH_CHECK(is_image_dtype(out_dtype), kOp,
              ": expected 'dtype' float32, float64, float16, bfloat16 or uint8, but got ", out_dtype);
  check_normalization(image, out_dtype, mean, stddev);
  TORCH_CHECK(mean.has_value() == stddev.has_value(), kOp,
              ": 'mean' and 'std' normalise together: pass both or neither, but got only '",
              mean.has_value() ? "mean" : "std", "'");
  return empty_image_like(image, out_dtype);
}

ColorGrads color_transform_backward_meta(const at::Tensor& grad, const at::Tensor& image,
                                         const at::Tensor& color, const at::Tensor& brightness,
                                         const at::Tensor& contrast, const at::Tensor& gamma,
                                         const std::optional<at::Tensor>& apply,
                                         std::optional<c10::ArrayRef<double>> stddev) {
  check_arguments(image, color, brightness, contrast, gamma, apply);
  TORCH_CHECK(is_floating_dtype(image.scalar_type()), kOp,
              ": gradients need a floating 'image', but got ", image.scalar_type());
  TORCH_CHECK(is_floating_dtype(grad.scalar_type()), kOp,
              ": gradients need a floating output dtype, but got ", grad.scalar_type());
  TORCH_CHECK(grad.sym_sizes() == image.sym_sizes() && grad.device() == image.device(), kOp,
              "_backward: expected 'grad' of shape ", shape_str(image.sym_sizes()), " on ",
              image.device(), ", but got ", shape_str(grad.sym_sizes()), " on ", grad.device());
  check_normalization(image, grad.scalar_type(), std::nullopt, stddev);
  auto param_grad = [&](const at::Tensor& p) {
    return at::empty_symint(p.sym_sizes(), p.options().device(image.device()));
  };
  return {empty_image_like(image, image.scalar_type()), param_grad(color), param_grad(brightness),
          param_grad(contrast), param_grad(gamma)};
}

ColorGeometry color_geometry(const at::Tensor& image) {
  const int64_t dim = image.dim();
  return {dim == 3 ? 1 : image.size(0), dim == 5 ? image.size(1) : 1, image.size(dim - 3),
          image.size(dim - 2) * image.size(dim - 1), !is_planar(image) && is_interleaved(image)};
}

at::Tensor color_dense_image(const at::Tensor& image) {
  return is_planar(image) || is_interleaved(image) ? image : image.contiguous();
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

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("color_transform", &color_transform_meta);
  m.impl("color_transform_backward", &color_transform_backward_meta);
}

}  // namespace gpuaug
