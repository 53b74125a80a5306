// gpuaug::augment and its backward gpuaug::_augment_backward: schemas, C++ callers, argument
// checks, Meta kernels and the bodies their CPU and CUDA loops share. The geometric front
// (window, flips, padding, resize, output crop and flips: docs/operators.md) runs inside the
// photometric program's pass, so a training pipeline is one op call.
#include "ops/augment.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <string>

#include "gpuaug/ops.h"
#include "kernels/augment/augment.h"
#include "kernels/augment/warp.h"
#include "ops/checks.h"
#include "ops/photometric.h"

namespace gpuaug {

Loops<AugmentLoop> augment_loops;
Loops<AugmentAdjointLoop> augment_adjoint_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "augment(Tensor[] images, Tensor geometry, SymInt[2] size, *, int interpolation=1, "
      "bool antialias=True, int padding_mode=0, float[]? fill=None, int[] stages=[], "
      "Tensor? factors=None, Tensor? order=None, Tensor? apply=None, ScalarType? dtype=None, "
      "float[]? mean=None, float[]? std=None, float[]? factor_ranges=None, "
      "MemoryFormat? memory_format=None, Tensor? warp=None) -> Tensor");
  // Each image's gradient from the output's (floating images; the output of their dtype).
  m.def(
      "_augment_backward(Tensor grad, Tensor[] images, Tensor geometry, *, int interpolation, "
      "bool antialias, int padding_mode, float[]? fill, int[] stages, Tensor? factors, "
      "Tensor? order, Tensor? apply, float[]? std, float[]? factor_ranges, Tensor? warp=None) "
      "-> Tensor[]");
}

at::Tensor augment(at::TensorList images, const at::Tensor& geometry, c10::SymIntArrayRef size,
                   int64_t interpolation, bool antialias, int64_t padding_mode,
                   std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
                   const std::optional<at::Tensor>& factors,
                   const std::optional<at::Tensor>& order, const std::optional<at::Tensor>& apply,
                   std::optional<at::ScalarType> dtype, std::optional<c10::ArrayRef<double>> mean,
                   std::optional<c10::ArrayRef<double>> stddev,
                   std::optional<c10::ArrayRef<double>> factor_ranges,
                   std::optional<at::MemoryFormat> memory_format,
                   const std::optional<at::Tensor>& warp) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::augment", "")
          .typed<at::Tensor(at::TensorList, const at::Tensor&, c10::SymIntArrayRef, int64_t,
                            bool, int64_t, std::optional<c10::ArrayRef<double>>, c10::IntArrayRef,
                            const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                            const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<at::MemoryFormat>, const std::optional<at::Tensor>&)>();
  return op.call(images, geometry, size, interpolation, antialias, padding_mode, fill, stages,
                 factors, order, apply, dtype, mean, stddev, factor_ranges, memory_format, warp);
}

std::vector<at::Tensor> augment_backward(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges, const std::optional<at::Tensor>& warp) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_augment_backward", "")
          .typed<std::vector<at::Tensor>(
              const at::Tensor&, at::TensorList, const at::Tensor&, int64_t, bool, int64_t,
              std::optional<c10::ArrayRef<double>>, c10::IntArrayRef,
              const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
              const std::optional<at::Tensor>&, std::optional<c10::ArrayRef<double>>,
              std::optional<c10::ArrayRef<double>>, const std::optional<at::Tensor>&)>();
  return op.call(grad, images, geometry, interpolation, antialias, padding_mode, fill, stages,
                 factors, order, apply, stddev, factor_ranges, warp);
}

namespace {

using namespace geo;

constexpr const char* kOp = "gpuaug::augment";
constexpr const char* kBackward = "gpuaug::_augment_backward";

bool is_image_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16 ||
         t == at::kByte;
}

