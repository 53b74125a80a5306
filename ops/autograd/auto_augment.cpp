// Autograd kernels of gpuaug::auto_augment and of its backward (which has no derivative). The
// floating image alone has a gradient: the operations, magnitudes and AugMix's weights are
// numbers, as torchvision's are.
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

#include "gpuaug/ops.h"
#include "ops/checks.h"

namespace gpuaug {
namespace {

constexpr const char* kOp = "gpuaug::auto_augment";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class AutoAugmentFunction : public torch::autograd::Function<AutoAugmentFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& image,
                            const at::Tensor& operations, const at::Tensor& magnitudes,
                            const std::optional<at::Tensor>& weights, int64_t interpolation,
                            std::optional<c10::ArrayRef<double>> fill,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({image, operations, magnitudes, weights.value_or(at::Tensor())});
    ctx->saved_data["interpolation"] = interpolation;
    if (fill.has_value()) ctx->saved_data["fill"] = fill->vec();
    if (stddev.has_value()) ctx->saved_data["std"] = stddev->vec();
    return gpuaug::auto_augment(image, operations, magnitudes, weights, interpolation, fill,
                                dtype, mean, stddev);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto list = [&](const char* name) -> std::optional<std::vector<double>> {
      if (!ctx->saved_data.count(name)) return std::nullopt;
      return ctx->saved_data[name].toDoubleVector();
    };
    const auto fill = list("fill"), stddev = list("std");
    const auto as_ref = [](const std::optional<std::vector<double>>& v) {
      return v ? std::optional<c10::ArrayRef<double>>(*v) : std::nullopt;
    };
    variable_list grads(9);  // the image's, then none for the other arguments
    if (grad_outputs[0].defined()) {
      grads[0] = auto_augment_backward(
          grad_outputs[0], saved[0], saved[1], saved[2],
          saved[3].defined() ? std::optional<at::Tensor>(saved[3]) : std::nullopt,
          ctx->saved_data["interpolation"].toInt(), as_ref(fill), as_ref(stddev));
    }
    return grads;
  }
};

class AutoAugmentBackwardFunction
    : public torch::autograd::Function<AutoAugmentBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& grad, const at::Tensor& image,
                            const at::Tensor& operations, const at::Tensor& magnitudes,
                            const std::optional<at::Tensor>& weights, int64_t interpolation,
                            std::optional<c10::ArrayRef<double>> fill,
                            std::optional<c10::ArrayRef<double>> stddev) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return auto_augment_backward(grad, image, operations, magnitudes, weights, interpolation,
                                 fill, stddev);
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, kOp, ": double backward is not supported");
  }
};

at::Tensor auto_augment_autograd(const at::Tensor& image, const at::Tensor& operations,
                                 const at::Tensor& magnitudes,
                                 const std::optional<at::Tensor>& weights, int64_t interpolation,
                                 std::optional<c10::ArrayRef<double>> fill,
                                 std::optional<at::ScalarType> dtype,
                                 std::optional<c10::ArrayRef<double>> mean,
                                 std::optional<c10::ArrayRef<double>> stddev) {
  check_defined(kOp, {{"image", &image}, {"operations", &operations}, {"magnitudes", &magnitudes}});
  const bool grad_mode = at::GradMode::is_enabled();
  for (const auto& [name, t] : {std::pair{"magnitudes", &magnitudes},
                                std::pair{"weights", weights ? &*weights : nullptr}}) {
    TORCH_CHECK(!grad_mode || t == nullptr || !t->requires_grad(), kOp, ": '", name,
                "' has no gradient (torchvision's are numbers), but it requires grad: pass ",
                name, ".detach()");
  }
  if (!grad_mode || !image.requires_grad()) {  // plain augmentation: no autograd node
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::auto_augment(image, operations, magnitudes, weights, interpolation, fill,
                                dtype, mean, stddev);
  }
  return AutoAugmentFunction::apply(image, operations, magnitudes, weights, interpolation, fill,
                                    dtype, mean, stddev);
}

at::Tensor auto_augment_backward_autograd(const at::Tensor& grad, const at::Tensor& image,
                                          const at::Tensor& operations,
                                          const at::Tensor& magnitudes,
                                          const std::optional<at::Tensor>& weights,
                                          int64_t interpolation,
                                          std::optional<c10::ArrayRef<double>> fill,
                                          std::optional<c10::ArrayRef<double>> stddev) {
  check_defined("gpuaug::_auto_augment_backward", {{"grad", &grad}, {"image", &image}});
  return AutoAugmentBackwardFunction::apply(grad, image, operations, magnitudes, weights,
                                            interpolation, fill, stddev);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("auto_augment", &auto_augment_autograd);
  m.impl("_auto_augment_backward", &auto_augment_backward_autograd);
}

}  // namespace gpuaug
