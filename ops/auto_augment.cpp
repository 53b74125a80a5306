// gpuaug::auto_augment: each sample's chains of torchvision's AutoAugment operations in one call
// (kernels/auto_augment/chain.h), AugMix's mixture of them, then the output conversion. Schema,
// C++ caller, argument checks, Meta kernel and the body its CPU and CUDA loops share.
#include "ops/auto_augment.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <string>

#include "gpuaug/ops.h"
#include "kernels/auto_augment/auto_augment.h"
#include "kernels/image_layout.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<AutoAugmentLoop> auto_augment_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "auto_augment(Tensor image, Tensor operations, Tensor magnitudes, *, Tensor? weights=None, "
      "int interpolation=0, float[]? fill=None, ScalarType? dtype=None, float[]? mean=None, "
      "float[]? std=None) -> Tensor");
}

at::Tensor auto_augment(const at::Tensor& image, const at::Tensor& operations,
                        const at::Tensor& magnitudes, const std::optional<at::Tensor>& weights,
                        int64_t interpolation, std::optional<c10::ArrayRef<double>> fill,
                        std::optional<at::ScalarType> dtype,
                        std::optional<c10::ArrayRef<double>> mean,
                        std::optional<c10::ArrayRef<double>> stddev) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::auto_augment", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const std::optional<at::Tensor>&, int64_t,
                            std::optional<c10::ArrayRef<double>>, std::optional<at::ScalarType>,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(image, operations, magnitudes, weights, interpolation, fill, dtype, mean, stddev);
}

namespace {

constexpr const char* kOp = "gpuaug::auto_augment";

void check_image(const char* op, const at::Tensor& image) {
  check_defined(op, "image", image);
  TORCH_CHECK(image.dim() == 4, op, ": expected 'image' of shape [N, C, H, W], but got ",
              std::to_string(image.dim()), "-d shape ", shape_str(image.sym_sizes()));
  const auto t = image.scalar_type();
  TORCH_CHECK(t == at::kByte || t == at::kFloat || t == at::kDouble, op,
              ": expected 'image' of dtype uint8, float32 or float64, but got ", t);
  const auto channels = image.sym_size(1);
  TORCH_CHECK(channels == 1 || channels == 3, op,
              ": expected 'image' with 1 or 3 channels, but got ", size_str(channels));
}

// operations (int64) and magnitudes (float64): [N, B, D], 1 <= D <= kMaxDepth.
void check_chains(const char* op, const at::Tensor& image, const at::Tensor& operations,
                  const at::Tensor& magnitudes) {
  check_defined(op, "operations", operations);
  check_defined(op, "magnitudes", magnitudes);
  TORCH_CHECK(operations.scalar_type() == at::kLong, op,
              ": expected 'operations' of dtype int64, but got ", operations.scalar_type());
  TORCH_CHECK(operations.dim() == 3 && operations.sym_size(0) == image.sym_size(0) &&
                  operations.sym_size(1) >= 1 && operations.sym_size(2) >= 1 &&
                  operations.sym_size(2) <= policy::kMaxDepth,
              op, ": expected 'operations' of shape [", size_str(image.sym_size(0)),
              ", B, D] (each sample's B chains of D <= ", std::to_string(policy::kMaxDepth),
              " operations), but got ", shape_str(operations.sym_sizes()));
  TORCH_CHECK(magnitudes.scalar_type() == at::kDouble, op,
              ": expected 'magnitudes' of dtype float64, but got ", magnitudes.scalar_type());
  TORCH_CHECK(magnitudes.sym_sizes() == operations.sym_sizes(), op,
              ": expected 'magnitudes' of the shape of 'operations' ",
              shape_str(operations.sym_sizes()), ", but got ", shape_str(magnitudes.sym_sizes()));
  for (const auto& [name, t] : {std::pair{"operations", &operations},
                                std::pair{"magnitudes", &magnitudes}}) {
    TORCH_CHECK(t->device() == image.device(), op, ": expected '", name, "' on ",
                image.device(), " like 'image', but got ", t->device());
  }
}

void check_weights(const char* op, const at::Tensor& image, const at::Tensor& operations,
                   const std::optional<at::Tensor>& weights) {
  if (!weights.has_value()) {
    TORCH_CHECK(operations.sym_size(1) == 1, op, ": expected one chain a sample without "
                "'weights' (the chain's image is the output), but 'operations' has ",
                size_str(operations.sym_size(1)));
    return;
  }
  check_defined(op, "weights", *weights);
  TORCH_CHECK(weights->scalar_type() == at::kFloat, op,
              ": expected 'weights' of dtype float32, but got ", weights->scalar_type());
  const auto chains = operations.sym_size(1);
  TORCH_CHECK(weights->dim() == 2 && weights->sym_size(0) == image.sym_size(0) &&
                  weights->sym_size(1) == chains + 1,
              op, ": expected 'weights' of shape [", size_str(image.sym_size(0)), ", ",
              size_str(chains + 1), "] (the image's weight, then each chain's), but got ",
              shape_str(weights->sym_sizes()));
  TORCH_CHECK(weights->device() == image.device(), op, ": expected 'weights' on ",
              image.device(), " like 'image', but got ", weights->device());
}

void check_settings(const char* op, const at::Tensor& image, int64_t interpolation,
                    std::optional<c10::ArrayRef<double>> fill, at::ScalarType out_dtype,
                    std::optional<c10::ArrayRef<double>> mean,
                    std::optional<c10::ArrayRef<double>> stddev) {
  TORCH_CHECK(interpolation == geo::kNearest || interpolation == geo::kBilinear, op,
              ": expected 'interpolation' 0 (nearest) or 1 (bilinear), torchvision's two for "
              "tensors, but got ", std::to_string(interpolation));
  const auto channels = image.sym_size(1);
  TORCH_CHECK(!fill || fill->size() == 1 || channels == static_cast<int64_t>(fill->size()), op,
              ": expected 'fill' of one value or one per channel (", size_str(channels),
              "), but got ", std::to_string(fill ? fill->size() : 0), " values");
  const auto in_dtype = image.scalar_type();
  TORCH_CHECK(out_dtype == in_dtype || (in_dtype == at::kByte && out_dtype == at::kFloat), op,
              ": expected 'dtype' to be the image's dtype, or float32 for a uint8 image, but got ",
              out_dtype, " for a ", in_dtype, " image");
  check_normalisation(op, channels, out_dtype, mean, stddev);
}

}  // namespace

