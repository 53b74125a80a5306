// float16 and bfloat16 values to and from float for the host's pixel loops: integer operations
// and masks, which GCC vectorises. c10's conversions branch (or take F16C one value at a time,
// only where the whole file is built for it) and keep the loops scalar, several times slower.
// Results are c10's, bit for bit: round to nearest even, NaN kept (c10's NaN bits: float16 0x7E00
// with its sign, bfloat16 0x7FC0).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/bit_cast.h>

#include <cstdint>

namespace gpuaug::half_floats {

constexpr uint32_t kFloatInfinity = 0x7F800000u;
constexpr uint32_t kHalfMax = 0x477FE000u;          // 65504 as a float
constexpr uint32_t kHalfSmallestNormal = 0x38800000u;  // 2^-14

// cond ? a : b as bitwise operations: GCC turns the select into a branch where one side's
// operations can be skipped, and the loop around it is then not vectorised.
inline uint32_t select(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

// For compares of values below 2^31: AVX2 compares signed integers alone.
inline int32_t as_signed(uint32_t v) { return static_cast<int32_t>(v); }

// v rounded to float16's precision (its range too: beyond it, infinity), as a float.
inline float half_rounded(float v) {
  const uint32_t bits = c10::bit_cast<uint32_t>(v);
  const uint32_t sign = bits & 0x80000000u, magnitude = bits ^ sign;
  // |v| + 2^(e + 13), e its exponent (at least float16's smallest, -14, and at most 16, past
  // which v is infinite in float16), is a multiple of 2^(e - 10), float16's spacing at |v|: the
  // add rounds |v| to it, the subtraction is exact
  uint32_t exponent = magnitude & kFloatInfinity;
  exponent = exponent < kHalfSmallestNormal ? kHalfSmallestNormal : exponent;
  exponent = exponent > 0x47800000u ? 0x47800000u : exponent;
  const float shift = c10::bit_cast<float>(exponent + (13u << 23));
  uint32_t r = c10::bit_cast<uint32_t>((c10::bit_cast<float>(magnitude) + shift) - shift);
  r = select(as_signed(r) > as_signed(kHalfMax), kFloatInfinity, r);
  r = select(as_signed(magnitude) > as_signed(kFloatInfinity), 0x7FC00000u, r);
  return c10::bit_cast<float>(sign | r);
}

// The float16 that v rounds to.
inline c10::Half to_half(float v) {
  const uint32_t rounded = c10::bit_cast<uint32_t>(half_rounded(v));
  const uint32_t sign = (rounded >> 16) & 0x8000u, magnitude = rounded & 0x7FFFFFFFu;
  // exponent bias 127 to 15, mantissa 23 bits to 10; a subnormal float16 counts 2^-24s
  const uint32_t normal = (magnitude >> 13) - ((127u - 15u) << 10);
  const uint32_t subnormal =
      static_cast<uint32_t>(static_cast<int32_t>(c10::bit_cast<float>(magnitude) * 0x1p24f));
  uint32_t h = select(as_signed(magnitude) < as_signed(kHalfSmallestNormal), subnormal, normal);
  h = select(magnitude == kFloatInfinity, 0x7C00u, h);
  h = select(as_signed(magnitude) > as_signed(kFloatInfinity), 0x7E00u, h);
  return c10::Half(static_cast<uint16_t>(sign | h), c10::Half::from_bits());
}

inline float from_half(c10::Half v) {
  const uint32_t h = v.x, sign = (h & 0x8000u) << 16, magnitude = h & 0x7FFFu;
  // exponent bias 15 to 127, twice for infinity and NaN (exponent 31 to 255)
  uint32_t normal = (magnitude << 13) + ((127u - 15u) << 23);
  normal += select(magnitude >= 0x7C00u, (127u - 15u) << 23, 0u);
  const float subnormal = static_cast<float>(static_cast<int32_t>(magnitude)) * 0x1p-24f;
  const uint32_t r = select(magnitude < 0x400u, c10::bit_cast<uint32_t>(subnormal), normal);
  return c10::bit_cast<float>(sign | r);
}

// v rounded to bfloat16, as a float.
inline float bfloat16_rounded(float v) {
  const uint32_t bits = c10::bit_cast<uint32_t>(v);
  const uint32_t r = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  const bool nan = as_signed(bits & 0x7FFFFFFFu) > as_signed(kFloatInfinity);
  return c10::bit_cast<float>(select(nan, 0x7FC00000u, r));
}

inline c10::BFloat16 to_bfloat16(float v) {
  const uint32_t r = c10::bit_cast<uint32_t>(bfloat16_rounded(v));
  return c10::BFloat16(static_cast<uint16_t>(r >> 16), c10::BFloat16::from_bits());
}

inline float from_bfloat16(c10::BFloat16 v) {
  return c10::bit_cast<float>(static_cast<uint32_t>(v.x) << 16);
}

}  // namespace gpuaug::half_floats
