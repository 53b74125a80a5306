// kernels/photometric/grad.h's backprop_pixel: the GPU's way (each step's input recomputed by a
// forward, resuming after the last hue or color_augment step) against the CPU's (every step's
// input kept), bit for bit, on random programs of one to nine steps of ten kinds, in float32 and
// float64, to the image and to the reduction's step (the mean's pass).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/photometric/grad.h"

namespace {

namespace photo = gpuaug::photo;

template <typename P>
photo::SampleProgram<P> random_program(std::mt19937& rng, bool jitter_kinds_only) {
  std::uniform_real_distribution<double> u(0, 1);
  const int kinds[] = {photo::kBrightness, photo::kContrast,  photo::kSaturation,
                       photo::kHue,        photo::kGrayscale, photo::kSolarize,
                       photo::kInvert,     photo::kPosterize, photo::kPermuteChannels,
                       photo::kColorAugment};
  photo::SampleProgram<P> prog{};
  prog.count = 1 + static_cast<int>(rng() % 9);
  prog.reduce_at = -1;
  for (int i = 0; i < prog.count; ++i) {
    photo::Step<P>& s = prog.steps[i];
    s.kind = kinds[rng() % (jitter_kinds_only ? 4 : 10)];
    s.a = static_cast<P>(0.6 + 0.8 * u(rng));
    s.b = P(1) - s.a;
    if (s.kind == photo::kHue) s.a = static_cast<P>(0.2 * u(rng) - 0.1);
    if (s.kind == photo::kSolarize) s.a = P(0.5);
    if (s.kind == photo::kPosterize) s.b = P(16);
    if (s.kind == photo::kPermuteChannels) s.a = photo::ranged_permutation(6 * u(rng));
    if (s.kind == photo::kContrast && prog.reduce_at < 0) prog.reduce_at = i;
    for (P& gain : s.gains) gain = static_cast<P>(0.8 + 0.4 * u(rng));
    s.jitter = {static_cast<P>(0.1 * u(rng)), static_cast<P>(0.8 + 0.4 * u(rng)),
                static_cast<P>(0.8 + 0.4 * u(rng))};
  }
  return prog;
}

template <typename P>
void expect_recomputed_as_kept(int programs) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  int recomputed = 0;
  for (int n = 0; n < programs; ++n) {
    const photo::SampleProgram<P> prog = random_program<P>(rng, n % 3 == 0);
    recomputed += prog.count <= 6;
    photo::Reduced<P> reduced{};
    reduced.mean = static_cast<P>(u(rng));
    for (int stop : {0, prog.reduce_at < 0 ? 0 : prog.reduce_at}) {
      P x[3] = {static_cast<P>(u(rng)), static_cast<P>(u(rng)), static_cast<P>(u(rng))};
      if (n % 7 == 0) x[1] = x[0];  // ties for hue
      P kept[3], again[3];
      for (int c = 0; c < 3; ++c) kept[c] = again[c] = static_cast<P>(u(rng) - 0.5);
      const P mean_grad_per_pixel = static_cast<P>(u(rng) - 0.5);
      P kept_mean = 0, again_mean = 0;
      photo::backprop_pixel<3, P, 0>(prog, x, reduced, stop, mean_grad_per_pixel, kept, &kept_mean);
      photo::backprop_pixel<3, P, 6>(prog, x, reduced, stop, mean_grad_per_pixel, again,
                                     &again_mean);
      ASSERT_EQ(std::memcmp(kept, again, sizeof kept), 0)
          << "program " << n << " of " << prog.count << " steps, stop " << stop << ": " << kept[0]
          << " " << kept[1] << " " << kept[2] << " kept, " << again[0] << " " << again[1] << " "
          << again[2] << " recomputed";
      ASSERT_EQ(std::memcmp(&kept_mean, &again_mean, sizeof kept_mean), 0) << "program " << n;
    }
  }
  EXPECT_GT(recomputed, programs / 2);
}

TEST(PhotometricBackprop, RecomputedInputsAreTheKeptOnesFloat) {
  expect_recomputed_as_kept<float>(50000);
}

TEST(PhotometricBackprop, RecomputedInputsAreTheKeptOnesDouble) {
  expect_recomputed_as_kept<double>(20000);
}

}  // namespace
