// photometric.cpp's shortcuts for uint8 images, which give the pixel loops' values: a program
// that maps each channel's values apart as a table of the 256 values per image and channel
// (looked up 64 bytes at a time with AVX-512 VBMI), and one of bitwise steps as byte loops.
// Included by photometric.cpp alone.
#pragma once

#include <ATen/Version.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "kernels/photometric/cpu/walk.h"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::photo;

// The image's tables (C x kBins): every uint8 value through the same steps as a pixel's.
template <int C, typename T, typename out_t, typename P>
GPUAUG_PIXEL_LOOP void make_tables(const SampleProgram<P>& prog, const Reduced<P>& r,
                                   const Output<P>& o, out_t* tables) {
  for (int first = 0; first < kBins; first += kRun) {
    P x[kRun][3];
    for (int j = 0; j < kRun; ++j) {
      for (int c = 0; c < 3; ++c) x[j][c] = static_cast<P>(first + j);
    }
    run_steps<C, T>(prog, 0, prog.count, x, r);
    for (int j = 0; j < kRun; ++j) {
      for (int c = 0; c < C; ++c) tables[c * kBins + first + j] = convert<T, out_t>(x[j][c], o, c);
    }
  }
}

// Values [0, n) of `in`, interleaved Stride channels (1: a plane), through their channels'
// tables (Stride x kBins).
template <int Stride, typename out_t>
GPUAUG_PIXEL_LOOP void look_up_run(const uint8_t* in, out_t* out, int64_t n,
                                   const out_t* __restrict tables) {
  for (int64_t k = 0; k < n; k += Stride) {
    for (int c = 0; c < Stride; ++c) out[k + c] = tables[c * kBins + in[k + c]];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define GPUAUG_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// 64 bytes through a table held in four registers: two 128-entry byte permutes, picked by each
// byte's top bit.
GPUAUG_VBMI inline __m512i look_up_64(__m512i v, const __m512i (&table)[4]) {
  const __m512i below_128 = _mm512_permutex2var_epi8(table[0], v, table[1]);
  const __m512i from_128 = _mm512_permutex2var_epi8(table[2], v, table[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), below_128, from_128);
}

// The bytes j of a run's vector `v` (64 v + j bytes into it) of channel c of Stride.
constexpr uint64_t channel_lanes(int stride, int v, int c) {
  uint64_t lanes = 0;
  for (int j = 0; j < 64; ++j) lanes |= uint64_t{(64 * v + j) % stride == c} << j;
  return lanes;
}

// look_up_run's uint8 values with AVX-512 VBMI, 64 at a time (a lone RandomEqualize's pass over
// its values ten times as fast as a load a value); returns how many it did, the rest left.
template <int Stride>
GPUAUG_VBMI int64_t look_up_run_vbmi(const uint8_t* in, uint8_t* out, int64_t n,
                                     const uint8_t* tables) {
  __m512i table[Stride][4];
  for (int c = 0; c < Stride; ++c) {
    for (int i = 0; i < 4; ++i) table[c][i] = _mm512_loadu_si512(tables + c * kBins + 64 * i);
  }
  __mmask64 lanes[Stride][Stride];
  for (int v = 0; v < Stride; ++v) {
    for (int c = 0; c < Stride; ++c) lanes[v][c] = channel_lanes(Stride, v, c);
  }
  constexpr int64_t kBlock = 64 * Stride;  // whole pixels in whole vectors
  int64_t k = 0;
  for (; k + kBlock <= n; k += kBlock) {
    for (int v = 0; v < Stride; ++v) {
      const __m512i x = _mm512_loadu_si512(in + k + 64 * v);
      __m512i y = look_up_64(x, table[0]);
      for (int c = 1; c < Stride; ++c) {
        y = _mm512_mask_blend_epi8(lanes[v][c], y, look_up_64(x, table[c]));
      }
      _mm512_storeu_si512(out + k + 64 * v, y);
    }
  }
  return k;
}

// Whether to use AVX-512 VBMI: where the CPU has it and PyTorch's kernels use AVX-512
// (ATEN_CPU_CAPABILITY=avx2 or default turns both off, and runs the portable loop).
bool use_vbmi() {
  static const bool use =
      __builtin_cpu_supports("avx512vbmi") && at::get_cpu_capability() == "AVX512";
  return use;
}
#endif

#ifdef GPUAUG_PIXEL_RUNS
// look_up_run's float values of interleaved channels with AVX2, eight gathered at a time (GCC
// loads and stores them one at a time; a plane's, which GCC stores as vectors, were slower
// gathered); returns how many it did, the rest left.
template <int Stride>
GPUAUG_AVX2 int64_t look_up_run_gather(const uint8_t* in, float* out, int64_t n,
                                       const float* tables) {
  __m256i offsets[Stride];  // vector v's lane l is of channel (8 v + l) % Stride
  for (int v = 0; v < Stride; ++v) {
    alignas(32) int32_t lanes[8];
    for (int l = 0; l < 8; ++l) lanes[l] = (8 * v + l) % Stride * kBins;
    offsets[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
  }
  constexpr int64_t kBlock = 8 * Stride;  // whole pixels in whole vectors
  int64_t k = 0;
  for (; k + kBlock <= n; k += kBlock) {
    for (int v = 0; v < Stride; ++v) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + k + 8 * v));
      const __m256i index = _mm256_add_epi32(_mm256_cvtepu8_epi32(bytes), offsets[v]);
      _mm256_storeu_ps(out + k + 8 * v, _mm256_i32gather_ps(tables, index, 4));
    }
  }
  return k;
}
#endif

