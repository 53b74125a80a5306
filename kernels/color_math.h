// The arithmetic of gpuaug::color_transform for one pixel, shared by the CPU and CUDA kernels.
// P is the compute type: double for float64 images, float otherwise.
//
// Forward, for channels x_c of one pixel and one sample's parameters:
//   s_in = sum x_c;  y_c = x_c * color_c;  s_out = sum y_c;  scale = s_in / (s_out + 0.01)
//   u_c = y_c * scale;  z_c = clamp(u_c, 0, 1);  w_c = z_c ^ gamma
//   v_c = 0.5 + (w_c + brightness - 0.5) * contrast;  out_c = clamp(v_c, 0, 1)
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define GPUAUG_UNROLL _Pragma("unroll")
#else
#define GPUAUG_UNROLL
#endif

namespace gpuaug::color {

constexpr double kSumEpsilon = 0.01;

// NaN -> 0 on every device and dtype, as the GPU's saturating instructions do: a pixel with a
// non-finite channel comes out as a black pixel put through brightness and contrast.
template <typename P>
C10_HOST_DEVICE inline P clamp01(P v) {
#ifdef __CUDA_ARCH__
  // A free .SAT modifier on the instruction that computes v.
  if constexpr (std::is_same_v<P, float>) return __saturatef(v);
#endif
  return v > P(0) ? (v < P(1) ? v : P(1)) : P(0);
}

// clamp01(a * b + c), as one saturating instruction on the GPU.
template <typename P>
C10_HOST_DEVICE inline P fma01(P a, P b, P c) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    float r;
    asm("fma.rn.ftz.sat.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
  }
#endif
  return clamp01(a * b + c);
}

template <typename P>
C10_HOST_DEVICE inline bool in01(P v) {
  return v >= P(0) && v <= P(1);
}

// z ^ g for z in [0, 1] as exp2(g * log2(z)): on the GPU two special function unit instructions,
// which is what keeps the kernel memory-bound (a full-precision powf is not). Spelled out, as
// --use_fast_math makes std::log2 and std::exp2, so that photometric.cu's color_augment stage,
// built without it, computes the same. log2(0) = -inf gives the right limits for g != 0; only
// g == 0 (pow(0, 0) == 1) needs spelling out.
template <typename P>
C10_HOST_DEVICE inline P pow01(P z, P g) {
  if (g == P(0)) return P(1);
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    float log2_z, power;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_z) : "f"(z));
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(power) : "f"(g * log2_z));
    return power;
  }
#endif
  return std::exp2(g * std::log2(z));
}

template <typename P>
struct SampleParams {
  P brightness, contrast, gamma;
};

// Steps 2-6 for one channel, given y = x * color and the pixel's scale.
template <typename P>
C10_HOST_DEVICE inline P channel_forward(P y, P scale, const SampleParams<P>& s) {
  const P w = pow01(clamp01(y * scale), s.gamma);
  return fma01(w + (s.brightness - P(0.5)), s.contrast, P(0.5));
}

template <typename P>
C10_HOST_DEVICE inline P pixel_scale(P s_in, P s_out) {
  return s_in / (s_out + P(kSumEpsilon));
}

// Gradients of one sample's scalar parameters, accumulated over its pixels.
template <typename P>
struct ScalarGrads {
  P brightness = 0, contrast = 0, gamma = 0;
};

// Backward of steps 2-6 for one channel: returns dL/du (u = y * scale), given dL/dout.
// Clamps pass the gradient where their input lies in [0, 1] inclusive (torch.clamp up to 2.14). At
// z == 0 the pow's derivatives are those of torch's pow where finite (dz = dw for gamma == 1,
// 0 for gamma > 1; dgamma = 0) and 0 where torch's are not (gamma < 1).
template <typename P>
C10_HOST_DEVICE inline P channel_backward(P grad_out, P y, P scale, const SampleParams<P>& s,
                                          ScalarGrads<P>& acc) {
  const P u = y * scale;
  const P z = clamp01(u);
  const P w = pow01(z, s.gamma);
  const P t = w + (s.brightness - P(0.5));
  const P dv = in01(t * s.contrast + P(0.5)) ? grad_out : P(0);
  const P dw = dv * s.contrast;
  acc.brightness += dw;
  acc.contrast += dv * t;
  P dz;
  if (z > P(0)) {
    dz = dw * s.gamma * w / z;
    acc.gamma += dw * w * std::log(z);
  } else {
    dz = s.gamma == P(1) ? dw : P(0);
  }
  return in01(u) ? dz : P(0);
}

