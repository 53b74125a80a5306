// What gpuaug's Autocast kernels share. Each op that autocast must change registers, in
// ops/autocast/<op>.cpp, one kernel per autocast device (Autocast for CUDA, AutocastCPU) that
// leaves autocast (so the op's own kernels and ATen calls below it are not cast again), casts its
// tensor arguments and calls the op through the dispatcher. The casts are ATen's `to`, recorded by
// autograd (autocast runs above it): each gradient comes back in its leaf's dtype. Ops with no
// kernel here fall through: they run in the dtypes they are given.
#pragma once

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <vector>

namespace gpuaug::autocast {

constexpr c10::DispatchKey key(c10::DeviceType device) {
  return device == c10::DeviceType::CUDA ? c10::DispatchKey::Autocast
                                         : c10::DispatchKey::AutocastCPU;
}

// The autocast dtype of `device` (torch.autocast's dtype argument; float16 on CUDA and bfloat16 on
// the CPU by default).
inline at::ScalarType lower_precision(c10::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}

// PyTorch's cast: only floating, non-float64 tensors of `device` change; float32 parameters
// (leaves that require grad) cast to the lower precision are cached for the autocast region, so
// weights reused step after step are converted once.
inline at::Tensor cast(at::ScalarType dtype, const at::Tensor& t, c10::DeviceType device) {
  return at::autocast::cached_cast(dtype, t, device);
}

// The "promote" policy, for ops whose operands must share one dtype: the widest dtype among the
// operands autocast may cast (float16 with bfloat16 gives float32), or Undefined when there are
// none. Unlike at::autocast::promote_type, a float16 and a bfloat16 operand promote instead of
// raising, and operands that agree are left as they are whatever the autocast dtype.
inline at::ScalarType widest(at::TensorList tensors, c10::DeviceType device) {
  at::ScalarType result = at::ScalarType::Undefined;
  for (const auto& t : tensors) {
    if (!at::autocast::is_eligible(t, device)) continue;
    result = result == at::ScalarType::Undefined ? t.scalar_type()
                                                 : c10::promoteTypes(result, t.scalar_type());
  }
  return result;
}

inline std::vector<at::Tensor> promote(at::TensorList tensors, c10::DeviceType device) {
  const at::ScalarType dtype = widest(tensors, device);
  std::vector<at::Tensor> out(tensors.begin(), tensors.end());
  if (dtype == at::ScalarType::Undefined) return out;
  for (auto& t : out) t = cast(dtype, t, device);
  return out;
}

}  // namespace gpuaug::autocast
