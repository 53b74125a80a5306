// gpuaug::auto_augment's arithmetic, shared by its CPU and CUDA loops: each sample runs chains of
// torchvision's AutoAugment operations (the op's `operations` codes and `magnitudes`, as
// torchvision's _AutoAugmentBase._apply_image_or_video_transform takes a name and a magnitude),
// and a chain's image is evaluated pixel by pixel. A pixel of the image after operation k is that
// operation applied to the pixels it reads of the image before it: a nearest warp reads one pixel
// (or none: fill), a bilinear warp four, sharpness nine, the photometric operations the pixel
// itself. Each is computed as torchvision computes it and held as its dtype holds it, so the
// chain's values are those of torchvision's intermediate images. An operation that reads
// neighbours after another one is not evaluated through it (taps of taps) but reads its input
// written as an image by a pass of its own (stage_bases). The reductions (contrast,
// autocontrast, equalize) read statistics of their whole input image, gathered by a pass over it
// before the passes that read them (ReductionSlot).
#pragma once

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

#include "kernels/augment/augment.h"
#include "kernels/augment/warp.h"
#include "kernels/photometric/program.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::policy {

// The op's operation codes: torchvision's names, in this order.
enum Name : int {
  kIdentity, kShearX, kShearY, kTranslateX, kTranslateY, kRotate, kBrightness, kColor, kContrast,
  kSharpness, kPosterize, kSolarize, kAutoContrast, kEqualize, kInvert, kNames
};

// Operations a chain at most (the op's check): the stage tables below hold that many.
constexpr int kMaxDepth = 4;

// What an operation does, decoded once a call from its name and magnitude (decode).
enum Kind : int { kNone, kWarp, kSharpen, kStep };

template <typename P>
struct Decoded {
  int kind;
  photo::Step<P> step;  // kStep: the photometric op's stage and factor
  P alpha;              // kSharpen: 1 - sharpness_factor, add_'s alpha
  geo::WarpGrid<P> grid;  // kWarp
};

// What a reduction reads of its input image, gathered by a statistics pass.
template <typename P>
struct ReductionSlot {
  P mean;
  P low[3];
  P inv_scale[3];
  uint8_t table[3 * photo::kBins];

  C10_HOST_DEVICE photo::Reduced<P> reduced() const {
    return {mean, {low[0], low[1], low[2]}, {inv_scale[0], inv_scale[1], inv_scale[2]}, table};
  }
};

// Python's float % 360 (the result takes the divisor's sign), as rotate_image reduces its angle.
C10_HOST_DEVICE inline double python_mod_360(double a) {
  const double r = std::fmod(a, 360.0);
  return r < 0.0 ? r + 360.0 : (r == 0.0 ? 0.0 : r);
}

constexpr double kRadians = 3.141592653589793 / 180.0;  // math.radians' factor
constexpr double kDegrees = 180.0 / 3.141592653589793;  // math.degrees'

// torchvision's _get_inverse_affine_matrix (in its order of operations, in double) as a warp
// row: 6 coefficients, the perspective's two zeros, the kind.
C10_HOST_DEVICE inline void inverse_affine(double center_x, double center_y, double angle,
                                           double translate_x, double translate_y,
                                           double shear_x, double shear_y, double (&row)[9]) {
  const double rot = angle * kRadians, sx = shear_x * kRadians, sy = shear_y * kRadians;
  const double cos_sy = std::cos(sy), tan_sx = std::tan(sx);
  const double rot_minus_sy = rot - sy;
  const double cx_plus_tx = center_x + translate_x, cy_plus_ty = center_y + translate_y;
  const double a = std::cos(rot_minus_sy) / cos_sy;
  const double b = -(a * tan_sx + std::sin(rot));
  const double c = std::sin(rot_minus_sy) / cos_sy;
  const double d = std::cos(rot) - c * tan_sx;
  row[0] = d;
  row[1] = -b;
  row[3] = -c;
  row[4] = a;
  row[2] = 0.0 + (center_x - row[0] * cx_plus_tx - row[1] * cy_plus_ty);
  row[5] = 0.0 + (center_y - row[3] * cx_plus_tx - row[4] * cy_plus_ty);
  row[6] = row[7] = 0.0;
  row[8] = geo::kAffine;
}

