// gpuaug::_auto_augment_backward, the gradient of gpuaug::auto_augment's floating image: each
// chain's images before its operations (the levels) from the forward op on the chain cut short,
// then the chains' gradients back one level at a time (kernels/auto_augment/grad.h), summed over
// a sample's chains with AugMix's image share. Schema, C++ caller, Meta kernel and the body its
// CPU and CUDA loops share.
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "gpuaug/ops.h"
#include "kernels/auto_augment/auto_augment.h"
#include "ops/auto_augment.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<AutoAugmentLevelLoop> auto_augment_level_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "_auto_augment_backward(Tensor grad, Tensor image, Tensor operations, Tensor magnitudes, *, "
      "Tensor? weights=None, int interpolation=0, float[]? fill=None, float[]? std=None) "
      "-> Tensor");
}

at::Tensor auto_augment_backward(const at::Tensor& grad, const at::Tensor& image,
                                 const at::Tensor& operations, const at::Tensor& magnitudes,
                                 const std::optional<at::Tensor>& weights, int64_t interpolation,
                                 std::optional<c10::ArrayRef<double>> fill,
                                 std::optional<c10::ArrayRef<double>> stddev) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_auto_augment_backward", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const std::optional<at::Tensor>&, int64_t,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(grad, image, operations, magnitudes, weights, interpolation, fill, stddev);
}

namespace {

constexpr const char* kBackward = "gpuaug::_auto_augment_backward";

at::Tensor auto_augment_backward_meta(const at::Tensor& grad, const at::Tensor& image,
                                      const at::Tensor& operations, const at::Tensor& magnitudes,
                                      const std::optional<at::Tensor>& weights,
                                      int64_t interpolation,
                                      std::optional<c10::ArrayRef<double>> fill,
                                      std::optional<c10::ArrayRef<double>> stddev) {
  check_defined(kBackward, "grad", grad);
  check_defined(kBackward, "image", image);
  TORCH_CHECK(at::isFloatingType(image.scalar_type()), kBackward,
              ": gradients need a floating image, but got ", image.scalar_type());
  // std normalises alone here (the mean shifts the output, not its gradient)
  const std::vector<double> no_mean(stddev ? stddev->size() : 0, 0.0);
  check_auto_augment_call(kBackward, image, operations, magnitudes, weights, interpolation, fill,
                          image.scalar_type(),
                          stddev ? std::optional<c10::ArrayRef<double>>(no_mean) : std::nullopt,
                          stddev);
  TORCH_CHECK(grad.sym_sizes() == image.sym_sizes() && grad.scalar_type() == image.scalar_type() &&
                  grad.device() == image.device(),
              kBackward, ": expected 'grad' of shape ", shape_str(image.sym_sizes()), ", dtype ",
              image.scalar_type(), " on ", image.device(), " (the output's), but got ",
              shape_str(grad.sym_sizes()), ", ", grad.scalar_type(), " on ", grad.device());
  return at::empty_symint(image.sym_sizes(), image.options());
}

at::Tensor auto_augment_backward_kernel(const at::Tensor& grad, const at::Tensor& image,
                                        const at::Tensor& operations,
                                        const at::Tensor& magnitudes,
                                        const std::optional<at::Tensor>& weights,
                                        int64_t interpolation,
                                        std::optional<c10::ArrayRef<double>> fill,
                                        std::optional<c10::ArrayRef<double>> stddev) {
  at::Tensor grad_image = auto_augment_backward_meta(grad, image, operations, magnitudes, weights,
                                                     interpolation, fill, stddev);
  if (grad_image.numel() == 0) return grad_image;
  check_operation_values(kBackward, operations);
  const int64_t samples = image.size(0), channels = image.size(1), height = image.size(2),
                width = image.size(3);
  const int64_t branches = operations.size(1), depth = operations.size(2);
  const int64_t chains = samples * branches;
  const at::Tensor codes = operations.contiguous().view({chains, depth});
  const at::Tensor values = magnitudes.contiguous().view({chains, depth});
  // each chain's level 0: its sample's image
  const at::Tensor chain_images =
      branches == 1 ? image
                    : image.unsqueeze(1)
                          .expand({samples, branches, channels, height, width})
                          .reshape({chains, channels, height, width});
  std::vector<at::Tensor> levels{chain_images.contiguous()};
  for (int64_t k = 1; k < depth; ++k) {
    levels.push_back(gpuaug::auto_augment(chain_images,
                                          codes.narrow(1, 0, k).reshape({chains, 1, k}),
                                          values.narrow(1, 0, k).reshape({chains, 1, k}),
                                          std::nullopt, interpolation, fill)
                         .contiguous());
  }
  const at::Tensor mix = weights.has_value() ? weights->contiguous() : at::Tensor();
  policy::LevelCall call{};
  call.chains = chains;
  call.branches = branches;
  call.channels = channels;
  call.height = height;
  call.width = width;
  call.interpolation = static_cast<int>(interpolation);
  call.fill_given = fill.has_value();
  call.weights = mix.defined() ? mix.const_data_ptr<float>() : nullptr;
  for (int c = 0; c < 3; ++c) call.inv_std[c] = stddev ? 1.0 / (*stddev)[c % stddev->size()] : 1.0;
  const auto loop = auto_augment_level_loops.on(kBackward, image.device().type());
  at::Tensor level_grad = grad.contiguous();
  for (int64_t k = depth - 1; k >= 0; --k) {
    const at::Tensor level_codes = codes.select(1, k).contiguous();
    const at::Tensor level_values = values.select(1, k).contiguous();
    call.operations = level_codes.const_data_ptr<int64_t>();
    call.magnitudes = level_values.const_data_ptr<double>();
    call.top = k == depth - 1;
    at::Tensor below = at::empty({chains, channels, height, width}, image.options());
    loop(below, level_grad, levels[k], call);
    level_grad = below;
  }
  if (branches == 1 && !mix.defined()) return level_grad;
  grad_image = level_grad.view({samples, branches, channels, height, width}).sum(1);
  if (mix.defined()) {  // AugMix's image share: w0 / std of the output's gradient
    const at::Tensor image_weight = mix.select(1, 0).view({samples, 1, 1});
    for (int64_t c = 0; c < channels; ++c) {
      grad_image.select(1, c).add_(at::mul(grad.select(1, c), image_weight), call.inv_std[c]);
    }
  }
  return grad_image;
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("_auto_augment_backward", &auto_augment_backward_meta);
}
TORCH_LIBRARY_IMPL(gpuaug, CPU, m) {
  m.impl("_auto_augment_backward", &auto_augment_backward_kernel);
}
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) {
  m.impl("_auto_augment_backward", &auto_augment_backward_kernel);
}
#endif

}  // namespace gpuaug
