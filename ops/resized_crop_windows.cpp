// gpuaug::_resized_crop_windows: RandomResizedCrop's windows, torchvision's ten tries and
// fallback a sample, from uniforms drawn beforehand, in one kernel (gpuaug/crop.py calls it).
// Schema, argument checks, Meta kernel and the body its CPU and CUDA loops share.
#include "ops/resized_crop_windows.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <cmath>
#include <string>

#include "kernels/resized_crop_windows.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<ResizedCropWindowsLoop> resized_crop_windows_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "_resized_crop_windows(Tensor uniforms, SymInt height, SymInt width, Tensor? heights, "
      "Tensor? widths, float[2] scale, float[2] ratio) -> Tensor");
}

namespace {

constexpr const char* kOp = "gpuaug::_resized_crop_windows";

// heights and widths: int64 [S] on the uniforms' device, each sample's side where given; else
// every sample's is height or width, an int: no tensor to fill or copy, and no CPU tensor (one
// in a compiled graph keeps Inductor from CUDA graphs).
void check_sides(const char* name, const std::optional<at::Tensor>& sides,
                 const at::Tensor& uniforms) {
  if (!sides.has_value()) return;
  check_defined(kOp, name, *sides);
  const auto samples = uniforms.sym_size(0);
  TORCH_CHECK(sides->scalar_type() == at::kLong && sides->dim() == 1 &&
                  sides->sym_size(0) == samples,
              kOp, ": expected '", name, "' as int64 of shape [", size_str(samples),
              "] (one a sample of 'uniforms'), but got ", sides->scalar_type(), " of shape ",
              shape_str(sides->sym_sizes()));
  TORCH_CHECK(sides->device() == uniforms.device(), kOp, ": expected '", name, "' on ",
              uniforms.device(), " like 'uniforms', but got ", sides->device());
}

void check_pair(const char* name, c10::ArrayRef<double> values) {
  TORCH_CHECK(values.size() == 2, kOp, ": expected '", name, "' as 2 values (low, high), but got ",
              std::to_string(values.size()));
}

crop::Side side_of(int64_t shared, const std::optional<at::Tensor>& sides) {
  if (!sides.has_value()) return {nullptr, 0, shared};
  return {sides->const_data_ptr<int64_t>(), sides->stride(0), 0};
}

// Rounded to float32 as crop.py rounded them on the host before torch's uniform_ draws.
crop::Ranges ranges_of(c10::ArrayRef<double> scale, c10::ArrayRef<double> ratio) {
  const float scale_low = static_cast<float>(scale[0]);
  const float log_ratio_low = static_cast<float>(std::log(ratio[0]));
  return {scale_low, static_cast<float>(scale[1]) - scale_low, log_ratio_low,
          static_cast<float>(std::log(ratio[1])) - log_ratio_low, std::fmin(ratio[0], ratio[1]),
          std::fmax(ratio[0], ratio[1])};
}

at::Tensor resized_crop_windows_kernel(const at::Tensor& uniforms, int64_t height, int64_t width,
                                       const std::optional<at::Tensor>& heights,
                                       const std::optional<at::Tensor>& widths,
                                       c10::ArrayRef<double> scale, c10::ArrayRef<double> ratio) {
  at::Tensor out =
      resized_crop_windows_meta(uniforms, height, width, heights, widths, scale, ratio);
  const int64_t samples = uniforms.size(0);
  if (samples == 0) return out;
  const crop::Draw draw{uniforms.const_data_ptr<float>(),
                        uniforms.stride(0),
                        uniforms.stride(1),
                        side_of(height, heights),
                        side_of(width, widths),
                        ranges_of(scale, ratio),
                        out.mutable_data_ptr<int64_t>(),
                        samples};
  resized_crop_windows_loops.on(kOp, uniforms.device().type())(uniforms, draw);
  return out;
}

}  // namespace

at::Tensor resized_crop_windows_meta(const at::Tensor& uniforms, c10::SymInt height,
                                     c10::SymInt width,
                                     const std::optional<at::Tensor>& heights,
                                     const std::optional<at::Tensor>& widths,
                                     c10::ArrayRef<double> scale, c10::ArrayRef<double> ratio) {
  check_defined(kOp, "uniforms", uniforms);
  TORCH_CHECK(uniforms.scalar_type() == at::kFloat, kOp,
              ": expected 'uniforms' of dtype float32, but got ", uniforms.scalar_type());
  TORCH_CHECK(uniforms.dim() == 2 && uniforms.sym_size(1) == crop::kUniforms, kOp,
              ": expected 'uniforms' of shape [S, ", std::to_string(crop::kUniforms),
              "] (a sample's ten scales, ten log ratios, top and left), but got ",
              shape_str(uniforms.sym_sizes()));
  check_sides("heights", heights, uniforms);
  check_sides("widths", widths, uniforms);
  check_pair("scale", scale);
  check_pair("ratio", ratio);
  TORCH_CHECK(ratio[0] > 0 && ratio[1] > 0, kOp,
              ": expected positive 'ratio' values (their logarithms are drawn), but got ",
              values_str(ratio));
  return at::empty_symint({4, uniforms.sym_size(0)}, uniforms.options().dtype(at::kLong));
}

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("_resized_crop_windows", &resized_crop_windows_meta);
}
TORCH_LIBRARY_IMPL(gpuaug, CPU, m) {
  m.impl("_resized_crop_windows", &resized_crop_windows_kernel);
}
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) {
  m.impl("_resized_crop_windows", &resized_crop_windows_kernel);
}
#endif

}  // namespace gpuaug