// Image values in the compute type: uint8 reads as v / 255; other dtypes convert.
template <typename P, typename T>
C10_HOST_DEVICE inline P load(T v) {
  return static_cast<P>(v);
}
template <typename P>
C10_HOST_DEVICE inline P load(uint8_t v) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<P, float>) {
    // 2^23 + v read as a float, minus 2^23: integer ops instead of the scarce conversion unit.
    return (__uint_as_float(0x4B000000u | v) - 8388608.0f) * (1.0f / 255.0f);
  }
#endif
  return static_cast<P>(v) * P(1.0 / 255.0);
}

// Output values: uint8 is v * 255 rounded to nearest (ties to even) and saturated.
template <typename T, typename P>
C10_HOST_DEVICE inline T store(P v) {
  return static_cast<T>(v);
}
template <>
C10_HOST_DEVICE inline uint8_t store<uint8_t, float>(float v) {
#ifdef __CUDA_ARCH__
  // Adding 1.5 * 2^23 rounds to an integer (ties to even) in the low mantissa bits.
  return static_cast<uint8_t>(__float_as_uint(fmaf(__saturatef(v), 255.0f, 12582912.0f)) & 0xFFu);
#else
  const float r = std::nearbyint(v * 255.0f);
  return static_cast<uint8_t>(r >= 0.0f ? (r < 255.0f ? r : 255.0f) : 0.0f);  // NaN -> 0
#endif
}
template <>
C10_HOST_DEVICE inline uint8_t store<uint8_t, double>(double v) {
  const double r = std::nearbyint(v * 255.0);
  return static_cast<uint8_t>(r >= 0.0 ? (r < 255.0 ? r : 255.0) : 0.0);  // NaN -> 0
}

}  // namespace gpuaug::color

namespace gpuaug::color {

// Per-pixel channel arrays: C > 0 is a channel count known at compile time (the arrays stay in
// registers); C == 0 means `channels` at run time, up to kMaxChannels, which the op checks.
constexpr int kMaxChannels = 32;
template <int C>
constexpr int kArray = C > 0 ? C : kMaxChannels;

// Raw255: x holds uint8 values unscaled (0..255); the 1/255 is folded into the pixel's scale:
// scale = (s_in / 255) / (s_out / 255 + 0.01) / 255 = s_in / (255 * s_out + 255 * 2.55).
template <int C, typename P, bool Raw255 = false>
C10_HOST_DEVICE inline void forward_pixel(P (&x)[kArray<C>], int channels, const P* color,
                                          const SampleParams<P>& s) {
  const int nc = C > 0 ? C : channels;
  P s_in = x[0], s_out = x[0] * color[0];  // channels >= 1; starting from 0 costs an add
  GPUAUG_UNROLL
  for (int c = 1; c < nc; ++c) {
    s_in += x[c];
    s_out += x[c] * color[c];
  }
  const P scale = Raw255 ? s_in / (s_out * P(255) + P(255 * 255 * kSumEpsilon))
                         : pixel_scale(s_in, s_out);
  GPUAUG_UNROLL
  for (int c = 0; c < nc; ++c) x[c] = channel_forward(x[c] * color[c], scale, s);
}

// g holds dL/dout on entry and dL/dx on return; dL/dcolor adds into grad_color, the scalar
// parameters' gradients into acc.
template <int C, typename P>
C10_HOST_DEVICE inline void backward_pixel(const P (&x)[kArray<C>], P (&g)[kArray<C>],
                                           int channels, const P* color,
                                           const SampleParams<P>& s, P (&grad_color)[kArray<C>],
                                           ScalarGrads<P>& acc) {
  const int nc = C > 0 ? C : channels;
  P s_in = x[0], s_out = x[0] * color[0];
  GPUAUG_UNROLL
  for (int c = 1; c < nc; ++c) {
    s_in += x[c];
    s_out += x[c] * color[c];
  }
  const P denominator = s_out + P(kSumEpsilon);
  const P scale = s_in / denominator;
  P d_scale = 0;
  GPUAUG_UNROLL
  for (int c = 0; c < nc; ++c) {
    const P y = x[c] * color[c];
    g[c] = channel_backward(g[c], y, scale, s, acc);  // now dL/du_c
    d_scale += g[c] * y;
  }
  const P d_sum_in = d_scale / denominator;
  const P d_sum_out = -d_scale * scale / denominator;
  GPUAUG_UNROLL
  for (int c = 0; c < nc; ++c) {
    const P dy = g[c] * scale + d_sum_out;
    grad_color[c] += dy * x[c];
    g[c] = dy * color[c] + d_sum_in;
  }
}

}  // namespace gpuaug::color
