// GoogleTest suite of gpuaug's element-wise operators from C++: registration and schemas,
// values against ATen and float64 references, autograd through the C++ API, error messages, and
// the same on CUDA (skipped without a GPU).
#include <ATen/core/dispatch/Dispatcher.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <gpuaug/ops.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "gpuaug_testing.h"

namespace {

using gpuaug::testing::error_of;
using gpuaug::testing::exactly_equal;
using gpuaug::testing::nearly_equal;
using gpuaug::testing::random_input;
using ::testing::HasSubstr;

// The backward operators are not in the public header: call them by name, as autograd does.
at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_relu_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, x);
}

std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_mul_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, a, b);
}

// float64 references rounded once to the dtype: exact for these single operations.
at::Tensor round_ste_reference(const at::Tensor& x) {
  return at::floor(x.cpu().to(at::kDouble) + 0.5).to(x.scalar_type()).to(x.device());
}

at::Tensor mul_reference(const at::Tensor& a, const at::Tensor& b) {
  return (a.cpu().to(at::kDouble) * b.cpu().to(at::kDouble)).to(a.scalar_type()).to(a.device());
}

// ---------------------------------------------------------------------------------------------
// Registration.

TEST(Registration, Schemas) {
  const std::vector<std::pair<const char*, const char*>> expected = {
      {"gpuaug::relu", "gpuaug::relu(Tensor x) -> Tensor"},
      {"gpuaug::_relu_backward", "gpuaug::_relu_backward(Tensor grad, Tensor x) -> Tensor"},
      {"gpuaug::mul", "gpuaug::mul(Tensor a, Tensor b) -> Tensor"},
      {"gpuaug::_mul_backward",
       "gpuaug::_mul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)"},
      {"gpuaug::round_ste", "gpuaug::round_ste(Tensor x) -> Tensor"},
      {"gpuaug::_round_ste_backward", "gpuaug::_round_ste_backward(Tensor(a) grad) -> Tensor(a)"},
  };
  for (const auto& [name, schema] : expected) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
    std::ostringstream printed;
    printed << op.schema();
    EXPECT_EQ(printed.str(), schema);
  }
}

TEST(Registration, Kernels) {
  for (const char* name : {"gpuaug::relu", "gpuaug::_relu_backward", "gpuaug::mul",
                           "gpuaug::_mul_backward", "gpuaug::round_ste"}) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
    EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::CPU)) << name;
    EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::Meta)) << name;
    EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::Autograd)) << name;
    EXPECT_EQ(op.hasKernelForDispatchKey(c10::DispatchKey::CUDA), bool(GPUAUG_TEST_WITH_CUDA))
        << name;
  }
  const auto identity =
      c10::Dispatcher::singleton().findSchemaOrThrow("gpuaug::_round_ste_backward", "");
  EXPECT_TRUE(identity.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd));
}

// ---------------------------------------------------------------------------------------------
// Values, for every dtype on every device.

class Values : public ::testing::TestWithParam<std::tuple<at::ScalarType, at::DeviceType>> {
 protected:
  void SetUp() override { GPUAUG_SKIP_UNLESS_DEVICE(device()); }
  at::ScalarType dtype() const { return std::get<0>(GetParam()); }
  at::Device device() const { return at::Device(std::get<1>(GetParam())); }
  at::Tensor input(at::IntArrayRef shape, uint64_t seed) const {
    return random_input(shape, dtype(), device(), seed);
  }
};

