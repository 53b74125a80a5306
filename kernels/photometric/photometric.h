// What gpuaug::photometric's op body (ops/photometric.cpp) and its CPU and CUDA loops share: the
// stage kinds, the program as the host knows it and as a sample runs it, and the table of loops.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>
#include <c10/util/ArrayRef.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "kernels/color_math.h"
#include "kernels/image_layout.h"
#include "kernels/loops.h"

namespace gpuaug::photo {

// Stage kinds, the codes of the op's `stages` argument (and of gpuaug.Stage).
enum Kind : uint8_t {
  kBrightness = 1,       // factor: brightness_factor >= 0
  kContrast = 2,         // factor: contrast_factor >= 0 (blends with the grayscale mean)
  kSaturation = 3,       // factor: saturation_factor >= 0
  kHue = 4,              // factor: hue_factor in [-0.5, 0.5]
  kGrayscale = 5,        // factor unused; keeps the channel count
  kSolarize = 6,         // factor: threshold, in the image's value range (uint8: 0..255)
  kPosterize = 7,        // factor: bits, 0..8
  kInvert = 8,           // factor unused
  kPermuteChannels = 9,  // factor: p0 + 3 p1 + 9 p2, output channel c = input channel p_c
  kAutocontrast = 10,    // factor unused; per image and channel, min..max stretched to the range
  kEqualize = 11,        // factor unused; per image and channel, through its histogram's table
  kColorAugment = 12,    // gpuaug::color_transform's formula, its result as color_transform's
                         // output of the image's dtype holds it; factor: the first channel's
                         // gain, the next five slots' (kColorParameter): the other two gains,
                         // brightness, contrast and gamma
  kColorParameter = 13,  // a parameter of the kColorAugment slot before it; no step of its own
};
constexpr int kKinds = 13;
// The slots a kColorAugment stage takes: its own and five kColorParameter slots.
constexpr int kColorAugmentSlots = 6;

// Slots per call: ColorJitter's four, RandomPhotometricDistort's five, a Compose's more.
constexpr int kMaxStages = 16;

// The kind of each slot: the same for every sample (the host's part of the program). Ranged
// (the op's factor_ranges), slot k's factor is fma(width[k], u, low[k]) in float64, u its
// `factors` entry, rounded to float32 (is_gamma_slot: exp of it; a kPermuteChannels slot: the
// permutation number floor of it, see ranged_permutation): a transform's fresh draws pass their
// uniforms, not the factors a kernel would make of them before each call. Drawn (factor_ranges'
// long form), `factors` holds each sample's uniforms, which give every slot's factor, coin and
// order key by column (-1: none): the draws need no kernels of their own.
// factor_ranges' values per slot in its long (drawn) form.
constexpr size_t kDrawnTerms = 8;

struct Program {
  int count;
  uint8_t kinds[kMaxStages];
  int reduction;  // the kind of its one reduction stage (contrast, autocontrast, equalize), or
                 // 0: then a reduction pass (a histogram pass for equalize) runs first
  bool ranged;
  double low[kMaxStages];
  double width[kMaxStages];
  bool drawn;
  int factor_column[kMaxStages];  // its uniform (none: u = 0, the factor is low)
  int coin_column[kMaxStages];    // applied where float32(u) < float32(coin_below) (none: always)
  double coin_below[kMaxStages];
  int key_column[kMaxStages];  // key fma(key_width, u, key_low) in float64 (none: key_low)
  double key_low[kMaxStages];
  double key_width[kMaxStages];
};

// Whether `slot` is a color_augment stage's gamma (its fifth parameter slot). Ranged, its range
// is log gamma's (ColorAugment draws log gamma uniformly): its factor is exp of the value.
C10_HOST_DEVICE inline bool is_gamma_slot(const Program& program, int64_t slot) {
  constexpr int kGammaOffset = kColorAugmentSlots - 1;
  return slot >= kGammaOffset && program.kinds[slot] == kColorParameter &&
         program.kinds[slot - kGammaOffset] == kColorAugment;
}

// A ranged kPermuteChannels slot's code for its value v: permutation floor(v), clamped to 0..5,
// of the six of (0, 1, 2) in lexicographic order (NaN: the first). A uniform times 6 draws one
// as torch.randperm(3) does.
C10_HOST_DEVICE inline float ranged_permutation(double v) {
  // the codes p0 + 3 p1 + 9 p2 (21, 15, 19, 7, 11, 5), 5 bits each: no table in memory
  constexpr uint32_t kPackedCodes = 21u | 15u << 5 | 19u << 10 | 7u << 15 | 11u << 20 | 5u << 25;
  const int number = (v >= 1) + (v >= 2) + (v >= 3) + (v >= 4) + (v >= 5);
  return static_cast<float>(kPackedCodes >> (5 * number) & 31u);
}

// A reduction pass's partial statistics per block: contrast's sum of grays, or autocontrast's
// three channel minima then three maxima.
constexpr int kStats = 6;

// Equalize's histograms and tables: kBins per channel, of the image's uint8 values at that step.
constexpr int kBins = 256;

// What a reduction stage needs of its image, as the element-wise pass reads it.
template <typename P>
struct Reduced {
  P mean;          // contrast: the grayscale mean
  P low[3];        // autocontrast: each channel's minimum (0 where the channel is flat)
  P inv_scale[3];  // autocontrast: (maximum - minimum) / the range's bound (1 where flat)
  const uint8_t* table;  // equalize: per channel, kBins values (the identity where torchvision
                         // leaves the channel as it is)
};

// Row n of a per-sample parameter: [N, K] (rows `stride` apart: 0 for one row expanded over the
// samples) or [K], every sample's (stride 0).
template <typename T>
struct Row {
  const T* data;
  int64_t stride;
  C10_HOST_DEVICE const T* operator[](int64_t n) const { return data + n * stride; }
  C10_HOST_DEVICE explicit operator bool() const { return data != nullptr; }
};

// The program's per-sample parameters. The order is a permutation per row (`order`), or keys
// whose ascending order it is (float or double keys), or absent (the slots' own order).
template <typename P>
struct Rows {
  Row<P> factors;
  Row<int64_t> order;
  Row<float> float_keys;
  Row<double> double_keys;
  Row<bool> apply;  // or absent: every slot applies
};

template <typename P>
struct Step {
  int kind;
  P a;  // the factor
  P b;  // derived: 1 - factor for blends, 2^bits for posterize, uint8's brightness factor
  bool unit;  // blends: both weights in [0, 1]; brightness: uint8's factor at most 1
  P gains[3];                     // color_augment: the channels' gains
  color::SampleParams<P> jitter;  // color_augment: brightness, contrast, gamma
};

// One sample's program: its applied stages in its order.
template <typename P>
struct SampleProgram {
  int count;
  int reduce_at;  // the index of its reduction step, or -1
  Step<P> steps[kMaxStages];
};

// The final conversion: mean / std only with a floating output, as one multiply-add,
// v * inv_std + offset (offset = -mean / std; uint8 images' unscaled values take inv_std_u8 =
// 1 / (255 std)): within two ulps of torchvision's scaling, subtraction and division. Without
// normalisation inv_std_u8 is 1/255 and offset 0 (uint8 to floating is that product). A uint8
// image's float64 output is torchvision's arithmetic in float64, (v * (1 / 255) - mean) / std
// (mean 0 and std 1 without normalisation): the same values.
template <typename P>
struct Output {
  bool normalize;
  P inv_std[3];
  P inv_std_u8[3];
  P offset[3];
  double mean_f64[3];
  double std_f64[3];
};

}  // namespace gpuaug

