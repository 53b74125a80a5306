// The arithmetic of gpuaug::photometric for one pixel, shared by the CPU and CUDA kernels: each
// stage computes what torchvision.transforms.v2.functional computes for one image, in the same
// order of float operations, and leaves the values as torchvision's tensor would hold them (uint8
// truncated, float16 and bfloat16 rounded) so the next stage sees what torchvision's would.
// T is the image's dtype; P the compute type: double for float64 images, float otherwise (uint8
// values are kept unscaled, 0..255, as torchvision's uint8 arithmetic is).
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/photometric.h"
#ifndef __CUDACC__
#include "kernels/cpu/half_floats.h"
#endif

// Unrolls a loop over a thread's pixels on the GPU (GCC's vectoriser takes the CPU's loops).
#ifdef __CUDACC__
#define GPUAUG_PHOTO_UNROLL _Pragma("unroll")
#else
#define GPUAUG_PHOTO_UNROLL
#endif

namespace gpuaug::photo {

template <typename T>
constexpr bool kIsU8 = std::is_same_v<T, uint8_t>;

template <typename T>
constexpr bool kIsHalfFloat = std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>;

template <typename T, typename P>
C10_HOST_DEVICE inline P bound() {
  return kIsU8<T> ? P(255) : P(1);
}

template <typename P>
C10_HOST_DEVICE inline P clamp(P v, P low, P high) {
  return v < low ? low : (v > high ? high : v);  // NaN stays NaN, as torch.clamp
}

// clamp(v, 0, high) with NaN to 0: fmin and fmax, two instructions, on the GPU; selects on the
// host, where fmin and fmax are library calls that no loop around them vectorises.
template <typename P>
C10_HOST_DEVICE inline P clamp_nan_to_zero(P v, P high) {
#ifdef __CUDA_ARCH__
  return std::fmin(std::fmax(v, P(0)), high);
#else
  return v > P(0) ? (v < high ? v : high) : P(0);
#endif
}

// The larger and smaller of two values that are not NaN (fmax and fmin on the GPU, as above).
template <typename P>
C10_HOST_DEVICE inline P max_of(P a, P b) {
#ifdef __CUDA_ARCH__
  return std::fmax(a, b);
#else
  return a > b ? a : b;
#endif
}

template <typename P>
C10_HOST_DEVICE inline P min_of(P a, P b) {
#ifdef __CUDA_ARCH__
  return std::fmin(a, b);
#else
  return a < b ? a : b;
#endif
}

// clamp(v, 0, high) of a stage's result. uint8 images' results are truncated next, and a NaN (an
// infinite factor times 0) has no uint8 value: it becomes 0.
template <typename T, typename P>
C10_HOST_DEVICE inline P clamp_result(P v, P high) {
  if constexpr (kIsU8<T>) return clamp_nan_to_zero(v, high);
  return clamp(v, P(0), high);
}

// A float result as torchvision's float tensor of the image's dtype holds it.
template <typename T, typename P>
C10_HOST_DEVICE inline P rounded(P v) {
#ifndef __CUDACC__
  if constexpr (std::is_same_v<P, float>) {  // the CPU's conversions that vectorise
    if constexpr (std::is_same_v<T, c10::Half>) return cpu::half_floats::half_rounded(v);
    if constexpr (std::is_same_v<T, c10::BFloat16>) return cpu::half_floats::bfloat16_rounded(v);
  }
#endif
  if constexpr (kIsHalfFloat<T>) return static_cast<P>(static_cast<T>(v));
  return v;
}

// trunc (= floor) of 0 <= v < 2^23, or NaN. On the GPU an add rounding toward zero at a scale
// whose unit is 1: the float pipe, not the conversion unit (an eighth of its rate on sm_80-90),
// which truncations after every uint8 stage would otherwise saturate.
template <typename P>
C10_HOST_DEVICE inline P trunc_small(P v) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) return __fadd_rz(v, 8388608.0f) - 8388608.0f;
#endif
  return std::trunc(v);
}

// The integer 0 <= k < 2^23 a float trunc_small returned holds.
template <typename P>
C10_HOST_DEVICE inline int small_int(P k) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) return __float_as_int(k + 8388608.0f) & 0x7FFFFF;
#endif
  return static_cast<int>(k);
}

// k as a float, 0 <= k < 2^23.
template <typename P>
C10_HOST_DEVICE inline P from_small_int(int k) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) return __int_as_float(0x4B000000 | k) - 8388608.0f;
#endif
  return static_cast<P>(k);
}

// trunc(clamp(v, 0, 255)) with NaN to 0, a uint8 result: on the GPU one saturating conversion
// (F2IP) and its way back (I2FP), where clamping at both ends and truncating take four.
template <typename P>
C10_HOST_DEVICE inline P saturated_u8(P v) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    unsigned u;
    asm("cvt.rzi.u8.f32 %0, %1;" : "=r"(u) : "f"(v));
    return static_cast<float>(u);
  }
#endif
  return trunc_small(clamp_nan_to_zero(v, P(255)));
}

// A stage's result as stored in the image's dtype: uint8 truncates (values are in [0, 255]).
// Floating results come here rounded<T> already, and clamped to [0, 1] they stay so.
template <typename T, typename P>
C10_HOST_DEVICE inline P stored(P v) {
  if constexpr (kIsU8<T>) return trunc_small(v);
  return v;
}

// to_dtype(uint8, scale=True) of a floating value: times 255.999 in the image's dtype, truncated.
// Saturates (NaN to 0) where torch's cast is undefined: bfloat16's product rounds up to 256 near
// 1, which torchvision's CPU cast wraps to 0. (Clamping to integers first truncates the same.)
template <typename T, typename P>
C10_HOST_DEVICE inline P scaled_to_u8(P v) {
  return trunc_small(clamp_nan_to_zero(rounded<T>(v * P(255.999)), P(255)));
}

// color_transform's uint8 output of a value in [0, 1]: 255 v rounded half to even.
template <typename P>
C10_HOST_DEVICE inline P rounded_u8(P v) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) return __fmaf_rn(v, 255.0f, 12582912.0f) - 12582912.0f;
#endif
  return std::nearbyint(v * P(255));
}

// A uint8 output's value, as the compute type holds it (an integer in [0, 255]).
template <typename T, typename P>
C10_HOST_DEVICE inline P u8_value(P v) {
  if constexpr (kIsU8<T>) return v;
  return scaled_to_u8<T>(v);
}

// 0.2989 r + 0.587 g + 0.114 b, as torch's mul then two add(alpha=)s (each a fused multiply-add).
template <typename T, typename P>
C10_HOST_DEVICE inline P gray(const P (&x)[3]) {
  const P r = rounded<T>(x[0] * P(0.2989));
  const P rg = rounded<T>(std::fma(x[1], P(0.587), r));
  return rounded<T>(std::fma(x[2], P(0.114), rg));
}