TEST_P(Values, ReluMatchesATen) {
  for (auto shape : std::vector<std::vector<int64_t>>{{1}, {7}, {3, 5, 11}, {4097}}) {
    const auto x = input(shape, 1);
    const auto y = gpuaug::relu(x);
    EXPECT_TRUE(exactly_equal(y, at::relu(x))) << at::IntArrayRef(shape);
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto special = at::tensor({nan, inf, -inf, 0.0, -2.5, 3.0}).to(dtype()).to(device());
  const auto expected = at::tensor({nan, inf, 0.0, 0.0, 0.0, 3.0}).to(dtype()).to(device());
  EXPECT_TRUE(exactly_equal(gpuaug::relu(special), expected));
}

TEST_P(Values, MulMatchesATenWithBroadcasting) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7}, {7}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{5}, {}}, {{}, {}},
      {{2, 1, 3}, {4, 1}}, {{0, 3}, {1, 3}}, {{1029}, {1029}}};
  for (const auto& [sa, sb] : shapes) {
    const auto a = input(sa, 2), b = input(sb, 3);
    const auto y = gpuaug::mul(a, b);
    EXPECT_TRUE(exactly_equal(y, at::mul(a, b))) << at::IntArrayRef(sa) << " * " << at::IntArrayRef(sb);
    EXPECT_TRUE(exactly_equal(y, mul_reference(a, b)));
  }
}

TEST_P(Values, RoundSteIsFloorOfXPlusHalf) {
  for (auto shape : std::vector<std::vector<int64_t>>{{1}, {9}, {4, 5, 6}, {4099}}) {
    const auto x = input(shape, 4);
    EXPECT_TRUE(exactly_equal(gpuaug::round_ste(x), round_ste_reference(x)));
  }
  // Where floor(x + 0.5) evaluated in the dtype is wrong: x + 0.5 rounds up to the next integer
  // just below a tie, and odd integers past the significand gain 1.
  std::vector<double> hard, rounded;
  if (dtype() == at::kFloat) {
    hard = {0.49999997019767761, 8388609.0, -8388607.5};
    rounded = {0.0, 8388609.0, -8388607.0};
  } else if (dtype() == at::kDouble) {
    hard = {0.49999999999999994, 4503599627370497.0};
    rounded = {0.0, 4503599627370497.0};
  } else if (dtype() == at::kHalf) {
    hard = {0.499755859375, 1023.5};
    rounded = {0.0, 1024.0};
  } else {
    hard = {0.498046875, 127.5};
    rounded = {0.0, 128.0};
  }
  const auto hard_x = at::tensor(hard, at::kDouble).to(dtype());
  ASSERT_TRUE(at::equal(hard_x.to(at::kDouble), at::tensor(hard, at::kDouble))) << "not exact";
  EXPECT_TRUE(exactly_equal(gpuaug::round_ste(hard_x.to(device())),
                            at::tensor(rounded, at::kDouble).to(dtype()).to(device())));
  // Ties go up (unlike at::round, which rounds half to even).
  const auto ties = at::tensor({0.5, 1.5, 2.5, -0.5, -1.5, -2.5}).to(dtype()).to(device());
  const auto up = at::tensor({1.0, 2.0, 3.0, 0.0, -1.0, -2.0}).to(dtype()).to(device());
  EXPECT_TRUE(exactly_equal(gpuaug::round_ste(ties), up));
  const double inf = std::numeric_limits<double>::infinity();
  const auto special = at::tensor({std::nan(""), inf, -inf}).to(dtype()).to(device());
  EXPECT_TRUE(exactly_equal(gpuaug::round_ste(special), special));
}

TEST_P(Values, BackwardOps) {
  const auto x = input({6, 7}, 5), grad = input({6, 7}, 6);
  const auto mask = x.cpu().to(at::kDouble) > 0;
  const auto expected =
      at::where(mask, grad.cpu().to(at::kDouble), 0.0).to(dtype()).to(device());
  EXPECT_TRUE(exactly_equal(relu_backward(grad, x), expected));
  const auto a = input({6, 7}, 7);
  auto [ga, gb] = mul_backward(grad, a, x);
  EXPECT_TRUE(exactly_equal(ga, mul_reference(grad, x)));
  EXPECT_TRUE(exactly_equal(gb, mul_reference(grad, a)));
}

