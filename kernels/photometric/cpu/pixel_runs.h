// Runs of 16 pixels of three channels, uint8 (planar or interleaved) or float32, float16 and
// bfloat16 (planar), to and from the pixel loops' float run x[16][3], with AVX2: shuffles and
// eight-wide conversions (float16's with F16C). GCC 12 builds such a run from planes a value at a
// time, which left planar programs several times slower than torchvision's.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <immintrin.h>

#include <cstdint>

#define GPUAUG_PIXEL_RUNS 1
// What the pixel loops' x86-64-v3 clone may inline (walk.h's GPUAUG_PIXEL_LOOP).
#define GPUAUG_AVX2 __attribute__((target("arch=x86-64-v3")))

namespace gpuaug::cpu::pixel_runs {

constexpr int kPixels = 16;

// Byte shuffles between three vectors: 48 bytes of pixels and three planes of 16.
struct Shuffles {
  int8_t mask[3][3][16];  // [to][from][byte], -128 zeroes the byte
};

// Vector k of the interleaved pixels takes byte i from plane (16k + i) % 3.
constexpr Shuffles interleaving() {
  Shuffles s{};
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 16; ++i) {
        const int value = 16 * k + i;
        s.mask[k][c][i] = static_cast<int8_t>(value % 3 == c ? value / 3 : -128);
      }
    }
  }
  return s;
}

// Plane c takes pixel j's byte from vector (3j + c) / 16 of the interleaved pixels.
constexpr Shuffles deinterleaving() {
  Shuffles s{};
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 3; ++c) {
      for (int j = 0; j < 16; ++j) {
        const int value = 3 * j + c;
        s.mask[c][k][j] = static_cast<int8_t>(value / 16 == k ? value % 16 : -128);
      }
    }
  }
  return s;
}

// to[k] = the OR over c of from[c] shuffled by mask[k][c].
GPUAUG_AVX2 inline void shuffle(const Shuffles& s, const __m128i (&from)[3], __m128i (&to)[3]) {
  for (int k = 0; k < 3; ++k) {
    __m128i v = _mm_setzero_si128();
    for (int c = 0; c < 3; ++c) {
      const __m128i mask = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.mask[k][c]));
      v = _mm_or_si128(v, _mm_shuffle_epi8(from[c], mask));
    }
    to[k] = v;
  }
}

// 48 bytes as 48 floats at x.
GPUAUG_AVX2 inline void widen(const __m128i (&bytes)[3], float* x) {
  for (int k = 0; k < 3; ++k) {
    const __m256i low = _mm256_cvtepu8_epi32(bytes[k]);
    const __m256i high = _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(bytes[k], bytes[k]));
    _mm256_storeu_ps(x + 16 * k, _mm256_cvtepi32_ps(low));
    _mm256_storeu_ps(x + 16 * k + 8, _mm256_cvtepi32_ps(high));
  }
}

// 48 floats at x, integers in [0, 255] as a uint8 run's are, as bytes (truncation is exact).
GPUAUG_AVX2 inline void narrow(const float* x, __m128i (&bytes)[3]) {
  for (int k = 0; k < 3; ++k) {
    const __m256i low = _mm256_cvttps_epi32(_mm256_loadu_ps(x + 16 * k));
    const __m256i high = _mm256_cvttps_epi32(_mm256_loadu_ps(x + 16 * k + 8));
    // packs work within 128-bit lanes: the words of low, then of high, put back in order
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8);
    bytes[k] = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
  }
}

