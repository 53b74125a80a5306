// Programmatic dependent launch (Hopper and newer). A kernel launched by launch_overlapped may
// start while the kernel before it in the stream is still finishing, so its launch and its set-up
// in registers and shared memory hide behind that kernel's tail instead of following it. It must
// call wait_for_previous_grid() before it touches global memory, which the previous kernel may
// still be reading or writing. Stream order, CUDA graph capture and the caching allocator's reuse
// of memory are unaffected.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/per_device.h"

namespace gpuaug::cuda {

// Lets the next kernel in the stream, if launched overlapped, start its set-up once every block of
// this one has called this or exited; it only gets room on an SM as this kernel's blocks leave.
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Blocks until the previous kernel in the stream has completed and its writes are visible
// (returns at once when this kernel was not launched overlapped).
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether `kernel`'s code on the current device was compiled for Hopper or newer, so that it does
// wait (and may use Hopper's other features, such as clusters): a build for an older GPU,
// compiled for this one from its PTX, waits for nothing.
template <auto kernel>
bool hopper_code() {
  static PerDevice<bool> compiled_for_hopper;
  return compiled_for_hopper.get([] {
    cudaFuncAttributes attributes;
    C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    return attributes.ptxVersion >= 90;
  });
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), overlapped where its code allows.
template <auto kernel, typename... Args>
void launch_overlapped(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                       Args&&... args) {
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = hopper_code<kernel>() ? 1 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace gpuaug::cuda
