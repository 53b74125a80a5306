// The gradient of gpuaug::photometric for one pixel of a floating image, shared by the CPU and CUDA
// backward kernels: the derivative of torchvision's float formulas (what autograd gives through
// torchvision.transforms.v2.functional, and for hue, whose torchvision code autograd cannot run,
// the derivative of the same formulas written out of place; for color_augment, color_transform's
// own backward). Clamps pass the gradient where
// low <= v <= high, as torch.clamp's; floor (posterize) passes none; solarize's where passes -1 or
// 1; the maximum and minimum of hue's HSV conversion go to the channel the forward picked.
// Autocontrast has none (the op refuses it): torchvision's cannot be differentiated either.
#pragma once

#include <c10/macros/Macros.h>

#include "kernels/photometric.h"
#include "kernels/photometric_math.h"

namespace gpuaug::photo {

template <typename P>
C10_HOST_DEVICE inline P gray_weight(int c) {
  return c == 0 ? P(0.2989) : (c == 1 ? P(0.587) : P(0.114));
}

// torch.clamp(v, 0, high)'s gradient factor.
template <typename P>
C10_HOST_DEVICE inline P clamp_pass(P v, P high) {
  return v >= P(0) && v <= high ? P(1) : P(0);
}

// The adjoint of hue_shift: g holds the gradient of the shifted (r, g, b) and leaves with that of
// the input x. Recomputes the forward's intermediates.
template <typename P>
C10_HOST_DEVICE inline void hue_shift_backward(const P (&x)[3], P hue, P (&g)[3]) {
  const P r = x[0], gr = x[1], b = x[2];
  const P maxc = r > gr ? (r > b ? r : b) : (gr > b ? gr : b);
  const P minc = r < gr ? (r < b ? r : b) : (gr < b ? gr : b);
  const int imax = maxc == r ? 0 : (maxc == gr ? 1 : 2);  // hue_shift's branch
  const int imin = minc == r ? 0 : (minc == gr ? 1 : 2);
  const bool flat = maxc == minc;
  const P range = maxc - minc;
  const P s_den = flat ? P(1) : maxc;
  const P s = range / s_den;
  const P divisor = flat ? P(1) : range;
  const P xc[3] = {(maxc - r) / divisor, (maxc - gr) / divisor, (maxc - b) / divisor};
  P h0;
  if (imax == 0) {
    h0 = xc[2] - xc[1];
  } else if (imax == 1) {
    h0 = (xc[0] + P(2)) - xc[2];
  } else {
    h0 = (xc[1] + P(4)) - xc[0];
  }
  const P h = mod1<false>(mod1<false>(h0 * P(1.0 / 6.0) + P(1)) + hue);
  const P v = maxc;
  const P h6 = h * P(6);
  const P sector = std::floor(h6);
  const P f = h6 - sector;
  int i = static_cast<int>(sector);
  if (i >= 6) i -= 6;
  const P sxf = s * f;
  const P one_minus_s = P(1) - s;
  // The gradients of v, p, q, t as hue_shift's switch spread them over r, g, b.
  P gv = 0, gp = 0, gq = 0, gt = 0;
  switch (i) {
    case 0: gv = g[0], gt = g[1], gp = g[2]; break;
    case 1: gq = g[0], gv = g[1], gp = g[2]; break;
    case 2: gp = g[0], gv = g[1], gt = g[2]; break;
    case 3: gp = g[0], gq = g[1], gv = g[2]; break;
    case 4: gt = g[0], gp = g[1], gv = g[2]; break;
    default: gv = g[0], gp = g[1], gq = g[2]; break;
  }
  gq *= clamp_pass((P(1) - sxf) * v, P(1));
  gt *= clamp_pass((sxf + one_minus_s) * v, P(1));
  gp *= clamp_pass(one_minus_s * v, P(1));
  const P g_sxf = v * (gt - gq);
  const P g_one_minus_s = v * (gt + gp);
  P g_maxc = gv + (P(1) - sxf) * gq + (sxf + one_minus_s) * gt + one_minus_s * gp;
  const P gs = f * g_sxf - g_one_minus_s;
  const P g_h0 = s * g_sxf;  // f = 6 h - sector, h = h0 / 6 + constants: d f / d h0 = 1
  P g_xc[3] = {0, 0, 0};
  if (imax == 0) {
    g_xc[2] = g_h0, g_xc[1] = -g_h0;
  } else if (imax == 1) {
    g_xc[0] = g_h0, g_xc[2] = -g_h0;
  } else {
    g_xc[1] = g_h0, g_xc[0] = -g_h0;
  }
  P g_range = gs / s_den;
  if (!flat) g_maxc -= s / s_den * gs;
  P g_divisor = 0;
  for (int c = 0; c < 3; ++c) {
    g_maxc += g_xc[c] / divisor;
    g_divisor -= g_xc[c] * xc[c] / divisor;
    g[c] = -g_xc[c] / divisor;
  }
  if (!flat) g_range += g_divisor;
  g_maxc += g_range;
  g[imax] += g_maxc;
  g[imin] -= g_range;
}

// The adjoint of one step on one pixel entering it as x: g, the gradient of the step's output,
// leaves as that of its input. Contrast adds to *mean_grad its share of the gradient of the mean
// it blended with, and adds to g the mean's own gradient, mean_grad_per_pixel (the image's total
// divided by its pixel count) times the channel's weight in the grayscale.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void step_backward(const Step<P>& s, const P (&x)[3], const Reduced<P>& r,
                                          P mean_grad_per_pixel, P (&g)[3], P* mean_grad) {
  switch (s.kind) {
    case kBrightness:
      for (int c = 0; c < C; ++c) g[c] *= s.a * clamp_pass(rounded<T>(x[c] * s.a), P(1));
      break;
    case kContrast:
      for (int c = 0; c < C; ++c) {
        const P blended = rounded<T>(std::fma(r.mean, s.b, rounded<T>(x[c] * s.a)));
        const P pass = clamp_pass(blended, P(1));
        *mean_grad += s.b * pass * g[c];
        g[c] = s.a * pass * g[c] + mean_grad_per_pixel * (C == 3 ? gray_weight<P>(c) : P(1));
      }
      break;
    case kSaturation:
      if constexpr (C == 3) {
        const P l = gray<T>(x);
        P g_gray = 0;
        for (int c = 0; c < 3; ++c) {
          const P pass = clamp_pass(rounded<T>(std::fma(l, s.b, rounded<T>(x[c] * s.a))), P(1));
          g_gray += s.b * pass * g[c];
          g[c] *= s.a * pass;
        }
        for (int c = 0; c < 3; ++c) g[c] += gray_weight<P>(c) * g_gray;
      }
      break;
    case kHue:
      if constexpr (C == 3) hue_shift_backward(x, s.a, g);
      break;
    case kGrayscale:
      if constexpr (C == 3) {
        const P total = g[0] + g[1] + g[2];
        for (int c = 0; c < 3; ++c) g[c] = gray_weight<P>(c) * total;
      }
      break;
    case kSolarize: {
      const P threshold = rounded<T>(s.a);
      for (int c = 0; c < C; ++c) {
        if (x[c] >= threshold) g[c] = -g[c];
      }
      break;
    }
    case kPosterize:
      for (int c = 0; c < C; ++c) g[c] = P(0);
      break;
    case kInvert:
      for (int c = 0; c < C; ++c) g[c] = -g[c];
      break;
    case kPermuteChannels:
      if constexpr (C == 3) {
        const int code = static_cast<int>(s.a);
        const P out[3] = {g[0], g[1], g[2]};
        for (int c = 0; c < 3; ++c) g[permuted_channel(code, c)] = out[c];
      }
      break;
    case kColorAugment: {
      P in[C], grad[C], unused_gains[C] = {};
      color::ScalarGrads<P> unused;  // the factors have no gradient
      for (int c = 0; c < C; ++c) in[c] = x[c], grad[c] = g[c];
      color::backward_pixel<C, P>(in, grad, C, s.gains, s.jitter, unused_gains, unused);
      for (int c = 0; c < C; ++c) g[c] = grad[c];
      break;
    }
    default:
      break;
  }
}

// The gradient of one pixel x through its sample's steps [stop, count), from g (the gradient of
// the program's output) to that of step `stop`'s input. Runs the forward first, keeping each
// step's input.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void backprop_pixel(const SampleProgram<P>& prog, const P (&x)[3],
                                           const Reduced<P>& r, int stop,
                                           P mean_grad_per_pixel, P (&g)[3], P* mean_grad) {
  P inputs[kMaxStages][3];
  P y[1][3] = {{x[0], x[1], x[2]}};
  for (int i = 0; i < prog.count; ++i) {
    for (int c = 0; c < 3; ++c) inputs[i][c] = y[0][c];
    apply_step<C, T>(prog.steps[i], y, r);
  }
  for (int i = prog.count - 1; i >= stop; --i) {
    const P (&in)[3] = inputs[i];
    step_backward<C, T>(prog.steps[i], in, r, mean_grad_per_pixel, g, mean_grad);
  }
}

}  // namespace gpuaug::photo