// An operation as torchvision's _apply_image_or_video_transform runs it on an image of
// width x height of dtype T: affine (shears about the corner, translations by whole pixels),
// rotate (about the centre), or the photometric function with its factor.
template <typename T, typename P>
C10_HOST_DEVICE inline Decoded<P> decode(int name, double magnitude, int64_t width,
                                         int64_t height) {
  Decoded<P> d{};
  d.kind = kNone;
  double row[9];
  const double w = static_cast<double>(width), h = static_cast<double>(height);
  switch (name) {
    case kShearX:
    case kShearY: {
      const double shear = std::atan(magnitude) * kDegrees;
      inverse_affine(-0.5 * w, -0.5 * h, 0.0, 0.0, 0.0, name == kShearX ? shear : 0.0,
                     name == kShearX ? 0.0 : shear, row);
      d.kind = kWarp;
      break;
    }
    case kTranslateX:
    case kTranslateY: {
      const double t = std::trunc(magnitude);  // int(magnitude)
      inverse_affine(0.0, 0.0, 0.0, name == kTranslateX ? t : 0.0, name == kTranslateX ? 0.0 : t,
                     0.0, 0.0, row);
      d.kind = kWarp;
      break;
    }
    case kRotate:
      inverse_affine(0.0, 0.0, -python_mod_360(magnitude), 0.0, 0.0, 0.0, 0.0, row);
      d.kind = kWarp;
      break;
    case kSharpness:
      d.kind = kSharpen;
      d.alpha = static_cast<P>(1.0 - (1.0 + magnitude));
      break;
    case kBrightness:
    case kColor:
    case kContrast: {
      const int stage = name == kBrightness ? photo::kBrightness
                        : name == kColor   ? photo::kSaturation
                                           : photo::kContrast;
      const double ratio = 1.0 + magnitude;  // a Python float
      d.step = photo::make_step<P>(stage, static_cast<P>(ratio));
      if (stage != photo::kBrightness) {  // _blend's other weight, 1.0 - ratio, from the float
        d.step.b = static_cast<P>(1.0 - ratio);
        d.step.unit = d.step.a >= P(0) && d.step.a <= P(1) && d.step.b >= P(0);
      }
      d.kind = kStep;
      break;
    }
    case kPosterize:
      d.step = photo::make_step<P>(photo::kPosterize, static_cast<P>(std::trunc(magnitude)));
      d.kind = kStep;
      break;
    case kSolarize:  // the threshold in the image's range
      d.step = photo::make_step<P>(photo::kSolarize,
                                   static_cast<P>((photo::kIsU8<T> ? 255.0 : 1.0) * magnitude));
      d.kind = kStep;
      break;
    case kAutoContrast:
    case kEqualize:
    case kInvert: {
      const int stage = name == kAutoContrast ? photo::kAutocontrast
                        : name == kEqualize   ? photo::kEqualize
                                              : photo::kInvert;
      d.step = photo::make_step<P>(stage, P(0));
      d.kind = kStep;
      break;
    }
    default:
      break;
  }
  if (d.kind == kWarp) d.grid = geo::warp_grid<P>(row, width, height);
  return d;
}

template <typename P>
struct Pixel {
  P v[3];
};

// Whether operation `op` reads several pixels of the image before it (a bilinear warp's four
// taps, sharpness's nine): its input must be readable at any pixel, so it is either the start of
// the chain's stage or a plain function of it.
template <typename P>
C10_HOST_DEVICE inline bool reads_neighbours(const Decoded<P>& op, int interpolation) {
  return op.kind == kSharpen || (op.kind == kWarp && interpolation != geo::kNearest);
}

// A chain's stages: operations from one base level to the next, each holding at most one
// operation that reads neighbours. Stage 0 starts at the sample's image; stage s > 0 at the
// image after the operations before bases[s], written by the call's pass s (no tap of a tap:
// nesting them would cost each pixel the product of their taps). Returns the number of stages.
template <typename P>
C10_HOST_DEVICE inline int stage_bases(const Decoded<P>* ops, int depth, int interpolation,
                                       int (&bases)[kMaxDepth]) {
  int stages = 1;
  bases[0] = 0;
  bool reads = false;  // whether the current stage has a neighbour-reading operation
  for (int k = 0; k < depth; ++k) {
    if (!reads_neighbours(ops[k], interpolation)) continue;
    if (reads) bases[stages++] = k;
    reads = true;
  }
  return stages;
}

