// GoogleTest suite of gpuaug::jit_elementwise from C++: a user expression and its gradient on
// CUDA through the public header (skipped without a GPU), and the CPU tensor's error everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <gpuaug/ops.h>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using gpuaug::testing::nearly_equal;
using gpuaug::testing::random_input;
using ::testing::HasSubstr;

const std::vector<std::string> kNames = {"x", "y"};
const std::vector<std::string> kGrads = {"grad * y", "grad * (x + 1)"};

TEST(JitElementwise, ValuesAndGradientsOnCuda) {
  GPUAUG_SKIP_UNLESS_DEVICE(at::kCUDA);
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    // The half types compute in float32 and round once; the gradients sum 3 to 35 terms.
    const double tol = dtype == at::kDouble ? 1e-12 : dtype == at::kFloat ? 1e-5 : 2e-2;
    const auto x = random_input({5, 1, 7}, dtype, at::kCUDA, 1).requires_grad_();
    const auto y = random_input({3, 1}, dtype, at::kCUDA, 2).requires_grad_();
    const auto out = gpuaug::jit_elementwise("cpp_fma", "x * y + y", kNames, {x, y}, kGrads);
    const auto x64 = x.detach().cpu().to(at::kDouble), y64 = y.detach().cpu().to(at::kDouble);
    EXPECT_TRUE(nearly_equal(out, (x64 * y64 + y64).to(dtype).to(at::kCUDA), tol, tol));
    out.sum().backward();
    EXPECT_TRUE(nearly_equal(x.grad(), (y64.sum() * at::ones({5, 1, 7}, at::kDouble)).to(dtype).to(at::kCUDA), tol, tol));
    EXPECT_TRUE(nearly_equal(y.grad(), ((x64 + 1).sum() * at::ones({3, 1}, at::kDouble)).to(dtype).to(at::kCUDA), tol, tol));
  }
}

TEST(JitElementwise, CpuTensorIsAnError) {
  const auto x = at::ones({2});
  EXPECT_THAT(error_of([&] { gpuaug::jit_elementwise("cpp_fma", "x * y + y", kNames, {x, x}); }),
              HasSubstr("gpuaug::jit_elementwise 'cpp_fma': 'x' is a CPU tensor, but run-time "
                        "compiled operators run on CUDA tensors only"));
}

}  // namespace