namespace gpuaug {

// The loop fills `out` (allocated and checked by the op's body). factors ([N, K] or [K]) is in the
// compute dtype; order (int64, float32 or float64) and apply (bool) are undefined or of those
// shapes, all of them on the image's device with contiguous rows (photometric_rows); the image is
// planar or interleaved (dense_image).
using PhotometricLoop = void (*)(const at::Tensor& out, const at::Tensor& image,
                                 const photo::Program& program, const at::Tensor& factors,
                                 const at::Tensor& order, const at::Tensor& apply,
                                 std::optional<c10::ArrayRef<double>> mean,
                                 std::optional<c10::ArrayRef<double>> stddev);
extern Loops<PhotometricLoop> photometric_loops;

// The backward loop fills `grad_image` (a floating image's gradient, of its dtype and layout) from
// `grad` (the output's gradient, in that layout); the program's arguments are as the forward's.
using PhotometricBackwardLoop = void (*)(const at::Tensor& grad_image, const at::Tensor& grad,
                                         const at::Tensor& image, const photo::Program& program,
                                         const at::Tensor& factors, const at::Tensor& order,
                                         const at::Tensor& apply,
                                         std::optional<c10::ArrayRef<double>> stddev);
extern Loops<PhotometricBackwardLoop> photometric_backward_loops;

template <typename T>
struct PhotometricType {
  using type = T;
};

// Calls f(PhotometricType<T>{}, PhotometricType<out_t>{}) for the pairs the op takes (checked
// by it): the image's own dtype, floating from uint8, uint8 from floating.
template <typename F>
void photometric_dispatch(at::ScalarType in, at::ScalarType out, F&& f) {
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in, "gpuaug::photometric", [&] {
    using T = scalar_t;
    if (out == in) {
      f(PhotometricType<T>{}, PhotometricType<T>{});
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out, "gpuaug::photometric", [&] {
        f(PhotometricType<T>{}, PhotometricType<scalar_t>{});
      });
    } else {
      f(PhotometricType<T>{}, PhotometricType<uint8_t>{});
    }
  });
}

