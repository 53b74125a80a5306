// gpuaug::_resized_crop_windows's Meta function: its argument checks and output allocation.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

namespace gpuaug {

at::Tensor resized_crop_windows_meta(const at::Tensor& uniforms, const at::Tensor& height,
                                     const at::Tensor& width, c10::ArrayRef<double> scale,
                                     c10::ArrayRef<double> ratio);

}  // namespace gpuaug
