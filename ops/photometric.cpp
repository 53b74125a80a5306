// gpuaug::photometric and its backward gpuaug::_photometric_backward: schemas, C++ callers,
// argument checks, Meta kernels and the bodies their CPU and CUDA loops share.
#include "ops/photometric.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/arange.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gpuaug/ops.h"
#include "kernels/image_layout.h"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<PhotometricLoop> photometric_loops;
Loops<PhotometricBackwardLoop> photometric_backward_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "photometric(Tensor image, int[] stages, Tensor factors, *, Tensor? order=None, "
      "Tensor? apply=None, ScalarType? dtype=None, float[]? mean=None, float[]? std=None, "
      "float[]? factor_ranges=None) -> Tensor");
  // The image's gradient from the output's (floating image and output, which then share a dtype).
  m.def(
      "_photometric_backward(Tensor grad, Tensor image, int[] stages, Tensor factors, *, "
      "Tensor? order=None, Tensor? apply=None, float[]? std=None, float[]? factor_ranges=None) "
      "-> Tensor");
}

at::Tensor photometric(const at::Tensor& image, c10::IntArrayRef stages, const at::Tensor& factors,
                       const std::optional<at::Tensor>& order,
                       const std::optional<at::Tensor>& apply, std::optional<at::ScalarType> dtype,
                       std::optional<c10::ArrayRef<double>> mean,
                       std::optional<c10::ArrayRef<double>> stddev,
                       std::optional<c10::ArrayRef<double>> factor_ranges) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::photometric", "")
          .typed<at::Tensor(const at::Tensor&, c10::IntArrayRef, const at::Tensor&,
                            const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                            std::optional<at::ScalarType>, std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(image, stages, factors, order, apply, dtype, mean, stddev, factor_ranges);
}

at::Tensor photometric_backward(const at::Tensor& grad, const at::Tensor& image,
                                c10::IntArrayRef stages, const at::Tensor& factors,
                                const std::optional<at::Tensor>& order,
                                const std::optional<at::Tensor>& apply,
                                std::optional<c10::ArrayRef<double>> stddev,
                                std::optional<c10::ArrayRef<double>> factor_ranges) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_photometric_backward", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::IntArrayRef,
                            const at::Tensor&, const std::optional<at::Tensor>&,
                            const std::optional<at::Tensor>&,
                            std::optional<c10::ArrayRef<double>>,
                            std::optional<c10::ArrayRef<double>>)>();
  return op.call(grad, image, stages, factors, order, apply, stddev, factor_ranges);
}

namespace {

using namespace photo;

constexpr const char* kOp = "gpuaug::photometric";
constexpr const char* kKindNames[] = {"",         "brightness", "contrast", "saturation",
                                      "hue",      "grayscale",  "solarize", "posterize",
                                      "invert",   "permute_channels", "autocontrast",
                                      "equalize", "color_augment", "color_augment parameter"};

bool is_image_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16 ||
         t == at::kByte;
}

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
  TORCH_CHECK(channels == 1 || channels == 3, kOp,
              ": expected 'image' with 1 or 3 channels (dimension ",
              std::to_string(image.dim() - 3), "), as torchvision's colour adjustments, but got ",
              size_str(channels));
}

