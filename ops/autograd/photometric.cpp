// Autograd kernels of gpuaug::photometric and of its backward (which has no derivative). The image
// alone has a gradient: factors are torchvision's numbers, and a uint8 output has none.
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "kernels/photometric/photometric.h"
#include "ops/photometric.h"

namespace gpuaug {
namespace {

constexpr const char* kOp = "gpuaug::photometric";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::optional<at::Tensor> saved_optional(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

class PhotometricFunction : public torch::autograd::Function<PhotometricFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& image, c10::IntArrayRef stages,
                            const at::Tensor& factors, const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({image, factors, order.value_or(at::Tensor()),
                            apply.value_or(at::Tensor())});
    ctx->saved_data["stages"] = stages.vec();
    if (stddev.has_value()) ctx->saved_data["std"] = stddev->vec();
    if (factor_ranges.has_value()) ctx->saved_data["factor_ranges"] = factor_ranges->vec();
    return gpuaug::photometric(image, stages, factors, order, apply, dtype, mean, stddev,
                               factor_ranges);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const std::vector<int64_t> stages = ctx->saved_data["stages"].toIntVector();
    const auto saved_list = [&](const char* name) -> std::optional<std::vector<double>> {
      if (!ctx->saved_data.count(name)) return std::nullopt;
      return ctx->saved_data[name].toDoubleVector();
    };
    const auto as_ref = [](const std::optional<std::vector<double>>& v) {
      return v ? std::optional<c10::ArrayRef<double>>(*v) : std::nullopt;
    };
    const auto stddev = saved_list("std"), factor_ranges = saved_list("factor_ranges");
    at::Tensor grad_image;
    if (grad_outputs[0].defined()) {
      grad_image = photometric_backward(grad_outputs[0], saved[0], stages, saved[1],
                                        saved_optional(saved[2]), saved_optional(saved[3]),
                                        as_ref(stddev), as_ref(factor_ranges));
    }
    return {grad_image, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class PhotometricBackwardFunction
    : public torch::autograd::Function<PhotometricBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& grad, const at::Tensor& image,
                            c10::IntArrayRef stages, const at::Tensor& factors,
                            const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return photometric_backward(grad, image, stages, factors, order, apply, stddev,
                                factor_ranges);
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, kOp, ": double backward is not supported");
  }
};

at::Tensor photometric_autograd(const at::Tensor& image, c10::IntArrayRef stages,
                                const at::Tensor& factors, const std::optional<at::Tensor>& order,
                                const std::optional<at::Tensor>& apply,
                                std::optional<at::ScalarType> dtype,
                                std::optional<c10::ArrayRef<double>> mean,
                                std::optional<c10::ArrayRef<double>> stddev,
                                std::optional<c10::ArrayRef<double>> factor_ranges) {
  check_defined(kOp, {{"image", &image}, {"factors", &factors}});
  const bool grad_mode = at::GradMode::is_enabled();
  TORCH_CHECK(!grad_mode || !factors.requires_grad(), kOp,
              ": 'factors' has no gradient (torchvision's factors are numbers), but it requires "
              "grad: pass factors.detach()");
  if (!grad_mode || !image.requires_grad()) {  // plain augmentation: no autograd node
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::photometric(image, stages, factors, order, apply, dtype, mean, stddev,
                               factor_ranges);
  }
  for (const int64_t stage : stages) {
    TORCH_CHECK(stage != photo::kAutocontrast && stage != photo::kEqualize, kOp, ": ",
                stage == photo::kEqualize ? "equalize" : "autocontrast",
                " has no gradient (torchvision's cannot be differentiated either), but 'image' "
                "requires grad: detach it, or compute it under torch.no_grad()");
  }
  const auto out_dtype = dtype.value_or(image.scalar_type());
  TORCH_CHECK(at::isFloatingType(out_dtype), kOp, ": a ", out_dtype,
              " output has no gradient, but 'image' requires grad: keep the image's dtype, or "
              "compute it under torch.no_grad()");
  return PhotometricFunction::apply(image, stages, factors, order, apply, dtype, mean, stddev,
                                    factor_ranges);
}

at::Tensor photometric_backward_autograd(const at::Tensor& grad, const at::Tensor& image,
                                         c10::IntArrayRef stages, const at::Tensor& factors,
                                         const std::optional<at::Tensor>& order,
                                         const std::optional<at::Tensor>& apply,
                                         std::optional<c10::ArrayRef<double>> stddev,
                                         std::optional<c10::ArrayRef<double>> factor_ranges) {
  check_defined("gpuaug::_photometric_backward",
                {{"grad", &grad}, {"image", &image}, {"factors", &factors}});
  return PhotometricBackwardFunction::apply(grad, image, stages, factors, order, apply, stddev,
                                            factor_ranges);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("photometric", &photometric_autograd);
  m.impl("_photometric_backward", &photometric_backward_autograd);
}

}  // namespace gpuaug
