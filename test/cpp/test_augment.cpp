// gpuaug::augment from C++: the registered schemas, a crop with flips and a 2x bilinear downscale
// against their definitions, a list of images of two sizes, the images' gradient through
// autograd, errors naming the op and the argument, and the CUDA kernels against the CPU's.
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <gpuaug/ops.h>

#include <vector>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using ::testing::HasSubstr;

// top, left, height, width, window flip, resized height and width, out top, out left, out flip
at::Tensor geometry(std::vector<std::vector<int64_t>> rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), 10});
}

at::Tensor run(std::vector<at::Tensor> images, const at::Tensor& rows, int64_t height,
               int64_t width, int64_t interpolation = 1, bool antialias = false) {
  const std::vector<c10::SymInt> size{height, width};
  const at::Device device = images.empty() ? at::Device(at::kCPU) : images[0].device();
  return gpuaug::augment(images, rows.to(device), size, interpolation, antialias,
                         /*padding_mode=*/0, std::nullopt, {}, std::nullopt, std::nullopt,
                         std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                         std::nullopt);
}

TEST(Augment, SchemasAreRegistered) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const char* name : {"gpuaug::augment", "gpuaug::_augment_backward"}) {
    const auto schema = dispatcher.findSchema({name, ""});
    ASSERT_TRUE(schema.has_value()) << name;
    EXPECT_TRUE(schema->hasKernelForDispatchKey(c10::DispatchKey::CPU)) << name;
    EXPECT_TRUE(schema->hasKernelForDispatchKey(c10::DispatchKey::Meta)) << name;
  }
}

class AugmentOnDevice : public ::testing::TestWithParam<at::DeviceType> {};

TEST_P(AugmentOnDevice, CropFlipAndDownscaleMatchTheirDefinitions) {
  GPUAUG_SKIP_UNLESS_DEVICE(GetParam());
  const auto options = torch::TensorOptions().dtype(torch::kDouble).device(GetParam());
  const at::Tensor image = torch::rand({2, 1, 6, 8}, options);
  // sample 0: the 2x3 window at (1, 2), flipped both ways; sample 1: the whole image halved
  const at::Tensor out = run({image}, geometry({{1, 2, 2, 3, 3, 2, 3, 0, 0, 0},
                                                {0, 0, 6, 8, 0, 3, 4, 0, 0, 0}}),
                             2, 3);
  const at::Tensor crop = image[0].slice(1, 1, 3).slice(2, 2, 5).flip({1, 2});
  EXPECT_TRUE(torch::allclose(out[0], crop, 0, 0));
  const at::Tensor halved = torch::avg_pool2d(image[1], 2).slice(1, 0, 2).slice(2, 0, 3);
  EXPECT_TRUE(torch::allclose(out[1], halved, 1e-12, 1e-12));
}

TEST_P(AugmentOnDevice, ListOfSizesAndItsGradient) {
  GPUAUG_SKIP_UNLESS_DEVICE(GetParam());
  const auto options = torch::TensorOptions().dtype(torch::kDouble).device(GetParam());
  const at::Tensor small = torch::rand({3, 4, 4}, options).requires_grad_();
  const at::Tensor large = torch::rand({3, 8, 6}, options).requires_grad_();
  // each image's 4x4 top-left corner, the larger halved to 2x2
  const at::Tensor out = run({small, large}, geometry({{0, 0, 4, 4, 0, 2, 2, 0, 0, 0},
                                                       {0, 0, 4, 4, 0, 2, 2, 0, 0, 0}}),
                             2, 2);
  EXPECT_TRUE(torch::allclose(out[0], torch::avg_pool2d(small, 2), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(out[1], torch::avg_pool2d(large.slice(1, 0, 4).slice(2, 0, 4), 2),
                              1e-12, 1e-12));
  out.sum().backward();
  EXPECT_TRUE(torch::allclose(small.grad(), torch::full_like(small, 0.25), 0, 1e-12));
  const at::Tensor inside = torch::zeros({3, 8, 6}, options);
  inside.slice(1, 0, 4).slice(2, 0, 4).fill_(0.25);
  EXPECT_TRUE(torch::allclose(large.grad(), inside, 0, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Devices, AugmentOnDevice, ::testing::Values(at::kCPU, at::kCUDA));

TEST(Augment, ErrorsNameTheOpAndArgument) {
  EXPECT_THAT(error_of([] { run({}, geometry({}), 2, 2); }),
              HasSubstr("gpuaug::augment: expected 'images' to hold at least one image"));
  EXPECT_THAT(error_of([] {
                run({torch::rand({3, 4, 4}), torch::rand({3, 4, 4}, torch::kDouble)},
                    geometry({{0, 0, 4, 4, 0, 4, 4, 0, 0, 0}, {0, 0, 4, 4, 0, 4, 4, 0, 0, 0}}),
                    2, 2);
              }),
              HasSubstr("expected every image of the dtype and device of images[0]"));
  EXPECT_THAT(error_of([] { run({torch::rand({3, 4, 4})}, geometry({{0, 0, 0, 4, 0, 4, 4, 0, 0,
                                                                      0}}), 2, 2); }),
              HasSubstr("sample 0's window (columns 2, 3) and resized size"));
}

TEST(Augment, CudaMatchesCpu) {
  GPUAUG_SKIP_UNLESS_DEVICE(at::kCUDA);
  const at::Tensor image = torch::randint(0, 256, {4, 3, 30, 40}, torch::kByte);
  const at::Tensor rows = geometry({{-3, 5, 20, 30, 1, 17, 19, 0, 2, 1},
                                    {0, 0, 30, 40, 2, 16, 16, 0, 0, 0},
                                    {10, -4, 12, 44, 3, 40, 80, 2, 3, 2},
                                    {29, 39, 1, 1, 0, 16, 16, 0, 0, 0}});
  const at::Tensor cpu = run({image}, rows, 16, 16, /*interpolation=*/1, /*antialias=*/true);
  const at::Tensor cuda = run({image.cuda()}, rows, 16, 16, 1, true).cpu();
  // the CPU follows torch's CPU resize of uint8 (a rounded first pass): within one
  EXPECT_LE((cpu.to(torch::kInt) - cuda.to(torch::kInt)).abs().max().item<int>(), 1);
}

}  // namespace