// The program's checks, their messages naming `kOp` (gpuaug::photometric, or an op that runs
// its program, gpuaug::augment).
struct Checks {
  const char* kOp;

Program make_program(c10::IntArrayRef stages,
                     std::optional<c10::ArrayRef<double>> factor_ranges) {
  // none: the output conversion alone (a ColorJitter with nothing enabled)
  TORCH_CHECK(stages.size() <= static_cast<size_t>(kMaxStages), kOp, ": expected at most ",
              std::to_string(kMaxStages), " 'stages', but got ", std::to_string(stages.size()));
  Program program{};
  program.count = static_cast<int>(stages.size());
  int reductions = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    TORCH_CHECK(stages[i] >= 1 && stages[i] <= kKinds, kOp, ": expected 'stages' of codes 1 to ",
                std::to_string(kKinds), " (gpuaug.Stage), but got ",
                std::to_string(stages[i]), " at index ", std::to_string(i));
    program.kinds[i] = static_cast<uint8_t>(stages[i]);
    if (stages[i] == kContrast || stages[i] == kAutocontrast || stages[i] == kEqualize) {
      ++reductions;
      program.reduction = static_cast<int>(stages[i]);
    }
  }
  // A color_augment slot, then its five parameter slots; no parameter slot elsewhere.
  for (size_t i = 0; i < stages.size(); ++i) {
    TORCH_CHECK(stages[i] != kColorParameter, kOp,
                ": expected each color_augment parameter slot (code ",
                std::to_string(kColorParameter), ") among the ",
                std::to_string(kColorAugmentSlots - 1), " after a color_augment slot (code ",
                std::to_string(kColorAugment), "), but got one at index ", std::to_string(i));
    if (stages[i] != kColorAugment) continue;
    constexpr size_t kParameters = kColorAugmentSlots - 1;
    size_t parameters = 0;
    while (parameters < kParameters && i + parameters + 1 < stages.size() &&
           stages[i + parameters + 1] == kColorParameter) {
      ++parameters;
    }
    TORCH_CHECK(parameters == kParameters, kOp,
                ": expected the color_augment slot at index ", std::to_string(i), " followed by ",
                std::to_string(kColorAugmentSlots - 1), " parameter slots (code ",
                std::to_string(kColorParameter),
                ": the other two gains, brightness, contrast, gamma), but got ",
                std::to_string(parameters));
    i += parameters;
  }
  // One reduction pass: the statistics of one stage (a later one's would need this one's).
  TORCH_CHECK(reductions <= 1, kOp,
              ": expected at most one reduction stage (contrast, autocontrast or equalize) per "
              "call, but "
              "got ", std::to_string(reductions));
  if (!factor_ranges.has_value()) return program;
  const size_t k = stages.size();
  const auto& ranges = *factor_ranges;
  TORCH_CHECK(ranges.size() == 2 * k || ranges.size() == kDrawnTerms * k, kOp,
              ": expected 'factor_ranges' of length ", std::to_string(2 * k),
              " (each slot's low, then each slot's width) or ", std::to_string(kDrawnTerms * k),
              " (those, then each slot's factor column, coin column, coin bound, key column, "
              "key low and key width), but got ", std::to_string(ranges.size()));
  program.ranged = true;
  program.drawn = k > 0 && ranges.size() == kDrawnTerms * k;
  const auto term = [&](size_t t, size_t i) { return ranges[t * k + i]; };
  const auto column = [&](size_t t, size_t i, const char* what) {
    const double v = term(t, i);
    TORCH_CHECK(v == std::floor(v) && v >= -1 && v < (1 << 20), kOp, ": expected slot ",
                std::to_string(i), "'s ", what,
                " column in 'factor_ranges' to be an index of a column of 'factors', or -1 for "
                "none, but got ", number_str(v));
    return static_cast<int>(v);
  };
  for (size_t i = 0; i < k; ++i) {
    program.low[i] = term(0, i);
    program.width[i] = term(1, i);
    if (!program.drawn) continue;
    program.factor_column[i] = column(2, i, "factor");
    program.coin_column[i] = column(3, i, "coin");
    program.coin_below[i] = term(4, i);
    program.key_column[i] = column(5, i, "key");
    program.key_low[i] = term(6, i);
    program.key_width[i] = term(7, i);
  }
  return program;
}

// The number of columns a drawn program reads of `factors`: one past its largest column.
int64_t drawn_columns(const Program& program) {
  int64_t columns = 0;
  for (int i = 0; i < program.count; ++i) {
    for (const int c : {program.factor_column[i], program.coin_column[i], program.key_column[i]}) {
      columns = std::max<int64_t>(columns, c + 1);
    }
  }
  return columns;
}

void check_on_image_device(const char* name, const at::Tensor& t, const at::Tensor& image) {
  TORCH_CHECK(t.device() == image.device(), kOp, ": expected '", name, "' on ", image.device(),
              " like 'image', but got ", t.device());
}

// order, factors and apply: [K] (every sample) or [N, K], on the image's device.
void check_per_slot(const char* name, const at::Tensor& t, const at::Tensor& image, int64_t k,
                    const char* dtypes, bool dtype_ok) {
  TORCH_CHECK(dtype_ok, kOp, ": expected '", name, "' of dtype ", dtypes, ", but got ",
              t.scalar_type());
  const auto n = sample_count(image);
  const bool shape_ok = (t.dim() == 1 && t.sym_size(0) == k) ||
                        (t.dim() == 2 && t.sym_size(0) == n && t.sym_size(1) == k);
  TORCH_CHECK(shape_ok, kOp, ": expected '", name, "' of shape [", std::to_string(k), "] or [",
              size_str(n), ", ", std::to_string(k), "] (one per stage) for an image of shape ",
              shape_str(image.sym_sizes()), ", but got ", shape_str(t.sym_sizes()));
  check_on_image_device(name, t, image);
}

