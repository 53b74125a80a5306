// gpuaug::photometric from C++: the registered schemas, values against each stage's definition in
// float64 (per sample factors, order and apply), the image's gradient through autograd, errors
// naming the op and the argument, and the CUDA kernels against the CPU's.
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <gpuaug/ops.h>

#include <cmath>
#include <vector>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using gpuaug::testing::nearly_equal;
using ::testing::HasSubstr;

constexpr int64_t kBrightness = 1, kInvert = 8, kAutocontrast = 10, kEqualize = 11,
                  kColorAugment = 12, kColorParameter = 13;

TEST(Photometric, SchemasAreRegistered) {
  auto& dispatcher = c10::Dispatcher::singleton();
  const auto forward = dispatcher.findSchema({"gpuaug::photometric", ""});
  ASSERT_TRUE(forward.has_value());
  EXPECT_EQ(c10::toString(forward->schema()),
            "gpuaug::photometric(Tensor image, int[] stages, Tensor factors, *, Tensor? order=None, "
            "Tensor? apply=None, ScalarType? dtype=None, float[]? mean=None, float[]? std=None, "
            "float[]? factor_ranges=None) -> Tensor");
  const auto backward = dispatcher.findSchema({"gpuaug::_photometric_backward", ""});
  ASSERT_TRUE(backward.has_value());
  EXPECT_TRUE(forward->hasKernelForDispatchKey(c10::DispatchKey::CPU));
  EXPECT_TRUE(forward->hasKernelForDispatchKey(c10::DispatchKey::Meta));
  EXPECT_TRUE(backward->hasKernelForDispatchKey(c10::DispatchKey::CPU));
}

// Sample 0 runs brightness then invert; sample 1 invert then brightness; sample 2 only invert.
struct Program {
  at::Tensor factors = torch::tensor({1.3, 0.0, 0.7, 0.0, 1.5, 0.0}, torch::kDouble).view({3, 2});
  at::Tensor order = torch::tensor({0, 1, 1, 0, 0, 1}, torch::kLong).view({3, 2});
  at::Tensor apply = torch::tensor({true, true, true, true, false, true}).view({3, 2});
};

at::Tensor expected(const at::Tensor& x, const Program& p) {
  const at::Tensor b = p.factors.select(1, 0).view({3, 1, 1, 1});
  const at::Tensor first = (1 - (x * b).clamp(0, 1)).narrow(0, 0, 1);
  const at::Tensor second = ((1 - x) * b).clamp(0, 1).narrow(0, 1, 1);
  const at::Tensor third = (1 - x).narrow(0, 2, 1);
  return torch::cat({first, second, third});
}

at::Tensor run(const at::Tensor& x, const Program& p) {
  return gpuaug::photometric(x, {kBrightness, kInvert}, p.factors.to(x.device()),
                             p.order.to(x.device()), p.apply.to(x.device()));
}

TEST(Photometric, PerSampleProgramsMatchTheirDefinitions) {
  torch::manual_seed(1);
  const at::Tensor x = torch::rand({3, 3, 5, 7}, torch::kDouble);
  EXPECT_TRUE(nearly_equal(run(x, Program{}), expected(x, Program{}), 0, 1e-12));
}

