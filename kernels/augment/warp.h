// gpuaug::augment's per-sample warp (the op's `warp` rows, docs/operators.md): a sample's window
// sampled through an affine or perspective map as torchvision's affine_image, rotate_image and
// perspective_image sample it (its grid in the image's float type from the float-rounded
// coefficients, grid_sample's unnormalisation and taps with zeros padding, align_corners=False,
// then its fill through the mask channel), forward and adjoint, for the CPU and CUDA loops.
#pragma once

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

#include "kernels/augment/augment.h"
#include "kernels/augment/pixel.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::geo {

enum WarpKind : int { kNoWarp = 0, kAffine = 1, kPerspective = 2 };
constexpr int kWarpColumns = 9;  // 8 coefficients, then the kind

// A sample's warp row, or null where the call has none.
C10_HOST_DEVICE inline const double* warp_row(const Settings& s, int64_t sample) {
  if (s.warp == nullptr) return nullptr;
  const double* row = s.warp + sample * kWarpColumns;
  return static_cast<int>(row[8]) == kNoWarp ? nullptr : row;
}

// The grid's coefficients as torchvision computes them in P: theta rounded to P, divided by half
// the image's size (_affine_grid's and _perspective_grid's rescaled theta).
template <typename P>
struct WarpGrid {
  int kind;
  P x[3], y[3], d[2];  // grid x, y (and the perspective's denominator) of (bx, by, 1)
};

template <typename P>
C10_HOST_DEVICE inline WarpGrid<P> warp_grid(const double* row, int64_t width, int64_t height) {
  WarpGrid<P> g{};
  g.kind = static_cast<int>(row[8]);
  const P half_width = static_cast<P>(0.5 * static_cast<double>(width));
  const P half_height = static_cast<P>(0.5 * static_cast<double>(height));
  for (int k = 0; k < 3; ++k) {
    g.x[k] = static_cast<P>(row[k]) / half_width;
    g.y[k] = static_cast<P>(row[3 + k]) / half_height;
  }
  g.d[0] = static_cast<P>(row[6]);
  g.d[1] = static_cast<P>(row[7]);
  return g;
}