// torchvision's _blend: clamp(image * ratio + other * (1 - ratio), 0, bound), stored.
// kInRange: both weights are in [0, 1] and the values are uint8's, so the sum is in [0, 256)
// (255 at most, but for the weights' rounding) and truncates to [0, 255] unclamped.
template <typename T, bool kInRange = false, typename P>
C10_HOST_DEVICE inline P blend(P v, P other, const Step<P>& s) {
  const P sum = rounded<T>(std::fma(other, s.b, rounded<T>(v * s.a)));
  if constexpr (kInRange) return trunc_small(sum);
  if constexpr (kIsU8<T>) return saturated_u8(sum);
  return stored<T>(clamp_result<T>(sum, bound<T, P>()));
}

// A uint8 brightness factor in [0, FLT_MAX] with the same results as `a`: torchvision's clamp
// then maps a NaN or negative factor's products to 0, and an infinite one's to 255 but for 0
// (NaN, to 0), as the largest finite factor does. Products of it need no clamp at 0, nor at 255
// where it is at most 1.
template <typename P>
C10_HOST_DEVICE inline P u8_brightness_factor(P a) {
  constexpr P kLargest = P(FLT_MAX);  // uint8's compute type is float
  return a >= P(0) ? min_of(a, kLargest) : P(0);
}

// x mod 1 with the divisor's sign (torch.remainder(x, 1), and fmod(x, 1) for x >= 0), exact:
// for the values hue meets (-1 < x < 2) one subtraction or addition, exact by Sterbenz's lemma,
// instead of the GPU's long fmod sequence. kUnitRange: the caller knows x is in (-1, 2) or NaN
// (uint8 images' values, and finite pixels' with a moderate shift: see hue_shift).
template <bool kUnitRange, typename P>
C10_HOST_DEVICE inline P mod1(P x) {
  const P r = x >= P(1) ? x - P(1) : (x < P(0) ? x + P(1) : x);  // selects: lanes agree on the rest
  if (kUnitRange || (x > P(-1) && x < P(2))) return r;
  const P f = std::fmod(x, P(1));
  return f < P(0) ? f + P(1) : f;
}

// Division for hue's unit-range values (uint8 images: k / 255, their differences, and quotients
// in [0, 1]): on the GPU its quick path alone, with one refined reciprocal shared by the
// quotients of one divisor. That path rounds correctly for normal operands and quotients, which
// these are (test_photometric's test_hue_every_uint8_color checks all 2^24 colours); the
// compiler's division adds a range check and a branch per quotient.
template <typename P>
struct UnitDivisor {
  P b, r;
  C10_HOST_DEVICE explicit UnitDivisor(P divisor) : b(divisor), r(P(1) / divisor) {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<P, float>) {
      float approx;
      asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approx) : "f"(divisor));
      r = fmaf(approx, fmaf(-divisor, approx, 1.0f), approx);
    }
#endif
  }
  C10_HOST_DEVICE P divide(P a) const {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<P, float>) {
      const float q = a * r;
      return fmaf(r, fmaf(-b, q, a), q);
    }
#endif
    return a / b;
  }
};

// trunc (= floor) of 0 <= v < 2^23 and that integer: on the GPU one add rounding toward zero,
// whose bits hold the integer (trunc_small, then small_int, would add again).
template <typename P>
C10_HOST_DEVICE inline P trunc_small_int(P v, int& k) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    const float biased = __fadd_rz(v, 8388608.0f);
    k = __float_as_int(biased) & 0x7FFFFF;
    return biased - 8388608.0f;
  }
#endif
  const P t = std::trunc(v);
  // Clamped, as the CPU's hue_shift_run takes the quick path on pixels that are not finite too
  // (and discards it): a conversion of NaN or of a huge value to int would be undefined.
  const P at_least_0 = t > P(0) ? t : P(0);
  k = static_cast<int>(at_least_0 < P(8) ? at_least_0 : P(8));
  return t;
}

// The fraction f of the shifted hue's sector and the sector i (0..5 for finite values), from
// torchvision's h (in [0, 1)): the shift and _hsv_to_rgb's first steps. kUnitRange: h and hue
// are in [0, 1) and [-0.5, 0.5] (uint8 images), whose remainder needs one add at most.
template <bool kUnitRange, typename P>
C10_HOST_DEVICE inline P shifted_sector(P h, P hue, int& i) {
  h = mod1<kUnitRange>(h + hue);
  const P h6 = h * P(6);
  const P sector = trunc_small_int(h6, i);  // 0 <= h6 <= 6
  if (i >= 6) i -= 6;
  return h6 - sector;
}

// _hsv_to_rgb's last steps: the pixel from its sector i (0..5), the fraction f of it, s and v.
template <typename P>
C10_HOST_DEVICE inline void from_sector(int i, P f, P s, P v, P& r, P& g, P& b) {
  const P sxf = s * f;
  const P one_minus_s = P(1) - s;
  const P q = clamp((P(1) - sxf) * v, P(0), P(1));
  const P t = clamp((sxf + one_minus_s) * v, P(0), P(1));
  const P p = clamp(one_minus_s * v, P(0), P(1));
  // sectors 0-5 by selects (a switch would branch apart where a warp's pixels differ):
  // (v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)
  r = i == 1 ? q : (i == 4 ? t : (i == 2 || i == 3 ? p : v));
  g = i == 1 || i == 2 ? v : (i == 0 ? t : (i == 3 ? q : p));
  b = i == 3 || i == 4 ? v : (i == 2 ? t : (i == 0 || i == 1 ? p : q));
}

// The sector _hsv_to_rgb takes for a NaN hue: its conversion of NaN to int32, remainder 6. CUDA's
// conversion gives 0, x86's INT_MIN (remainder 4), AArch64's 0.
C10_HOST_DEVICE constexpr int nan_hue_sector() {
#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(__i386__) || defined(_M_X64))
  return 4;
#else
  return 0;
#endif
}

// The largest and smallest of a pixel's values that are not NaN, by selects.
template <typename P>
C10_HOST_DEVICE inline P largest(P r, P g, P b) {
  return r > g ? (r > b ? r : b) : (g > b ? g : b);
}

template <typename P>
C10_HOST_DEVICE inline P smallest(P r, P g, P b) {
  return r < g ? (r < b ? r : b) : (g < b ? g : b);
}