// The run's uint8 pixels from p: three planes plane_step apart, or (plane_step 0) interleaved.
GPUAUG_AVX2 inline void load_u8(const uint8_t* p, int64_t plane_step, float* x) {
  static constexpr Shuffles kInterleaving = interleaving();
  __m128i bytes[3];
  for (int k = 0; k < 3; ++k) {
    const uint8_t* at = p + (plane_step ? k * plane_step : 16 * k);
    bytes[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  }
  if (plane_step) {
    const __m128i planes[3] = {bytes[0], bytes[1], bytes[2]};
    shuffle(kInterleaving, planes, bytes);
  }
  widen(bytes, x);
}

// The run's uint8 pixels as three planes of 16 bytes.
GPUAUG_AVX2 inline void planes_of(const float* x, __m128i (&planes)[3]) {
  static constexpr Shuffles kDeinterleaving = deinterleaving();
  __m128i bytes[3];
  narrow(x, bytes);
  shuffle(kDeinterleaving, bytes, planes);
}

// The run's uint8 pixels to p: three planes plane_step apart, or (plane_step 0) interleaved.
GPUAUG_AVX2 inline void store_u8(const float* x, uint8_t* p, int64_t plane_step) {
  __m128i bytes[3];
  if (plane_step) {
    planes_of(x, bytes);
  } else {
    narrow(x, bytes);
  }
  for (int k = 0; k < 3; ++k) {
    uint8_t* at = p + (plane_step ? k * plane_step : 16 * k);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(at), bytes[k]);
  }
}

// The run's uint8 pixels to three float planes plane_step apart at p, value v of channel c as
// fma(v, scale[c], offset[c]).
GPUAUG_AVX2 inline void store_u8_planes(const float* x, float* p, int64_t plane_step,
                                        const float* scale, const float* offset) {
  __m128i planes[3];
  planes_of(x, planes);
  for (int c = 0; c < 3; ++c) {
    const __m256 s = _mm256_set1_ps(scale[c]), o = _mm256_set1_ps(offset[c]);
    const __m128i high_bytes = _mm_unpackhi_epi64(planes[c], planes[c]);
    const __m256 low = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(planes[c]));
    const __m256 high = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(high_bytes));
    _mm256_storeu_ps(p + c * plane_step, _mm256_fmadd_ps(low, s, o));
    _mm256_storeu_ps(p + c * plane_step + 8, _mm256_fmadd_ps(high, s, o));
  }
}

// The run's values in pixel order (interleaved, as x holds them) to p as floats, value v of
// channel c as fma(v, scale[c], offset[c]), or as it is where scale is null. Vector m's lane l
// holds value 8m + l, of channel (8m + l) % 3: the channels' pattern repeats every three vectors.
GPUAUG_AVX2 inline void store_interleaved(const float* x, float* p, const float* scale,
                                          const float* offset) {
  constexpr int kVectors = 3 * kPixels / 8;
  if (!scale) {
    for (int m = 0; m < kVectors; ++m) _mm256_storeu_ps(p + 8 * m, _mm256_loadu_ps(x + 8 * m));
    return;
  }
  __m256 scales[3], offsets[3];
  for (int m = 0; m < 3; ++m) {
    const int c = 8 * m % 3;  // lane 0's channel; lane l's is (c + l) % 3
    scales[m] = _mm256_setr_ps(scale[c], scale[(c + 1) % 3], scale[(c + 2) % 3], scale[c],
                               scale[(c + 1) % 3], scale[(c + 2) % 3], scale[c], scale[(c + 1) % 3]);
    offsets[m] = _mm256_setr_ps(offset[c], offset[(c + 1) % 3], offset[(c + 2) % 3], offset[c],
                                offset[(c + 1) % 3], offset[(c + 2) % 3], offset[c],
                                offset[(c + 1) % 3]);
  }
  for (int m = 0; m < kVectors; ++m) {
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * m), scales[m % 3], offsets[m % 3]);
    _mm256_storeu_ps(p + 8 * m, v);
  }
}

// Float shuffles of eight pixels: three vectors of interleaved values, from or to three planes.
struct Permutes {
  int32_t index[3][8];    // [to][lane]: the lane of its vector each value comes from
  int32_t take[3][3][8];  // [to][from][lane]: all ones where the value comes from vector `from`
};

// Interleaved vector m's lane l holds value 8m + l: pixel (8m + l) / 3 of plane (8m + l) % 3.
constexpr Permutes interleaving_floats() {
  Permutes s{};
  for (int m = 0; m < 3; ++m) {
    for (int l = 0; l < 8; ++l) {
      s.index[m][l] = (8 * m + l) / 3;
      s.take[m][(8 * m + l) % 3][l] = -1;
    }
  }
  return s;
}

// Plane c's lane j holds value 3j + c: lane (3j + c) % 8 of interleaved vector (3j + c) / 8.
constexpr Permutes deinterleaving_floats() {
  Permutes s{};
  for (int c = 0; c < 3; ++c) {
    for (int j = 0; j < 8; ++j) {
      s.index[c][j] = (3 * j + c) % 8;
      s.take[c][(3 * j + c) / 8][j] = -1;
    }
  }
  return s;
}

