// kernels/half_floats.h, the CPU loops' float16 and bfloat16 conversions, and
// kernels/photometric/cpu/pixel_runs.h's eight-wide ones, against c10's bit for bit: every
// 16-bit value widened, and floats around every rounding boundary of every exponent, plus a sweep
// of the whole range, narrowed.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/half_floats.h"
#include "kernels/photometric/cpu/pixel_runs.h"

namespace {

namespace hf = gpuaug::half_floats;

uint32_t bits_of(float v) { return c10::bit_cast<uint32_t>(v); }

// Floats whose rounding is hard: for each sign and exponent, mantissas at and beside float16's
// and bfloat16's halfway points (ties to even and away), then every 65,537th bit pattern.
std::vector<uint32_t> hard_floats() {
  std::vector<uint32_t> patterns;
  const uint32_t low_bits[] = {0x0, 0x1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000,
                               0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x10000, 0x18000, 0x7FFFFF};
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t exponent = 0; exponent < 256; ++exponent) {
      for (uint32_t high : {0x0u, 0x2000u, 0x10000u, 0x7FE000u, 0x7F0000u, 0x3FE000u}) {
        for (uint32_t low : low_bits) {
          patterns.push_back(sign | (exponent << 23) | ((high | low) & 0x7FFFFFu));
        }
      }
    }
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65537) patterns.push_back(uint32_t(u));
  return patterns;
}

TEST(HalfFloats, WideningMatchesC10ForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const c10::Half half(static_cast<uint16_t>(h), c10::Half::from_bits());
    const float expected = static_cast<float>(half), got = hf::from_half(half);
    if (expected != expected) {
      EXPECT_NE(got, got) << "float16 0x" << std::hex << h;
    } else {
      EXPECT_EQ(bits_of(got), bits_of(expected)) << "float16 0x" << std::hex << h;
    }
    const c10::BFloat16 bf(static_cast<uint16_t>(h), c10::BFloat16::from_bits());
    EXPECT_EQ(bits_of(hf::from_bfloat16(bf)), bits_of(static_cast<float>(bf)))
        << "bfloat16 0x" << std::hex << h;
  }
}

TEST(HalfFloats, NarrowingMatchesC10) {
  const std::vector<uint32_t> patterns = hard_floats();
  ASSERT_GT(patterns.size(), 100000u);
  int mismatches = 0;
  for (uint32_t u : patterns) {
    const float v = c10::bit_cast<float>(u);
    const c10::Half half(v);
    const c10::BFloat16 bf(v);
    const bool same = hf::to_half(v).x == half.x &&
                      bits_of(hf::half_rounded(v)) == bits_of(static_cast<float>(half)) &&
                      hf::to_bfloat16(v).x == bf.x &&
                      bits_of(hf::bfloat16_rounded(v)) == bits_of(static_cast<float>(bf));
    if (!same && ++mismatches <= 10) ADD_FAILURE() << "float 0x" << std::hex << u;
  }
  EXPECT_EQ(mismatches, 0);
}

// pixel_runs.h's conversions of runs (AVX2, and F16C for float16) where the CPU has them. A
// float16 NaN keeps its payload's high bits there, where c10's becomes 0x7E00: both NaN is enough.
TEST(HalfFloats, PixelRunsConversionsMatchC10) {
#ifdef GPUAUG_PIXEL_RUNS
  if (!__builtin_cpu_supports("x86-64-v3")) GTEST_SKIP() << "no AVX2 or F16C on this CPU";
  namespace runs = gpuaug::cpu::pixel_runs;
  std::vector<c10::Half> halves(65536);
  std::vector<c10::BFloat16> bfloats(65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    halves[h] = c10::Half(static_cast<uint16_t>(h), c10::Half::from_bits());
    bfloats[h] = c10::BFloat16(static_cast<uint16_t>(h), c10::BFloat16::from_bits());
  }
  std::vector<float> widened(65536);
  runs::widen_values(halves.data(), 65536, widened.data());
  for (uint32_t h = 0; h < 65536; ++h) {
    const float expected = static_cast<float>(halves[h]);
    if (expected != expected) {
      EXPECT_NE(widened[h], widened[h]) << "float16 0x" << std::hex << h;
    } else {
      EXPECT_EQ(bits_of(widened[h]), bits_of(expected)) << "float16 0x" << std::hex << h;
    }
  }
  runs::widen_values(bfloats.data(), 65536, widened.data());
  for (uint32_t h = 0; h < 65536; ++h) {
    EXPECT_EQ(bits_of(widened[h]), bits_of(static_cast<float>(bfloats[h])))
        << "bfloat16 0x" << std::hex << h;
  }

  std::vector<uint32_t> patterns = hard_floats();
  patterns.resize(patterns.size() / 8 * 8);
  std::vector<float> values(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) values[i] = c10::bit_cast<float>(patterns[i]);
  const int n = static_cast<int>(values.size());
  std::vector<c10::Half> narrowed_halves(n);
  std::vector<c10::BFloat16> narrowed_bfloats(n);
  runs::narrow_values(values.data(), n, narrowed_halves.data());
  runs::narrow_values(values.data(), n, narrowed_bfloats.data());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    const float v = values[i];
    const c10::Half half(v);
    const uint16_t got = narrowed_halves[i].x;
    const bool half_same = v != v ? (got & 0x7FFF) > 0x7C00 : got == half.x;
    const bool same = half_same && narrowed_bfloats[i].x == c10::BFloat16(v).x;
    if (!same && ++mismatches <= 10) ADD_FAILURE() << "float 0x" << std::hex << patterns[i];
  }
  EXPECT_EQ(mismatches, 0);
#else
  GTEST_SKIP() << "pixel_runs.h is built for x86-64 with GCC and glibc alone";
#endif
}

}  // namespace