// adjust_hue of a pixel with a NaN or infinite value, or whose range overflows, step by step as
// torchvision's tensors compute it: its extremes are NaN where a value is, each case's term is
// multiplied by its mask (an infinite or NaN term gives NaN where its case does not hold), and a
// NaN hue takes nan_hue_sector. hue_shift takes the other pixels, whose terms are all finite.
template <typename P>
C10_HOST_DEVICE inline void hue_shift_nonfinite(P& r, P& g, P& b, P hue) {
  const bool nan = r != r || g != g || b != b;
  const P maxc = nan ? r + g + b : largest(r, g, b);
  const P minc = nan ? maxc : smallest(r, g, b);
  const bool flat = maxc == minc;
  const P range = maxc - minc;
  const P s = range / (flat ? P(1) : maxc);
  const P divisor = flat ? P(1) : range;
  const P rc = (maxc - r) / divisor, gc = (maxc - g) / divisor, bc = (maxc - b) / divisor;
  const bool red = maxc == r, green = maxc == g;
  const P hg = ((rc + P(2)) - bc) * P(green && !red);
  const P hr = (bc - gc) * P(red);
  const P hb = ((gc + P(4)) - rc) * P(!red && !green);
  const P h = mod1<false>(std::fmod(((hr + hg) + hb) * P(1.0 / 6.0) + P(1), P(1)) + hue);
  const P h6 = h * P(6);
  const P whole = std::floor(h6);  // 0..6, or NaN
  int i = h6 == h6 ? static_cast<int>(whole) : nan_hue_sector();
  if (i == 6) i = 0;
  from_sector(i, h6 - whole, s, maxc, r, g, b);
}

// Whether a pixel's values and their range are finite: hue_shift's own path then holds.
template <typename P>
C10_HOST_DEVICE inline bool hue_finite(P r, P g, P b) {
  constexpr P kLargest = P(std::is_same_v<P, double> ? DBL_MAX : FLT_MAX);
  return (std::fabs(r) <= kLargest) & (std::fabs(g) <= kLargest) & (std::fabs(b) <= kLargest) &
         (largest(r, g, b) - smallest(r, g, b) <= kLargest);
}

// adjust_hue of one RGB pixel of a floating image through HSV: torchvision's _rgb_to_hsv and
// _hsv_to_rgb. Of rc, gc and bc only the two the pixel's hue uses are divided, picked by selects:
// pixels of a warp differ in their largest channel, and a branch per case would run all three.
// Pixels that are not hue_finite go to hue_shift_nonfinite. kFiniteModerate: the pixel is taken
// as hue_finite and the shift as in [-0.5, 0.5], so there is no branch, and the remainders'
// operands lie in (-1, 2) (h in [-1, 5]: each quotient of a difference by the range is in
// [0, 1]) and take one add. Where that does not hold, its result is wrong but defined (the CPU's
// hue_shift_run computes it for every pixel, then discards it).
template <bool kFiniteModerate = false, typename P>
C10_HOST_DEVICE inline void hue_shift(P& r, P& g, P& b, P hue) {
  if (!kFiniteModerate && !hue_finite(r, g, b)) {
    hue_shift_nonfinite(r, g, b, hue);
    return;
  }
  const P maxc = largest(r, g, b);
  const P minc = smallest(r, g, b);
  const bool flat = maxc == minc;
  const P range = maxc - minc;
  // red largest: bc - gc; green: (2 + rc) - bc; blue: (4 + gc) - rc (x + 0 is x: exact)
  const bool red = maxc == r, green = !red && maxc == g;
  const P first = red ? b : (green ? r : g);
  const P second = red ? g : (green ? b : r);
  const P offset = red ? P(0) : (green ? P(2) : P(4));
  const P s = range / (flat ? P(1) : maxc);
  const P divisor = flat ? P(1) : range;
  const P h = ((maxc - first) / divisor + offset) - (maxc - second) / divisor;
  int i;
  const P f =
      shifted_sector<kFiniteModerate>(mod1<kFiniteModerate>(h * P(1.0 / 6.0) + P(1)), hue, i);
#ifdef __CUDA_ARCH__
  from_sector(i, f, s, maxc, r, g, b);
#else
  // from_sector written out: GCC left control flow in hue's loop where it was called (inlined
  // or not) and did not vectorise it (32x3x224x224 float32 ColorJitter(hue=0.1), one thread:
  // 44 ms, 10.9 so). The GPU keeps the call, whose code is what the H200 ran.
  const P sxf = s * f, one_minus_s = P(1) - s;
  const P q = clamp((P(1) - sxf) * maxc, P(0), P(1));
  const P t = clamp((sxf + one_minus_s) * maxc, P(0), P(1));
  const P p = clamp(one_minus_s * maxc, P(0), P(1));
  r = i == 1 ? q : (i == 4 ? t : (i == 2 || i == 3 ? p : maxc));
  g = i == 1 || i == 2 ? maxc : (i == 0 ? t : (i == 3 ? q : p));
  b = i == 3 || i == 4 ? maxc : (i == 2 ? t : (i == 0 || i == 1 ? p : q));
#endif
}

// hue_shift of a thread's (GPU) or a run's (CPU) V pixels, each value then rounded to T. Where
// all are hue_finite and the shift lies in torchvision's [-0.5, 0.5] (always, but for a
// non-finite pixel or a factor given out of range), they take hue_shift<true>: on the GPU the
// pixels are then one block of code, with no branch between them (a branch per pixel cost 6-15%
// in float kernels, H200), and on the CPU the loop vectorises (with CMakeLists.txt's
// if-conversion limit), where fmod, a call made a value at a time, kept it scalar (32x3x224x224
// float32 ColorJitter(hue=0.1), one thread: 43 ms, 7.9 so).
template <typename T, typename P, int V>
C10_HOST_DEVICE inline void hue_shift_run(P (&x)[V][3], P hue) {
  const bool moderate = hue >= P(-0.5) && hue <= P(0.5);
#ifdef __CUDA_ARCH__
  bool quick = moderate;
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j) quick &= hue_finite(x[j][0], x[j][1], x[j][2]);
  if (quick) {
    GPUAUG_PHOTO_UNROLL
    for (int j = 0; j < V; ++j) hue_shift<true>(x[j][0], x[j][1], x[j][2], hue);
  } else {
    GPUAUG_PHOTO_UNROLL
    for (int j = 0; j < V; ++j) hue_shift(x[j][0], x[j][1], x[j][2], hue);
  }
#else
  // The CPU checks the pixels in the quick path's loop, whose extremes the check then shares,
  // and takes the run again pixel by pixel where one is not finite or the shift is out of range.
  // In a loop of its own, the check was not vectorised and computed the extremes again (the
  // case above: 10.9 ms, 8.4 so).
  P original[V][3];
  for (int j = 0; j < V; ++j) {
    for (int c = 0; c < 3; ++c) original[j][c] = x[j][c];
  }
  int finite = 1;
  for (int j = 0; j < V; ++j) {
    finite &= hue_finite(x[j][0], x[j][1], x[j][2]);
    hue_shift<true>(x[j][0], x[j][1], x[j][2], hue);
  }
  if (!finite || !moderate) {
    for (int j = 0; j < V; ++j) {
      for (int c = 0; c < 3; ++c) x[j][c] = original[j][c];
      hue_shift(x[j][0], x[j][1], x[j][2], hue);
    }
  }
