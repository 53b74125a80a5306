// adjust_hue through HSV for gpuaug::photometric, on the CPU and the GPU: floating pixels by
// torchvision's formulas (finite ones without a branch, others step by step as its tensors
// compute them), uint8 pixels by a quick path in their own units that falls back to torchvision's
// path where a rounding could fall differently.
#pragma once

#include <c10/macros/Macros.h>

#include <cfloat>
#include <cmath>
#include <type_traits>

#include "kernels/photometric/values.h"

namespace gpuaug::photo {

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
// these are (test_photometric_values.py's test_hue_every_uint8_color checks all 2^24 colours); the
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

// Whether hue_shift's divisions of a hue_finite pixel may take UnitDivisor's path on the GPU,
// which gives IEEE division's results (the same sequence as the compiler's division without its
// check, FCHK, and the branch to its slow path after each quotient): flat, or its range and
// largest value of magnitudes in [2^-40, 2^40], so that every operand, quotient and remainder is
// normal (a difference from the largest value is 0 or at least 2^-64) and the reciprocals finite.
template <typename P>
C10_HOST_DEVICE inline bool hue_divides_quickly(P r, P g, P b) {
  constexpr P kLow = P(0x1p-40), kHigh = P(0x1p40);
  const P maxc = largest(r, g, b), range = maxc - smallest(r, g, b);
  const P magnitude = std::fabs(maxc);
  return range == P(0) || (range >= kLow && range <= kHigh && magnitude >= kLow &&
                           magnitude <= kHigh);
}

// adjust_hue of one RGB pixel of a floating image through HSV: torchvision's _rgb_to_hsv and
// _hsv_to_rgb. Of rc, gc and bc only the two the pixel's hue uses are divided, picked by selects:
// pixels of a warp differ in their largest channel, and a branch per case would run all three.
// Pixels that are not hue_finite go to hue_shift_nonfinite. kFiniteModerate: the pixel is taken
// as hue_finite (and float32 on the GPU as hue_divides_quickly) and the shift as in [-0.5, 0.5],
// so there is no branch, and the remainders' operands lie in (-1, 2) (h in [-1, 5]: each quotient
// of a difference by the range is in [0, 1]) and take one add. Where that does not hold, its
// result is wrong but defined (the CPU's hue_shift_run computes it for every pixel, then
// discards it).
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
  P s, h;
  const P divisor = flat ? P(1) : range;
#ifdef __CUDA_ARCH__
  if constexpr (kFiniteModerate && std::is_same_v<P, float>) {  // see hue_divides_quickly
    const UnitDivisor<P> by_range(divisor);
    s = UnitDivisor<P>(flat ? P(1) : maxc).divide(range);
    h = (by_range.divide(maxc - first) + offset) - by_range.divide(maxc - second);
  } else
#endif
  {
    s = range / (flat ? P(1) : maxc);
    h = ((maxc - first) / divisor + offset) - (maxc - second) / divisor;
  }
  int i;
  const P f =
      shifted_sector<kFiniteModerate>(mod1<kFiniteModerate>(h * P(1.0 / 6.0) + P(1)), hue, i);
#ifdef __CUDA_ARCH__
  from_sector(i, f, s, maxc, r, g, b);
#else
  // from_sector written out: GCC left control flow in hue's loop where it was called (inlined
  // or not) and did not vectorise it. The GPU keeps the call.
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
// all are hue_finite (on the GPU, float32 also hue_divides_quickly) and the shift lies in
// torchvision's [-0.5, 0.5] (always, but for a non-finite pixel, a float32 one of tiny or huge
// range, or a factor given out of range), they take hue_shift<true>: on the GPU the
// pixels are then one block of code, with no branch between them (a branch per pixel slows the
// float kernels), and on the CPU the loop vectorises (with CMakeLists.txt's if-conversion
// limit), where fmod, a call made a value at a time, kept it scalar.
template <typename T, typename P, int V>
C10_HOST_DEVICE inline void hue_shift_run(P (&x)[V][3], P hue) {
  const bool moderate = hue >= P(-0.5) && hue <= P(0.5);
#ifdef __CUDA_ARCH__
  bool quick = moderate;
  GPUAUG_PHOTO_UNROLL
  for (int j = 0; j < V; ++j) {
    quick &= hue_finite(x[j][0], x[j][1], x[j][2]);
    if constexpr (std::is_same_v<P, float>) quick &= hue_divides_quickly(x[j][0], x[j][1], x[j][2]);
  }
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
  // In a loop of its own, the check was not vectorised and computed the extremes again.
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
// high and low are the pixel's largest and smallest values, red and green whether the largest is
// r, or g and not r, as hue_shift_u8 found them: recomputed here, they cost its quick path a
// compare more a pixel (sm_90 SASS: nvcc hoisted them there for this path).
template <typename P>
C10_HOST_DEVICE inline void hue_shift_u8_exact(P (&x)[3], P hue, P high, P low, bool red,
                                               bool green) {
  constexpr P kScale = P(1.0 / 255.0);
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

// hue_shift_u8's middle value: trunc(m 255.999 / 255) of its unscaled value m (0 below 1), and
// whether that product lies within about 5e-4 of an integer other than 0 (`near`), where
// torchvision's float path may truncate it differently.
template <typename P>
C10_HOST_DEVICE inline P scaled_middle(P m, bool& near) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    // y = 256 + m 255.999 / 255 + 2^-11, rounded toward zero to its unit 2^-15 and at least
    // 256.5: its bits hold the integer part (bits 15-22) and the fraction (bits 0-14) at once,
    // and the product lies within 2^-11 (4.9e-4) of an integer exactly where y's fraction is
    // below 2^-10 (bits 5-14 clear; 256.5 keeps products below 1 from counting as near 0).
    // Not near, floor(y - 256) is the product's floor. Four instructions, where scaling,
    // truncating and testing the fraction took eight (sm_90 SASS).
    constexpr float kScale = static_cast<float>(255.999 / 255.0);
    const float y = fmaxf(__fmaf_rz(m, kScale, 256.00048828125f), 256.5f);  // 256 + 2^-11
    near = (__float_as_uint(y) & 0x7FE0u) == 0;
    return __fadd_rz(y, 8388608.0f - 256.0f) - 8388608.0f;
  }
#endif
  const P scaled = max_of(m, P(0)) * P(255.999 / 255.0);
  const P middle = trunc_small(scaled);
  // within 5e-4 of an integer: fraction < 5e-4 or > 1 - 5e-4, as one compare of a magnitude
  near = scaled > P(0.5) && std::fabs((scaled - middle) - P(0.5)) > P(0.5 - 5e-4);
  return middle;
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
// the scaled value is within 5e-4 of an integer (other than 0; on the GPU within 2^-11, 4.9e-4:
// scaled_middle), about 0.1% of pixels, hue_shift_u8_exact takes torchvision's path instead
// (without it uint8 values were up to 3 off; torchvision's path for every pixel is slower).
// What the fallback costs is mostly the test and its branch around every pixel, not the rare
// exact path, so deferring the exact pixels gains nothing.
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
  bool near_integer;
  const P middle = scaled_middle(middle_unscaled, near_integer);
  if (!kDeferExact && near_integer) {
    hue_shift_u8_exact(x, hue, high, low, red, green);
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
// them.
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

}  // namespace gpuaug::photo