// Uniforms in per-slot ranges: the factors fma(width, u, low) would be, in float64 (u as the
// compute type holds it) and then float32 (its gradient too, through the backward op).
TEST(Photometric, FactorRangesMapUniformsToFactors) {
  torch::manual_seed(5);
  const std::vector<double> ranges = {0.5, 0.0, 0.75, 0.0};  // brightness in [0.5, 1.25)
  Program ranged;
  ranged.factors = torch::rand({3, 2}, torch::kDouble);
  for (const auto dtype : {torch::kDouble, torch::kFloat}) {
    Program want = ranged;
    want.factors = ranged.factors.clone();
    auto factors = want.factors.accessor<double, 2>();
    for (int n = 0; n < 3; ++n) {
      for (int k = 0; k < 2; ++k) {
        const double u = dtype == torch::kFloat ? static_cast<float>(factors[n][k]) : factors[n][k];
        const double f = std::fma(ranges[2 + k], u, ranges[k]);
        factors[n][k] = static_cast<float>(f);
      }
    }
    const at::Tensor x = torch::rand({3, 3, 5, 7}, dtype).requires_grad_();
    const at::Tensor x_want = x.detach().clone().requires_grad_();
    const at::Tensor out = gpuaug::photometric(x, {kBrightness, kInvert}, ranged.factors,
                                               ranged.order, ranged.apply, std::nullopt,
                                               std::nullopt, std::nullopt, ranges);
    const at::Tensor out_want = run(x_want, want);
    EXPECT_TRUE(torch::equal(out, out_want));
    out.sum().backward();
    out_want.sum().backward();
    EXPECT_TRUE(torch::equal(x.grad(), x_want.grad()));
  }
  const at::Tensor image = torch::rand({2, 3, 4, 4});
  EXPECT_THAT(error_of([&] {
                gpuaug::photometric(image, {1}, torch::ones({1}), std::nullopt, std::nullopt,
                                    std::nullopt, std::nullopt, std::nullopt,
                                    std::vector<double>{0.5});
              }),
              HasSubstr("gpuaug::photometric: expected 'factor_ranges' of length 2 (each slot's "
                        "low, then each slot's width) or 8 (those, then each slot's factor "
                        "column, coin column, coin bound, key column, key low and key width), but "
                        "got 1"));
  EXPECT_THAT(error_of([&] {
                gpuaug::photometric(image, {1}, torch::ones({1}), std::nullopt, std::nullopt,
                                    std::nullopt, std::nullopt, std::nullopt,
                                    std::vector<double>{-2.0, 1.0});
              }),
              HasSubstr("gpuaug::photometric: expected the brightness factor (slot 0) >= 0, but "
                        "got -1"));
}

// factor_ranges' long form: each slot's factor, coin and order key from columns of the
// uniforms. Brightness: 2 u of column 0, applied where column 1 < 0.5, key column 2; invert:
// always, key 0.5. The uniforms give Program{}'s runs, with factors exact in float32.
TEST(Photometric, DrawnFactorRangesTakeColumns) {
  torch::manual_seed(6);
  const at::Tensor uniforms =
      torch::tensor({0.625, 0.25, 0.125, 0.375, 0.25, 0.875, 0.75, 0.75, 0.0}, torch::kDouble)
          .view({3, 3});
  const std::vector<double> ranges = {0, 0, 2, 0, 0, -1, 1, -1, 0.5, 2, 2, -1, 0, 0.5, 1, 0};
  Program want;
  want.factors = torch::tensor({1.25, 0.0, 0.75, 0.0, 1.5, 0.0}, torch::kDouble).view({3, 2});
  const at::Tensor x = torch::rand({3, 3, 5, 7}, torch::kDouble);
  const at::Tensor out = gpuaug::photometric(x, {kBrightness, kInvert}, uniforms, std::nullopt,
                                             std::nullopt, std::nullopt, std::nullopt,
                                             std::nullopt, ranges);
  EXPECT_TRUE(nearly_equal(out, expected(x, want), 0, 1e-12));
  EXPECT_THAT(error_of([&] {
                gpuaug::photometric(x, {kBrightness, kInvert}, uniforms.narrow(1, 0, 2),
                                    std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                    std::nullopt, ranges);
              }),
              HasSubstr("gpuaug::photometric: expected 'factors' (uniforms) of shape [U] or [3, "
                        "U] with U >= 3"));
}

TEST(Photometric, AutocontrastStretchesEachChannel) {
  torch::manual_seed(2);
  const at::Tensor x = torch::rand({2, 3, 6, 4}, torch::kDouble);
  const at::Tensor low = x.amin({2, 3}, true), high = x.amax({2, 3}, true);
  const at::Tensor out = gpuaug::photometric(x, {kAutocontrast}, torch::zeros({1}, torch::kDouble));
  EXPECT_TRUE(nearly_equal(out, ((x - low) / (high - low)).clamp(0, 1), 0, 1e-12));
}

TEST(Photometric, EqualizeMapsThroughTheHistogramsTable) {
  // 510 pixels of 10 and 2 of 200: the step is 510 / 255 = 2, so 10 -> (0 + 1) / 2 = 0 and
  // 200 -> (510 + 1) / 2 = 255; a flat image (step 0) stays as it is.
  at::Tensor x = torch::full({2, 1, 16, 32}, 10, torch::kByte);
  x[0].view({-1}).narrow(0, 510, 2).fill_(200);
  x[1].fill_(77);
  const at::Tensor out = gpuaug::photometric(x, {kEqualize}, torch::zeros({1}));
  at::Tensor want = torch::zeros_like(x);
  want[0].view({-1}).narrow(0, 510, 2).fill_(255);
  want[1].fill_(77);
  EXPECT_TRUE(torch::equal(out, want));
}

