# Finds Torch (the running Python's, unless Torch_DIR says where), decides GPUAUG_WITH_CUDA,
# enables CUDA with the architectures of cmake/cuda_architectures.py and the C++ standard.

find_package(Python3 COMPONENTS Interpreter)
set(GPUAUG_TORCH_VERSION "")
set(GPUAUG_TORCH_CUDA "")
if(Python3_Interpreter_FOUND)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import torch; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
    OUTPUT_VARIABLE _torch_info OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _torch_rc)
  if(_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _torch_info "${_torch_info}")
    list(GET _torch_info 0 _torch_prefix)
    list(GET _torch_info 1 GPUAUG_TORCH_VERSION)
    list(LENGTH _torch_info _n)
    if(_n GREATER 2)
      list(GET _torch_info 2 GPUAUG_TORCH_CUDA)
    endif()
    # The torch that will load the library is the one to compile against, whatever else the
    # prefix path holds.
    if(NOT Torch_DIR)
      list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    endif()
  endif()
endif()
if(SKBUILD AND NOT GPUAUG_TORCH_VERSION)
  # pip's default isolated build environment hides the installed torch.
  message(FATAL_ERROR
    "gpuaug compiles against the PyTorch it will run with, and ${Python3_EXECUTABLE} cannot "
    "import torch. Install torch first, then build without build isolation:\n"
    "  pip install torch scikit-build-core cmake ninja\n"
    "  pip install --no-build-isolation .")
endif()

set(CMAKE_CXX_STANDARD 20)   # PyTorch 2.15's headers need C++20; 2.11's build with it too
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)   # -std=c++20 for C++ and CUDA sources alike

# CUDA is wanted when PyTorch was built with it and nvcc can be found, unless GPUAUG_CUDA=OFF.
include(CheckLanguage)
set(GPUAUG_WITH_CUDA OFF)
if(NOT GPUAUG_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND (GPUAUG_TORCH_CUDA OR NOT GPUAUG_TORCH_VERSION OR GPUAUG_CUDA STREQUAL "ON"))
    set(GPUAUG_WITH_CUDA ON)
  elseif(GPUAUG_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GPUAUG_CUDA=ON but nvcc was not found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()

# For the CPU loops' threads (below), found before CUDA is enabled: FindOpenMP's test projects
# would then need CUDA architectures, which this file leaves to the target.
find_package(OpenMP COMPONENTS CXX)

if(GPUAUG_WITH_CUDA)
  # GPUAUG_CUDA_ARCHITECTURES (CMake syntax, e.g. "80-real;90") overrides; else PyTorch's
  # convention (TORCH_CUDA_ARCH_LIST, the visible GPUs, torch's own list), worked out anew at
  # each configure so that a new GPU or torch is picked up.
  set(GPUAUG_CUDA_ARCHITECTURES "" CACHE STRING
      "CUDA architectures, CMake syntax (empty: PyTorch's convention, see cmake/cuda_architectures.py)")
  set(_archs "${GPUAUG_CUDA_ARCHITECTURES}")
  if(NOT _archs)
    if(NOT Python3_Interpreter_FOUND)
      message(FATAL_ERROR "gpuaug: no Python to choose the CUDA architectures; set GPUAUG_CUDA_ARCHITECTURES")
    endif()
    execute_process(
      COMMAND ${Python3_EXECUTABLE} "${CMAKE_CURRENT_LIST_DIR}/cuda_architectures.py"
              "${TORCH_CUDA_ARCH_LIST}" "${CMAKE_CUDA_COMPILER}"
      OUTPUT_VARIABLE _archs OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _archs_rc)
    if(NOT _archs_rc EQUAL 0)
      message(FATAL_ERROR "gpuaug: could not choose the CUDA architectures (see above)")
    endif()
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_archs}")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  enable_language(CUDA)
  # Torch's config turns TORCH_CUDA_ARCH_LIST into -gencode flags in CMAKE_CUDA_FLAGS and turns
  # CMake's CUDA_ARCHITECTURES off. The target's CUDA_ARCHITECTURES decide here: keep our flags.
  set(GPUAUG_CUDA_ARCHITECTURES_USED "${_archs}")
  set(_cuda_flags "${CMAKE_CUDA_FLAGS}")
  unset(CMAKE_CUDA_ARCHITECTURES)
endif()
# A CUDA torch's config (CPU-only builds too) probes for a GPU by compiling and running a CUDA
# program when TORCH_CUDA_ARCH_LIST is unset, which fails in a folder that had CUDA enabled
# before: give it any valid list, unused by us.
if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0")
endif()

find_package(Torch REQUIRED)
if(GPUAUG_WITH_CUDA)
  set(CMAKE_CUDA_FLAGS "${_cuda_flags}")
  if(NOT CAFFE2_USE_CUDA)
    message(FATAL_ERROR "gpuaug: the PyTorch found has no CUDA; configure with -DGPUAUG_CUDA=OFF")
  endif()
endif()
if(NOT GPUAUG_TORCH_VERSION)
  set(GPUAUG_TORCH_VERSION "${Torch_VERSION}")
endif()
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _torch_release "${GPUAUG_TORCH_VERSION}")
if(_torch_release VERSION_LESS 2.11)
  message(FATAL_ERROR "gpuaug needs PyTorch 2.11 or newer, but found ${GPUAUG_TORCH_VERSION}")
elseif(_torch_release VERSION_GREATER 2.15)
  message(WARNING "gpuaug is tested with PyTorch 2.11 to 2.15; ${GPUAUG_TORCH_VERSION} is newer")
endif()
message(STATUS "gpuaug: PyTorch ${GPUAUG_TORCH_VERSION}, CUDA kernels ${GPUAUG_WITH_CUDA} (${GPUAUG_CUDA_ARCHITECTURES_USED})")

# The CPU loops' threads: at::parallel_for is a header template, and with torch's OpenMP backend
# (ATen/Config.h) it runs its body on several threads only where the code calling it is compiled
# with OpenMP; without, on one, whatever torch.set_num_threads says. torch's wheels ship
# libgomp.so.1, the soname we link, so the process keeps one OpenMP runtime and thread count.
set(GPUAUG_CPU_THREADS OFF)
set(GPUAUG_OPENMP OFF)
find_file(GPUAUG_ATEN_CONFIG ATen/Config.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH NO_CACHE)
if(GPUAUG_ATEN_CONFIG)
  file(STRINGS "${GPUAUG_ATEN_CONFIG}" _aten_openmp REGEX "^#define AT_PARALLEL_OPENMP 1")
  file(STRINGS "${GPUAUG_ATEN_CONFIG}" _aten_native REGEX "^#define AT_PARALLEL_NATIVE 1")
endif()
if(_aten_openmp)
  if(OpenMP_CXX_FOUND)
    set(GPUAUG_OPENMP ON)
    set(GPUAUG_CPU_THREADS ON)
  else()
    message(WARNING "gpuaug: the compiler has no OpenMP, so the CPU kernels will run on one thread")
  endif()
elseif(_aten_native)
  set(GPUAUG_CPU_THREADS ON)   # torch's own thread pool, no compiler support needed
endif()
message(STATUS "gpuaug: CPU kernels on torch's intra-op threads: ${GPUAUG_CPU_THREADS}")