// One chain of one sample from one stage's base: the image there (a [C, H, W] plane set with
// these strides: the sample's, or the stage's scratch image), its decoded operations and its
// reductions' statistics (a slot per operation), and the call's warp settings.
template <int C, typename T, typename P>
struct Chain {
  const T* image;
  int64_t channel_stride, row_stride, column_stride;
  int64_t height, width;
  int base;  // the operations before it are in `image`
  const Decoded<P>* ops;
  const ReductionSlot<P>* slots;
  int interpolation;  // geo::kNearest or geo::kBilinear
  bool fill_given;    // torchvision's fill through the mask channel (else grid_sample's zeros)
  P fill[3];          // the fill, as the warps' float image holds it

  C10_HOST_DEVICE Pixel<P> source(int64_t y, int64_t x) const {
    Pixel<P> p{};
    for (int c = 0; c < C; ++c) {
      p.v[c] = photo::load<P>(image[c * channel_stride + y * row_stride + x * column_stride]);
    }
    return p;
  }

  // A nearest warp's pixel outside the image.
  C10_HOST_DEVICE Pixel<P> outside() const {
    Pixel<P> p{};
    for (int c = 0; c < C; ++c) p.v[c] = fill_given ? geo::held_as<T, P>(fill[c]) : P(0);
    return p;
  }

  // Operation k's photometric step on p (the others leave values as they are).
  C10_HOST_DEVICE void step(int k, Pixel<P>& p) const {
    if (ops[k].kind != kStep) return;
    P x[1][3] = {{p.v[0], p.v[1], p.v[2]}};
    const photo::Reduced<P> r = photo::is_reduction(ops[k].step.kind) ? slots[k].reduced()
                                                                       : photo::Reduced<P>{};
    photo::apply_step<C, T>(ops[k].step, x, r);
    for (int c = 0; c < 3; ++c) p.v[c] = x[0][c];
  }
};

// Walks back from level `level` through the photometric steps and nearest warps (which move the
// position) towards the chain's base: stops at the base (reached: true), at a nearest warp's
// outside (p the fill) or at an operation that reads neighbours (k its level + 1). The steps
// from k on are then run by the caller.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline bool walk_back(const Chain<C, T, P>& chain, int& k, int64_t& y,
                                      int64_t& x, Pixel<P>& p, bool& outside) {
  outside = false;
  for (; k > chain.base; --k) {
    const Decoded<P>& op = chain.ops[k - 1];
    if (reads_neighbours(op, chain.interpolation)) return false;
    if (op.kind != kWarp) continue;
    P ix, iy;
    geo::warp_position(op.grid, chain.width, chain.height, x, y, ix, iy);
    const int64_t nx = static_cast<int64_t>(std::nearbyint(ix));
    const int64_t ny = static_cast<int64_t>(std::nearbyint(iy));
    if (nx < 0 || nx >= chain.width || ny < 0 || ny >= chain.height) {
      p = chain.outside();
      outside = true;
      return false;
    }
    x = nx;
    y = ny;
  }
  return true;
}

// Pixel (y, x) of the image after `level` operations, where none from the base to there reads
// neighbours.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Pixel<P> plain_at(const Chain<C, T, P>& chain, int level, int64_t y,
                                         int64_t x) {
  int k = level;
  Pixel<P> p{};
  bool outside;
  if (walk_back(chain, k, y, x, p, outside)) p = chain.source(y, x);
  for (int j = k; j < level; ++j) chain.step(j, p);
  return p;
}