// color_augment's slot and five parameter slots: per sample gains, brightness, contrast, gamma.
TEST(Photometric, ColorAugmentIsColorTransform) {
  torch::manual_seed(5);
  const std::vector<int64_t> stages = {kColorAugment,   kColorParameter, kColorParameter,
                                       kColorParameter, kColorParameter, kColorParameter};
  const at::Tensor low = torch::tensor({0.7, 0.7, 0.7, -0.1, 0.8, 0.7});
  const at::Tensor factors = low + torch::rand({4, 6}) * 0.6;
  for (const auto dtype : {torch::kFloat, torch::kByte}) {
    const at::Tensor x = (torch::rand({4, 3, 9, 13}) * (dtype == torch::kByte ? 255 : 1)).to(dtype);
    const at::Tensor want = gpuaug::color_transform(
        x, factors.narrow(1, 0, 3), factors.select(1, 3), factors.select(1, 4),
        factors.select(1, 5));
    EXPECT_TRUE(torch::equal(gpuaug::photometric(x, stages, factors), want));
    if (!gpuaug::testing::cuda_usable()) continue;
    // the GPU's exp2 and log2 are approximations: a uint8 value may round the other way
    const at::Tensor on_gpu = gpuaug::photometric(x.cuda(), stages, factors.cuda()).cpu();
    EXPECT_TRUE(nearly_equal(on_gpu.to(torch::kDouble), want.to(torch::kDouble), 0,
                             dtype == torch::kByte ? 1 : 1e-5));
  }
}

TEST(Photometric, ImageGradientThroughAutograd) {
  torch::manual_seed(3);
  const at::Tensor x = torch::rand({3, 3, 5, 7}, torch::kDouble).requires_grad_();
  run(x, Program{}).sum().backward();
  // d/dx of 1 - clamp(b x) is -b inside the clamp; of clamp(b (1 - x)) too; of 1 - x, -1
  const Program p;
  const at::Tensor b = p.factors.select(1, 0).view({3, 1, 1, 1});
  const at::Tensor inside0 = (x.detach() * b).le(1).narrow(0, 0, 1);
  const at::Tensor inside1 = ((1 - x.detach()) * b).le(1).narrow(0, 1, 1);
  const at::Tensor want = torch::cat({-b.narrow(0, 0, 1) * inside0, -b.narrow(0, 1, 1) * inside1,
                                      -torch::ones({1, 3, 5, 7}, torch::kDouble)});
  EXPECT_TRUE(nearly_equal(x.grad(), want.expand_as(x), 0, 1e-12));
}

TEST(Photometric, BadInputsRaiseErrorsNamingTheOp) {
  const at::Tensor image = torch::rand({2, 3, 4, 4});
  EXPECT_THAT(error_of([&] { gpuaug::photometric(image.narrow(1, 0, 2), {1}, torch::ones({1})); }),
              HasSubstr("gpuaug::photometric: expected 'image' with 1 or 3 channels"));
  EXPECT_THAT(error_of([&] { gpuaug::photometric(image, {1}, torch::ones({3})); }),
              HasSubstr("gpuaug::photometric: expected 'factors' of shape [1] or [2, 1]"));
  EXPECT_THAT(error_of([&] { gpuaug::photometric(image, {2, 10}, torch::ones({2})); }),
              HasSubstr("gpuaug::photometric: expected at most one reduction stage"));
  EXPECT_THAT(error_of([&] { gpuaug::photometric(image, {kColorAugment}, torch::ones({1})); }),
              HasSubstr("gpuaug::photometric: expected the color_augment slot at index 0 "
                        "followed by 5 parameter slots"));
}

TEST(Photometric, CudaMatchesCpu) {
  GPUAUG_SKIP_UNLESS_DEVICE(at::kCUDA);
  torch::manual_seed(4);
  const at::Tensor x = torch::rand({3, 3, 17, 23}).contiguous(at::MemoryFormat::ChannelsLast);
  const Program p;
  EXPECT_TRUE(nearly_equal(run(x.cuda(), p).cpu(), run(x, p), 0, 1e-6));
  const std::vector<double> ranges = {0.5, 0.0, 0.75, 0.0};
  const auto ranged = [&](const at::Tensor& image) {
    return gpuaug::photometric(image, {kBrightness, kInvert}, p.factors.to(image.device()),
                               p.order.to(image.device()), p.apply.to(image.device()),
                               std::nullopt, std::nullopt, std::nullopt, ranges);
  };
  EXPECT_TRUE(nearly_equal(ranged(x.cuda()).cpu(), ranged(x), 0, 1e-6));
}

}  // namespace
