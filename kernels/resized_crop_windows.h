// What gpuaug::_resized_crop_windows's op body (ops/resized_crop_windows.cpp) and its CPU and
// CUDA loops share: torchvision's RandomResizedCrop.make_params of one sample from its 22
// uniforms, the arithmetic, types and order of operations of the torch ops that computed it
// before (test/python/geometric_testing.py keeps them), so both backends give their bits.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

#include "kernels/loops.h"

namespace gpuaug::crop {

constexpr int kTries = 10;
// Columns of a sample's uniforms: the tries' scales, their log ratios, then top and left.
constexpr int kScales = 0, kLogRatios = kTries, kTop = 2 * kTries, kLeft = 2 * kTries + 1;
constexpr int kUniforms = 2 * kTries + 2;

// An image side: data[n * stride] a sample, or `value` for every sample where data is null.
struct Side {
  const int64_t* data;
  int64_t stride;
  int64_t value;
  C10_HOST_DEVICE double at(int64_t n) const {
    return static_cast<double>(data ? data[n * stride] : value);
  }
};

// The draw's ranges as torch's uniform_(low, high) takes them, float32, the ratio's through its
// logarithm; and the ratio's bounds in double for the fallback.
struct Ranges {
  float scale_low, scale_width, log_ratio_low, log_ratio_width;
  double ratio_min, ratio_max;
};

// Everything a loop reads and writes: out is [4, samples] (top, left, height, width rows).
struct Draw {
  const float* uniforms;
  int64_t row_stride, column_stride;
  Side height, width;
  Ranges ranges;
  int64_t* out;
  int64_t samples;

  // uniform_(low, high) in float32: a product and a sum each rounded (the loops' files are
  // compiled without contraction into an FMA, as torch's were).
  C10_HOST_DEVICE static float uniform(float u, float low, float width) { return u * width + low; }

  C10_HOST_DEVICE void operator()(int64_t n) const {
    const float* u = uniforms + n * row_stride;
    const double h_img = height.at(n), w_img = width.at(n);
    const double area = h_img * w_img;
    double h = 0, w = 0;
    bool found = false;
    for (int k = 0; k < kTries && !found; ++k) {
      const double target =
          area * uniform(u[(kScales + k) * column_stride], ranges.scale_low, ranges.scale_width);
      const float log_ratio = uniform(u[(kLogRatios + k) * column_stride], ranges.log_ratio_low,
                                      ranges.log_ratio_width);
      // torch.exp in float32, here correctly rounded (through double) and so the same on both
      // backends; torch's own (SLEEF's on the CPU, expf on CUDA) are an ulp off at times.
      const double aspect = static_cast<float>(std::exp(static_cast<double>(log_ratio)));
      // torch.round: half to even
      w = std::nearbyint(std::sqrt(target * aspect));
      h = std::nearbyint(std::sqrt(target / aspect));
      found = w > 0 && w <= w_img && h > 0 && h <= h_img;  // false for NaN too
    }
    double top, left;
    if (found) {  // randint(0, n): floor(u n)
      top = std::floor(static_cast<double>(u[kTop * column_stride]) * (h_img - h + 1));
      left = std::floor(static_cast<double>(u[kLeft * column_stride]) * (w_img - w + 1));
    } else {  // the whole image, its ratio clamped to the range, centred
      const double in_ratio = w_img / h_img;
      w = in_ratio > ranges.ratio_max ? std::nearbyint(h_img * ranges.ratio_max) : w_img;
      h = in_ratio < ranges.ratio_min ? std::nearbyint(w_img / ranges.ratio_min) : h_img;
      top = std::floor((h_img - h) / 2);
      left = std::floor((w_img - w) / 2);
    }
    out[n] = static_cast<int64_t>(top);
    out[samples + n] = static_cast<int64_t>(left);
    out[2 * samples + n] = static_cast<int64_t>(h);
    out[3 * samples + n] = static_cast<int64_t>(w);
  }
};

}  // namespace gpuaug::crop

namespace gpuaug {

// Fills draw.out for samples 0 .. draw.samples - 1 (at least one) on uniforms' device.
using ResizedCropWindowsLoop = void (*)(const at::Tensor& uniforms, const crop::Draw& draw);

extern Loops<ResizedCropWindowsLoop> resized_crop_windows_loops;

}  // namespace gpuaug
