// The arithmetic of gpuaug::photometric for one pixel, shared by the CPU and CUDA kernels: each
// stage computes what torchvision.transforms.v2.functional computes for one image, in the same
// order of float operations, and leaves the values as torchvision's tensor would hold them (uint8
// truncated, float16 and bfloat16 rounded) so the next stage sees what torchvision's would.
// T is the image's dtype; P the compute type (values.h). Hue is hue.h's,
// a sample's program program.h's.
#pragma once

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/photometric/photometric.h"
#include "kernels/photometric/hue.h"
#include "kernels/photometric/program.h"
#include "kernels/photometric/values.h"

namespace gpuaug::photo {

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

// equalize on the CPU: the bins, the lookups and the values in loops of their own, so that GCC
// vectorises the two around the lookups (in one loop, float16's scalings stayed scalar, slower
// than torchvision).
template <int C, typename T, typename P, int V>
inline void equalize_run(P (&x)[V][3], const Reduced<P>& r) {
  int values[V][3];
  for (int j = 0; j < V; ++j)
    for (int c = 0; c < C; ++c) values[j][c] = equalize_bin<T>(x[j][c]);
  for (int j = 0; j < V; ++j)
    for (int c = 0; c < C; ++c) values[j][c] = r.table[c * kBins + values[j][c]];
  for (int j = 0; j < V; ++j)
    for (int c = 0; c < C; ++c) {
      if constexpr (kIsU8<T>) {
        x[j][c] = from_small_int<P>(values[j][c]);
      } else {
        x[j][c] = rounded<T>(static_cast<P>(values[j][c]) * P(1.0 / 255.0));
      }
    }
}

// Whether a stage kind is one of ColorJitter's and RandomPhotometricDistort's, apply_step's own
// cases (the others are apply_other_step's). A program of those kinds alone, contrast its
// reduction, runs on the GPU in the resident kernel built for them (JitterKinds), whose loop
// leaves the other steps' code out.
C10_HOST_DEVICE inline bool is_jitter_kind(int kind) {
  return kind == kBrightness || kind == kContrast || kind == kSaturation || kind == kHue ||
         kind == kPermuteChannels;
}

// apply_step of the kinds that are not jitter kinds.
template <int C, typename T, typename P, int V>
C10_HOST_DEVICE inline void apply_other_step(const Step<P>& s, P (&x)[V][3], const Reduced<P>& r) {
  constexpr P kBound = kIsU8<T> ? P(255) : P(1);
  switch (s.kind) {
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
        // vector of eight from pairs of values (vinsertps), slower than torchvision's invert
        P* values = &x[0][0];
        GPUAUG_PHOTO_UNROLL
        for (int i = 0; i < V * 3; ++i) values[i] = rounded<T>(kBound - values[i]);
      } else {
        GPUAUG_PHOTO_UNROLL
        for (int j = 0; j < V; ++j) x[j][0] = rounded<T>(kBound - x[j][0]);
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
#ifndef __CUDA_ARCH__
      equalize_run<C, T>(x, r);
#else
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
#endif
      break;
    case kColorAugment:
      color_augment<C, T>(x, s);
      break;
    default:
      break;
  }
}

// One stage on V pixels of C (1 or 3) channels: the stage's branch once, then its loop. `r`
// holds the image's statistics at its reduction step (contrast's and autocontrast's).
// JitterKinds: the step is of a jitter kind (is_jitter_kind); the others' code is left out.
template <int C, typename T, bool JitterKinds = false, typename P, int V>
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
    default:
      if constexpr (!JitterKinds) apply_other_step<C, T>(s, x, r);
      break;
  }
}

// V pixels through steps [begin, end) of a sample's program.
template <int C, typename T, bool JitterKinds = false, typename P, int V>
C10_HOST_DEVICE inline void run_steps(const SampleProgram<P>& prog, int begin, int end,
                                      P (&x)[V][3], const Reduced<P>& r) {
  // a pointer through the steps: an index makes nvcc recompute the array's address every step
  for (const Step<P>* s = prog.steps + begin; s != prog.steps + end; ++s) {
    apply_step<C, T, JitterKinds>(*s, x, r);
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
    if constexpr (std::is_same_v<T, c10::Half>) return half_floats::from_half(v);
    if constexpr (std::is_same_v<T, c10::BFloat16>) return half_floats::from_bfloat16(v);
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
    // product alone, exactly), so the GPU's stores are not both paths under a predicate; to
    // float64 torchvision's own steps (v, an integer, is exact in float32)
    if constexpr (kIsU8<T> && std::is_same_v<out_t, double>) {
      return (static_cast<double>(v) * (1.0 / 255.0) - o.mean_f64[c]) / o.std_f64[c];
    }
    if constexpr (kIsU8<T>) return static_cast<out_t>(std::fma(v, o.inv_std_u8[c], o.offset[c]));
    if (o.normalize) return static_cast<out_t>(std::fma(v, o.inv_std[c], o.offset[c]));
    return static_cast<out_t>(v);
  }
}

}  // namespace gpuaug::photo
