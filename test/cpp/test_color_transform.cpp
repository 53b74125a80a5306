// gpuaug::color_transform from C++: the registered schemas, values against a double loop over the
// pixels, autograd gradients against finite differences of that loop, and errors naming the op.
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <gpuaug/ops.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using gpuaug::testing::nearly_equal;
using ::testing::HasSubstr;

// Per-sample parameters: color [N, C], the others [N].
struct Params {
  at::Tensor color, brightness, contrast, gamma;
};

Params random_params(int64_t n, int64_t c, at::ScalarType dtype) {
  auto uniform = [&](at::IntArrayRef shape, double low, double high) {
    return torch::rand(shape, torch::dtype(dtype)) * (high - low) + low;
  };
  return {uniform({n, c}, 0.6, 1.4), uniform({n}, -0.15, 0.15), uniform({n}, 0.7, 1.3),
          uniform({n}, 0.7, 1.4)};
}

double clamp01(double v) { return std::min(std::max(v, 0.0), 1.0); }

// The formula for an [N, C, H, W] image holding values on [0, 1], pixel by pixel, in double.
at::Tensor reference(const at::Tensor& image, const Params& p) {
  const at::Tensor x = image.to(at::kDouble).contiguous();
  at::Tensor out = torch::empty_like(x);
  const int64_t n_samples = x.size(0), channels = x.size(1), pixels = x.size(2) * x.size(3);
  const at::Tensor x3 = x.view({n_samples, channels, pixels});
  at::Tensor out3 = out.view({n_samples, channels, pixels});
  const auto in = x3.accessor<double, 3>();
  auto o = out3.accessor<double, 3>();
  const at::Tensor color = p.color.to(at::kDouble);
  const auto col = color.accessor<double, 2>();
  for (int64_t n = 0; n < n_samples; ++n) {
    const double b = p.brightness[n].item<double>(), k = p.contrast[n].item<double>(),
                 g = p.gamma[n].item<double>();
    for (int64_t px = 0; px < pixels; ++px) {
      double s_in = 0, s_out = 0;
      for (int64_t c = 0; c < channels; ++c) {
        s_in += in[n][c][px];
        s_out += in[n][c][px] * col[n][c];
      }
      for (int64_t c = 0; c < channels; ++c) {
        const double y = clamp01(in[n][c][px] * col[n][c] * s_in / (s_out + 0.01));
        o[n][c][px] = clamp01(0.5 + (std::pow(y, g) + b - 0.5) * k);
      }
    }
  }
  return out;
}

at::Tensor call(const at::Tensor& image, const Params& p) {
  return gpuaug::color_transform(image, p.color, p.brightness, p.contrast, p.gamma);
}

TEST(ColorTransform, SchemasAreRegistered) {
  auto& dispatcher = c10::Dispatcher::singleton();
  const auto forward = dispatcher.findSchema({"gpuaug::color_transform", ""});
  ASSERT_TRUE(forward.has_value());
  EXPECT_EQ(c10::toString(forward->schema()),
            "gpuaug::color_transform(Tensor image, Tensor color, Tensor brightness, "
            "Tensor contrast, Tensor gamma, *, Tensor? apply=None, ScalarType? dtype=None, "
            "float[]? mean=None, float[]? std=None) -> Tensor");
  const auto backward = dispatcher.findSchema({"gpuaug::_color_transform_backward", ""});
  ASSERT_TRUE(backward.has_value());
  EXPECT_EQ(c10::toString(backward->schema()),
            "gpuaug::_color_transform_backward(Tensor grad, Tensor image, Tensor color, "
            "Tensor brightness, Tensor contrast, Tensor gamma, Tensor? apply, float[]? std) -> "
            "(Tensor, Tensor, Tensor, Tensor, Tensor)");
  EXPECT_TRUE(forward->hasKernelForDispatchKey(c10::DispatchKey::CPU));
  EXPECT_TRUE(forward->hasKernelForDispatchKey(c10::DispatchKey::Meta));
}