#endif
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j) {
    GPUAUG_PHOTO_UNROLL
    for (int c = 0; c < 3; ++c) x[j][c] = rounded<T>(x[j][c]);
  }
}

// adjust_hue of one uint8 pixel (values 0..255) exactly as torchvision computes it: scaled to
// [0, 1], through HSV, scaled back by 255.999 and truncated. Where torchvision's result is v,
// that is the pixel's largest value, and where it is p its smallest (exactly, for every pair of
// values: test_hue_every_uint8_color checks all colours), so only q or t is scaled back. The
// largest and smallest are taken, and compared, unscaled (scaling by 1/255 keeps the values'
// order and equalities), and the divisions are hue_shift's with one refined reciprocal per
// divisor.
template <typename P>
C10_HOST_DEVICE inline void hue_shift_u8_exact(P (&x)[3], P hue) {
  constexpr P kScale = P(1.0 / 255.0);
  const P high = max_of(max_of(x[0], x[1]), x[2]);
  const P low = min_of(min_of(x[0], x[1]), x[2]);
  const bool red = high == x[0], green = !red && high == x[1];
  const P first = red ? x[2] : (green ? x[0] : x[1]);
  const P second = red ? x[1] : (green ? x[2] : x[0]);
  const P offset = red ? P(0) : (green ? P(2) : P(4));
  const bool flat = high == low;
  const P maxc = high * kScale;
  const P range = maxc - low * kScale;
  const P s = UnitDivisor<P>(flat ? P(1) : maxc).divide(range);
  const UnitDivisor<P> divisor(flat ? P(1) : range);
  P h = (divisor.divide(maxc - first * kScale) + offset) - divisor.divide(maxc - second * kScale);
  // h in [-1, 5]: h / 6 + 1 in [5/6, 11/6], whose remainder needs one subtraction at most
  h = h * P(1.0 / 6.0) + P(1);
  h = h >= P(1) ? h - P(1) : h;
  int i;
  const P f = shifted_sector<true>(h, hue, i);
  const P sxf = s * f;
  // q in the odd sectors, t in the even ones (both in [0, 1]: the clamp is a saturating multiply)
  const P w = i & 1 ? P(1) - sxf : sxf + (P(1) - s);
  const P middle = trunc_small(clamp_nan_to_zero(w * maxc, P(1)) * P(255.999));
  // sector i as one bit; v in r's sectors 5 and 0, g's 1 and 2, b's 3 and 4; p in r's 2 and 3,
  // g's 4 and 5, b's 0 and 1
  const unsigned sector = 1u << i;
  x[0] = sector & 0x21u ? high : (sector & 0x0Cu ? low : middle);
  x[1] = sector & 0x06u ? high : (sector & 0x30u ? low : middle);
  x[2] = sector & 0x18u ? high : (sector & 0x03u ? low : middle);
}

// The bits k (0..31) of the shifted sectors k - 8 (mod 6) among `sectors` (bit i: sector i).
C10_HOST_DEVICE constexpr unsigned sector_bits(unsigned sectors) {
  unsigned bits = 0;
  for (int k = 0; k < 32; ++k) bits |= (sectors >> (k + 4) % 6 & 1u) << k;
  return bits;
}

// adjust_hue of one uint8 pixel (values 0..255; hue6 = 6 hue), with torchvision's results, in
// the pixel's own units. Its result takes the largest value H where _hsv_to_rgb gives v, the
// smallest L where it gives p, and q = H - D f or t = L + D f (D = H - L, f the fraction of the
// shifted hue's sector) scaled by 255.999 / 255 and truncated. The hue in sectors,
// u = offset + hue6 + n / D (n = second - first), is rounded only to find its sector, floor(u);
// D f = (offset + hue6 - floor(u)) D + n then takes one rounding of a value below 256. A
// misrounded u gives a neighbouring sector, where q or t is within 1e-5 of H or L on the other
// side and truncates alike (the GPU's approximate reciprocal gives the CPU's results).
// torchvision's float path carries errors of up to about 2e-4 of a unit (all 2^24 colours, 16
// factors: falling back within 1e-4 of an integer left differences, within 2e-4 none): where
// the scaled value is within 5e-4 of an integer (other than 0), about 0.1% of pixels,
// hue_shift_u8_exact takes torchvision's path instead (H100, ColorJitter u8 -> float32, the op
// alone: 0.1022-0.1027 ms, against 0.0963-0.0965 without it, which left uint8 values up to 3
// off; an earlier build took 0.114 ms with it and 0.127 with torchvision's path everywhere).
// Most of that is the test and its branch around every pixel, not the rare exact path (ncu:
// 2.9 of the 3.7 million warp instructions it adds), so deferring the exact pixels gains nothing.
// kDeferExact: a pixel near an integer takes the quick path's result too, and false is returned
// (the CPU's runs then take the run again).
template <bool kDeferExact = false, typename P>
C10_HOST_DEVICE inline bool hue_shift_u8(P (&x)[3], P hue, P hue6) {
  const P high = max_of(max_of(x[0], x[1]), x[2]);
  const P low = min_of(min_of(x[0], x[1]), x[2]);
  const P range = high - low;
  const bool red = high == x[0], green = !red && high == x[1];
  // n, |n| <= D, by selects (of all three differences: nvcc branches around a difference each)
  const P red_n = x[1] - x[2], green_n = x[2] - x[0], blue_n = x[0] - x[1];
  const P n = red ? red_n : (green ? green_n : blue_n);
  const P offset = red ? P(8) : (green ? P(10) : P(12));  // plus 8: u + 8 in [4, 16]
  P reciprocal = P(1) / max_of(range, P(1));  // flat pixels: n = 0
#ifdef __CUDA_ARCH__
  // range + 1e-30 is the range itself for every pixel but a flat one (whose reciprocal, 1e30,
  // meets n = 0): one add (FMA pipe) where a max is an ALU instruction
  if constexpr (std::is_same_v<P, float>) {
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(reciprocal) : "f"(range + 1e-30f));
  }
#endif
  // floor(u) + 8, as a float and its integer (on the GPU the bits of one add rounding to zero)
  constexpr P kBias = P(8388608);  // 2^23
  const P u8 = std::fma(n, reciprocal, hue6 + offset);
#ifdef __CUDA_ARCH__
  const P sector_biased = __fadd_rz(u8, kBias);
  const int sector8 = __float_as_int(sector_biased) & 31;
#else
  const P sector_biased = std::floor(u8) + kBias;
  const int sector8 = static_cast<int>(std::floor(u8));