TEST_P(Values, LayoutsEmptyAnd0d) {
  // channels_last in, channels_last out; a transposed (dense) input keeps its strides.
  const auto cl = input({2, 3, 4, 5}, 8).contiguous(at::MemoryFormat::ChannelsLast);
  for (const auto& y : {gpuaug::relu(cl), gpuaug::round_ste(cl), gpuaug::mul(cl, cl)}) {
    EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
  }
  EXPECT_TRUE(exactly_equal(gpuaug::relu(cl), at::relu(cl)));
  const auto t = input({5, 7}, 9).t();
  EXPECT_EQ(gpuaug::relu(t).strides(), t.strides());
  EXPECT_TRUE(exactly_equal(gpuaug::round_ste(t), round_ste_reference(t)));
  // Sliced with a step (not dense): a contiguous output.
  const auto s = input({6, 10}, 10).slice(1, 0, 10, 3);
  EXPECT_TRUE(gpuaug::relu(s).is_contiguous());
  EXPECT_TRUE(exactly_equal(gpuaug::mul(s, s), mul_reference(s, s)));
  // Misaligned start (one element in).
  const auto m = input({1030}, 11).slice(0, 1);
  EXPECT_TRUE(exactly_equal(gpuaug::relu(m), at::relu(m)));
  EXPECT_TRUE(exactly_equal(gpuaug::mul(m, m), mul_reference(m, m)));
  for (auto shape : std::vector<std::vector<int64_t>>{{}, {0}, {3, 0, 2}}) {
    const auto x = input(shape, 12);
    EXPECT_TRUE(exactly_equal(gpuaug::relu(x), at::relu(x)));
    EXPECT_TRUE(exactly_equal(gpuaug::round_ste(x), round_ste_reference(x)));
    EXPECT_TRUE(exactly_equal(gpuaug::mul(x, x), mul_reference(x, x)));
  }
  // A new tensor, not the input.
  const auto x = input({4}, 13);
  EXPECT_NE(gpuaug::relu(x).data_ptr(), x.data_ptr());
}

// ---------------------------------------------------------------------------------------------
// Autograd through the C++ API.

TEST_P(Values, Autograd) {
  // relu: the incoming gradient where x > 0, else 0 (also at x == 0).
  auto x = input({5, 6}, 14);
  x.select(0, 0).fill_(0);
  x.requires_grad_(true);
  const auto w = input({5, 6}, 15);
  gpuaug::relu(x).backward(w);
  EXPECT_TRUE(exactly_equal(x.grad(), at::where(x.detach() > 0, w, at::zeros_like(w))));

  // round_ste: the incoming gradient, exactly.
  auto r = input({5, 6}, 16).requires_grad_(true);
  gpuaug::round_ste(r).backward(w);
  EXPECT_TRUE(exactly_equal(r.grad(), w));

  // mul: the same gradients as at::mul's autograd, reduced over broadcast dimensions.
  auto a = input({4, 1, 3}, 17).requires_grad_(true);
  auto b = input({5, 1}, 18).requires_grad_(true);
  const auto v = input({4, 5, 3}, 19);
  gpuaug::mul(a, b).backward(v);
  auto a2 = a.detach().clone().requires_grad_(true);
  auto b2 = b.detach().clone().requires_grad_(true);
  at::mul(a2, b2).backward(v);
  const double tol = dtype() == at::kDouble ? 1e-12 : dtype() == at::kFloat ? 1e-5 : 2e-2;
  EXPECT_TRUE(nearly_equal(a.grad(), a2.grad(), tol, tol));
  EXPECT_TRUE(nearly_equal(b.grad(), b2.grad(), tol, tol));
}