// The images' checks; returns the number of samples.
c10::SymInt check_images(const char* op, at::TensorList images) {
  TORCH_CHECK(!images.empty(), op, ": expected 'images' to hold at least one image, but got an "
              "empty list");
  const at::Tensor& first = images[0];
  c10::SymInt samples = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const at::Tensor& image = images[i];
    const std::string name = "images[" + std::to_string(i) + "]";
    check_defined(op, name.c_str(), image);
    TORCH_CHECK(image.dim() == 3 || image.dim() == 4, op, ": expected '", name,
                "' of shape [C, H, W] or [N, C, H, W], but got ", std::to_string(image.dim()),
                "-d shape ", shape_str(image.sym_sizes()));
    TORCH_CHECK(is_image_dtype(image.scalar_type()), op, ": expected '", name,
                "' of dtype float32, float64, float16, bfloat16 or uint8, but got ",
                image.scalar_type());
    TORCH_CHECK(image.scalar_type() == first.scalar_type() && image.device() == first.device(),
                op, ": expected every image of the dtype and device of images[0] (",
                first.scalar_type(), " on ", first.device(), "), but '", name, "' is ",
                image.scalar_type(), " on ", image.device());
    const auto channels = image.sym_size(-3);
    TORCH_CHECK(channels == 1 || channels == 3, op, ": expected '", name,
                "' with 1 or 3 channels, but got ", size_str(channels));
    TORCH_CHECK(channels == first.sym_size(-3), op, ": expected every image with the channels "
                "of images[0] (", size_str(first.sym_size(-3)), "), but '", name, "' has ",
                size_str(channels));
    TORCH_CHECK(image.sym_size(-2) > 0 && image.sym_size(-1) > 0, op, ": expected '", name,
                "' of at least one pixel, but got shape ", shape_str(image.sym_sizes()));
    samples = samples + (image.dim() == 3 ? c10::SymInt(1) : image.sym_size(0));
  }
  return samples;
}

void check_geometry(const char* op, const at::Tensor& geometry, const c10::SymInt& samples,
                    const at::Tensor& first) {
  check_defined(op, "geometry", geometry);
  TORCH_CHECK(geometry.scalar_type() == at::kLong, op,
              ": expected 'geometry' of dtype int64, but got ", geometry.scalar_type());
  TORCH_CHECK(geometry.dim() == 2 && geometry.sym_size(0) == samples &&
                  geometry.sym_size(1) == kColumns,
              op, ": expected 'geometry' of shape [", size_str(samples), ", ",
              std::to_string(kColumns), "] (a row per sample), but got ",
              shape_str(geometry.sym_sizes()));
  TORCH_CHECK(geometry.device() == first.device(), op, ": expected 'geometry' on ",
              first.device(), " like the images, but got ", geometry.device());
}

void check_settings(const char* op, int64_t interpolation, int64_t padding_mode,
                    std::optional<c10::ArrayRef<double>> fill, const c10::SymInt& channels) {
  TORCH_CHECK(interpolation >= kNearest && interpolation <= kNearestExact, op,
              ": expected 'interpolation' 0 (nearest), 1 (bilinear), 2 (bicubic) or 3 "
              "(nearest-exact), but got ", std::to_string(interpolation));
  TORCH_CHECK(padding_mode >= kConstant && padding_mode <= kSymmetric, op,
              ": expected 'padding_mode' 0 (constant), 1 (edge), 2 (reflect) or 3 (symmetric), "
              "but got ", std::to_string(padding_mode));
  TORCH_CHECK(!fill || fill->size() == 1 || channels == static_cast<int64_t>(fill->size()), op,
              ": expected 'fill' of one value or one per channel (", size_str(channels),
              "), but got ", std::to_string(fill ? fill->size() : 0), " values");
}

// The warp rows: [S, 9] float64 on the images' device, with nearest or bilinear sampling.
void check_warp(const char* op, const std::optional<at::Tensor>& warp, const c10::SymInt& samples,
                const at::Tensor& first, int64_t interpolation) {
  if (!warp.has_value()) return;
  check_defined(op, "warp", *warp);
  TORCH_CHECK(warp->scalar_type() == at::kDouble, op,
              ": expected 'warp' of dtype float64, but got ", warp->scalar_type());
  TORCH_CHECK(warp->dim() == 2 && warp->sym_size(0) == samples &&
                  warp->sym_size(1) == kWarpColumns,
              op, ": expected 'warp' of shape [", size_str(samples), ", ",
              std::to_string(kWarpColumns), "] (8 coefficients and the kind a sample), but got ",
              shape_str(warp->sym_sizes()));
  TORCH_CHECK(warp->device() == first.device(), op, ": expected 'warp' on ", first.device(),
              " like the images, but got ", warp->device());
  TORCH_CHECK(interpolation == kNearest || interpolation == kBilinear, op,
              ": expected 'interpolation' 0 (nearest) or 1 (bilinear) with 'warp' (torchvision's "
              "affine, rotate and perspective take no other), but got ",
              std::to_string(interpolation));
}

