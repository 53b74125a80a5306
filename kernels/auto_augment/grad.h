// The adjoint of one operation of gpuaug::auto_augment's chains, shared by the CPU and CUDA loops
// of its backward (gpuaug::_auto_augment_backward), which runs the chains back one level at a
// time: from the gradient of the image after operation k and the image before it (the level,
// written by the forward op on the chain cut before k) to the gradient of the image before it.
// The derivatives are those of the forward's formulas, torchvision's: autograd's through
// torchvision.transforms.v2.functional where torchvision's float path has one (the warps, the
// photometric operations, posterize's none); where it cannot be differentiated (sharpness and a
// bilinear warp with fill modify tensors autograd saved; autocontrast too), the derivative of the
// same formula, autocontrast's minimum and maximum shared among their ties as torch.amin's and
// torch.amax's are. Equalize has none: torchvision's runs through uint8. Each input pixel's
// gradient is gathered from the output pixels that read it, so the sums are the same run to run.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>

#include "kernels/auto_augment/auto_augment.h"
#include "kernels/auto_augment/chain.h"
#include "kernels/photometric/grad.h"

namespace gpuaug::policy {

// The gradient of chain i's level output at channel c of pixel p.
template <typename P, typename G>
C10_HOST_DEVICE inline P output_grad(const LevelCall& call, const G* grad, int64_t i, int c,
                                     int64_t p) {
  if (!call.top) return static_cast<P>(grad[(i * call.channels + c) * call.pixels() + p]);
  const int64_t n = i / call.branches;
  P g = static_cast<P>(grad[(n * call.channels + c) * call.pixels() + p]) *
        static_cast<P>(call.inv_std[c]);
  if (call.weights != nullptr) {
    g *= static_cast<P>(call.weights[n * (call.branches + 1) + i % call.branches + 1]);
  }
  return g;
}

// Whether operation `op`'s adjoint reads sums over its level (a pass of their own first).
template <typename P>
C10_HOST_DEVICE inline bool sums_level(const Decoded<P>& op) {
  return op.kind == kStep &&
         (op.step.kind == photo::kContrast || op.step.kind == photo::kAutocontrast);
}

// What a reduction's adjoint reads of its chain: the forward's statistics of the level, and the
// sums of its output gradient that flow through them.
template <typename P>
struct LevelSums {
  photo::Reduced<P> r;
  P high[3];     // autocontrast: each channel's maximum
  bool flat[3];  // autocontrast: the channel's minimum is its maximum (torchvision's constants)
  P mean_grad_per_pixel;        // contrast: the mean's gradient over the pixel count
  P low_grad[3], high_grad[3];  // autocontrast: each tie's share of the minimum's, the maximum's
};

// The level's statistics (photo::add_pixel_stats's, combined) as the adjoint reads them.
template <typename T, typename P>
C10_HOST_DEVICE inline LevelSums<P> level_statistics(int kind, const double (&stats)[photo::kStats],
                                                     int64_t pixels) {
  LevelSums<P> s{};
  s.r = photo::finish_reduction<T, P>(kind, stats, pixels);
  for (int c = 0; c < 3; ++c) {
    s.high[c] = static_cast<P>(stats[3 + c]);
    s.flat[c] = kind == photo::kAutocontrast && stats[c] == stats[3 + c];
  }
  return s;
}

// The sums the second pass adds up, per pixel (doubles, combined as statistics are): contrast's
// mean gradient in [0]; autocontrast's gradient of each channel's minimum times s^2 in [0, 3) and
// of its maximum in [3, 6), then in `ties` how many pixels hold each minimum and maximum.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void add_gradient_sums(const Decoded<P>& op, const LevelSums<P>& s,
                                              const P (&x)[3], const P (&g)[3],
                                              double (&sums)[photo::kStats],
                                              double (&ties)[photo::kStats]) {
  if (op.step.kind == photo::kContrast) {
    P unused[3] = {g[0], g[1], g[2]};
    P mean_grad = P(0);
    photo::step_backward<C, T>(op.step, x, s.r, P(0), unused, &mean_grad);
    sums[0] += mean_grad;
    return;
  }
  for (int c = 0; c < C; ++c) {
    if (s.flat[c]) continue;
    const P low = s.r.low[c], high = s.high[c];
    const P passed = g[c] * photo::clamp_pass((x[c] - low) / s.r.inv_scale[c], P(1));
    // d/d low of (x - low) / (high - low) is (x - high) / s^2, d/d high -(x - low) / s^2
    sums[c] += passed * (x[c] - high);
    sums[3 + c] -= passed * (x[c] - low);
    ties[c] += x[c] == low ? 1.0 : 0.0;
    ties[3 + c] += x[c] == high ? 1.0 : 0.0;
  }
}