TEST_P(Values, DoubleBackward) {
  if (dtype() != at::kDouble && dtype() != at::kFloat) GTEST_SKIP() << "float32/float64 only";
  auto a = input({3, 1}, 20).requires_grad_(true);
  auto b = input({1, 4}, 21).requires_grad_(true);
  const auto w = input({3, 4}, 22);
  auto grads = torch::autograd::grad({gpuaug::mul(a, b)}, {a, b}, {w}, /*retain_graph=*/true,
                                     /*create_graph=*/true);
  ASSERT_TRUE(grads[0].requires_grad());
  // sum(grad_a) = sum_ij w_ij b_j, so d/db = column sums of w; likewise d sum(grad_b)/da.
  const auto d_b = torch::autograd::grad({grads[0].sum()}, {b}, {}, true)[0];
  const auto d_a = torch::autograd::grad({grads[1].sum()}, {a})[0];
  EXPECT_TRUE(nearly_equal(d_b, w.sum(0, true), 1e-5, 1e-5));
  EXPECT_TRUE(nearly_equal(d_a, w.sum(1, true), 1e-5, 1e-5));

  // relu: the gradient is linear in the incoming gradient with the mask x > 0.
  auto x = input({3, 4}, 23).requires_grad_(true);
  auto g = input({3, 4}, 24).requires_grad_(true);
  const auto gx = torch::autograd::grad({gpuaug::relu(x)}, {x}, {g}, true, true)[0];
  const auto v = input({3, 4}, 25);
  const auto dg = torch::autograd::grad({gx}, {g}, {v})[0];
  EXPECT_TRUE(exactly_equal(dg, at::where(x.detach() > 0, v, at::zeros_like(v))));
}

std::string values_name(
    const ::testing::TestParamInfo<std::tuple<at::ScalarType, at::DeviceType>>& info) {
  return std::string(gpuaug::testing::name_of(std::get<0>(info.param))) + "_" +
         (std::get<1>(info.param) == at::kCUDA ? "CUDA" : "CPU");
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndDevices, Values,
                         ::testing::Combine(::testing::Values(at::kFloat, at::kDouble, at::kHalf,
                                                              at::kBFloat16),
                                            ::testing::Values(at::kCPU, at::kCUDA)),
                         values_name);

// ---------------------------------------------------------------------------------------------
// Errors name the operator and the argument.

TEST(Errors, Dtypes) {
  const auto ints = at::arange(4);
  EXPECT_THAT(error_of([&] { gpuaug::relu(ints); }),
              HasSubstr("gpuaug::relu: expected argument 'x' to have a floating dtype (float32, "
                        "float64, float16 or bfloat16), but got Long"));
  EXPECT_THAT(error_of([&] { gpuaug::round_ste(ints.to(at::kInt)); }),
              HasSubstr("gpuaug::round_ste: expected argument 'x' to have a floating dtype"));
  EXPECT_THAT(error_of([&] { gpuaug::mul(ints, ints); }),
              HasSubstr("gpuaug::mul: expected argument 'a' to have a floating dtype"));
  EXPECT_THAT(error_of([&] { gpuaug::mul(at::ones({3}), at::ones({3}, at::kDouble)); }),
              HasSubstr("gpuaug::mul: expected 'b' to have the dtype of 'a' (Float), but got Double"));
  // The same through autograd.
  EXPECT_THAT(error_of([&] {
                gpuaug::mul(at::ones({3}).requires_grad_(true), at::ones({3}, at::kHalf));
              }),
              HasSubstr("gpuaug::mul: expected 'b' to have the dtype of 'a' (Float), but got Half"));
}

TEST(Errors, Shapes) {
  EXPECT_THAT(error_of([] { gpuaug::mul(at::ones({3}), at::ones({4})); }),
              HasSubstr("gpuaug::mul: shapes of 'a' [3] and 'b' [4] do not broadcast "
                        "(dimension 0: 3 vs 4)"));
  EXPECT_THAT(error_of([] { relu_backward(at::ones({4}), at::ones({3})); }),
              HasSubstr("gpuaug::_relu_backward: expected 'grad' to have the shape of 'x' [3], "
                        "but got [4]"));
  EXPECT_THAT(error_of([] { mul_backward(at::ones({4}), at::ones({3}), at::ones({3})); }),
              HasSubstr("gpuaug::_mul_backward: expected 'grad' of the broadcast shape [3], but got [4]"));
}

