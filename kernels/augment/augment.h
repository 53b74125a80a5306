// What gpuaug::augment's op body (ops/augment.cpp) and its CPU and CUDA loops share: the images
// as the loops read them, a sample's geometry row, and the arithmetic of each output pixel's
// source value (window, flips, padding, then torchvision's resize: torch's interpolate, whose
// index and weight formulas, in float, are repeated here so both backends compute them alike).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>
#include <c10/util/ArrayRef.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/loops.h"
#include "kernels/photometric/photometric.h"

namespace gpuaug::geo {

enum Interpolation : int { kNearest = 0, kBilinear = 1, kBicubic = 2, kNearestExact = 3 };
enum PaddingMode : int { kConstant = 0, kEdge = 1, kReflect = 2, kSymmetric = 3 };

// The columns of the op's `geometry` rows (docs/operators.md).
enum Column : int {
  kTop, kLeft, kHeight, kWidth, kWindowFlip, kResizedHeight, kResizedWidth, kOutTop, kOutLeft,
  kOutFlip, kColumns
};
constexpr int64_t kHorizontal = 1, kVertical = 2;  // flip bits

// One element of the op's `images`: its samples' first index among all, and its strides in
// elements ([C, H, W] elements: one sample, sample_stride unused).
struct Source {
  const void* data;
  int64_t first_sample, samples;
  int64_t height, width;
  int64_t sample_stride, channel_stride, row_stride, column_stride;
};

// The batch-wide settings.
struct Settings {
  int interpolation;
  bool antialias;
  int padding_mode;
  double fill[3];
  int64_t out_height, out_width;
  // torch's CPU resize of uint8 (bilinear, bicubic): two passes (rows, then columns) through a
  // uint8 image, each tap row's sum rounded.
  bool uint8_passes;
  // The op's `warp` rows ([S, 9] float64, warp.h), or null; warp_fill: the warp fills through
  // torchvision's mask with `fill` (the op's fill given), else leaves zeros.
  const double* warp;
  bool warp_fill;
};

struct SampleGeometry {
  int64_t top, left, height, width;
  bool window_hflip, window_vflip;
  int64_t resized_height, resized_width;
  int64_t out_top, out_left;
  bool out_hflip, out_vflip;
};

C10_HOST_DEVICE inline SampleGeometry sample_geometry(const int64_t* row) {
  return {row[kTop],           row[kLeft],
          row[kHeight],        row[kWidth],
          (row[kWindowFlip] & kHorizontal) != 0, (row[kWindowFlip] & kVertical) != 0,
          row[kResizedHeight], row[kResizedWidth],
          row[kOutTop],        row[kOutLeft],
          (row[kOutFlip] & kHorizontal) != 0,    (row[kOutFlip] & kVertical) != 0};
}

// i modulo m, in [0, m).
C10_HOST_DEVICE inline int64_t floor_mod(int64_t i, int64_t m) {
  const int64_t r = i % m;
  return r < 0 ? r + m : r;
}

// The image index of window coordinate k along one axis (the window starts at `start`, spans
// `extent`, mirrored where `flip`), or -1 where constant padding gives the pixel. Reflect and
// symmetric fold again beyond one image width (torch's pad stops at one).
C10_HOST_DEVICE inline int64_t source_index(int64_t k, int64_t start, int64_t extent, bool flip,
                                            int64_t size, int mode) {
  const int64_t i = start + (flip ? extent - 1 - k : k);
  if (i >= 0 && i < size) return i;
  if (mode == kEdge) return i < 0 ? 0 : size - 1;
  if (mode == kReflect) {
    if (size == 1) return 0;
    const int64_t m = floor_mod(i, 2 * (size - 1));
    return m < size ? m : 2 * (size - 1) - m;
  }
  if (mode == kSymmetric) {
    const int64_t m = floor_mod(i, 2 * size);
    return m < size ? m : 2 * size - 1 - m;
  }
  return -1;
}

// torch's antialiasing filters (support 1 and 2) and its cubic convolution (A = -0.75).
C10_HOST_DEVICE inline float triangle_filter(float x) {
  x = x < 0 ? -x : x;
  return x < 1.0f ? 1.0f - x : 0.0f;
}

C10_HOST_DEVICE inline float aa_cubic_filter(float x) {
  constexpr float a = -0.5f;
  x = x < 0 ? -x : x;
  if (x < 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
  if (x < 2.0f) return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * a;
  return 0.0f;
}

C10_HOST_DEVICE inline float cubic_near(float x) {  // |x| <= 1
  constexpr float A = -0.75f;
  return ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
}

C10_HOST_DEVICE inline float cubic_far(float x) {  // 1 < |x| < 2
  constexpr float A = -0.75f;
  return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
}

// Taps beyond this many are recomputed as they are read (downscales by more than about 4x).
constexpr int kCachedTaps = 8;

// One axis of a resize at output coordinate i: its taps, window coordinates first..first+count-1
// (clamped into the window without antialias), and their weights.
struct Axis {
  int64_t first;
  int count;
  int64_t extent;  // the window's
  int kind;        // 0: weights given (w), 1: antialiased triangle, 2: antialiased cubic
  bool clamp;      // without antialias: taps beyond the window read its edge
  float w[4];
  float center_offset, invscale, total;  // antialiased: filter((j + center_offset) * invscale)

  C10_HOST_DEVICE int64_t coordinate(int j) const {
    const int64_t k = first + j;
    if (!clamp) return k;
    return k < 0 ? 0 : (k >= extent ? extent - 1 : k);
  }

  C10_HOST_DEVICE float raw_weight(int j) const {
    const float x = (static_cast<float>(j) + center_offset) * invscale;
    return kind == 1 ? triangle_filter(x) : aa_cubic_filter(x);
  }

  C10_HOST_DEVICE float weight(int j) const {
    if (kind == 0) return w[j & 3];  // count <= 4 here; the mask keeps unrolled callers in bounds
    const float v = raw_weight(j);
    return total != 0.0f ? v / total : v;
  }
};

// The taps of output coordinate i of a resize from `in` to `out` (in != out), as torch's
// interpolate computes them (align_corners=False, no scale factor: scale in / out in float).
C10_HOST_DEVICE inline Axis resize_axis(int64_t i, int64_t in, int64_t out, int interpolation,
                                        bool antialias) {
  Axis a{};
  a.extent = in;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float fi = static_cast<float>(i);
  if (interpolation == kNearest || interpolation == kNearestExact) {
    const float src = interpolation == kNearest ? fi * scale : (fi + 0.5f) * scale;
    const int64_t k = static_cast<int64_t>(std::floor(src));
    a.first = k < in - 1 ? k : in - 1;
    a.count = 1;
    a.w[0] = 1.0f;
    return a;
  }
  if (antialias) {
    const float support = (interpolation == kBilinear ? 1.0f : 2.0f) * (scale >= 1.0f ? scale : 1.0f);
    const float center = scale * (fi + 0.5f);
    const int64_t lo = static_cast<int64_t>(center - support + 0.5f);
    const int64_t xmin = lo > 0 ? lo : 0;
    const int64_t hi = static_cast<int64_t>(center + support + 0.5f);
    a.first = xmin;
    a.count = static_cast<int>((hi < in ? hi : in) - xmin);
    a.kind = interpolation == kBilinear ? 1 : 2;
    a.center_offset = static_cast<float>(xmin) - center + 0.5f;
    a.invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
    float total = 0.0f;
    for (int j = 0; j < a.count; ++j) total += a.raw_weight(j);
    a.total = total;
    return a;
  }
  const float real = scale * (fi + 0.5f) - 0.5f;
  if (interpolation == kBilinear) {
    const float src = real < 0.0f ? 0.0f : real;
    const int64_t k = static_cast<int64_t>(src);
    const float lambda = src - static_cast<float>(k);
    a.first = k;
    a.count = 2;
    a.clamp = true;  // at the last pixel torch reads it twice
    a.w[0] = 1.0f - lambda;
    a.w[1] = lambda;
    return a;
  }
  const float fk = std::floor(real);
  const float t = real - fk;
  a.first = static_cast<int64_t>(fk) - 1;
  a.count = 4;
  a.clamp = true;
  a.w[0] = cubic_far(t + 1.0f);
  a.w[1] = cubic_near(t);
  a.w[2] = cubic_near(1.0f - t);
  a.w[3] = cubic_far(2.0f - t);
  return a;
}

// The value an interpolated float has in the image's dtype T (as P): torchvision resizes uint8
// in float32 and rounds half to even after clamping to [0, 255] (bicubic; bilinear stays in
// range); half types round to T.
template <typename T, typename P>
C10_HOST_DEVICE inline P held_as(P v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    v = v < P(0) ? P(0) : (v > P(255) ? P(255) : v);
    return std::nearbyint(v);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<P>(static_cast<float>(static_cast<T>(static_cast<float>(v))));
  }
}

}  // namespace gpuaug::geo