// A drawn program's uniforms: [U] or [N, U], U at least the columns it reads; order and apply
// come from them.
void check_drawn(const Program& program, const at::Tensor& factors, const at::Tensor& image,
                 const std::optional<at::Tensor>& order,
                 const std::optional<at::Tensor>& apply) {
  TORCH_CHECK(!order.has_value() && !apply.has_value(), kOp,
              ": 'factor_ranges' of length ", std::to_string(kDrawnTerms * program.count),
              " draws the order and the coins from 'factors': expected no '",
              order.has_value() ? "order" : "apply", "'");
  TORCH_CHECK(at::isFloatingType(factors.scalar_type()), kOp,
              ": expected 'factors' (uniforms) of dtype float32, float64, float16 or bfloat16, "
              "but got ", factors.scalar_type());
  const auto n = sample_count(image);
  const int64_t columns = drawn_columns(program);
  const bool shape_ok = (factors.dim() == 1 || (factors.dim() == 2 && factors.sym_size(0) == n)) &&
                        factors.sym_size(-1) >= columns;
  TORCH_CHECK(shape_ok, kOp, ": expected 'factors' (uniforms) of shape [U] or [", size_str(n),
              ", U] with U >= ", std::to_string(columns),
              " (the columns 'factor_ranges' reads) for an image of shape ",
              shape_str(image.sym_sizes()), ", but got ", shape_str(factors.sym_sizes()));
  check_on_image_device("factors", factors, image);
}

// Values are checked where they are on the CPU (no synchronisation); on the GPU the kernels apply
// the formulas to whatever they hold and skip order entries that are not slots. Ranged, the
// factors the kernels make of the uniforms (slot_factor) are checked.
void check_factor_values(const Program& program, const at::Tensor& factors, bool float_compute,
                         bool uint8_image, bool one_channel) {
  if (!factors.device().is_cpu() || factors.numel() == 0) return;
  const at::Tensor rows = factors.to(at::kDouble).reshape({-1, factors.size(-1)});
  const auto values = rows.accessor<double, 2>();
  const auto in_compute = [&](double v) { return float_compute ? static_cast<float>(v) : v; };
  for (int64_t n = 0; n < rows.size(0); ++n) {
    for (int j = 0; j < program.count; ++j) {
      const int column = program.drawn ? program.factor_column[j] : j;
      double v = column < 0 ? 0.0 : values[n][column];
      if (program.ranged) v = ranged_factor(program, j, in_compute(v));
      const int kind = program.kinds[j];
      const char* name = kKindNames[kind];
      bool ok = true;
      const char* expected = "";
      switch (kind) {
        case kBrightness:
        case kContrast:
        case kSaturation:
          ok = v >= 0, expected = ">= 0";
          break;
        case kHue:
          ok = v >= -0.5 && v <= 0.5, expected = "in [-0.5, 0.5]";
          break;
        case kSolarize:  // NaN passes: no value reaches it, as in torchvision's comparison
          ok = !(v > (uint8_image ? 255.0 : 1.0)),
          expected = uint8_image ? "<= 255 (the image's maximum)" : "<= 1 (the image's maximum)";
          break;
        case kPosterize:
          ok = v >= 0 && v <= 8 && v == static_cast<int>(v), expected = "an integer in [0, 8]";
          break;
        case kPermuteChannels: {
          const int code = static_cast<int>(v);
          const int p0 = code % 3, p1 = code / 3 % 3, p2 = code / 9;
          if (one_channel && !program.ranged) {  // ranged: a permutation one channel ignores
            ok = v == 0, expected = "0 (the one channel stays)";
          } else {
            ok = v == code && code >= 0 && p2 < 3 && p0 != p1 && p1 != p2 && p0 != p2;
            expected = "p0 + 3 p1 + 9 p2 for a permutation (p0, p1, p2) of (0, 1, 2)";
          }
          break;
        }
        case kColorParameter:  // the last is gamma: color_transform's CPU check, > 0
          if (is_gamma_slot(program, j)) ok = v > 0, expected = "> 0", name = "color_augment gamma";
          break;
        default:
          break;
      }
      TORCH_CHECK(ok, kOp, ": expected the ", name, " factor (slot ",
                  std::to_string(j), ") ", expected, ", but got ", number_str(v));
    }
  }
}

