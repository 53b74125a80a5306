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

#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

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

// The adjoint of hue_shift for a pixel that hue_shift<kQuick> takes (kQuick: hue_finite, with a
// shift in [-0.5, 0.5] and on the GPU, float32, hue_divides_quickly): g holds the gradient of the
// shifted (r, g, b) and leaves with that of the input x. Recomputes the forward's intermediates
// as hue_shift does (its selects and divisions: the same sector and fraction), and takes the
// gradient by selects too: a warp's pixels differ in their largest channel and sector, and a
// branch per case ran every case. Of the quotients (maxc - x) / range only the two the hue uses
// have a gradient; maxc's share of theirs cancels.
template <bool kQuick, typename P>
C10_HOST_DEVICE inline void hue_shift_backward_of(const P (&x)[3], P hue, P (&g)[3]) {
  const P r = x[0], gr = x[1], b = x[2];
  const P maxc = largest(r, gr, b), minc = smallest(r, gr, b);
  const bool flat = maxc == minc;
  const P range = maxc - minc;
  const bool red = maxc == r, green = !red && maxc == gr;
  const P first = red ? b : (green ? r : gr);
  const P second = red ? gr : (green ? b : r);
  const P offset = red ? P(0) : (green ? P(2) : P(4));
  const UnitDivisor<P> by_range(flat ? P(1) : range), by_max(flat ? P(1) : maxc);
  const auto divide = [](const UnitDivisor<P>& d, P a) {
    if constexpr (kQuick) return d.divide(a);
    else return a / d.b;
  };
  const P s = divide(by_max, range);
  const P q_first = divide(by_range, maxc - first), q_second = divide(by_range, maxc - second);
  int i;
  const P f = shifted_sector<kQuick>(
      mod1<kQuick>(((q_first + offset) - q_second) * P(1.0 / 6.0) + P(1)), hue, i);
  const P v = maxc;
  const P sxf = s * f;
  const P one_minus_s = P(1) - s;
  // The gradients of v, t, p, q where from_sector placed them: (v, t, p), (q, v, p), (p, v, t),
  // (p, q, v), (t, p, v), (v, p, q) for sectors 0-5, and any other sector as 5.
  const P gv = i == 1 || i == 2 ? g[1] : (i == 3 || i == 4 ? g[2] : g[0]);
  P gt = i == 0 ? g[1] : (i == 2 ? g[2] : (i == 4 ? g[0] : P(0)));
  P gp = i == 0 || i == 1 ? g[2] : (i == 2 || i == 3 ? g[0] : g[1]);
  P gq = i == 1 ? g[0] : (i == 3 ? g[1] : (i == 0 || i == 2 || i == 4 ? P(0) : g[2]));
  gq *= clamp_pass((P(1) - sxf) * v, P(1));
  gt *= clamp_pass((sxf + one_minus_s) * v, P(1));
  gp *= clamp_pass(one_minus_s * v, P(1));
  const P g_sxf = v * (gt - gq);
  const P g_one_minus_s = v * (gt + gp);
  P g_maxc = gv + (P(1) - sxf) * gq + (sxf + one_minus_s) * gt + one_minus_s * gp;
  const P gs = f * g_sxf - g_one_minus_s;
  // f = 6 h - sector, h = h0 / 6 + constants: d f / d h0 = 1; h0 = q_first + offset - q_second
  const P g_quotient = divide(by_range, s * g_sxf);  // q_first's gradient over the range
  P g_range = divide(by_max, gs);
  if (!flat) {
    g_maxc -= divide(by_max, s) * gs;
    g_range += g_quotient * (q_second - q_first);  // the quotients' divisor is the range
  }
  g_maxc += g_range;
  // -d q / d x for first and second; then the largest's and the smallest's shares
  const P g_first = -g_quotient, g_second = g_quotient;
  const int imin = minc == r ? 0 : (minc == gr ? 1 : 2);
  g[0] = (red ? g_maxc : (green ? g_first : g_second)) - (imin == 0 ? g_range : P(0));
  g[1] = (red ? g_second : (green ? g_maxc : g_first)) - (imin == 1 ? g_range : P(0));
  g[2] = (red ? g_first : (green ? g_second : g_maxc)) - (imin == 2 ? g_range : P(0));
}