// Where the warp is on the CPU, its kinds, and no resize with it: torchvision's warp and resize
// are two interpolations, two calls (on the GPU a warped sample's resized size is not read).
void check_warp_values(const char* op, const std::optional<at::Tensor>& warp,
                       const at::Tensor& geometry) {
  if (!warp.has_value() || !warp->device().is_cpu() || warp->numel() == 0) return;
  const at::Tensor rows = warp->contiguous();
  const at::Tensor geo = geometry.contiguous();
  const double* w = rows.const_data_ptr<double>();
  const int64_t* g = geo.const_data_ptr<int64_t>();
  for (int64_t s = 0; s < rows.size(0); ++s, w += kWarpColumns, g += kColumns) {
    const double kind = w[8];
    const auto is = [&](WarpKind k) { return kind == static_cast<double>(k); };
    TORCH_CHECK(is(kNoWarp) || is(kAffine) || is(kPerspective), op,
                ": expected sample ", std::to_string(s), "'s warp kind (column 8 of 'warp') 0 "
                "(none), 1 (affine) or 2 (perspective), but got ", std::to_string(kind));
    TORCH_CHECK(g[kResizedHeight] == g[kHeight] && g[kResizedWidth] == g[kWidth], op,
                ": expected no resize with 'warp' (a warp and a resize are two interpolations: "
                "two calls), but sample ", std::to_string(s), "'s window ",
                std::to_string(g[kHeight]), "x", std::to_string(g[kWidth]), " is resized to ",
                std::to_string(g[kResizedHeight]), "x", std::to_string(g[kResizedWidth]));
  }
}

// Where the geometry is on the CPU, its values (on the GPU the kernels fill the samples of a
// window or a resize of no pixels).
void check_geometry_values(const char* op, const at::Tensor& geometry) {
  if (!geometry.device().is_cpu() || geometry.numel() == 0) return;
  const at::Tensor rows = geometry.contiguous();
  const int64_t* v = rows.const_data_ptr<int64_t>();
  for (int64_t s = 0; s < rows.size(0); ++s, v += kColumns) {
    TORCH_CHECK(v[kHeight] > 0 && v[kWidth] > 0 && v[kResizedHeight] > 0 &&
                    v[kResizedWidth] > 0,
                op, ": expected sample ", std::to_string(s),
                "'s window (columns 2, 3) and resized size (columns 5, 6) in 'geometry' of at "
                "least one pixel, but got ", std::to_string(v[kHeight]), "x",
                std::to_string(v[kWidth]), " resized to ", std::to_string(v[kResizedHeight]),
                "x", std::to_string(v[kResizedWidth]));
  }
}

// The factors, or an empty [0] for a program of no stages.
at::Tensor factors_or_none(const char* op, c10::IntArrayRef stages,
                           const std::optional<at::Tensor>& factors, const at::Tensor& first) {
  if (factors.has_value()) {
    check_defined(op, "factors", *factors);
    return *factors;
  }
  TORCH_CHECK(stages.empty(), op, ": expected 'factors' for the ", std::to_string(stages.size()),
              " stages, but got None");
  return at::empty({0}, first.options().dtype(at::kFloat));
}

at::MemoryFormat output_format(at::TensorList images, std::optional<at::MemoryFormat> format) {
  if (format.has_value()) {
    TORCH_CHECK(*format == at::MemoryFormat::Contiguous || *format == at::MemoryFormat::ChannelsLast,
                kOp, ": expected 'memory_format' torch.contiguous_format or torch.channels_last, "
                "but got ", *format);
    return *format;
  }
  for (const at::Tensor& image : images) {
    if (image.dim() != 4 || image.is_contiguous() ||
        !image.is_contiguous(at::MemoryFormat::ChannelsLast)) {
      return at::MemoryFormat::Contiguous;
    }
  }
  return at::MemoryFormat::ChannelsLast;
}

// A stand-in of the output's shape, with the images' dtype and device, for the program's checks
// (which read its samples, channels, dtype and device; no memory of its own).
at::Tensor image_like(const at::Tensor& first, const c10::SymInt& samples,
                      c10::SymIntArrayRef size) {
  return at::empty_strided_symint({samples, first.sym_size(-3), size[0], size[1]},
                                  {0, 0, 0, 0}, first.options());
}

}  // namespace

