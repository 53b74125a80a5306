// color_transform's parameters as its kernels read them: per-sample arrays through pointers,
// shared values that live on the CPU (beside a CUDA image) by value, so that no host-device copy
// or synchronisation is ever needed; and the reduction of the parameters' gradients.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/color_math.h"
#include "kernels/color_transform.h"
#include "kernels/image_layout.h"

namespace gpuaug {

// Parameters flattened for the kernels, in the compute dtype, on their own device: color as
// [C] or [N, C], the others as [] or [N].
at::Tensor color_param(const at::Tensor& param, at::ScalarType compute_dtype);

// The dtype the per-pixel arithmetic runs in: double for float64 images, else float.
at::ScalarType color_compute_dtype(const at::Tensor& image);

// Turns per-block sums of the parameter gradients, [N * T, blocks, C + 3] laid out as (color...,
// brightness, contrast, gamma), into the parameter gradients of `grads` (which it fills).
void color_reduce_param_grads(const at::Tensor& partial_sums, const ImageGeometry& geometry,
                              ColorGrads& grads);

}  // namespace gpuaug

namespace gpuaug::color {

template <typename P>
struct Params {
  const P* color;  // [N, C] (color_stride C) or [C] (stride 0); null: color_value
  const P* brightness;
  const P* contrast;
  const P* gamma;  // [N] (stride 1) or [] (stride 0); null: the *_value
  int64_t color_stride, brightness_stride, contrast_stride, gamma_stride;
  const bool* apply;  // null: every sample
  P color_value[kMaxChannels];
  P brightness_value, contrast_value, gamma_value;
  bool normalize;  // out = (out - mean) * inv_std
  P mean[kMaxChannels];
  P inv_std[kMaxChannels];

  C10_HOST_DEVICE const P* color_of(int64_t n) const {
    return color ? color + n * color_stride : color_value;
  }
  C10_HOST_DEVICE SampleParams<P> sample(int64_t n) const {
    return {brightness ? brightness[n * brightness_stride] : brightness_value,
            contrast ? contrast[n * contrast_stride] : contrast_value,
            gamma ? gamma[n * gamma_stride] : gamma_value};
  }
  C10_HOST_DEVICE bool applies(int64_t n) const { return apply == nullptr || apply[n]; }
};

// Params plus the converted tensors its pointers point into.
template <typename P>
struct ParamsHolder {
  Params<P> params{};
  std::vector<at::Tensor> keep_alive;
};

// Converts one parameter to P; one on the image's device is read through a pointer, a CPU one
// beside a CUDA image is copied by value into `values`.
template <typename P>
void bind_param(ParamsHolder<P>& holder, const at::Tensor& param, const at::Device& device,
                at::ScalarType compute_dtype, const P*& pointer, int64_t& stride, P* values,
                bool per_channel) {
  at::Tensor converted = color_param(param, compute_dtype);
  const bool batched = param.dim() == (per_channel ? 2 : 1);
  if (param.device() == device) {
    pointer = converted.data_ptr<P>();
    stride = batched ? (per_channel ? converted.size(1) : 1) : 0;
    holder.keep_alive.push_back(std::move(converted));
  } else {
    pointer = nullptr;
    stride = 0;
    const P* data = converted.data_ptr<P>();
    for (int64_t i = 0; i < converted.numel(); ++i) values[i] = data[i];
  }
}

template <typename P>
ParamsHolder<P> make_params(const at::Tensor& image, const at::Tensor& color,
                            const at::Tensor& brightness, const at::Tensor& contrast,
                            const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                            std::optional<c10::ArrayRef<double>> mean,
                            std::optional<c10::ArrayRef<double>> stddev) {
  ParamsHolder<P> h;
  Params<P>& p = h.params;
  const auto dtype = color_compute_dtype(image);
  const auto device = image.device();
  bind_param(h, color, device, dtype, p.color, p.color_stride, p.color_value, true);
  bind_param(h, brightness, device, dtype, p.brightness, p.brightness_stride, &p.brightness_value,
             false);
  bind_param(h, contrast, device, dtype, p.contrast, p.contrast_stride, &p.contrast_value, false);
  bind_param(h, gamma, device, dtype, p.gamma, p.gamma_stride, &p.gamma_value, false);
  p.apply = nullptr;
  if (apply.has_value()) {
    h.keep_alive.push_back(apply->contiguous());
    p.apply = h.keep_alive.back().template data_ptr<bool>();
  }
  p.normalize = mean.has_value() || stddev.has_value();
  const int64_t channels = image.size(image.dim() - 3);
  for (int64_t c = 0; c < channels; ++c) {
    p.mean[c] = mean.has_value() ? P((*mean)[c]) : P(0);
    p.inv_std[c] = stddev.has_value() ? P(1.0 / (*stddev)[c]) : P(1);
  }
  return h;
}

template <typename T>
struct Type {
  using type = T;
};

// Calls f(Type<in_t>{}, Type<out_t>{}) for the image and output dtypes; uint8 only when
// WithUint8 (the backward is floating-only).
template <bool WithUint8, typename F>
void dispatch_dtypes(at::ScalarType in, at::ScalarType out, F&& f) {
  auto inner = [&](auto in_tag) {
    if constexpr (WithUint8) {
      AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, out, "gpuaug", [&] {
        f(in_tag, Type<scalar_t>{});
      });
    } else {
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out, "gpuaug", [&] {
        f(in_tag, Type<scalar_t>{});
      });
    }
  };
  if constexpr (WithUint8) {
    AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in, "gpuaug", [&] {
      inner(Type<scalar_t>{});
    });
  } else {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in, "gpuaug", [&] {
      inner(Type<scalar_t>{});
    });
  }
}

// The compute type for an image dtype.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

}  // namespace gpuaug::color
