// A value computed once per CUDA device, the first time it is asked for on that device (kernel
// attributes and occupancy are per device; a single static would keep the first device's).
#pragma once

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>

#include <mutex>

namespace gpuaug::cuda {

template <typename T>
class PerDevice {
 public:
  // The current device's value, from compute() on first use there.
  template <typename Compute>
  const T& get(Compute&& compute) {
    const c10::DeviceIndex device = c10::cuda::current_device();
    std::call_once(once_[device], [&] { values_[device] = compute(); });
    return values_[device];
  }

 private:
  std::once_flag once_[C10_COMPILE_TIME_MAX_GPUS];
  T values_[C10_COMPILE_TIME_MAX_GPUS] = {};
};

}  // namespace gpuaug::cuda