template <typename T>
photo::Row<T> photometric_row(const at::Tensor& t) {
  if (!t.defined()) return {nullptr, 0};
  return {t.const_data_ptr<T>(), t.dim() == 1 ? 0 : t.stride(0)};
}

// The loops' view of their parameters (as the op's body passes them).
template <typename P>
photo::Rows<P> photometric_rows(const at::Tensor& factors, const at::Tensor& order,
                                const at::Tensor& apply) {
  photo::Rows<P> rows{photometric_row<P>(factors), {}, {}, {}, photometric_row<bool>(apply)};
  if (!order.defined()) return rows;
  if (order.scalar_type() == at::kLong) rows.order = photometric_row<int64_t>(order);
  if (order.scalar_type() == at::kFloat) rows.float_keys = photometric_row<float>(order);
  if (order.scalar_type() == at::kDouble) rows.double_keys = photometric_row<double>(order);
  return rows;
}

// The output conversion's constants for compute type P.
template <typename P>
photo::Output<P> photometric_output(std::optional<c10::ArrayRef<double>> mean,
                                          std::optional<c10::ArrayRef<double>> stddev) {
  photo::Output<P> o{};
  o.normalize = mean.has_value();
  for (int c = 0; c < 3; ++c) {  // to_dtype's scale
    o.inv_std_u8[c] = static_cast<P>(1.0 / 255.0);
    o.std_f64[c] = 1.0;
  }
  for (size_t c = 0; o.normalize && c < mean->size(); ++c) {
    o.inv_std[c] = static_cast<P>(1.0 / (*stddev)[c]);
    o.inv_std_u8[c] = static_cast<P>(1.0 / (255.0 * (*stddev)[c]));
    o.offset[c] = static_cast<P>(-(*mean)[c] / (*stddev)[c]);
    o.mean_f64[c] = (*mean)[c];
    o.std_f64[c] = (*stddev)[c];
  }
  return o;
}

// 1 / std per channel (1 without normalisation): the output's gradient to the program's.
template <typename P>
photo::Output<P> photometric_grad_scale(std::optional<c10::ArrayRef<double>> stddev) {
  photo::Output<P> o{};
  o.normalize = stddev.has_value();
  for (int c = 0; c < 3; ++c) {
    const bool given = stddev.has_value() && c < static_cast<int>(stddev->size());
    o.inv_std[c] = given ? static_cast<P>(1.0 / (*stddev)[c]) : P(1);
  }
  return o;
}

}  // namespace gpuaug