// The reduction's adjoint from its sums over the level.
template <typename P>
C10_HOST_DEVICE inline void finish_sums(const Decoded<P>& op, int64_t pixels,
                                        const double (&sums)[photo::kStats],
                                        const double (&ties)[photo::kStats], LevelSums<P>& s) {
  s.mean_grad_per_pixel = static_cast<P>(sums[0] / static_cast<double>(pixels));
  if (op.step.kind != photo::kAutocontrast) return;
  for (int c = 0; c < 3; ++c) {
    const double scale = static_cast<double>(s.r.inv_scale[c]);
    s.low_grad[c] = ties[c] > 0 ? static_cast<P>(sums[c] / (scale * scale * ties[c])) : P(0);
    s.high_grad[c] =
        ties[3 + c] > 0 ? static_cast<P>(sums[3 + c] / (scale * scale * ties[3 + c])) : P(0);
  }
}

// The adjoint of a photometric operation at a pixel entering it as x: g, its output's gradient,
// leaves as its input's.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void step_adjoint(const Decoded<P>& op, const LevelSums<P>& s,
                                         const P (&x)[3], P (&g)[3]) {
  if (op.step.kind == photo::kEqualize) {
    for (int c = 0; c < C; ++c) g[c] = P(0);
  } else if (op.step.kind == photo::kAutocontrast) {
    for (int c = 0; c < C; ++c) {
      const P stretched = (x[c] - s.r.low[c]) / s.r.inv_scale[c];
      g[c] *= photo::clamp_pass(stretched, P(1)) / s.r.inv_scale[c];
      if (s.flat[c]) continue;
      if (x[c] == s.r.low[c]) g[c] += s.low_grad[c];
      if (x[c] == s.high[c]) g[c] += s.high_grad[c];
    }
  } else {
    P unused = P(0);
    photo::step_backward<C, T>(op.step, x, s.r, s.mean_grad_per_pixel, g, &unused);
  }
}

// Sharpness's smoothing weights: the centre's, the eight neighbours'.
template <typename P>
C10_HOST_DEVICE inline P sharpen_weight(int dy, int dx) {
  return dy == 0 && dx == 0 ? static_cast<P>(5.0 / 13.0) : static_cast<P>(1.0 / 13.0);
}

// Whether sharpness leaves the pixel as it is: the border, and images of at most two rows or
// columns.
C10_HOST_DEVICE inline bool sharpen_keeps(int64_t height, int64_t width, int64_t y, int64_t x) {
  return height <= 2 || width <= 2 || y == 0 || x == 0 || y == height - 1 || x == width - 1;
}

// Sharpness's output gradient at an inner pixel (y, x) of a level plane set (`level` at channel
// 0, planes `plane` apart) where its clamp passes it, else 0: the forward's blend recomputed in
// its order (chain.h's sharpened).
template <int C, typename P>
C10_HOST_DEVICE inline void sharpen_passed(const P* level, int64_t plane, int64_t width, P alpha,
                                           int64_t y, int64_t x, P (&g)[3]) {
  P degenerate[3] = {P(0), P(0), P(0)};
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      for (int c = 0; c < C; ++c) {
        degenerate[c] += level[c * plane + (y + dy) * width + x + dx] * sharpen_weight<P>(dy, dx);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    const P v = level[c * plane + y * width + x];
    g[c] *= photo::clamp_pass(std::fma(alpha, degenerate[c] - v, v), P(1));
  }
}

// Sharpness's input gradient at (y, x) from `passed` (sharpen_passed's gradients at the inner
// pixels, 0 on the border) and the output's gradient g at (y, x): the pixel's own share, then
// each inner neighbour's smoothing weight.
template <int C, typename P>
C10_HOST_DEVICE inline void sharpen_adjoint(const P* passed, int64_t plane, int64_t height,
                                            int64_t width, P alpha, int64_t y, int64_t x,
                                            P (&g)[3]) {
  if (height <= 2 || width <= 2) return;
  const bool kept = sharpen_keeps(height, width, y, x);
  for (int c = 0; c < C; ++c) {
    P sum = kept ? g[c] : (P(1) - alpha) * passed[c * plane + y * width + x];
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int64_t ny = y + dy, nx = x + dx;
        if (ny < 0 || ny >= height || nx < 0 || nx >= width) continue;
        sum += alpha * sharpen_weight<P>(dy, dx) * passed[c * plane + ny * width + nx];
      }
    }
    g[c] = sum;
  }
}