at::Tensor augment_meta(at::TensorList images, const at::Tensor& geometry, c10::SymIntArrayRef size,
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
  const c10::SymInt samples = check_images(kOp, images);
  const at::Tensor& first = images[0];
  check_geometry(kOp, geometry, samples, first);
  check_warp(kOp, warp, samples, first, interpolation);
  TORCH_CHECK(size.size() == 2 && size[0] > 0 && size[1] > 0, kOp,
              ": expected 'size' of two positive values [H, W], but got ", shape_str(size));
  check_settings(kOp, interpolation, padding_mode, fill, first.sym_size(-3));
  const at::Tensor like = image_like(first, samples, size);
  const auto out_dtype = dtype.value_or(first.scalar_type());
  const photo::Program program =
      check_program(kOp, like, stages, factors_or_none(kOp, stages, factors, first), order, apply,
                    out_dtype, mean, stddev, factor_ranges);
  TORCH_CHECK(program.reduction != photo::kEqualize, kOp,
              ": equalize does not run inside the geometric front (its histograms would need a "
              "pass of their own): call gpuaug::augment without it, then gpuaug::photometric");
  return at::empty_symint(like.sym_sizes(), first.options().dtype(out_dtype),
                          output_format(images, memory_format));
}

std::vector<at::Tensor> augment_backward_meta(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges, const std::optional<at::Tensor>& warp) {
  check_defined(kBackward, "grad", grad);
  const c10::SymInt samples = check_images(kBackward, images);
  const at::Tensor& first = images[0];
  TORCH_CHECK(at::isFloatingType(first.scalar_type()), kBackward,
              ": gradients need floating images, but got ", first.scalar_type());
  TORCH_CHECK(grad.dim() == 4 && grad.sym_size(0) == samples &&
                  grad.sym_size(1) == first.sym_size(-3) &&
                  grad.scalar_type() == first.scalar_type() && grad.device() == first.device(),
              kBackward, ": expected 'grad' of shape [", size_str(samples), ", ",
              size_str(first.sym_size(-3)), ", H, W], dtype ", first.scalar_type(), " on ",
              first.device(), " (the output's), but got ", shape_str(grad.sym_sizes()), ", ",
              grad.scalar_type(), " on ", grad.device());
  check_geometry(kBackward, geometry, samples, first);
  check_warp(kBackward, warp, samples, first, interpolation);
  check_settings(kBackward, interpolation, padding_mode, fill, first.sym_size(-3));
  const at::Tensor like = image_like(first, samples, grad.sym_sizes().slice(2));
  const photo::Program program =
      check_program(kBackward, like, stages, factors_or_none(kBackward, stages, factors, first),
                    order, apply, first.scalar_type(), std::nullopt, std::nullopt, factor_ranges);
  TORCH_CHECK(program.reduction != photo::kAutocontrast && program.reduction != photo::kEqualize,
              kBackward, ": autocontrast and equalize have no gradient (torchvision's cannot be "
              "differentiated either)");
  TORCH_CHECK(!stddev || first.sym_size(-3) == static_cast<int64_t>(stddev->size()), kBackward,
              ": expected 'std' of length ", size_str(first.sym_size(-3)),
              " (one value per channel), but got ", std::to_string(stddev ? stddev->size() : 0));
  std::vector<at::Tensor> grads;
  grads.reserve(images.size());
  for (const at::Tensor& image : images) {
    grads.push_back(at::empty_symint(image.sym_sizes(), image.options()));
  }
  return grads;
}

