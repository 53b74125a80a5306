#include "kernels/cuda/jit/elementwise.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <c10/util/SmallVector.h>

#include <unordered_map>
#include <vector>

#include "kernels/cuda/fast_divider.cuh"
#include "kernels/cuda/jit/disk_cache.h"
#include "kernels/cuda/jit/nvrtc.h"

namespace gpuaug::jit {
namespace {

int dtype_index(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return 0;
    case at::kDouble: return 1;
    case at::kHalf: return 2;
    case at::kBFloat16: return 3;
    default: TORCH_CHECK(false, "gpuaug.jit: no element-wise kernels for ", c10::toString(dtype));
  }
}

std::atomic<int64_t> compiled{0}, from_disk{0}, loaded{0};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Everything the compiled code depends on: the disk cache's key.
std::string cache_key(const std::string& source, int arch) {
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return "nvrtc " + nvrtc_version() + "\ndriver " + std::to_string(driver) + "\narch " +
         std::to_string(arch) + "\n" + source;
}

// Compiles (or reads from disk) and loads one kernel; the library stays loaded for the process.
cudaKernel_t load_kernel(const std::string& what, const std::string& source,
                         const std::string& name, int arch) {
  const std::string key = cache_key(source, arch);
  auto code = disk_cache_load(key);
  if (code) {
    ++from_disk;
  } else {
    code = nvrtc_compile(what, source, arch);
    ++compiled;
    disk_cache_store(key, *code);
  }
  cudaLibrary_t library = nullptr;
  C10_CUDA_CHECK(cudaLibraryLoadData(&library, code->binary.data(), nullptr, nullptr, 0, nullptr,
                                     nullptr, 0));
  cudaKernel_t kernel = nullptr;
  C10_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, name.c_str()));
  ++loaded;
  return kernel;
}

Layout choose_layout(const at::TensorIteratorBase& iter) {
  if (iter.is_contiguous()) {
    for (int a = 0; a < iter.ntensors(); ++a) {
      if (reinterpret_cast<uintptr_t>(iter.data_ptr(a)) % 16 != 0) return Layout::kContiguous;
    }
    return Layout::kVectorized;
  }
  return iter.can_use_32bit_indexing() ? Layout::kStrided32 : Layout::kStrided64;
}

}  // namespace

ElementwiseKernels::ElementwiseKernels(std::string what, ElementwiseSpec spec)
    : what_(std::move(what)), spec_(std::move(spec)) {
  for (auto& variant : variants_) variant = std::make_unique<Variant>();
}

std::string ElementwiseKernels::ptx(at::ScalarType dtype, Layout layout, int arch) const {
  return nvrtc_compile(what_, elementwise_source(spec_, dtype, layout), arch, /*ptx_only=*/true).binary;
}

cudaKernel_t ElementwiseKernels::kernel(at::ScalarType dtype, Layout layout,
                                        c10::DeviceIndex device) {
  Variant& variant = *variants_[dtype_index(dtype) * kNumLayouts + static_cast<int>(layout)];
  if (const cudaKernel_t kernel = variant.by_device[device].load(std::memory_order_acquire)) {
    return kernel;
  }
  // First use on this device: compile once per architecture (other threads wait here), then load
  // the kernel into the device's context now, not lazily at a launch that may be under capture.
  std::lock_guard<std::mutex> lock(variant.mutex);
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(device);
  const int arch = properties->major * 10 + properties->minor;
  auto found = variant.by_arch.find(arch);
  if (found == variant.by_arch.end()) {
    found = variant.by_arch
                .emplace(arch, load_kernel(what_, elementwise_source(spec_, dtype, layout),
                                           kernel_name(spec_, layout), arch))
                .first;
  }
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(found->second)));
  variant.by_device[device].store(found->second, std::memory_order_release);
  return found->second;
}

void ElementwiseKernels::run(at::TensorIteratorBase& iter) {
  const int64_t n = iter.numel();
  if (n == 0) return;
  const c10::cuda::CUDAGuard device_guard(iter.device());
  const Layout layout = choose_layout(iter);
  const cudaKernel_t function = kernel(iter.common_dtype(), layout, iter.device().index());

  // The kernel's parameters, packed word for word as elementwise_source.cpp declares them.
  const int operands = iter.ntensors();
  const int ndim = iter.ndim();
  c10::SmallVector<void*, 8> pointers(operands);
  for (int a = 0; a < operands; ++a) pointers[a] = iter.data_ptr(a);
  int64_t count = n;
  uint32_t count32 = static_cast<uint32_t>(n);
  std::vector<uint32_t> layout32;
  std::vector<int64_t> layout64;
  void* args[3] = {&count, pointers.data(), nullptr};
  int64_t blocks = 0;
  switch (layout) {
    case Layout::kVectorized:
    case Layout::kContiguous: {
      const int64_t width = layout == Layout::kVectorized ? 16 / iter.element_size(0) : 1;
      blocks = ceil_div(n, int64_t(kThreads) * kFlatVectors * width);
      break;
    }
    case Layout::kStrided32: {
      layout32.assign(1 + 3 * kMaxDims + kMaxDims * operands, 0);
      layout32[0] = ndim;
      for (int d = 0; d < ndim; ++d) {
        const cuda::FastDivider divider(static_cast<uint32_t>(iter.shape()[d]));
        layout32[1 + 3 * d] = divider.divisor;
        layout32[2 + 3 * d] = divider.magic;
        layout32[3 + 3 * d] = divider.shift;
        for (int a = 0; a < operands; ++a) {
          layout32[1 + 3 * kMaxDims + d * operands + a] = static_cast<uint32_t>(iter.strides(a)[d]);
        }
      }
      args[0] = &count32;
      args[2] = layout32.data();
      blocks = ceil_div(n, int64_t(kThreads) * kStridedUnroll);
      break;
    }
    case Layout::kStrided64: {
      layout64.assign(1 + kMaxDims + kMaxDims * operands, 0);
      layout64[0] = ndim;
      for (int d = 0; d < ndim; ++d) {
        layout64[1 + d] = iter.shape()[d];
        for (int a = 0; a < operands; ++a) {
          layout64[1 + kMaxDims + d * operands + a] = iter.strides(a)[d];
        }
      }
      args[2] = layout64.data();
      const int64_t resident = int64_t(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 16;
      blocks = std::min(ceil_div(n, kThreads), resident);
      break;
    }
  }
  C10_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(function), dim3(blocks),
                                  dim3(kThreads), args, 0, at::cuda::getCurrentCUDAStream()));
}

CacheCounters cache_counters() { return {compiled.load(), from_disk.load(), loaded.load()}; }

ElementwiseKernels& cached_kernels(const std::string& what, const std::string& name,
                                   c10::ArrayRef<std::string> outputs,
                                   c10::ArrayRef<std::string> inputs) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::unique_ptr<ElementwiseKernels>> cache;
  std::string key = name;
  for (const auto& output : outputs) (key += '\0') += output;
  key += '\1';
  for (const auto& input : inputs) (key += '\0') += input;
  std::lock_guard<std::mutex> lock(mutex);
  auto& kernels = cache[key];
  if (!kernels) {
    kernels = std::make_unique<ElementwiseKernels>(what, ElementwiseSpec{name, outputs.vec(), inputs.vec()});
  }
  return *kernels;
}

}  // namespace gpuaug::jit