// to[k] lane l = lane s.index[k][l] of the vector from[f] whose s.take[k][f] lane l is set.
GPUAUG_AVX2 inline void permute(const Permutes& s, const __m256 (&from)[3], __m256 (&to)[3]) {
  for (int k = 0; k < 3; ++k) {
    const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.index[k]));
    __m256 v = _mm256_permutevar8x32_ps(from[0], index);
    for (int f = 1; f < 3; ++f) {
      const __m256 take = _mm256_loadu_ps(reinterpret_cast<const float*>(s.take[k][f]));
      v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(from[f], index), take);
    }
    to[k] = v;
  }
}

// Eight values to floats and back: float32 as they are, float16 with F16C, bfloat16 by shifts.
// Narrowing rounds to nearest even, as c10 does (a float16 NaN keeps its payload's high bits;
// a bfloat16 NaN becomes c10's 0x7FC0).
GPUAUG_AVX2 inline __m256 load_eight(const float* p) { return _mm256_loadu_ps(p); }
GPUAUG_AVX2 inline __m256 load_eight(const c10::Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
GPUAUG_AVX2 inline __m256 load_eight(const c10::BFloat16* p) {
  const __m256i bits = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16));
}
GPUAUG_AVX2 inline void store_eight(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
GPUAUG_AVX2 inline void store_eight(c10::Half* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
GPUAUG_AVX2 inline void store_eight(c10::BFloat16* p, __m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF)));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_srli_epi32(_mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC00000), nan), 16);
  const __m128i values = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), values);
}

// The run's pixels from three planes (float32, float16 or bfloat16) plane_step apart at p.
template <typename T>
GPUAUG_AVX2 inline void load_planes(const T* p, int64_t plane_step, float* x) {
  static constexpr Permutes kInterleaving = interleaving_floats();
  for (int half = 0; half < 2; ++half) {
    const __m256 planes[3] = {load_eight(p + 8 * half), load_eight(p + plane_step + 8 * half),
                              load_eight(p + 2 * plane_step + 8 * half)};
    __m256 pixels[3];
    permute(kInterleaving, planes, pixels);
    for (int m = 0; m < 3; ++m) _mm256_storeu_ps(x + 24 * half + 8 * m, pixels[m]);
  }
}

// The run's pixels to three planes (float32, float16 or bfloat16) plane_step apart at p, value v
// of channel c as fma(v, scale[c], offset[c]), or as it is where scale is null.
template <typename T>
GPUAUG_AVX2 inline void store_planes(const float* x, T* p, int64_t plane_step, const float* scale,
                                     const float* offset) {
  static constexpr Permutes kDeinterleaving = deinterleaving_floats();
  for (int half = 0; half < 2; ++half) {
    const __m256 pixels[3] = {_mm256_loadu_ps(x + 24 * half), _mm256_loadu_ps(x + 24 * half + 8),
                              _mm256_loadu_ps(x + 24 * half + 16)};
    __m256 planes[3];
    permute(kDeinterleaving, pixels, planes);
    for (int c = 0; c < 3; ++c) {
      __m256 v = planes[c];
      if (scale) v = _mm256_fmadd_ps(v, _mm256_set1_ps(scale[c]), _mm256_set1_ps(offset[c]));
      store_eight(p + c * plane_step + 8 * half, v);
    }
  }
}

// n float16 or bfloat16 values to floats and back (GCC 12 vectorises no conversion of
// _Float16; half_floats.h's take a dozen integer operations a value). n is a multiple of 8.
template <typename T>
GPUAUG_AVX2 inline void widen_values(const T* p, int n, float* x) {
  for (int i = 0; i < n; i += 8) _mm256_storeu_ps(x + i, load_eight(p + i));
}

template <typename T>
GPUAUG_AVX2 inline void narrow_values(const float* x, int n, T* p) {
  for (int i = 0; i < n; i += 8) store_eight(p + i, _mm256_loadu_ps(x + i));
}

}  // namespace gpuaug::cpu::pixel_runs
#endif
