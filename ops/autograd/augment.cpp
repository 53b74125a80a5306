// Autograd kernels of gpuaug::augment and of its backward (which has no derivative). The images
// alone have gradients (the interpolation's adjoint, then the program's): the geometry and the
// factors are numbers, and a uint8 output has none.
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

#include "gpuaug/ops.h"
#include "kernels/photometric/photometric.h"
#include "ops/checks.h"

namespace gpuaug {
namespace {

constexpr const char* kOp = "gpuaug::augment";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::optional<at::Tensor> saved_optional(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

std::optional<c10::ArrayRef<double>> as_ref(const std::optional<std::vector<double>>& v) {
  return v ? std::optional<c10::ArrayRef<double>>(*v) : std::nullopt;
}

class AugmentFunction : public torch::autograd::Function<AugmentFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, at::TensorList images,
                            const at::Tensor& geometry, c10::SymIntArrayRef size,
                            int64_t interpolation, bool antialias, int64_t padding_mode,
                            std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
                            const std::optional<at::Tensor>& factors,
                            const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges,
                            std::optional<at::MemoryFormat> memory_format,
                            const std::optional<at::Tensor>& warp) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    std::vector<at::Tensor> saved(images.begin(), images.end());
    saved.push_back(geometry);
    saved.push_back(factors.value_or(at::Tensor()));
    saved.push_back(order.value_or(at::Tensor()));
    saved.push_back(apply.value_or(at::Tensor()));
    saved.push_back(warp.value_or(at::Tensor()));
    ctx->save_for_backward(saved);
    ctx->saved_data["images"] = static_cast<int64_t>(images.size());
    ctx->saved_data["interpolation"] = interpolation;
    ctx->saved_data["antialias"] = antialias;
    ctx->saved_data["padding_mode"] = padding_mode;
    ctx->saved_data["stages"] = stages.vec();
    if (fill.has_value()) ctx->saved_data["fill"] = fill->vec();
    if (stddev.has_value()) ctx->saved_data["std"] = stddev->vec();
    if (factor_ranges.has_value()) ctx->saved_data["factor_ranges"] = factor_ranges->vec();
    return gpuaug::augment(images, geometry, size, interpolation, antialias, padding_mode, fill,
                           stages, factors, order, apply, dtype, mean, stddev, factor_ranges,
                           memory_format, warp);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const int64_t count = ctx->saved_data["images"].toInt();
    const std::vector<at::Tensor> images(saved.begin(), saved.begin() + count);
    const auto list = [&](const char* name) -> std::optional<std::vector<double>> {
      if (!ctx->saved_data.count(name)) return std::nullopt;
      return ctx->saved_data[name].toDoubleVector();
    };
    const auto fill = list("fill"), stddev = list("std"), factor_ranges = list("factor_ranges");
    const std::vector<int64_t> stages = ctx->saved_data["stages"].toIntVector();
    variable_list grads(images.size() + 16);  // one per image, then the other arguments
    if (grad_outputs[0].defined()) {
      const std::vector<at::Tensor> image_grads = augment_backward(
          grad_outputs[0], images, saved[count], ctx->saved_data["interpolation"].toInt(),
          ctx->saved_data["antialias"].toBool(), ctx->saved_data["padding_mode"].toInt(),
          as_ref(fill), stages, saved_optional(saved[count + 1]),
          saved_optional(saved[count + 2]), saved_optional(saved[count + 3]), as_ref(stddev),
          as_ref(factor_ranges), saved_optional(saved[count + 4]));
      for (size_t i = 0; i < image_grads.size(); ++i) grads[i] = image_grads[i];
    }
    return grads;
  }
};

class AugmentBackwardFunction : public torch::autograd::Function<AugmentBackwardFunction> {
 public:
  static variable_list forward(AutogradContext*, const at::Tensor& grad, at::TensorList images,
                               const at::Tensor& geometry, int64_t interpolation, bool antialias,
                               int64_t padding_mode, std::optional<c10::ArrayRef<double>> fill,
                               c10::IntArrayRef stages, const std::optional<at::Tensor>& factors,
                               const std::optional<at::Tensor>& order,
                               const std::optional<at::Tensor>& apply,
                               std::optional<c10::ArrayRef<double>> stddev,
                               std::optional<c10::ArrayRef<double>> factor_ranges,
                               const std::optional<at::Tensor>& warp) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return augment_backward(grad, images, geometry, interpolation, antialias, padding_mode, fill,
                            stages, factors, order, apply, stddev, factor_ranges, warp);
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, kOp, ": double backward is not supported");
  }
};

bool any_requires_grad(at::TensorList images) {
  for (const at::Tensor& image : images) {
    if (image.defined() && image.requires_grad()) return true;
  }
  return false;
}

at::Tensor augment_autograd(at::TensorList images, const at::Tensor& geometry,
                            c10::SymIntArrayRef size, int64_t interpolation, bool antialias,
                            int64_t padding_mode, std::optional<c10::ArrayRef<double>> fill,
                            c10::IntArrayRef stages, const std::optional<at::Tensor>& factors,
                            const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges,
                            std::optional<at::MemoryFormat> memory_format,
                            const std::optional<at::Tensor>& warp) {
  for (size_t i = 0; i < images.size(); ++i) {
    check_defined(kOp, ("images[" + std::to_string(i) + "]").c_str(), images[i]);
  }
  check_defined(kOp, "geometry", geometry);
  const bool grad_mode = at::GradMode::is_enabled();
  TORCH_CHECK(!grad_mode || !factors.has_value() || !factors->requires_grad(), kOp,
              ": 'factors' has no gradient (torchvision's factors are numbers), but it requires "
              "grad: pass factors.detach()");
  if (!grad_mode || !any_requires_grad(images)) {  // plain augmentation: no autograd node
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::augment(images, geometry, size, interpolation, antialias, padding_mode, fill,
                           stages, factors, order, apply, dtype, mean, stddev, factor_ranges,
                           memory_format, warp);
  }
  for (const int64_t stage : stages) {
    TORCH_CHECK(stage != photo::kAutocontrast && stage != photo::kEqualize, kOp, ": ",
                stage == photo::kEqualize ? "equalize" : "autocontrast",
                " has no gradient (torchvision's cannot be differentiated either), but an image "
                "requires grad: detach it, or compute it under torch.no_grad()");
  }
  const auto out_dtype = dtype.value_or(images.empty() ? at::kFloat : images[0].scalar_type());
  TORCH_CHECK(at::isFloatingType(out_dtype), kOp, ": a ", out_dtype,
              " output has no gradient, but an image requires grad: keep the images' dtype, or "
              "compute it under torch.no_grad()");
  return AugmentFunction::apply(images, geometry, size, interpolation, antialias, padding_mode,
                                fill, stages, factors, order, apply, dtype, mean, stddev,
                                factor_ranges, memory_format, warp);
}

std::vector<at::Tensor> augment_backward_autograd(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges, const std::optional<at::Tensor>& warp) {
  check_defined("gpuaug::_augment_backward", {{"grad", &grad}, {"geometry", &geometry}});
  return AugmentBackwardFunction::apply(grad, images, geometry, interpolation, antialias,
                                        padding_mode, fill, stages, factors, order, apply, stddev,
                                        factor_ranges, warp);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("augment", &augment_autograd);
  m.impl("_augment_backward", &augment_backward_autograd);
}

}  // namespace gpuaug