#endif
  const P part = std::fma(hue6 + ((offset + kBias) - sector_biased), range, n);  // D f, exact sum
  const unsigned sector = 1u << sector8;  // one bit: its tests each take one instruction
  const P middle_unscaled = sector & 0xAAAAAAAAu ? high - part : low + part;  // odd: q, else t
  const P scaled = max_of(middle_unscaled, P(0)) * P(255.999 / 255.0);
  const P middle = trunc_small(scaled);
  // within 5e-4 of an integer: fraction < 5e-4 or > 1 - 5e-4, as one compare of a magnitude
  const bool near_integer =
      scaled > P(0.5) && std::fabs((scaled - middle) - P(0.5)) > P(0.5 - 5e-4);
  if (!kDeferExact && near_integer) {
    hue_shift_u8_exact(x, hue);
    return true;
  }
  // v in r's sectors 5 and 0, g's 1 and 2, b's 3 and 4; p in r's 2 and 3, g's 4 and 5, b's 0 and 1
  x[0] = sector & sector_bits(0x21u) ? high : (sector & sector_bits(0x0Cu) ? low : middle);
  x[1] = sector & sector_bits(0x06u) ? high : (sector & sector_bits(0x30u) ? low : middle);
  x[2] = sector & sector_bits(0x18u) ? high : (sector & sector_bits(0x03u) ? low : middle);
  return !near_integer;
}

// hue_shift_u8 of a run of V pixels on the CPU: every pixel's quick path first (the loop
// vectorises), then the run again pixel by pixel where one is near an integer (about one run in
// 60). With torchvision's path in the same loop, GCC ran both paths for every pixel and blended
// them (32x3x224x224 uint8 ColorJitter(hue=0.1), one thread: 11.3 ms, 4.9 so).
template <typename P, int V>
inline void hue_shift_u8_run(P (&x)[V][3], P hue, P hue6) {
  P original[V][3];
  for (int j = 0; j < V; ++j) {
    for (int c = 0; c < 3; ++c) original[j][c] = x[j][c];
  }
  int deferred = 0;
  for (int j = 0; j < V; ++j) deferred |= !hue_shift_u8<true>(x[j], hue, hue6);
  if (!deferred) return;
  for (int j = 0; j < V; ++j) {
    for (int c = 0; c < 3; ++c) x[j][c] = original[j][c];
    hue_shift_u8(x[j], hue, hue6);
  }
}

// The histogram bin of a value at the equalize step: the uint8 value torchvision equalizes.
template <typename T, typename P>
C10_HOST_DEVICE inline int equalize_bin(P v) {
  if constexpr (kIsU8<T>) return small_int(v);
  return small_int(scaled_to_u8<T>(v));
}

// Equalize's table as torchvision's (PIL's scheme): value k maps to the pixels below it, plus
// half a step, over the step (the pixels that are not of the largest value present, / 255); the
// table is the identity where the step is 0.
C10_HOST_DEVICE inline int64_t equalize_step(int64_t pixels, int64_t largest_value_pixels) {
  return (pixels - largest_value_pixels) / 255;
}

// Division is Count's: uint32_t where below + step < 2^32, else int64_t.
template <typename Count = int64_t>
C10_HOST_DEVICE inline uint8_t equalized(int k, int64_t below, int64_t step) {
  if (step == 0) return static_cast<uint8_t>(k);
  const Count v = static_cast<Count>(below + step / 2) / static_cast<Count>(step);
  return static_cast<uint8_t>(v < 255 ? v : 255);
}

// One channel's table from its histogram, value by value.
C10_HOST_DEVICE inline void equalize_table(const int64_t* histogram, uint8_t* table) {
  int largest = kBins - 1;
  while (largest > 0 && histogram[largest] == 0) --largest;
  int64_t pixels = 0;
  for (int k = 0; k < kBins; ++k) pixels += histogram[k];
  const int64_t step = equalize_step(pixels, histogram[largest]);
  int64_t below = 0;
  for (int k = 0; k < kBins; ++k) {
    table[k] = equalized(k, below, step);
    below += histogram[k];
  }
}

// The input channel p_c that output channel c takes, for a permutation's code = p0 + 3 p1 + 9 p2.
C10_HOST_DEVICE inline int permuted_channel(int code, int c) {
  const int place = c == 0 ? 1 : (c == 1 ? 3 : 9);
  return code / place % 3;
}

// y[p] by selects, not an indexed array, which the GPU would keep in local memory.
template <typename P>
C10_HOST_DEVICE inline P pick(const P (&y)[3], int p) {
  return p == 0 ? y[0] : (p == 1 ? y[1] : y[2]);
}

// contrast's blend of V pixels with their image's mean.
template <int C, typename T, bool kInRange, typename P, int V>
C10_HOST_DEVICE inline void blend_all(P (&x)[V][3], P mean, const Step<P>& s) {
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j)
    GPUAUG_PHOTO_UNROLL
    for (int c = 0; c < C; ++c) x[j][c] = blend<T, kInRange>(x[j][c], mean, s);
}

// adjust_saturation of V RGB pixels: each blended with its grayscale.
template <typename T, bool kInRange, typename P, int V>
C10_HOST_DEVICE inline void saturate(P (&x)[V][3], const Step<P>& s) {
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j) {
    P l = gray<T>(x[j]);
    if constexpr (kIsU8<T>) l = trunc_small(l);
    GPUAUG_PHOTO_UNROLL
    for (int c = 0; c < 3; ++c) x[j][c] = blend<T, kInRange>(x[j][c], l, s);
  }
}

template <typename P>
struct Pixel {
  P v[3];
};

#ifdef __CUDACC__
#define GPUAUG_PHOTO_NOINLINE __noinline__
#else
#define GPUAUG_PHOTO_NOINLINE
#endif

// gpuaug::color_transform's formula on one pixel (uint8 values read as v / 255, as its CPU
// kernel reads them), the result as its output of the image's dtype would hold it. Out of line
// on the GPU: inlined into every kernel's step switch, its eight pixels' special functions
// raised the register pressure of the kernels that never run it (sm_90: the resident kernels of
// channels-last images spilled, and the two-pass kernels' spills grew from 10.5 to 12.1 KB),
// where a call keeps it to the calls' own sites (7.2 KB in all, none in the resident kernels
// of uint8 to float32 images).
template <int C, typename T, typename P>
GPUAUG_PHOTO_NOINLINE C10_HOST_DEVICE Pixel<P> color_augment_pixel(Pixel<P> x,
                                                                   const Step<P>& s) {
  P y[C];
  for (int c = 0; c < C; ++c) y[c] = kIsU8<T> ? x.v[c] * P(1.0 / 255.0) : x.v[c];
  color::forward_pixel<C, P>(y, C, s.gains, s.jitter);
  for (int c = 0; c < C; ++c) x.v[c] = kIsU8<T> ? rounded_u8(y[c]) : rounded<T>(y[c]);
  return x;
}

