// GoogleTest suite of gpuaug::lltm from C++: schemas and kernels, values and the gradients of all
// five inputs through the C++ API against the same cell built from ATen operators in float64,
// error messages, and the same on CUDA (skipped without a GPU).
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <gpuaug/ops.h>

#include <sstream>
#include <vector>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using gpuaug::testing::nearly_equal;
using ::testing::HasSubstr;

TEST(LltmRegistration, SchemasAndKernels) {
  const std::vector<std::pair<const char*, const char*>> expected = {
      {"gpuaug::lltm",
       "gpuaug::lltm(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell) "
       "-> (Tensor, Tensor)"},
      {"gpuaug::_lltm_forward",
       "gpuaug::_lltm_forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, "
       "Tensor old_cell) -> (Tensor, Tensor, Tensor, Tensor)"},
      {"gpuaug::_lltm_backward",
       "gpuaug::_lltm_backward(Tensor? grad_h, Tensor? grad_cell, Tensor gates, Tensor x, "
       "Tensor weights, Tensor bias, Tensor old_cell, bool[5] needs) -> Tensor[]"},
  };
  for (const auto& [name, schema] : expected) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
    std::ostringstream printed;
    printed << op.schema();
    EXPECT_EQ(printed.str(), schema);
    for (auto key : {c10::DispatchKey::CPU, c10::DispatchKey::Meta, c10::DispatchKey::Autograd}) {
      EXPECT_TRUE(op.hasKernelForDispatchKey(key)) << name << " " << key;
    }
    EXPECT_EQ(op.hasKernelForDispatchKey(c10::DispatchKey::CUDA), bool(GPUAUG_TEST_WITH_CUDA))
        << name;
  }
}

// The semantics from ATen operators; autograd gives the reference gradients.
std::vector<at::Tensor> reference_cell(const std::vector<at::Tensor>& args) {
  const auto gates = at::linear(at::cat({args[3], args[0]}, 1), args[1], args[2]).chunk(3, 1);
  const auto new_cell = args[4] + at::elu(gates[2]) * at::sigmoid(gates[0]);
  return {at::tanh(new_cell) * at::sigmoid(gates[1]), new_cell};
}

std::vector<at::Tensor> random_args(int64_t b, int64_t i, int64_t s, at::ScalarType dtype,
                                    at::Device device) {
  auto opts = at::TensorOptions().dtype(at::kDouble);
  at::manual_seed(b * 1000 + i * 100 + s);
  std::vector<at::Tensor> args = {at::randn({b, i}, opts), at::randn({3 * s, s + i}, opts) * 0.3,
                                  at::randn({3 * s}, opts), at::randn({b, s}, opts),
                                  at::randn({b, s}, opts)};
  for (auto& a : args) a = a.to(dtype).to(device).requires_grad_(true);
  return args;
}

class LltmTest : public ::testing::TestWithParam<std::tuple<at::DeviceType, at::ScalarType>> {};

TEST_P(LltmTest, ValuesAndGradients) {
  const auto [device_type, dtype] = GetParam();
  GPUAUG_SKIP_UNLESS_DEVICE(device_type);
  const double tol = dtype == at::kDouble ? 1e-12 : 1e-4;
  for (auto [b, i, s] : {std::tuple{1, 1, 7}, std::tuple{5, 12, 32}, std::tuple{33, 20, 65}}) {
    const auto args = random_args(b, i, s, dtype, at::Device(device_type));
    const auto [new_h, new_cell] = gpuaug::lltm(args[0], args[1], args[2], args[3], args[4]);
    std::vector<at::Tensor> ref_args;
    for (const auto& a : args) ref_args.push_back(a.detach().cpu().to(at::kDouble).requires_grad_());
    const auto ref = reference_cell(ref_args);
    EXPECT_TRUE(nearly_equal(new_h.to(at::kDouble), ref[0].detach(), tol, tol));
    EXPECT_TRUE(nearly_equal(new_cell.to(at::kDouble), ref[1].detach(), tol, tol));

    const auto grad_h = at::randn({b, s}, at::TensorOptions().dtype(at::kDouble));
    const auto grad_cell = at::randn({b, s}, at::TensorOptions().dtype(at::kDouble));
    const auto grads = torch::autograd::grad(
        {new_h, new_cell}, args,
        {grad_h.to(dtype).to(new_h.device()), grad_cell.to(dtype).to(new_h.device())});
    const auto ref_grads = torch::autograd::grad(ref, ref_args, {grad_h, grad_cell});
    for (size_t k = 0; k < args.size(); ++k) {
      EXPECT_EQ(grads[k].sizes(), args[k].sizes()) << "gradient " << k;
      EXPECT_TRUE(nearly_equal(grads[k].to(at::kDouble).cpu(), ref_grads[k], 10 * tol, 10 * tol))
          << "gradient " << k << " at B=" << b << " I=" << i << " S=" << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DevicesAndDtypes, LltmTest,
                         ::testing::Combine(::testing::Values(at::kCPU, at::kCUDA),
                                            ::testing::Values(at::kFloat, at::kDouble)));

TEST(LltmErrors, Messages) {
  const auto args = random_args(2, 3, 4, at::kFloat, at::kCPU);
  EXPECT_THAT(error_of([&] { gpuaug::lltm(args[0], args[1].t(), args[2], args[3], args[4]); }),
              HasSubstr("gpuaug::lltm: expected 'weights' of shape [3 * S, S + I] = [12, 7] "
                        "(B = 2 from 'input', I = 3 from 'input', S = 4 from 'old_h'), but got "
                        "[7, 12]"));
  EXPECT_THAT(error_of([&] {
                gpuaug::lltm(args[0], args[1], args[2], args[3], args[4].to(at::kDouble));
              }),
              HasSubstr("gpuaug::lltm: expected 'old_cell' to have the dtype of 'input' (Float), "
                        "but got Double"));
  EXPECT_THAT(error_of([&] { gpuaug::lltm(args[0], args[1], args[2], args[3], at::Tensor()); }),
              HasSubstr("gpuaug::lltm: argument 'old_cell' is an undefined tensor"));
}

}  // namespace