// Bilinear warp k's pixel (y, x) from its taps of the image before it: grid_sample's sum in its
// order, then torchvision's fill through the mask, held as T holds it.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Pixel<P> interpolated(const Chain<C, T, P>& chain, int k, int64_t y,
                                             int64_t x) {
  P ix, iy;
  geo::warp_position(chain.ops[k].grid, chain.width, chain.height, x, y, ix, iy);
  const geo::WarpTaps<P> t = geo::warp_taps(ix, iy, chain.width, chain.height, geo::kBilinear);
  P acc[3] = {P(0), P(0), P(0)};
  GPUAUG_PHOTO_UNROLL  // the taps' arrays in registers
  for (int i = 0; i < 4; ++i) {
    if (!t.inside[i]) continue;
    const Pixel<P> tap = plain_at(chain, k, t.ky[i], t.kx[i]);
    for (int c = 0; c < C; ++c) acc[c] = geo::torch_madd(tap.v[c], t.w[i], acc[c]);
  }
  Pixel<P> p{};
  for (int c = 0; c < C; ++c) {
    P out = acc[c];
    if (chain.fill_given) out = (out - chain.fill[c]) * t.mask + chain.fill[c];
    p.v[c] = geo::held_as<T, P>(out);
  }
  return p;
}

// Sharpness k's pixel (y, x) from the image before it: adjust_sharpness_image's 3x3 smoothing
// (rounded for uint8), blended as `view.add_(degenerate - view, alpha)`; the border and images
// of at most two rows or columns keep their values.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Pixel<P> sharpened(const Chain<C, T, P>& chain, int k, int64_t y,
                                          int64_t x) {
  Pixel<P> p = plain_at(chain, k, y, x);
  if (chain.height <= 2 || chain.width <= 2 || y == 0 || x == 0 || y == chain.height - 1 ||
      x == chain.width - 1) {
    return p;
  }
  const P edge = static_cast<P>(1.0 / 13.0), middle = static_cast<P>(5.0 / 13.0);
  P degenerate[3] = {P(0), P(0), P(0)};
  GPUAUG_PHOTO_UNROLL
  for (int dy = -1; dy <= 1; ++dy) {
    GPUAUG_PHOTO_UNROLL
    for (int dx = -1; dx <= 1; ++dx) {
      const Pixel<P> tap = dy == 0 && dx == 0 ? p : plain_at(chain, k, y + dy, x + dx);
      const P weight = dy == 0 && dx == 0 ? middle : edge;
      for (int c = 0; c < C; ++c) degenerate[c] += tap.v[c] * weight;
    }
  }
  const P alpha = chain.ops[k].alpha;
  constexpr P kBound = photo::kIsU8<T> ? P(255) : P(1);
  for (int c = 0; c < C; ++c) {
    const P blurred = photo::kIsU8<T> ? std::nearbyint(degenerate[c]) : degenerate[c];
    const P v = photo::clamp(std::fma(alpha, blurred - p.v[c], p.v[c]), P(0), kBound);
    p.v[c] = photo::kIsU8<T> ? std::trunc(v) : v;
  }
  return p;
}

// Pixel (y, x) of the chain's image after its first `level` operations, where at most one from
// the base to there reads neighbours (stage_bases).
template <int C, typename T, typename P>
C10_HOST_DEVICE inline Pixel<P> value_at(const Chain<C, T, P>& chain, int level, int64_t y,
                                         int64_t x) {
  int k = level;
  Pixel<P> p;
  bool outside;
  if (walk_back(chain, k, y, x, p, outside)) {
    p = chain.source(y, x);
  } else if (!outside) {
    p = chain.ops[k - 1].kind == kSharpen ? sharpened(chain, k - 1, y, x)
                                          : interpolated(chain, k - 1, y, x);
  }
  for (int j = k; j < level; ++j) chain.step(j, p);
  return p;
}

// The position of the chain's reduction number `r` (its operations' order), or -1.
template <typename P>
C10_HOST_DEVICE inline int reduction_at(const Decoded<P>* ops, int depth, int r) {
  for (int k = 0; k < depth; ++k) {
    if (ops[k].kind == kStep && photo::is_reduction(ops[k].step.kind) && r-- == 0) return k;
  }
  return -1;
}

// AugMix's mixture of a pixel: m0 x, then each chain's weighted value added (products and sums
// in float32, or the image's float64), cast to the image's dtype (uint8: truncated).
template <typename T, typename P>
C10_HOST_DEVICE inline P mixed_value(P mix) {
  if constexpr (photo::kIsU8<T>) return photo::saturated_u8(mix);
  return mix;
}

}  // namespace gpuaug::policy