namespace {

// The images as the loops read them, `data` each image's own (or a buffer's in its place).
std::vector<Source> sources_of(at::TensorList images) {
  std::vector<Source> sources;
  sources.reserve(images.size());
  int64_t first_sample = 0;
  for (const at::Tensor& image : images) {
    const bool batch = image.dim() == 4;
    const int64_t samples = batch ? image.size(0) : 1;
    sources.push_back({image.const_data_ptr(), first_sample, samples, image.size(-2),
                       image.size(-1), batch ? image.stride(0) : 0, image.stride(-3),
                       image.stride(-2), image.stride(-1)});
    first_sample += samples;
  }
  return sources;
}

// `warp`: the contiguous warp rows (defined where the call has a warp).
Settings settings_of(int64_t interpolation, bool antialias, int64_t padding_mode,
                     std::optional<c10::ArrayRef<double>> fill, int64_t out_height,
                     int64_t out_width, const at::Tensor& warp) {
  Settings s{static_cast<int>(interpolation), antialias, static_cast<int>(padding_mode),
             {0.0, 0.0, 0.0}, out_height, out_width, false,
             warp.defined() ? warp.const_data_ptr<double>() : nullptr, fill.has_value()};
  for (int c = 0; fill.has_value() && c < 3; ++c) {
    s.fill[c] = (*fill)[fill->size() == 1 ? 0 : std::min<size_t>(c, fill->size() - 1)];
  }
  return s;
}

at::Tensor augment_kernel(at::TensorList images, const at::Tensor& geometry,
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
  at::Tensor out = augment_meta(images, geometry, size, interpolation, antialias, padding_mode,
                                fill, stages, factors, order, apply, dtype, mean, stddev,
                                factor_ranges, memory_format, warp);
  const at::Tensor& first = images[0];
  const at::Tensor all_factors = factors_or_none(kOp, stages, factors, first);
  const photo::Program program = check_program(
      kOp, out, stages, all_factors, order, apply, out.scalar_type(), mean, stddev, factor_ranges);
  check_program_values(kOp, program, first, all_factors, order);
  check_geometry_values(kOp, geometry);
  check_warp_values(kOp, warp, geometry);
  if (out.numel() == 0) return out;
  const at::Tensor warp_rows = warp.has_value() ? warp->contiguous() : at::Tensor();
  const auto compute = first.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  augment_loops.on(kOp, first.device().type())(
      out, sources_of(images), first.scalar_type(), geometry.contiguous(),
      settings_of(interpolation, antialias, padding_mode, fill, out.size(2), out.size(3),
                  warp_rows),
      program, per_sample_rows(all_factors, compute), order_rows(order), apply_rows(apply),
      mean, stddev);
  return out;
}

std::vector<at::Tensor> augment_backward_kernel(
    const at::Tensor& grad, at::TensorList images, const at::Tensor& geometry,
    int64_t interpolation, bool antialias, int64_t padding_mode,
    std::optional<c10::ArrayRef<double>> fill, c10::IntArrayRef stages,
    const std::optional<at::Tensor>& factors, const std::optional<at::Tensor>& order,
    const std::optional<at::Tensor>& apply, std::optional<c10::ArrayRef<double>> stddev,
    std::optional<c10::ArrayRef<double>> factor_ranges, const std::optional<at::Tensor>& warp) {
  std::vector<at::Tensor> grads =
      augment_backward_meta(grad, images, geometry, interpolation, antialias, padding_mode, fill,
                            stages, factors, order, apply, stddev, factor_ranges, warp);
  check_geometry_values(kBackward, geometry);
  check_warp_values(kBackward, warp, geometry);
  // the program's gradient at the geometric front's output, which the program needs as input
  at::Tensor front_grad = grad;
  if (!stages.empty() || stddev.has_value()) {
    const at::Tensor front =
        augment(images, geometry, grad.sym_sizes().slice(2), interpolation, antialias,
                padding_mode, fill, {}, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                std::nullopt, std::nullopt, std::nullopt, grad.suggest_memory_format(), warp);
    front_grad = photometric_backward(grad, front, stages,
                                      factors_or_none(kBackward, stages, factors, images[0]),
                                      order, apply, stddev, factor_ranges);
  }
  if (grad.numel() == 0) {
    for (at::Tensor& g : grads) g.zero_();
    return grads;
  }
  const auto accumulate = images[0].scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  std::vector<at::Tensor> sums;
  sums.reserve(images.size());
  for (const at::Tensor& image : images) {
    sums.push_back(at::zeros(image.sizes(), image.options().dtype(accumulate)));
  }
  std::vector<Source> targets = sources_of(sums);
  const at::Tensor warp_rows = warp.has_value() ? warp->contiguous() : at::Tensor();
  augment_adjoint_loops.on(kBackward, grad.device().type())(
      front_grad.contiguous(), targets, geometry.contiguous(),
      settings_of(interpolation, antialias, padding_mode, fill, grad.size(2), grad.size(3),
                  warp_rows));
  for (size_t i = 0; i < grads.size(); ++i) grads[i].copy_(sums[i]);
  return grads;
}

void register_kernels(torch::Library& m) {
  m.impl("augment", &augment_kernel);
  m.impl("_augment_backward", &augment_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif
TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("augment", &augment_meta);
  m.impl("_augment_backward", &augment_backward_meta);
}

}  // namespace gpuaug
