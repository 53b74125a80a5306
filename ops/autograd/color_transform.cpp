// Autograd kernels of gpuaug::color_transform and of its backward (which has no derivative).
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#include "ops/color_transform.h"

namespace gpuaug {
namespace {

constexpr const char* kOp = "gpuaug::color_transform";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ColorTransformFunction : public torch::autograd::Function<ColorTransformFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& image, const at::Tensor& color,
                            const at::Tensor& brightness, const at::Tensor& contrast,
                            const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({image, color, brightness, contrast, gamma,
                            apply.value_or(at::Tensor())});
    if (stddev.has_value()) ctx->saved_data["std"] = stddev->vec();
    return gpuaug::color_transform(image, color, brightness, contrast, gamma, apply, dtype, mean,
                                   stddev);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    std::optional<at::Tensor> apply;
    if (saved[5].defined()) apply = saved[5];
    std::optional<std::vector<double>> stddev;
    if (ctx->saved_data.count("std")) stddev = ctx->saved_data["std"].toDoubleVector();
    auto [grad_image, grad_color, grad_brightness, grad_contrast, grad_gamma] =
        gpuaug::color_transform_backward(grad_outputs[0], saved[0], saved[1], saved[2], saved[3],
                                         saved[4], apply,
                                         stddev ? std::optional<c10::ArrayRef<double>>(*stddev)
                                                : std::nullopt);
    // Parameters may be CPU tensors beside a CUDA image; their gradients go back to them.
    auto on_device_of = [](const at::Tensor& grad, const at::Tensor& param) {
      return grad.to(param.device());
    };
    return {grad_image,
            on_device_of(grad_color, saved[1]),
            on_device_of(grad_brightness, saved[2]),
            on_device_of(grad_contrast, saved[3]),
            on_device_of(grad_gamma, saved[4]),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class ColorTransformBackwardFunction
    : public torch::autograd::Function<ColorTransformBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& grad,
                               const at::Tensor& image, const at::Tensor& color,
                               const at::Tensor& brightness, const at::Tensor& contrast,
                               const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                               std::optional<c10::ArrayRef<double>> stddev) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [a, b, c, d, e] = gpuaug::color_transform_backward(grad, image, color, brightness,
                                                            contrast, gamma, apply, stddev);
    return {a, b, c, d, e};
  }

  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "gpuaug::color_transform: double backward is not supported");
  }
};

at::Tensor color_transform_autograd(const at::Tensor& image, const at::Tensor& color,
                                    const at::Tensor& brightness, const at::Tensor& contrast,
                                    const at::Tensor& gamma,
                                    const std::optional<at::Tensor>& apply,
                                    std::optional<at::ScalarType> dtype,
                                    std::optional<c10::ArrayRef<double>> mean,
                                    std::optional<c10::ArrayRef<double>> stddev) {
  check_defined(kOp, {{"image", &image}, {"color", &color}, {"brightness", &brightness},
                      {"contrast", &contrast}, {"gamma", &gamma}});
  std::string requiring_grad;  // the arguments that ask for gradients, for the messages below
  int requiring = 0;
  for (const auto& [name, t] : {std::pair{"image", &image}, std::pair{"color", &color},
                                std::pair{"brightness", &brightness},
                                std::pair{"contrast", &contrast}, std::pair{"gamma", &gamma}}) {
    if (!t->requires_grad()) continue;
    requiring_grad += (requiring_grad.empty() ? "'" : ", '") + std::string(name) + "'";
    ++requiring;
  }
  const char* verb = requiring == 1 ? " requires grad" : " require grad";
  const bool wants_grad = at::GradMode::is_enabled() && !requiring_grad.empty();
  const auto out_dtype = dtype.value_or(image.scalar_type());
  TORCH_CHECK(!wants_grad || at::isFloatingType(image.scalar_type()), kOp,
              ": gradients need a floating image, but 'image' is ", image.scalar_type(), " and ",
              requiring_grad, verb);
  TORCH_CHECK(!wants_grad || at::isFloatingType(out_dtype), kOp, ": a ", out_dtype,
              " output has no gradient, but ", requiring_grad,
              verb, ": ask for a floating 'dtype', or compute it under torch.no_grad()");
  if (!wants_grad) {  // skip the autograd node and its bookkeeping: plain augmentation
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gpuaug::color_transform(image, color, brightness, contrast, gamma, apply, dtype, mean,
                                   stddev);
  }
  return ColorTransformFunction::apply(image, color, brightness, contrast, gamma, apply, dtype,
                                       mean, stddev);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
color_transform_backward_autograd(const at::Tensor& grad, const at::Tensor& image,
                                  const at::Tensor& color, const at::Tensor& brightness,
                                  const at::Tensor& contrast, const at::Tensor& gamma,
                                  const std::optional<at::Tensor>& apply,
                                  std::optional<c10::ArrayRef<double>> stddev) {
  check_defined("gpuaug::_color_transform_backward",
                {{"grad", &grad}, {"image", &image}, {"color", &color},
                 {"brightness", &brightness}, {"contrast", &contrast}, {"gamma", &gamma}});
  auto g = ColorTransformBackwardFunction::apply(grad, image, color, brightness, contrast, gamma,
                                                 apply, stddev);
  return {g[0], g[1], g[2], g[3], g[4]};
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("color_transform", &color_transform_autograd);
  m.impl("_color_transform_backward", &color_transform_backward_autograd);
}

}  // namespace gpuaug
