// gpuaug::auto_augment from C++: the registered schema, operations against their definitions
// (Identity, Invert, a translation by whole pixels, AugMix's mixture of two chains), the image's
// gradient through autograd, errors naming the op and the argument, and the CUDA kernels against
// the CPU's.
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <gpuaug/ops.h>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using ::testing::HasSubstr;

constexpr int64_t kIdentity = 0, kTranslateX = 3, kBrightness = 6, kEqualize = 13,
                  kInvert = 14;

at::Tensor chains(std::vector<int64_t> codes, int64_t samples, int64_t branches,
                  at::Device device) {
  return torch::tensor(codes, torch::kLong).view({samples, branches, -1}).to(device);
}

TEST(AutoAugment, SchemaIsRegistered) {
  const auto schema = c10::Dispatcher::singleton().findSchema({"gpuaug::auto_augment", ""});
  ASSERT_TRUE(schema.has_value());
  EXPECT_TRUE(schema->hasKernelForDispatchKey(c10::DispatchKey::CPU));
  EXPECT_TRUE(schema->hasKernelForDispatchKey(c10::DispatchKey::Meta));
  const auto backward =
      c10::Dispatcher::singleton().findSchema({"gpuaug::_auto_augment_backward", ""});
  ASSERT_TRUE(backward.has_value());
  EXPECT_TRUE(backward->hasKernelForDispatchKey(c10::DispatchKey::Autograd));
}

class AutoAugmentOnDevice : public ::testing::TestWithParam<at::DeviceType> {};

TEST_P(AutoAugmentOnDevice, OperationsMatchTheirDefinitions) {
  GPUAUG_SKIP_UNLESS_DEVICE(GetParam());
  const at::Device device(GetParam());
  const at::Tensor image = torch::randint(0, 256, {3, 3, 6, 9}, torch::kByte).to(device);
  // sample 0: Identity; 1: Invert then Identity; 2: TranslateX by 2 (then nothing), fill 0
  const at::Tensor ops = chains({kIdentity, kIdentity, kInvert, kIdentity, kTranslateX, kIdentity},
                                3, 1, device);
  const at::Tensor magnitudes =
      torch::tensor({0.0, 0.0, 0.0, 0.0, 2.7, 0.0}, torch::kDouble).view({3, 1, 2}).to(device);
  const at::Tensor out = gpuaug::auto_augment(image, ops, magnitudes);
  EXPECT_TRUE(torch::equal(out[0], image[0]));
  EXPECT_TRUE(torch::equal(out[1], 255 - image[1]));
  EXPECT_TRUE(torch::equal(out[2].slice(2, 2), image[2].slice(2, 0, 7)));
  EXPECT_EQ(out[2].slice(2, 0, 2).max().item<int>(), 0);
}

TEST_P(AutoAugmentOnDevice, MixtureOfChains) {
  GPUAUG_SKIP_UNLESS_DEVICE(GetParam());
  const at::Device device(GetParam());
  const at::Tensor image = torch::rand({2, 1, 5, 4}, torch::kDouble).to(device);
  const at::Tensor ops = chains({kInvert, kIdentity, kIdentity, kIdentity}, 2, 2, device);
  const at::Tensor magnitudes = torch::zeros({2, 2, 1}, torch::kDouble).to(device);
  const at::Tensor weights = torch::tensor({0.5f, 0.25f, 0.25f, 0.2f, 0.3f, 0.5f}).view({2, 3});
  const at::Tensor out = gpuaug::auto_augment(image, ops, magnitudes, weights.to(device));
  const at::Tensor w = weights.to(torch::kDouble).to(device);
  const at::Tensor expected = torch::stack(
      {w[0][0] * image[0] + w[0][1] * (1 - image[0]) + w[0][2] * image[0],
       w[1][0] * image[1] + w[1][1] * image[1] + w[1][2] * image[1]});
  EXPECT_TRUE(torch::allclose(out, expected, 1e-12, 1e-12));
}

TEST_P(AutoAugmentOnDevice, GradientThroughAutograd) {
  GPUAUG_SKIP_UNLESS_DEVICE(GetParam());
  const at::Device device(GetParam());
  // sample 0: Invert, then TranslateX by 1 (fill 0); sample 1: Brightness 1.5 of values below 2/3
  const at::Tensor image =
      (torch::rand({2, 1, 5, 4}, torch::kDouble) * 0.6).to(device).requires_grad_();
  const at::Tensor ops = chains({kInvert, kTranslateX, kBrightness, kIdentity}, 2, 1, device);
  const at::Tensor magnitudes =
      torch::tensor({0.0, 1.0, 0.5, 0.0}, torch::kDouble).view({2, 1, 2}).to(device);
  const at::Tensor grad = torch::randn({2, 1, 5, 4}, torch::kDouble).to(device);
  gpuaug::auto_augment(image, ops, magnitudes).backward(grad);
  // x[:, j] reaches the output at column j + 1 (the last column leaves the image)
  const at::Tensor shifted = torch::cat(
      {-grad[0].slice(2, 1), torch::zeros({1, 5, 1}, grad.options())}, 2);
  EXPECT_TRUE(torch::allclose(image.grad()[0], shifted, 0, 0));
  EXPECT_TRUE(torch::allclose(image.grad()[1], 1.5 * grad[1], 1e-12, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Devices, AutoAugmentOnDevice, ::testing::Values(at::kCPU, at::kCUDA));

TEST(AutoAugment, ErrorsNameTheOpAndArgument) {
  const at::Tensor image = torch::zeros({2, 3, 4, 4}, torch::kByte);
  const at::Tensor magnitudes = torch::zeros({2, 1, 1}, torch::kDouble);
  EXPECT_THAT(error_of([&] {
                gpuaug::auto_augment(image, torch::full({2, 1, 1}, 15, torch::kLong), magnitudes);
              }),
              HasSubstr("gpuaug::auto_augment: expected 'operations' codes 0..14"));
  EXPECT_THAT(error_of([&] {
                gpuaug::auto_augment(image, torch::zeros({2, 1, 1}, torch::kLong),
                                     torch::zeros({2, 1, 1}));
              }),
              HasSubstr("expected 'magnitudes' of dtype float64"));
}

TEST(AutoAugment, CudaMatchesCpu) {
  GPUAUG_SKIP_UNLESS_DEVICE(at::kCUDA);
  const at::Tensor image = torch::randint(0, 256, {14, 3, 20, 24}, torch::kByte);
  // every operation twice, after a rotation and before an equalize
  std::vector<int64_t> codes;
  std::vector<double> values;
  for (int64_t k = 0; k < 14; ++k) {
    codes.insert(codes.end(), {5, k, kEqualize});
    values.insert(values.end(), {17.5, k % 2 ? 0.4 : -0.3, 0.0});
  }
  const at::Tensor ops = torch::tensor(codes, torch::kLong).view({14, 1, 3});
  const at::Tensor magnitudes = torch::tensor(values, torch::kDouble).view({14, 1, 3});
  const at::Tensor cpu = gpuaug::auto_augment(image, ops, magnitudes);
  const at::Tensor cuda = gpuaug::auto_augment(image.cuda(), ops.cuda(), magnitudes.cuda()).cpu();
  // nearest: grid_sample's CPU and CUDA formulas round apart only on a half-pixel boundary
  EXPECT_LE(cpu.ne(cuda).sum().item<int64_t>(), 0.001 * cpu.numel());
}

}  // namespace