// The adjoint of hue_shift: hue_shift_backward_of for the path the forward took (as
// hue_shift_run's test picks it, pixel by pixel).
template <typename P>
C10_HOST_DEVICE inline void hue_shift_backward(const P (&x)[3], P hue, P (&g)[3]) {
  bool quick = hue >= P(-0.5) && hue <= P(0.5) && hue_finite(x[0], x[1], x[2]);
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) quick = quick && hue_divides_quickly(x[0], x[1], x[2]);
#endif
  if (quick) {
    hue_shift_backward_of<true>(x, hue, g);
  } else {
    hue_shift_backward_of<false>(x, hue, g);
  }
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

// Programs up to this long take each step's input again on the GPU by running the forward from
// the pixel instead of keeping every step's input: kept, the inputs are an array indexed at run
// time, which there lives in local memory (a thread's 288-320 bytes for float32, more than L1
// holds for the threads of an SM). The steps are short but for hue and color_augment, which
// recomputing would repeat: the steps after the last of those resume from its output, kept. The
// CPU keeps the inputs (in its L1 cache), where recomputing them was slower.
#ifdef __CUDA_ARCH__
constexpr int kRecomputedSteps = 6;
#else
constexpr int kRecomputedSteps = 0;
#endif

C10_HOST_DEVICE inline bool is_long_step(int kind) {
  return kind == kHue || kind == kColorAugment;
}

// The gradient of one pixel x through its sample's steps [stop, count), from g (the gradient of
// the program's output) to that of step `stop`'s input. Each step's input comes from a forward
// run (one call site of apply_step and of step_backward: their code once in a kernel).
// RecomputedSteps: kRecomputedSteps but in test_photometric_backprop.cpp, which runs the GPU's
// way on the CPU.
template <int C, typename T, int RecomputedSteps = kRecomputedSteps, typename P>
C10_HOST_DEVICE inline void backprop_pixel(const SampleProgram<P>& prog, const P (&x)[3],
                                           const Reduced<P>& r, int stop,
                                           P mean_grad_per_pixel, P (&g)[3], P* mean_grad) {
  // constant false on the CPU (RecomputedSteps 0): its code is the keeping path alone
  const bool recompute = RecomputedSteps > 0 && prog.count <= RecomputedSteps;
  int resume = 0;  // recomputing: the step after the last long one
  for (int i = 0; recompute && i < prog.count; ++i) {
    if (is_long_step(prog.steps[i].kind)) resume = i + 1;
  }
  P kept[3] = {x[0], x[1], x[2]};  // resume's input, taken on the first (longest) forward
  bool have_kept = resume == 0;
  P inputs[kMaxStages][3];  // not recomputing: each step's input, from the first forward
  for (int i = prog.count - 1; i >= stop; --i) {
    P y[1][3];
    if (recompute || i == prog.count - 1) {
      const bool from_kept = have_kept && i >= resume;
      for (int c = 0; c < 3; ++c) y[0][c] = from_kept ? kept[c] : x[c];
      for (int k = from_kept ? resume : 0; k < i; ++k) {
        if (!recompute) {
          for (int c = 0; c < 3; ++c) inputs[k][c] = y[0][c];
        }
        apply_step<C, T>(prog.steps[k], y, r);
        if (k + 1 == resume) {
          for (int c = 0; c < 3; ++c) kept[c] = y[0][c];
          have_kept = true;
        }
      }
    } else {
      for (int c = 0; c < 3; ++c) y[0][c] = inputs[i][c];
    }
    step_backward<C, T>(prog.steps[i], y[0], r, mean_grad_per_pixel, g, mean_grad);
  }
}

}  // namespace gpuaug::photo