template <int C, typename T, typename P, int V>
C10_HOST_DEVICE inline void color_augment(P (&x)[V][3], const Step<P>& s) {
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j) {
    Pixel<P> in{};
    GPUAUG_PHOTO_UNROLL
    for (int c = 0; c < C; ++c) in.v[c] = x[j][c];
    const Pixel<P> out = color_augment_pixel<C, T>(in, s);
    GPUAUG_PHOTO_UNROLL
    for (int c = 0; c < C; ++c) x[j][c] = out.v[c];
  }
}

// One stage on V pixels of C (1 or 3) channels: the stage's branch once, then its loop. `r`
// holds the image's statistics at its reduction step (contrast's and autocontrast's).
template <int C, typename T, typename P, int V>
C10_HOST_DEVICE inline void apply_step(const Step<P>& s, P (&x)[V][3], const Reduced<P>& r) {
  constexpr P kBound = kIsU8<T> ? P(255) : P(1);
  switch (s.kind) {
    case kBrightness:
      if constexpr (kIsU8<T>) {
        const P a = s.b;
        if (s.unit) {
          GPUAUG_PHOTO_UNROLL
          for (int j = 0; j < V; ++j)
            GPUAUG_PHOTO_UNROLL
            for (int c = 0; c < C; ++c) x[j][c] = trunc_small(x[j][c] * a);
        } else {
          GPUAUG_PHOTO_UNROLL
          for (int j = 0; j < V; ++j)
            GPUAUG_PHOTO_UNROLL
            for (int c = 0; c < C; ++c) x[j][c] = saturated_u8(x[j][c] * a);
        }
      } else {
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j)
          GPUAUG_PHOTO_UNROLL
          for (int c = 0; c < C; ++c) x[j][c] = stored<T>(clamp_result<T>(rounded<T>(x[j][c] * s.a), kBound));
      }
      break;
    case kContrast:
      if (kIsU8<T> && s.unit) {
        blend_all<C, T, kIsU8<T>>(x, r.mean, s);
      } else {
        blend_all<C, T, false>(x, r.mean, s);
      }
      break;
    case kSaturation:
      if constexpr (C == 3) {
        if (kIsU8<T> && s.unit) {
          saturate<T, kIsU8<T>>(x, s);
        } else {
          saturate<T, false>(x, s);
        }
      }
      break;
    case kHue:
      if constexpr (C == 3) {
        if constexpr (!kIsU8<T>) {
          hue_shift_run<T>(x, s.a);
        } else {
#ifndef __CUDA_ARCH__
          hue_shift_u8_run(x, s.a, s.b);
#else
          GPUAUG_PHOTO_UNROLL
          for (int j = 0; j < V; ++j) hue_shift_u8(x[j], s.a, s.b);
#endif
        }
      }
      break;
    case kGrayscale:
      if constexpr (C == 3) {
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j) {
          const P l = stored<T>(gray<T>(x[j]));
          GPUAUG_PHOTO_UNROLL
          for (int c = 0; c < 3; ++c) x[j][c] = l;
        }
      }
      break;
    case kSolarize: {
      // image >= threshold compares in the image's dtype (float32 for uint8)
      const P threshold = rounded<T>(s.a);
      GPUAUG_PHOTO_UNROLL
      for (int j = 0; j < V; ++j)
        GPUAUG_PHOTO_UNROLL
        for (int c = 0; c < C; ++c) {
          // a select, not a branch: the CPU's loops vectorise it
          x[j][c] = x[j][c] >= threshold ? rounded<T>(kBound - x[j][c]) : x[j][c];
        }
      break;
    }
    case kPosterize:
      if constexpr (kIsU8<T>) {
        // v & mask: the top `bits` bits
        const int bits = static_cast<int>(s.a);
        if (bits < 8) {
          const int mask = (0xFF << (8 - bits)) & 0xFF;
          GPUAUG_PHOTO_UNROLL
          for (int j = 0; j < V; ++j)
            GPUAUG_PHOTO_UNROLL
            for (int c = 0; c < C; ++c) x[j][c] = from_small_int<P>(small_int(x[j][c]) & mask);
        }
      } else {
        // s.b = 2^bits
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j)
          GPUAUG_PHOTO_UNROLL
          for (int c = 0; c < C; ++c) {
            x[j][c] = rounded<T>(clamp(std::floor(rounded<T>(x[j][c] * s.b)), P(0), s.b - P(1)) / s.b);
          }
      }
      break;
    case kInvert:
      if constexpr (C == 3) {
        // the pixels' values as one array: over x[j][c], GCC 12's SLP vectoriser built each
        // vector of eight from pairs of values (vinsertps), and a lone invert of float32 images
        // on the CPU took twice torchvision's time
        P* values = &x[0][0];
        GPUAUG_PHOTO_UNROLL
        for (int i = 0; i < V * 3; ++i) values[i] = rounded<T>(kBound - values[i]);
      } else {
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j) x[j][0] = rounded<T>(kBound - x[j][0]);
      }
      break;
    case kPermuteChannels:
      if constexpr (C == 3) {
        const int code = static_cast<int>(s.a);
        const int p0 = permuted_channel(code, 0), p1 = permuted_channel(code, 1),
                  p2 = permuted_channel(code, 2);
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j) {
          const P y[3] = {x[j][0], x[j][1], x[j][2]};
          x[j][0] = pick(y, p0);
          x[j][1] = pick(y, p1);
          x[j][2] = pick(y, p2);
        }
      }
      break;
    case kAutocontrast:
      // (x - minimum) / inv_scale, clamped, in the image's dtype (float32 for uint8, truncated)
      GPUAUG_PHOTO_UNROLL
      for (int j = 0; j < V; ++j)
        GPUAUG_PHOTO_UNROLL
        for (int c = 0; c < C; ++c) {
          const P stretched = rounded<T>(rounded<T>(x[j][c] - r.low[c]) / r.inv_scale[c]);
          x[j][c] = stored<T>(clamp_result<T>(stretched, kBound));
        }
      break;
    case kEqualize:
      // through uint8 (floating images: to_dtype and back, scaled) and the channel's table
      GPUAUG_PHOTO_UNROLL
      for (int j = 0; j < V; ++j)
        GPUAUG_PHOTO_UNROLL
        for (int c = 0; c < C; ++c) {
          const int equalized = r.table[c * kBins + equalize_bin<T>(x[j][c])];
          if constexpr (kIsU8<T>) {
            x[j][c] = from_small_int<P>(equalized);
          } else {
            x[j][c] = rounded<T>(static_cast<P>(equalized) * P(1.0 / 255.0));
          }
        }
      break;
    case kColorAugment:
      color_augment<C, T>(x, s);
      break;
    default:
      break;
  }
}

