// gpuaug::_resized_crop_windows's Meta function: its argument checks and output allocation.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>

#include <optional>

namespace gpuaug {

at::Tensor resized_crop_windows_meta(const at::Tensor& uniforms, c10::SymInt height,
                                     c10::SymInt width,
                                     const std::optional<at::Tensor>& heights,
                                     const std::optional<at::Tensor>& widths,
                                     c10::ArrayRef<double> scale, c10::ArrayRef<double> ratio);

}  // namespace gpuaug