void check_order_values(const at::Tensor& order, int64_t k) {
  if (!order.device().is_cpu() || order.numel() == 0 || order.scalar_type() != at::kLong) return;
  const at::Tensor rows = order.reshape({-1, k});
  const at::Tensor sorted = std::get<0>(rows.sort(1));
  const at::Tensor bad = sorted.ne(at::arange(k, order.options())).any(1);
  if (!bad.any().item<bool>()) return;
  const int64_t row = bad.nonzero().select(0, 0).item<int64_t>();
  const at::Tensor values = rows.select(0, row).to(at::kDouble).contiguous();
  TORCH_CHECK(false, kOp, ": expected each row of 'order' to be a permutation of 0..",
              std::to_string(k - 1), ", but row ", std::to_string(row), " is ",
              values_str({values.const_data_ptr<double>(), static_cast<size_t>(k)}));
}

void check_output(const at::Tensor& image, at::ScalarType out_dtype,
                  std::optional<c10::ArrayRef<double>> mean,
                  std::optional<c10::ArrayRef<double>> stddev) {
  const auto in_dtype = image.scalar_type();
  const bool pair_ok = out_dtype == in_dtype ||
                       (in_dtype == at::kByte && is_image_dtype(out_dtype)) ||
                       (out_dtype == at::kByte && is_image_dtype(in_dtype));
  TORCH_CHECK(pair_ok, kOp,
              ": expected 'dtype' to be the image's dtype, a floating dtype for a uint8 image or "
              "uint8 for a floating one, but got ", out_dtype, " for a ", in_dtype, " image");
  check_normalisation(kOp, image.sym_size(image.dim() - 3), out_dtype, mean, stddev);
}

};

}  // namespace

photo::Program check_program(const char* op, const at::Tensor& image, c10::IntArrayRef stages,
                             const at::Tensor& factors, const std::optional<at::Tensor>& order,
                             const std::optional<at::Tensor>& apply, at::ScalarType out_dtype,
                             std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev,
                             std::optional<c10::ArrayRef<double>> factor_ranges) {
  Checks checks{op};
  const Program program = checks.make_program(stages, factor_ranges);
  const int64_t k = program.count;
  if (program.drawn) {
    checks.check_drawn(program, factors, image, order, apply);
  } else {
    checks.check_per_slot("factors", factors, image, k, "float32, float64, float16 or bfloat16",
                          at::isFloatingType(factors.scalar_type()));
  }
  if (order.has_value()) {
    checks.check_per_slot("order", *order, image, k, "int64 (permutations) or floating (keys)",
                          order->scalar_type() == at::kLong ||
                              at::isFloatingType(order->scalar_type()));
  }
  if (apply.has_value()) {
    checks.check_per_slot("apply", *apply, image, k, "bool", apply->scalar_type() == at::kBool);
  }
  checks.check_output(image, out_dtype, mean, stddev);
  return program;
}

void check_program_values(const char* op, const photo::Program& program, const at::Tensor& image,
                          const at::Tensor& factors, const std::optional<at::Tensor>& order) {
  Checks checks{op};
  checks.check_factor_values(program, factors, image.scalar_type() != at::kDouble,
                             image.scalar_type() == at::kByte, image.size(image.dim() - 3) == 1);
  if (order.has_value()) checks.check_order_values(*order, program.count);
}

at::Tensor photometric_meta(const at::Tensor& image, c10::IntArrayRef stages,
                            const at::Tensor& factors, const std::optional<at::Tensor>& order,
                            const std::optional<at::Tensor>& apply,
                            std::optional<at::ScalarType> dtype,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev,
                            std::optional<c10::ArrayRef<double>> factor_ranges) {
  check_defined(kOp, "image", image);
  check_defined(kOp, "factors", factors);
  check_image(image);
  const auto out_dtype = dtype.value_or(image.scalar_type());
  check_program(kOp, image, stages, factors, order, apply, out_dtype, mean, stddev,
                factor_ranges);
  return empty_like_image(image, out_dtype);
}