// a * b + c as torch's kernels round it on each device: nvcc fuses it into an fma in torch's
// CUDA kernels (this library's CUDA code is built with --fmad=false, so it fuses only here),
// torch's CPU kernels round the product.
template <typename P>
C10_HOST_DEVICE inline P torch_madd(P a, P b, P c) {
#ifdef __CUDA_ARCH__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// grid_sample's pixel coordinate of a grid value (align_corners=False), in the formula of the
// device's kernel (the CPU's vectorised one and the CUDA one round differently).
template <typename P>
C10_HOST_DEVICE inline P unnormalized(P coordinate, int64_t size) {
#ifdef __CUDA_ARCH__
  return torch_madd(coordinate + P(1), static_cast<P>(size), P(-1)) / P(2);
#else
  return (coordinate + P(1)) * (static_cast<P>(size) / P(2)) - P(0.5);
#endif
}

// The source position (ix, iy), in the window's pixels, of the warped image's pixel (rx, ry):
// the base grid's values are exact (half-integers), the rest in torchvision's order.
template <typename P>
C10_HOST_DEVICE inline void warp_position(const WarpGrid<P>& g, int64_t width, int64_t height,
                                          int64_t rx, int64_t ry, P& ix, P& iy) {
  P bx, by;
  if (g.kind == kAffine) {  // linspace((1 - w) / 2, (w - 1) / 2): centred
    bx = static_cast<P>(rx) + static_cast<P>((1.0 - static_cast<double>(width)) * 0.5);
    by = static_cast<P>(ry) + static_cast<P>((1.0 - static_cast<double>(height)) * 0.5);
  } else {  // linspace(0.5, w - 0.5)
    bx = static_cast<P>(rx) + P(0.5);
    by = static_cast<P>(ry) + P(0.5);
  }
  // bmm's rounding: the products fused into the sum (its BLAS kernels' fma), then the constant
  const auto dot = [&](P a, P b, P c) { return std::fma(by, b, bx * a) + c; };
  P gx = dot(g.x[0], g.x[1], g.x[2]);
  P gy = dot(g.y[0], g.y[1], g.y[2]);
  if (g.kind == kPerspective) {
    const P denominator = dot(g.d[0], g.d[1], P(1));
    gx = gx / denominator - P(1);
    gy = gy / denominator - P(1);
  }
  ix = unnormalized(gx, width);
  iy = unnormalized(gy, height);
}

// grid_sample's taps of a position: window coordinates, weights, whether each lies inside the
// window (outside: zeros), and the mask channel's value (the weights inside, summed in order).
template <typename P>
struct WarpTaps {
  int count;
  int64_t kx[4], ky[4];
  P w[4];
  bool inside[4];
  P mask;
};

template <typename P>
C10_HOST_DEVICE inline WarpTaps<P> warp_taps(P ix, P iy, int64_t width, int64_t height,
                                             int interpolation) {
  WarpTaps<P> t{};
  const auto inside = [&](int64_t x, int64_t y) {
    return x >= 0 && x < width && y >= 0 && y < height;
  };
  if (interpolation == kNearest) {
    t.count = 1;
    t.kx[0] = static_cast<int64_t>(std::nearbyint(ix));
    t.ky[0] = static_cast<int64_t>(std::nearbyint(iy));
    t.w[0] = P(1);
    t.inside[0] = inside(t.kx[0], t.ky[0]);
    t.mask = t.inside[0] ? P(1) : P(0);
    return t;
  }
  const P fx = std::floor(ix), fy = std::floor(iy);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
#ifdef __CUDA_ARCH__
  const P east = ix - fx, west = (fx + P(1)) - ix, south = iy - fy, north = (fy + P(1)) - iy;
#else
  const P east = ix - fx, west = P(1) - east, south = iy - fy, north = P(1) - south;
#endif
  t.count = 4;
  const int64_t xs[4] = {x0, x0 + 1, x0, x0 + 1}, ys[4] = {y0, y0, y0 + 1, y0 + 1};
  const P ws[4] = {north * west, north * east, south * west, south * east};
  t.mask = P(0);
  for (int k = 0; k < 4; ++k) {
    t.kx[k] = xs[k];
    t.ky[k] = ys[k];
    t.w[k] = ws[k];
    t.inside[k] = inside(xs[k], ys[k]);
    if (t.inside[k]) t.mask += ws[k];
  }
  return t;
}

// The taps of output pixel (y, x) of a warped sample, false where it lies outside the warped
// image (an output crop larger than it: fill). A warped sample is not resized: the warped image
// has the window's size.
template <typename P>
C10_HOST_DEVICE inline bool warped_taps(const double* row, SampleGeometry g, const Settings& s,
                                        int64_t y, int64_t x, WarpTaps<P>& t) {
  g.resized_height = g.height;
  g.resized_width = g.width;
  int64_t ry, rx;
  if (!resized_coordinates(g, s, y, x, ry, rx)) return false;
  P ix, iy;
  warp_position(warp_grid<P>(row, g.width, g.height), g.width, g.height, rx, ry, ix, iy);
  t = warp_taps(ix, iy, g.width, g.height, s.interpolation);
  return true;
}

// The image row and column of tap k (inside the window), -1 where constant padding gives it.
template <typename P>
C10_HOST_DEVICE inline void tap_source(const WarpTaps<P>& t, int k, const SampleGeometry& g,
                                       const Source& src, const Settings& s, int64_t& iy,
                                       int64_t& ix) {
  iy = source_index(t.ky[k], g.top, g.height, g.window_vflip, src.height, s.padding_mode);
  ix = source_index(t.kx[k], g.left, g.width, g.window_hflip, src.width, s.padding_mode);
}

// Output pixel (y, x) of a warped sample (its warp row `row`), as its dtype T holds it: v[c] for
// C channels. `fill`: the padding's fill as T holds it (pixels of the window outside the image).
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void warped_pixel(const T* image, const Source& src,
                                         const SampleGeometry& g, const Settings& s,
                                         const P (&fill)[3], const double* row, int64_t y,
                                         int64_t x, P (&v)[3]) {
  WarpTaps<P> t;
  if (!warped_taps(row, g, s, y, x, t)) {
    for (int c = 0; c < C; ++c) v[c] = fill[c];
    return;
  }
  P acc[C];
  for (int c = 0; c < C; ++c) acc[c] = P(0);
  for (int k = 0; k < t.count; ++k) {
    if (!t.inside[k]) continue;
    int64_t iy, ix;
    tap_source(t, k, g, src, s, iy, ix);
    for (int c = 0; c < C; ++c) {
      const P value = iy < 0 || ix < 0
                          ? fill[c]
                          : photo::load<P>(image[c * src.channel_stride + iy * src.row_stride +
                                                 ix * src.column_stride]);
      acc[c] = torch_madd(value, t.w[k], acc[c]);  // grid_sample's sum
    }
  }
  for (int c = 0; c < C; ++c) {
    P out = acc[c];
    if (s.warp_fill) {  // torchvision's fill through the mask channel, in P
      const P f = static_cast<P>(s.fill[c]);
      out = s.interpolation == kNearest ? (t.mask < P(0.5) ? f : out) : (out - f) * t.mask + f;
    }
    v[c] = held_as<T, P>(out);
  }
}

// Adds output pixel (y, x)'s gradient g_out[c] into the sample's image gradient `grad` through
// its warp (grid_sample's adjoint, times the mask where the fill goes through it).
template <typename G, typename Add>
C10_HOST_DEVICE inline void warped_adjoint(G* grad, const Source& src, const SampleGeometry& g,
                                           const Settings& s, const double* row, int channels,
                                           int64_t y, int64_t x, const G* g_out, const Add& add) {
  WarpTaps<G> t;
  if (!warped_taps(row, g, s, y, x, t)) return;
  if (s.warp_fill && s.interpolation == kNearest && t.mask < G(0.5)) return;
  const G scale = s.warp_fill && s.interpolation != kNearest ? t.mask : G(1);
  for (int k = 0; k < t.count; ++k) {
    if (!t.inside[k]) continue;
    int64_t iy, ix;
    tap_source(t, k, g, src, s, iy, ix);
    if (iy < 0 || ix < 0) continue;
    for (int c = 0; c < channels; ++c) {
      add(grad + c * src.channel_stride + iy * src.row_stride + ix * src.column_stride,
          g_out[c] * (t.w[k] * scale));
    }
  }
}

}  // namespace gpuaug::geo