TEST(ColorTransform, Float32MatchesDoubleLoop) {
  torch::manual_seed(1);
  const at::Tensor image = torch::rand({2, 3, 5, 6});
  const Params p = random_params(2, 3, at::kFloat);
  const at::Tensor want = reference(image, p);
  const at::Tensor out = call(image, p);
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_TRUE(nearly_equal(out.to(at::kDouble), want, 0, 2e-5));
  // channels_last is kept, values unchanged.
  const at::Tensor out_cl = call(image.contiguous(at::MemoryFormat::ChannelsLast), p);
  EXPECT_TRUE(out_cl.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(nearly_equal(out_cl.to(at::kDouble), want, 0, 2e-5));
}

TEST(ColorTransform, Uint8MatchesDoubleLoopWithinOneLevel) {
  torch::manual_seed(2);
  const at::Tensor image = torch::randint(0, 256, {3, 4, 7, 5}, torch::kUInt8);
  const Params p = random_params(3, 4, at::kFloat);
  const at::Tensor levels = torch::round(reference(image.to(at::kDouble) / 255, p) * 255);
  const at::Tensor out = call(image, p);
  ASSERT_EQ(out.scalar_type(), at::kByte);
  EXPECT_TRUE(nearly_equal(out.to(at::kDouble), levels, 0, 1.0));
}

TEST(ColorTransform, AutogradMatchesFiniteDifferences) {
  torch::manual_seed(3);
  const at::Tensor image = (torch::rand({2, 3, 3, 4}, torch::kDouble) * 0.9 + 0.05);
  const Params p = random_params(2, 3, at::kDouble);
  const at::Tensor weight = torch::randn({2, 3, 3, 4}, torch::kDouble);

  at::Tensor x = image.clone().requires_grad_();
  Params q{p.color.clone().requires_grad_(), p.brightness.clone().requires_grad_(),
           p.contrast.clone().requires_grad_(), p.gamma.clone().requires_grad_()};
  (call(x, q) * weight).sum().backward();

  // Central differences of sum(weight * reference), one element of one input at a time.
  const double h = 1e-6;
  auto check = [&](const at::Tensor& grad, const at::Tensor& value,
                   const std::function<double()>& loss, const std::string& name) {
    ASSERT_TRUE(grad.defined()) << name;
    ASSERT_TRUE(torch::isfinite(grad).all().item<bool>()) << name;
    auto flat = value.view(-1);
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double saved = flat[i].item<double>();
      flat[i] = saved + h;
      const double up = loss();
      flat[i] = saved - h;
      const double down = loss();
      flat[i] = saved;
      EXPECT_NEAR(grad.view(-1)[i].item<double>(), (up - down) / (2 * h), 1e-6)
          << name << "[" << i << "]";
    }
  };
  at::Tensor xv = image.clone();
  Params pv{p.color.clone(), p.brightness.clone(), p.contrast.clone(), p.gamma.clone()};
  auto loss = [&] { return (reference(xv, pv) * weight).sum().item<double>(); };
  check(x.grad(), xv, loss, "image");
  check(q.color.grad(), pv.color, loss, "color");
  check(q.brightness.grad(), pv.brightness, loss, "brightness");
  check(q.contrast.grad(), pv.contrast, loss, "contrast");
  check(q.gamma.grad(), pv.gamma, loss, "gamma");
}

TEST(ColorTransform, BadInputsRaiseErrorsNamingTheOp) {
  const at::Tensor image = torch::rand({2, 3, 4, 4});
  const Params p = random_params(2, 3, at::kFloat);
  EXPECT_THAT(error_of([&] {
                call(image, {torch::ones({4}), p.brightness, p.contrast, p.gamma});
              }),
              HasSubstr("gpuaug::color_transform: expected 'color' of shape [3] or [2, 3]"));
  EXPECT_THAT(error_of([&] { call(torch::rand({4, 4}), p); }),
              HasSubstr("gpuaug::color_transform: expected 'image' of shape [C, H, W]"));
  EXPECT_THAT(error_of([&] { call(image, {p.color, torch::zeros({3}), p.contrast, p.gamma}); }),
              HasSubstr("gpuaug::color_transform: expected 'brightness' of shape [] or [2]"));
  const std::vector<double> mean{0.5, 0.5, 0.5};
  EXPECT_THAT(error_of([&] {
                gpuaug::color_transform(image, p.color, p.brightness, p.contrast, p.gamma,
                                        std::nullopt, at::kByte, c10::ArrayRef<double>(mean));
              }),
              HasSubstr("gpuaug::color_transform: 'mean' and 'std' need a floating output dtype"));
}

TEST(ColorTransform, CudaMatchesCpu) {
  GPUAUG_SKIP_UNLESS_DEVICE(at::kCUDA);
  torch::manual_seed(4);
  const at::Tensor image = torch::rand({4, 3, 17, 23}).contiguous(at::MemoryFormat::ChannelsLast);
  const Params p = random_params(4, 3, at::kFloat);
  const Params pc{p.color.cuda(), p.brightness.cuda(), p.contrast.cuda(), p.gamma.cuda()};
  const at::Tensor cpu = call(image, p);
  const at::Tensor cuda = call(image.cuda(), pc).cpu();
  EXPECT_EQ(cuda.strides(), cpu.strides());
  EXPECT_TRUE(nearly_equal(cuda, cpu, 0, 2e-5));
}

}  // namespace
