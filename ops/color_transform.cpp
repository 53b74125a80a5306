// gpuaug::color_transform: schema, C++ API, argument checks, Meta kernels and the bodies its CPU
// and CUDA loops share.
#include "ops/color_transform.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "kernels/color_math.h"
#include "kernels/image_layout.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<ColorForwardLoop> color_transform_loops;
Loops<ColorBackwardLoop> color_transform_backward_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "color_transform(Tensor image, Tensor color, Tensor brightness, Tensor contrast, "
      "Tensor gamma, *, Tensor? apply=None, ScalarType? dtype=None, float[]? mean=None, "
      "float[]? std=None) -> Tensor");
  m.def(
      "_color_transform_backward(Tensor grad, Tensor image, Tensor color, Tensor brightness, "
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
          .findSchemaOrThrow("gpuaug::_color_transform_backward", "")
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
  TORCH_CHECK(channels >= 1 && channels <= color::kMaxChannels, kOp,
              ": expected 'image' to have 1 to ", std::to_string(color::kMaxChannels),
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
  return empty_like_image(image, out_dtype);
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
  TORCH_CHECK(grad.sym_sizes() == image.sym_sizes() && grad.device() == image.device(),
              "gpuaug::_color_transform_backward: expected 'grad' of shape ", shape_str(image.sym_sizes()), " on ",
              image.device(), ", but got ", shape_str(grad.sym_sizes()), " on ", grad.device());
  check_normalization(image, grad.scalar_type(), std::nullopt, stddev);
  auto param_grad = [&](const at::Tensor& p) {
    return at::empty_symint(p.sym_sizes(), p.options().device(image.device()));
  };
  return {empty_like_image(image, image.scalar_type()), param_grad(color), param_grad(brightness),
          param_grad(contrast), param_grad(gamma)};
}

namespace {

at::Tensor color_transform_kernel(const at::Tensor& image, const at::Tensor& color,
                                  const at::Tensor& brightness, const at::Tensor& contrast,
                                  const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                                  std::optional<at::ScalarType> dtype,
                                  std::optional<c10::ArrayRef<double>> mean,
                                  std::optional<c10::ArrayRef<double>> stddev) {
  at::Tensor out = color_transform_meta(image, color, brightness, contrast, gamma, apply, dtype,
                                        mean, stddev);
  if (out.numel() == 0) return out;
  color_transform_loops.on(kOp, image.device().type())(out, image, color, brightness, contrast,
                                                       gamma, apply, mean, stddev);
  return out;
}

ColorGrads color_transform_backward_kernel(const at::Tensor& grad, const at::Tensor& image,
                                           const at::Tensor& color, const at::Tensor& brightness,
                                           const at::Tensor& contrast, const at::Tensor& gamma,
                                           const std::optional<at::Tensor>& apply,
                                           std::optional<c10::ArrayRef<double>> stddev) {
  ColorGrads grads = color_transform_backward_meta(grad, image, color, brightness, contrast, gamma,
                                                   apply, stddev);
  color_transform_backward_loops.on("gpuaug::_color_transform_backward", image.device().type())(
      grads, grad, image, color, brightness, contrast, gamma, apply, stddev);
  return grads;
}

void register_kernels(torch::Library& m) {
  m.impl("color_transform", &color_transform_kernel);
  m.impl("_color_transform_backward", &color_transform_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("color_transform", &color_transform_meta);
  m.impl("_color_transform_backward", &color_transform_backward_meta);
}

}  // namespace gpuaug