template <int Stride, typename out_t>
void look_up(const uint8_t* in, out_t* out, int64_t n, const out_t* tables) {
  [[maybe_unused]] const auto skip = [&](int64_t done) {  // values a vector loop did
    in += done;
    out += done;
    n -= done;
  };
#ifdef GPUAUG_PIXEL_RUNS
  if constexpr (Stride > 1 && std::is_same_v<out_t, float>) {
    if (use_pixel_runs()) skip(look_up_run_gather<Stride>(in, out, n, tables));
  }
#endif
#ifdef GPUAUG_VBMI
  if constexpr (std::is_same_v<out_t, uint8_t>) {
    if (use_vbmi()) skip(look_up_run_vbmi<Stride>(in, out, n, tables));
  }
#endif
  look_up_run<Stride>(in, out, n, tables);
}

// A uint8 step as bitwise operations on each byte: v >= from ? (v & mask) ^ flip : v. Invert,
// posterize and solarize are such steps, the same for every channel.
struct ByteOp {
  uint8_t from, mask, flip;
};

// The sample's program as byte operations (false: some step is not one), identities left out.
template <typename P>
bool byte_ops(const SampleProgram<P>& prog, ByteOp (&ops)[kMaxStages], int& count) {
  count = 0;
  for (int i = 0; i < prog.count; ++i) {
    const Step<P>& s = prog.steps[i];
    if (s.kind == kInvert) {
      ops[count++] = {0, 0xFF, 0xFF};
    } else if (s.kind == kPosterize) {
      const int bits = static_cast<int>(s.a);
      if (bits < 8) ops[count++] = {0, static_cast<uint8_t>((0xFF << (8 - bits)) & 0xFF), 0};
    } else if (s.kind == kSolarize) {
      // v >= threshold in float32: v >= ceil(threshold); none above 255 (or NaN)
      if (s.a <= P(255)) {
        const P from = std::ceil(std::max(s.a, P(0)));
        ops[count++] = {static_cast<uint8_t>(from), 0xFF, 0xFF};
      }
    } else {
      return false;
    }
  }
  return true;
}

// Bytes [0, n) of `in` through `ops` into `out`: the first from `in`, the rest in place, each a
// loop the compiler vectorises (a lone RandomInvert runs at the copy's pace, not a table's).
GPUAUG_PIXEL_LOOP void map_bytes(const uint8_t* in, uint8_t* out, int64_t n, const ByteOp* ops,
                                 int count) {
  if (count == 0) {
    std::copy(in, in + n, out);
    return;
  }
  for (int i = 0; i < count; ++i) {
    const uint8_t* src = i == 0 ? in : out;
    const ByteOp op = ops[i];
    for (int64_t k = 0; k < n; ++k) {
      const uint8_t v = src[k];
      out[k] = v >= op.from ? static_cast<uint8_t>((v & op.mask) ^ op.flip) : v;
    }
  }
}

// Whether every sample's program is byte operations.
template <typename P>
bool all_byte_ops(const std::vector<SampleProgram<P>>& progs) {
  ByteOp ops[kMaxStages];
  int count = 0;
  return std::all_of(progs.begin(), progs.end(),
                     [&](const auto& prog) { return byte_ops(prog, ops, count); });
}

}  // namespace
}  // namespace gpuaug::cpu