TEST(Errors, Devices) {
  if (!gpuaug::testing::cuda_usable()) GTEST_SKIP() << "CUDA is not available";
  EXPECT_THAT(error_of([] { gpuaug::mul(at::ones({3}, at::kCUDA), at::ones({3})); }),
              HasSubstr("gpuaug::mul: expected 'b' on the device of 'a' (cuda:0), but got cpu"));
  EXPECT_THAT(error_of([] { gpuaug::mul(at::ones({3}), at::ones({3}, at::kCUDA)); }),
              HasSubstr("gpuaug::mul: expected 'b' on the device of 'a' (cpu), but got cuda:0"));
  EXPECT_THAT(error_of([] { relu_backward(at::ones({3}), at::ones({3}, at::kCUDA)); }),
              HasSubstr("gpuaug::_relu_backward: expected 'grad' on the device of 'x' (cuda:0), "
                        "but got cpu"));
}

// ---------------------------------------------------------------------------------------------
// CUDA specifics: sizes around the vector width, misaligned starts, large tensors, cuda:1.

TEST(Cuda, SizesAndAlignment) {
  if (!gpuaug::testing::cuda_usable()) GTEST_SKIP() << "CUDA is not available";
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    for (int64_t n : {1, 3, 7, 8, 9, 17, 1023, 4095, 4096, 4097, 8193, 100003, (1 << 20) + 3}) {
      for (int64_t offset : {0, 1, 2}) {
        const auto x = random_input({n + offset}, dtype, at::kCUDA, n).slice(0, offset);
        const auto b = random_input({n + offset}, dtype, at::kCUDA, n + 1).slice(0, offset);
        const auto b0 = random_input({n}, dtype, at::kCUDA, n + 2);   // aligned
        const auto xc = x.cpu(), bc = b.cpu();
        const std::string where = std::string(c10::toString(dtype)) + " n=" +
                                  std::to_string(n) + " offset=" + std::to_string(offset);
        EXPECT_TRUE(exactly_equal(gpuaug::relu(x).cpu(), at::relu(xc))) << where;
        EXPECT_TRUE(exactly_equal(gpuaug::round_ste(x).cpu(), round_ste_reference(xc))) << where;
        EXPECT_TRUE(exactly_equal(gpuaug::mul(x, b).cpu(), mul_reference(xc, bc))) << where;
        EXPECT_TRUE(exactly_equal(gpuaug::mul(x, b0).cpu(), mul_reference(xc, b0.cpu()))) << where;
      }
    }
  }
}

TEST(Cuda, SecondDevice) {
  if (!gpuaug::testing::cuda_usable() || torch::cuda::device_count() < 2) {
    GTEST_SKIP() << "needs two CUDA devices";
  }
  // Inputs on cuda:1 while cuda:0 is the current device.
  const at::Device dev1(at::kCUDA, 1);
  const auto x = random_input({3001}, at::kFloat, dev1, 30).slice(0, 1);
  const auto b = random_input({3000}, at::kFloat, dev1, 31);
  const auto y = gpuaug::mul(gpuaug::relu(x), b);
  EXPECT_EQ(y.device(), dev1);
  EXPECT_TRUE(exactly_equal(y.cpu(), mul_reference(at::relu(x.cpu()), b.cpu())));
  auto leaf = x.detach().requires_grad_(true);
  gpuaug::round_ste(leaf).backward(b);
  EXPECT_EQ(leaf.grad().device(), dev1);
  EXPECT_TRUE(exactly_equal(leaf.grad(), b));
}

}  // namespace