void check_operation_values(const char* op, const at::Tensor& operations) {
  if (!operations.device().is_cpu() || operations.numel() == 0) return;
  const at::Tensor codes = operations.contiguous();
  const int64_t* v = codes.const_data_ptr<int64_t>();
  for (int64_t i = 0; i < codes.numel(); ++i) {
    TORCH_CHECK(v[i] >= 0 && v[i] < policy::kNames, op,
                ": expected 'operations' codes 0..", std::to_string(policy::kNames - 1),
                " (Identity .. Invert), but got ", std::to_string(v[i]), " at flat index ",
                std::to_string(i));
  }
}

namespace {

at::Tensor auto_augment_kernel(const at::Tensor& image, const at::Tensor& operations,
                               const at::Tensor& magnitudes,
                               const std::optional<at::Tensor>& weights, int64_t interpolation,
                               std::optional<c10::ArrayRef<double>> fill,
                               std::optional<at::ScalarType> dtype,
                               std::optional<c10::ArrayRef<double>> mean,
                               std::optional<c10::ArrayRef<double>> stddev) {
  at::Tensor out = auto_augment_meta(image, operations, magnitudes, weights, interpolation, fill,
                                     dtype, mean, stddev);
  if (out.numel() == 0) return out;
  check_operation_values(kOp, operations);
  const at::Tensor codes = operations.contiguous();
  const at::Tensor values = magnitudes.contiguous();
  const at::Tensor mix = weights.has_value() ? weights->contiguous() : at::Tensor();
  policy::Call call{};
  call.image = image.const_data_ptr();
  call.samples = image.size(0);
  call.channels = image.size(1);
  call.height = image.size(2);
  call.width = image.size(3);
  call.sample_stride = image.stride(0);
  call.channel_stride = image.stride(1);
  call.row_stride = image.stride(2);
  call.column_stride = image.stride(3);
  call.operations = codes.const_data_ptr<int64_t>();
  call.magnitudes = values.const_data_ptr<double>();
  call.branches = codes.size(1);
  call.depth = codes.size(2);
  call.weights = mix.defined() ? mix.const_data_ptr<float>() : nullptr;
  call.interpolation = static_cast<int>(interpolation);
  call.fill_given = fill.has_value();
  for (int c = 0; c < 3; ++c) {
    call.fill[c] = !fill ? 0.0 : (*fill)[fill->size() == 1 ? 0 : c % fill->size()];
  }
  auto_augment_loops.on(kOp, image.device().type())(out, image, call, mean, stddev);
  return out;
}

}  // namespace

void check_auto_augment_call(const char* op, const at::Tensor& image, const at::Tensor& operations,
                             const at::Tensor& magnitudes,
                             const std::optional<at::Tensor>& weights, int64_t interpolation,
                             std::optional<c10::ArrayRef<double>> fill, at::ScalarType out_dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev) {
  check_image(op, image);
  check_chains(op, image, operations, magnitudes);
  check_weights(op, image, operations, weights);
  check_settings(op, image, interpolation, fill, out_dtype, mean, stddev);
}

at::Tensor auto_augment_meta(const at::Tensor& image, const at::Tensor& operations,
                             const at::Tensor& magnitudes,
                             const std::optional<at::Tensor>& weights, int64_t interpolation,
                             std::optional<c10::ArrayRef<double>> fill,
                             std::optional<at::ScalarType> dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev) {
  const auto out_dtype = dtype.value_or(image.scalar_type());
  check_auto_augment_call(kOp, image, operations, magnitudes, weights, interpolation, fill,
                          out_dtype, mean, stddev);
  return empty_like_image(image, out_dtype);
}

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) { m.impl("auto_augment", &auto_augment_meta); }
TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { m.impl("auto_augment", &auto_augment_kernel); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { m.impl("auto_augment", &auto_augment_kernel); }
#endif

}  // namespace gpuaug