at::Tensor photometric_backward_meta(const at::Tensor& grad, const at::Tensor& image,
                                     c10::IntArrayRef stages, const at::Tensor& factors,
                                     const std::optional<at::Tensor>& order,
                                     const std::optional<at::Tensor>& apply,
                                     std::optional<c10::ArrayRef<double>> stddev,
                                     std::optional<c10::ArrayRef<double>> factor_ranges) {
  constexpr const char* kBackward = "gpuaug::_photometric_backward";
  check_defined(kBackward, "grad", grad);
  const at::Tensor grad_image = photometric_meta(image, stages, factors, order, apply,
                                                 std::nullopt, std::nullopt, std::nullopt,
                                                 factor_ranges);
  TORCH_CHECK(at::isFloatingType(image.scalar_type()), kBackward,
              ": gradients need a floating 'image', but got ", image.scalar_type());
  const int reduction = Checks{kBackward}.make_program(stages, std::nullopt).reduction;
  TORCH_CHECK(reduction != kAutocontrast && reduction != kEqualize, kBackward, ": ",
              kKindNames[reduction],
              " has no gradient (torchvision's cannot be differentiated either)");
  TORCH_CHECK(!stddev || image.sym_size(image.dim() - 3) == static_cast<int64_t>(stddev->size()),
              kBackward, ": expected 'std' of length ", size_str(image.sym_size(image.dim() - 3)),
              " (one value per channel), but got ", std::to_string(stddev ? stddev->size() : 0));
  TORCH_CHECK(grad.sym_sizes() == image.sym_sizes() && grad.device() == image.device() &&
                  grad.scalar_type() == image.scalar_type(),
              kBackward, ": expected 'grad' of shape ", shape_str(image.sym_sizes()), ", dtype ",
              image.scalar_type(), " on ", image.device(), " (the output's), but got ",
              shape_str(grad.sym_sizes()), ", ", grad.scalar_type(), " on ", grad.device());
  return grad_image;
}

at::Tensor per_sample_rows(const at::Tensor& t, at::ScalarType dtype) {
  const at::Tensor rows = t.scalar_type() == dtype ? t : t.to(dtype);
  return rows.stride(-1) == 1 ? rows : rows.contiguous();
}

at::Tensor order_rows(const std::optional<at::Tensor>& order) {
  if (!order.has_value()) return at::Tensor();
  const auto dtype = order->scalar_type();
  return per_sample_rows(*order, dtype == at::kLong || dtype == at::kDouble ? dtype : at::kFloat);
}

at::Tensor apply_rows(const std::optional<at::Tensor>& apply) {
  return apply.has_value() ? per_sample_rows(*apply, at::kBool) : at::Tensor();
}

namespace {

at::Tensor photometric_kernel(const at::Tensor& image, c10::IntArrayRef stages,
                              const at::Tensor& factors, const std::optional<at::Tensor>& order,
                              const std::optional<at::Tensor>& apply,
                              std::optional<at::ScalarType> dtype,
                              std::optional<c10::ArrayRef<double>> mean,
                              std::optional<c10::ArrayRef<double>> stddev,
                              std::optional<c10::ArrayRef<double>> factor_ranges) {
  at::Tensor out =
      photometric_meta(image, stages, factors, order, apply, dtype, mean, stddev, factor_ranges);
  const Program program = Checks{kOp}.make_program(stages, factor_ranges);
  const auto compute = image.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  check_program_values(kOp, program, image, factors, order);
  if (out.numel() == 0) return out;
  photometric_loops.on(kOp, image.device().type())(out, image, program,
                                                   per_sample_rows(factors, compute),
                                                   order_rows(order), apply_rows(apply), mean,
                                                   stddev);
  return out;
}

at::Tensor photometric_backward_kernel(const at::Tensor& grad, const at::Tensor& image,
                                       c10::IntArrayRef stages, const at::Tensor& factors,
                                       const std::optional<at::Tensor>& order,
                                       const std::optional<at::Tensor>& apply,
                                       std::optional<c10::ArrayRef<double>> stddev,
                                       std::optional<c10::ArrayRef<double>> factor_ranges) {
  at::Tensor grad_image =
      photometric_backward_meta(grad, image, stages, factors, order, apply, stddev, factor_ranges);
  if (grad_image.numel() == 0) return grad_image;
  const auto compute = image.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  photometric_backward_loops.on("gpuaug::_photometric_backward", image.device().type())(
      grad_image, grad, image, Checks{kOp}.make_program(stages, factor_ranges),
      per_sample_rows(factors, compute),
      order_rows(order), apply_rows(apply), stddev);
  return grad_image;
}

void register_kernels(torch::Library& m) {
  m.impl("photometric", &photometric_kernel);
  m.impl("_photometric_backward", &photometric_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif
TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("photometric", &photometric_meta);
  m.impl("_photometric_backward", &photometric_backward_meta);
}

}  // namespace gpuaug