// Which output pixels of a warp can read an input pixel: the warp's map from output pixels to
// sampling positions is affine (rotations, shears, translations), fitted here to warp_position at
// three pixels; a tap reads pixel q where its position lies within `reach` of q (1 bilinear, 1/2
// nearest), so the pixels whose taps read q lie in a box about the inverse map's image of q.
struct WarpInverse {
  double x0, y0;    // the position of output pixel (0, 0)
  double m[4];      // the inverse of the map's linear part, row-major
  double reach_x, reach_y;  // the box's half sides
};

template <typename P>
C10_HOST_DEVICE inline WarpInverse warp_inverse(const Decoded<P>& op, const LevelCall& call) {
  const int64_t dx = call.width > 1 ? call.width - 1 : 1;
  const int64_t dy = call.height > 1 ? call.height - 1 : 1;
  P ix[3], iy[3];
  geo::warp_position(op.grid, call.width, call.height, 0, 0, ix[0], iy[0]);
  geo::warp_position(op.grid, call.width, call.height, dx, 0, ix[1], iy[1]);
  geo::warp_position(op.grid, call.width, call.height, 0, dy, ix[2], iy[2]);
  const double a = (double(ix[1]) - ix[0]) / dx, b = (double(ix[2]) - ix[0]) / dy;
  const double c = (double(iy[1]) - iy[0]) / dx, d = (double(iy[2]) - iy[0]) / dy;
  const double det = a * d - b * c;
  WarpInverse w{ix[0], iy[0], {d / det, -b / det, -c / det, a / det}, 0.0, 0.0};
  const double reach = call.interpolation == geo::kNearest ? 0.5 : 1.0;
  // the margin covers the fit's rounding (positions err by far less than a hundredth)
  w.reach_x = reach * (std::fabs(w.m[0]) + std::fabs(w.m[1])) + 0.05;
  w.reach_y = reach * (std::fabs(w.m[2]) + std::fabs(w.m[3])) + 0.05;
  if (!(std::fabs(det) > 1e-9)) {  // no such warp among the operations; every pixel then
    w.reach_x = static_cast<double>(call.width);
    w.reach_y = static_cast<double>(call.height);
  }
  return w;
}

// The inclusive range of output pixels along a side of `size` within `reach` of `centre`.
C10_HOST_DEVICE inline void reach_range(double centre, double reach, int64_t size, int64_t& lo,
                                        int64_t& hi) {
  const double last = static_cast<double>(size - 1);
  lo = static_cast<int64_t>(std::fmax(0.0, std::ceil(std::fmin(centre - reach, last + 1.0))));
  hi = static_cast<int64_t>(std::fmin(last, std::floor(std::fmax(centre + reach, -1.0))));
}

// A warp's adjoint at input pixel (qy, qx): the gradients grad_at(p, c) of the output pixels
// whose taps read it, times the tap's weight (with fill, a bilinear tap's times the mask), summed
// in the pixels' order (grid_sample's adjoint, without atomics: the same bits run to run).
template <int C, typename P, typename GradAt>
C10_HOST_DEVICE inline void warp_gather(const Decoded<P>& op, const WarpInverse& w,
                                        const LevelCall& call, int64_t qy, int64_t qx,
                                        const GradAt& grad_at, P (&g)[3]) {
  const double ux = static_cast<double>(qx) - w.x0, uy = static_cast<double>(qy) - w.y0;
  int64_t x_lo, x_hi, y_lo, y_hi;
  reach_range(w.m[0] * ux + w.m[1] * uy, w.reach_x, call.width, x_lo, x_hi);
  reach_range(w.m[2] * ux + w.m[3] * uy, w.reach_y, call.height, y_lo, y_hi);
  for (int c = 0; c < 3; ++c) g[c] = P(0);
  for (int64_t y = y_lo; y <= y_hi; ++y) {
    for (int64_t x = x_lo; x <= x_hi; ++x) {
      P ix, iy;
      geo::warp_position(op.grid, call.width, call.height, x, y, ix, iy);
      const geo::WarpTaps<P> t = geo::warp_taps(ix, iy, call.width, call.height,
                                                call.interpolation);
      const P scale = call.fill_given && call.interpolation != geo::kNearest ? t.mask : P(1);
      for (int k = 0; k < t.count; ++k) {
        if (!t.inside[k] || t.kx[k] != qx || t.ky[k] != qy) continue;
        for (int c = 0; c < C; ++c) g[c] += grad_at(y * call.width + x, c) * (t.w[k] * scale);
      }
    }
  }
}

}  // namespace gpuaug::policy
