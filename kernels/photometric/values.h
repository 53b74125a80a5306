// Values as torchvision's tensors hold them, for gpuaug::photometric's arithmetic on the CPU and
// the GPU: the image's bounds, rounding to the image's dtype, uint8 truncation and conversions
// (by float additions on the GPU), and the two formulas the stages share (grayscale, _blend).
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

#include "kernels/photometric/photometric.h"
#ifndef __CUDACC__
#include "kernels/half_floats.h"
#endif

// Unrolls a loop over a thread's pixels on the GPU (GCC's vectoriser takes the CPU's loops).
#ifdef __CUDACC__
#define GPUAUG_PHOTO_UNROLL _Pragma("unroll")
#else
#define GPUAUG_PHOTO_UNROLL
#endif

// Keeps a function out of line on the GPU (where each use says why).
#ifdef __CUDACC__
#define GPUAUG_PHOTO_NOINLINE __noinline__
#else
#define GPUAUG_PHOTO_NOINLINE
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
    if constexpr (std::is_same_v<T, c10::Half>) return half_floats::half_rounded(v);
    if constexpr (std::is_same_v<T, c10::BFloat16>) return half_floats::bfloat16_rounded(v);
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

}  // namespace gpuaug::photo
