// Helpers shared by the GoogleTest suites of gpuaug (test_*.cpp): devices, random inputs,
// exact comparison and error capture.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <functional>
#include <sstream>
#include <string>

#ifndef GPUAUG_TEST_WITH_CUDA
#define GPUAUG_TEST_WITH_CUDA 0
#endif

namespace gpuaug::testing {

// The CUDA cases need a GPU and a library built with its CUDA kernels (a CPU-only build may run
// on a GPU machine).
inline bool cuda_usable() { return GPUAUG_TEST_WITH_CUDA && torch::cuda::is_available(); }

#define GPUAUG_SKIP_UNLESS_DEVICE(device)                                    \
  do {                                                                       \
    if ((device) == at::kCUDA && !::gpuaug::testing::cuda_usable()) {        \
      GTEST_SKIP() << "CUDA is not available (or gpuaug was built without)"; \
    }                                                                        \
  } while (0)

inline const char* name_of(at::ScalarType t) { return c10::toString(t); }

// Random values of both signs (scale 4), about a quarter of them exact halves (k + 0.5, the ties
// of round_ste), none zero; generated in float64 on the CPU from `seed`, then rounded to dtype.
inline at::Tensor random_input(at::IntArrayRef shape, at::ScalarType dtype, at::Device device,
                               uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto x = at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble)) * 4;
  auto ties = at::rand(shape, gen, at::TensorOptions().dtype(at::kDouble)) < 0.25;
  x = at::where(ties, at::floor(x) + 0.5, x);
  x = at::where(x == 0, at::full_like(x, 0.75), x);
  return x.to(dtype).to(device);
}

// Same dtype, device and shape; equal values (NaN equals NaN, -0 equals +0).
inline ::testing::AssertionResult exactly_equal(const at::Tensor& actual,
                                                const at::Tensor& expected) {
  if (actual.scalar_type() != expected.scalar_type()) {
    return ::testing::AssertionFailure() << "dtype " << actual.scalar_type() << " vs "
                                         << expected.scalar_type();
  }
  if (actual.device() != expected.device()) {
    return ::testing::AssertionFailure() << "device " << actual.device() << " vs "
                                         << expected.device();
  }
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure() << "shape " << actual.sizes() << " vs "
                                         << expected.sizes();
  }
  const auto a = actual.cpu().to(at::kDouble).flatten();
  const auto e = expected.cpu().to(at::kDouble).flatten();
  const auto same = a.eq(e).logical_or(a.isnan().logical_and(e.isnan()));
  if (same.all().item<bool>()) return ::testing::AssertionSuccess();
  const int64_t i = same.logical_not().nonzero()[0][0].item<int64_t>();
  return ::testing::AssertionFailure()
         << same.logical_not().sum().item<int64_t>() << " of " << a.numel()
         << " elements differ; first at flat index " << i << ": " << a[i].item<double>()
         << " vs " << e[i].item<double>();
}

// |actual - expected| <= atol + rtol * |expected| (for results with a reduction in them).
inline ::testing::AssertionResult nearly_equal(const at::Tensor& actual, const at::Tensor& expected,
                                               double rtol, double atol) {
  if (actual.sizes() != expected.sizes() || actual.scalar_type() != expected.scalar_type()) {
    return ::testing::AssertionFailure() << "shape/dtype " << actual.sizes() << " "
                                         << actual.scalar_type() << " vs " << expected.sizes()
                                         << " " << expected.scalar_type();
  }
  const auto a = actual.cpu().to(at::kDouble), e = expected.cpu().to(at::kDouble);
  if (at::allclose(a, e, rtol, atol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max difference " << (a - e).abs().max().item<double>();
}

// The message of the c10::Error that f throws, or "<no error>".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "<no error>";
}

}  // namespace gpuaug::testing