// V pixels through steps [begin, end) of a sample's program.
template <int C, typename T, typename P, int V>
C10_HOST_DEVICE inline void run_steps(const SampleProgram<P>& prog, int begin, int end,
                                      P (&x)[V][3], const Reduced<P>& r) {
  // a pointer through the steps: an index makes nvcc recompute the array's address every step
  for (const Step<P>* s = prog.steps + begin; s != prog.steps + end; ++s) {
    apply_step<C, T>(*s, x, r);
  }
}

// The value contrast averages: the pixel's grayscale (floored for uint8), or its one channel.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline P contrast_gray(const P (&x)[3]) {
  if constexpr (C == 1) return x[0];
  P l = gray<T>(x);
  if constexpr (kIsU8<T>) l = trunc_small(l);
  return l;
}

// The statistics a reduction of `kind` keeps: contrast's one sum, autocontrast's six extremes.
C10_HOST_DEVICE inline int stat_count(int kind) { return kind == kAutocontrast ? kStats : 1; }

// A reduction's statistics before any pixel: sums start at 0, minima at +inf, maxima at -inf.
C10_HOST_DEVICE inline double initial_stat(int kind, int i) {
  if (kind != kAutocontrast) return 0.0;
  return i < 3 ? static_cast<double>(INFINITY) : -static_cast<double>(INFINITY);
}

// Two partial statistics i of a reduction of `kind` as one: sums, or minima and maxima (NaN wins,
// as in torch.amin and amax).
C10_HOST_DEVICE inline double combine_stat(int kind, int i, double a, double b) {
  if (kind != kAutocontrast) return a + b;
  return a != a || (i < 3 ? a < b : a > b) ? a : b;
}

// A pixel's part, at its reduction step, of the image's statistics.
template <int C, typename T, typename P>
C10_HOST_DEVICE inline void add_pixel_stats(int kind, const P (&x)[3], double (&stats)[kStats]) {
  if (kind == kContrast) {
    stats[0] += contrast_gray<C, T>(x);
    return;
  }
  for (int c = 0; c < C; ++c) {
    stats[c] = combine_stat(kind, c, x[c], stats[c]);
    stats[3 + c] = combine_stat(kind, 3 + c, x[c], stats[3 + c]);
  }
}

// What the reduction step reads, from its image's statistics: contrast's mean (in the image's
// dtype), autocontrast's minima and scales (float32 for uint8, as torchvision computes them).
template <typename T, typename P>
C10_HOST_DEVICE inline Reduced<P> finish_reduction(int kind, const double (&stats)[kStats],
                                                   int64_t pixels) {
  Reduced<P> r{};
  if (kind == kContrast) r.mean = rounded<T>(static_cast<P>(stats[0] / static_cast<double>(pixels)));
  if (kind != kAutocontrast) return r;
  for (int c = 0; c < 3; ++c) {
    const P low = static_cast<P>(stats[c]), high = static_cast<P>(stats[3 + c]);
    const bool flat = low == high;
    r.low[c] = flat ? P(0) : low;
    const P inv_bound = static_cast<P>(kIsU8<T> ? 1.0 / 255.0 : 1.0);  // a Python float
    r.inv_scale[c] = flat ? P(1) : rounded<T>(rounded<T>(high - low) * inv_bound);
  }
  return r;
}

// Image values in the compute type (uint8 unscaled) and back.
template <typename P, typename T>
C10_HOST_DEVICE inline P load(T v) {
  if constexpr (std::is_same_v<T, uint8_t> && std::is_same_v<P, float>) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(0x4B000000u | v) - 8388608.0f;  // 2^23 + v: integer ops, exact
#endif
  }
#ifndef __CUDACC__
  if constexpr (std::is_same_v<P, float>) {
    if constexpr (std::is_same_v<T, c10::Half>) return cpu::half_floats::from_half(v);
    if constexpr (std::is_same_v<T, c10::BFloat16>) return cpu::half_floats::from_bfloat16(v);
  }
#endif
  return static_cast<P>(v);
}

// The output: to_dtype(scale=True) from the image's dtype to out_t, then (v - mean) / std.
template <typename T, typename out_t, typename P>
C10_HOST_DEVICE inline out_t convert(P v, const Output<P>& o, int c) {
  if constexpr (kIsU8<out_t>) {
    return static_cast<out_t>(small_int(u8_value<T>(v)));
  } else {
    // uint8 images: one multiply-add with or without normalisation (then 1/255 and 0: the
    // product alone, exactly), so the GPU's stores are not both paths under a predicate
    if constexpr (kIsU8<T>) return static_cast<out_t>(std::fma(v, o.inv_std_u8[c], o.offset[c]));
    if (o.normalize) return static_cast<out_t>(std::fma(v, o.inv_std[c], o.offset[c]));
    return static_cast<out_t>(v);
  }
}

// A stage's step: its kind, its factor and what derives from the factor.
template <typename P>
C10_HOST_DEVICE inline Step<P> make_step(int kind, P factor) {
  Step<P> s{kind, factor, P(0), false, {}, {}};
  if (kind == kContrast || kind == kSaturation) {
    s.b = P(1.0 - static_cast<double>(factor));  // _blend's alpha, a Python float
    s.unit = s.a >= P(0) && s.a <= P(1) && s.b >= P(0);  // uint8 sums need no clamp (blend)
  } else if (kind == kBrightness) {
    s.b = u8_brightness_factor(factor);
    s.unit = s.b <= P(1);
  } else if (kind == kPosterize) {
    s.b = P(int64_t{1} << (static_cast<int>(factor) & 15));
  } else if (kind == kHue) {
    s.b = factor * P(6);  // uint8 hue's shift in sectors
  }
  return s;
}

C10_HOST_DEVICE inline bool is_reduction(int kind) {
  return kind == kContrast || kind == kAutocontrast || kind == kEqualize;
}

// Whether slot a runs before slot b by their keys: ascending, NaN last, ties (-0.0 and 0.0
// among them) by slot, the order of torch.argsort(keys, stable=True).
template <typename K>
C10_HOST_DEVICE inline bool key_before(K key_a, int a, K key_b, int b) {
  const bool nan_a = key_a != key_a, nan_b = key_b != key_b;
  if (nan_a != nan_b) return nan_b;
  if (!nan_a && key_a != key_b) return key_a < key_b;
  return a < b;
}

template <typename K>
C10_HOST_DEVICE inline int rank_in_row(const K* keys, int k, int s) {
  int rank = 0;
  for (int i = 0; i < k; ++i) rank += key_before(keys[i], i, keys[s], s);
  return rank;
}

