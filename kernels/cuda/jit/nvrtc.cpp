#include "kernels/cuda/jit/nvrtc.h"

#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace gpuaug::jit {
namespace {

// The entry points gpuaug uses, resolved by name from the opened library.
struct NvrtcApi {
  decltype(&nvrtcVersion) version;
  decltype(&nvrtcGetErrorString) error_string;
  decltype(&nvrtcGetNumSupportedArchs) num_supported_archs;
  decltype(&nvrtcGetSupportedArchs) supported_archs;
  decltype(&nvrtcCreateProgram) create_program;
  decltype(&nvrtcDestroyProgram) destroy_program;
  decltype(&nvrtcCompileProgram) compile_program;
  decltype(&nvrtcGetProgramLogSize) log_size;
  decltype(&nvrtcGetProgramLog) log;
  decltype(&nvrtcGetPTXSize) ptx_size;
  decltype(&nvrtcGetPTX) ptx;
  decltype(&nvrtcGetCUBINSize) cubin_size;
  decltype(&nvrtcGetCUBIN) cubin;
  int major = 0;
  std::string version_string;
  std::vector<int> archs;  // ascending
};

// The NVRTC of the CUDA runtime in use: by soname (found when PyTorch has loaded it, or on the
// library path), else from the directory that runtime was loaded from (the nvidia wheels and the
// toolkit both keep libnvrtc beside libcudart).
void* open_nvrtc() {
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  const std::string name = "libnvrtc.so." + std::to_string(runtime_version / 1000);
  if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string first_error = dlerror();
  Dl_info runtime{};
  if (dladdr(reinterpret_cast<void*>(&cudaRuntimeGetVersion), &runtime) && runtime.dli_fname) {
    std::string beside = runtime.dli_fname;
    beside = beside.substr(0, beside.find_last_of('/') + 1) + name;
    if (void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  TORCH_CHECK(false, "gpuaug.jit: cannot load NVRTC (", first_error,
              "); install the nvidia-cuda-nvrtc wheel of your CUDA version or put the CUDA "
              "toolkit's lib64 directory on LD_LIBRARY_PATH");
}

template <typename Fn>
void resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  TORCH_CHECK(fn != nullptr, "gpuaug.jit: the loaded NVRTC has no ", symbol);
}

const NvrtcApi& nvrtc() {
  static NvrtcApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = open_nvrtc();  // kept open for the life of the process
    resolve(handle, "nvrtcVersion", api.version);
    resolve(handle, "nvrtcGetErrorString", api.error_string);
    resolve(handle, "nvrtcGetNumSupportedArchs", api.num_supported_archs);
    resolve(handle, "nvrtcGetSupportedArchs", api.supported_archs);
    resolve(handle, "nvrtcCreateProgram", api.create_program);
    resolve(handle, "nvrtcDestroyProgram", api.destroy_program);
    resolve(handle, "nvrtcCompileProgram", api.compile_program);
    resolve(handle, "nvrtcGetProgramLogSize", api.log_size);
    resolve(handle, "nvrtcGetProgramLog", api.log);
    resolve(handle, "nvrtcGetPTXSize", api.ptx_size);
    resolve(handle, "nvrtcGetPTX", api.ptx);
    resolve(handle, "nvrtcGetCUBINSize", api.cubin_size);
    resolve(handle, "nvrtcGetCUBIN", api.cubin);
    int minor = 0;
    api.version(&api.major, &minor);
    api.version_string = std::to_string(api.major) + "." + std::to_string(minor);
    int count = 0;
    api.num_supported_archs(&count);
    api.archs.resize(count);
    api.supported_archs(api.archs.data());
    std::sort(api.archs.begin(), api.archs.end());
  });
  return api;
}

void check(const NvrtcApi& api, nvrtcResult result, const char* call) {
  TORCH_CHECK(result == NVRTC_SUCCESS, "gpuaug.jit: ", call, " failed: ", api.error_string(result));
}

std::string numbered(const std::string& source) {
  std::string out;
  size_t line = 1, start = 0;
  while (start < source.size()) {
    const size_t end = std::min(source.find('\n', start), source.size());
    const std::string number = std::to_string(line++);
    out += std::string(number.size() < 4 ? 4 - number.size() : 0, ' ') + number + "  " +
           source.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

const std::string& nvrtc_version() { return nvrtc().version_string; }

CompiledCode nvrtc_compile(const std::string& what, const std::string& source, int arch,
                           bool ptx_only) {
  const NvrtcApi& api = nvrtc();
  const auto known = std::upper_bound(api.archs.begin(), api.archs.end(), arch);
  TORCH_CHECK(known != api.archs.begin(), "gpuaug.jit: NVRTC ", api.version_string,
              " cannot compile for compute capability ", std::to_string(arch / 10), ".",
              std::to_string(arch % 10));
  const int target = *std::prev(known);
  const bool cubin = !ptx_only && target == arch;
  const std::string arch_flag =
      std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(target);
  // NVRTC's time on a source it has not seen is most of a first call, and --Ofast-compile=mid
  // cuts much of it. That level does not unroll loops, so the generated source has none over its
  // operands (elementwise_source.cpp). --minimal leaves out what an element-wise expression has
  // no use for (textures, surfaces, device-side runtime calls; the math functions stay), which
  // shortens it again. NVRTC 13 knows both options.
  std::vector<const char*> options = {arch_flag.c_str(), "--std=c++17",
                                      "--device-as-default-execution-space"};
  if (api.major >= 13) {
    options.push_back("--Ofast-compile=mid");
    options.push_back("--minimal");
  }

  nvrtcProgram program = nullptr;
  check(api, api.create_program(&program, source.c_str(), "gpuaug_jit.cu", 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const nvrtcResult compiled =
      api.compile_program(program, static_cast<int>(options.size()), options.data());
  size_t log_size = 0;
  api.log_size(program, &log_size);
  std::string log(log_size, '\0');
  api.log(program, log.data());
  if (compiled != NVRTC_SUCCESS) {
    api.destroy_program(&program);
    TORCH_CHECK(false, what, ": NVRTC ", api.version_string, " could not compile the kernel (",
                api.error_string(compiled), ").\nNVRTC log:\n", log.c_str(), "\nSource (", arch_flag,
                "):\n", numbered(source));
  }
  CompiledCode code{std::string(), cubin};
  size_t size = 0;
  if (cubin) {
    api.cubin_size(program, &size);
    code.binary.resize(size);
    api.cubin(program, code.binary.data());
  } else {
    api.ptx_size(program, &size);  // includes the terminating NUL, which loading PTX needs
    code.binary.resize(size);
    api.ptx(program, code.binary.data());
  }
  api.destroy_program(&program);
  return code;
}

}  // namespace gpuaug::jit