namespace gpuaug {

// The loop fills `out` ([S, C, H, W] in any layout, allocated and checked by the op's body):
// `sources` are the images (checked: one dtype, device and channel count), geometry [S, 10] int64
// contiguous, factors/order/apply as photometric's loops take them (rows per sample).
using AugmentLoop = void (*)(const at::Tensor& out, const std::vector<geo::Source>& sources,
                             at::ScalarType image_dtype, const at::Tensor& geometry,
                             const geo::Settings& settings, const photo::Program& program,
                             const at::Tensor& factors, const at::Tensor& order,
                             const at::Tensor& apply, std::optional<c10::ArrayRef<double>> mean,
                             std::optional<c10::ArrayRef<double>> stddev);
extern Loops<AugmentLoop> augment_loops;

// The adjoint of the geometric front: adds each output pixel's gradient `grad` ([S, C, H, W],
// the image's dtype) into the gradients of its source pixels. `grads` are zeroed buffers in the
// images' layout described by `sources` (their data pointers are the buffers'), of dtype float32
// (float64 for float64 images).
using AugmentAdjointLoop = void (*)(const at::Tensor& grad,
                                    const std::vector<geo::Source>& grads,
                                    const at::Tensor& geometry, const geo::Settings& settings);
extern Loops<AugmentAdjointLoop> augment_adjoint_loops;

}  // namespace gpuaug
