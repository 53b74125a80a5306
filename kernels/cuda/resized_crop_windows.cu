// gpuaug::_resized_crop_windows's CUDA loop, a thread a sample; ops/resized_crop_windows.cpp
// checks, allocates and calls it.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/resized_crop_windows.h"

namespace gpuaug::cuda {
namespace {

__global__ void resized_crop_windows_kernel(const crop::Draw draw) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n < draw.samples) draw(n);
}

void resized_crop_windows(const at::Tensor& uniforms, const crop::Draw& draw) {
  const c10::cuda::CUDAGuard device_guard(uniforms.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const auto blocks = static_cast<unsigned>(ceil_div(draw.samples, kThreads));
  resized_crop_windows_kernel<<<blocks, kThreads, 0, stream>>>(draw);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

GPUAUG_REGISTER_LOOP(resized_crop_windows_loops, cuda, &resized_crop_windows);

}  // namespace gpuaug::cuda