// The position slot s takes in sample n's order when keys give it.
template <typename P>
C10_HOST_DEVICE inline int key_rank(const Rows<P>& rows, int64_t n, int k, int s) {
  return rows.float_keys ? rank_in_row(rows.float_keys[n], k, s)
                         : rank_in_row(rows.double_keys[n], k, s);
}

template <typename P>
C10_HOST_DEVICE inline bool has_keys(const Rows<P>& rows) {
  return rows.float_keys || rows.double_keys;
}

// `slot` where sample n runs it, else -1: outside 0..K-1 (an order that is not a permutation:
// the op's documented "skipped") or not applied.
template <typename P>
C10_HOST_DEVICE inline int64_t if_applied(const Rows<P>& rows, int64_t n, int k, int64_t slot) {
  if (slot < 0 || slot >= k) return -1;
  return rows.apply && !rows.apply[n][slot] ? -1 : slot;
}

// The slot sample n runs at position j of its order, or -1 where it runs none there.
template <typename P>
C10_HOST_DEVICE inline int64_t applied_slot(const Rows<P>& rows, int64_t n, int k, int j) {
  int64_t slot = j;
  if (rows.order) {
    slot = rows.order[n][j];
  } else if (has_keys(rows)) {
    for (int s = 0; s < k; ++s) {
      if (key_rank(rows, n, k, s) == j) slot = s;
    }
  }
  return if_applied(rows, n, k, slot);
}

// A drawn program's order key of `slot` for sample n's uniforms u.
template <typename P>
C10_HOST_DEVICE inline double drawn_key(const Program& program, const P* u, int slot) {
  const int column = program.key_column[slot];
  if (column < 0) return program.key_low[slot];
  return std::fma(program.key_width[slot], static_cast<double>(u[column]), program.key_low[slot]);
}

// Whether a drawn program's `slot` applies for sample n's uniforms u.
template <typename P>
C10_HOST_DEVICE inline bool drawn_applies(const Program& program, const P* u, int slot) {
  const int column = program.coin_column[slot];
  return column < 0 || static_cast<float>(u[column]) < static_cast<float>(program.coin_below[slot]);
}

// applied_slot of a drawn program.
template <typename P>
C10_HOST_DEVICE inline int64_t drawn_applied_slot(const Program& program, const Rows<P>& rows,
                                                  int64_t n, int k, int j) {
  const P* u = rows.factors[n];
  for (int s = 0; s < k; ++s) {
    const double key = drawn_key(program, u, s);
    int rank = 0;
    for (int i = 0; i < k; ++i) rank += key_before(drawn_key(program, u, i), i, key, s);
    if (rank == j) return drawn_applies(program, u, s) ? s : -1;
  }
  return -1;
}

// Out of line on the GPU: a sample's program decodes it once, and inlined into every kernel it
// would grow them all.
template <typename D>
GPUAUG_PHOTO_NOINLINE C10_HOST_DEVICE D gamma_of_log(D log_gamma) {
  return std::exp(log_gamma);
}

// A ranged program's factor of `slot` for the uniform u: u in the slot's range, rounded to
// float32 (a gamma slot's: exp of the value; a permutation's: ranged_permutation of the rounded
// value). The CPU check of the values calls it too.
C10_HOST_DEVICE inline float ranged_factor(const Program& program, int64_t slot, double u) {
  double factor = std::fma(program.width[slot], u, program.low[slot]);
  if (is_gamma_slot(program, slot)) factor = gamma_of_log(factor);
  if (program.kinds[slot] == kPermuteChannels) {
    return ranged_permutation(static_cast<float>(factor));
  }
  return static_cast<float>(factor);
}

// Sample n's factor of `slot`: its `factors` entry, or ranged_factor of that uniform.
template <typename P>
C10_HOST_DEVICE inline P slot_factor(const Program& program, const Rows<P>& rows, int64_t n,
                                     int64_t slot) {
  const P u = rows.factors[n][slot];
  if (!program.ranged) return u;
  return static_cast<P>(ranged_factor(program, slot, static_cast<double>(u)));
}

// A drawn program's factor of `slot`: ranged_factor of the uniform of its factor column (none: 0).
template <typename P>
C10_HOST_DEVICE inline P drawn_factor(const Program& program, const Rows<P>& rows, int64_t n,
                                      int64_t slot) {
  const int column = program.factor_column[slot];
  const P u = column < 0 ? P(0) : rows.factors[n][column];
  return static_cast<P>(ranged_factor(program, slot, static_cast<double>(u)));
}

// The step of `slot`, factor(i) the factor of slot i (a color_augment stage's parameters from its
// parameter slots).
template <typename P, typename Factor>
C10_HOST_DEVICE inline Step<P> step_of(const Program& program, int64_t slot,
                                       const Factor& factor) {
  Step<P> s = make_step(program.kinds[slot], factor(slot));
  if (s.kind == kColorAugment) {
    s.gains[0] = s.a;
    s.gains[1] = factor(slot + 1);
    s.gains[2] = factor(slot + 2);
    s.jitter = {factor(slot + 3), factor(slot + 4), factor(slot + 5)};
  }
  return s;
}

// Sample n's step of `slot`.
template <typename P>
C10_HOST_DEVICE inline Step<P> slot_step(const Program& program, const Rows<P>& rows, int64_t n,
                                         int64_t slot) {
  return step_of<P>(program, slot, [&](int64_t i) { return slot_factor(program, rows, n, i); });
}

// A drawn program's step of `slot` for sample n.
template <typename P>
C10_HOST_DEVICE inline Step<P> drawn_step(const Program& program, const Rows<P>& rows, int64_t n,
                                          int64_t slot) {
  return step_of<P>(program, slot, [&](int64_t i) { return drawn_factor(program, rows, n, i); });
}

// Whether `slot` (-1: none) runs a step: parameter slots only hold their stage's parameters.
C10_HOST_DEVICE inline bool has_step(const Program& program, int64_t slot) {
  return slot >= 0 && program.kinds[slot] != kColorParameter;
}

// Decodes sample n's program: its stages in its order, without those it does not apply.
template <typename P>
C10_HOST_DEVICE inline SampleProgram<P> decode(const Program& program, const Rows<P>& rows,
                                               int64_t n) {
  SampleProgram<P> prog;
  prog.count = 0;
  prog.reduce_at = -1;
  const int k = program.count;
  for (int j = 0; j < k; ++j) {
    const int64_t slot = program.drawn ? drawn_applied_slot(program, rows, n, k, j)
                                       : applied_slot(rows, n, k, j);
    if (!has_step(program, slot)) continue;
    const Step<P> s = program.drawn ? drawn_step(program, rows, n, slot)
                                    : slot_step(program, rows, n, slot);
    if (prog.reduce_at < 0 && is_reduction(s.kind)) prog.reduce_at = prog.count;
    prog.steps[prog.count++] = s;
  }
  return prog;
}

}  // namespace gpuaug::photo
