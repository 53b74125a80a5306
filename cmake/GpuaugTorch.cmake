# Finds Torch (through the Python interpreter's torch unless Torch_DIR or CMAKE_PREFIX_PATH says
# where), decides GPUAUG_WITH_CUDA and sets GPUAUG_CUDA_ARCHITECTURES.

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import torch; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
    OUTPUT_VARIABLE _gpuaug_torch_info OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _gpuaug_torch_rc)
  if(_gpuaug_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _gpuaug_torch_info "${_gpuaug_torch_info}")
    list(GET _gpuaug_torch_info 0 _gpuaug_torch_prefix)
    list(GET _gpuaug_torch_info 1 GPUAUG_TORCH_VERSION)
    list(LENGTH _gpuaug_torch_info _n)
    if(_n GREATER 2)
      list(GET _gpuaug_torch_info 2 GPUAUG_TORCH_CUDA)
    endif()
    if(NOT Torch_DIR AND NOT CMAKE_PREFIX_PATH)
      list(APPEND CMAKE_PREFIX_PATH "${_gpuaug_torch_prefix}")
    endif()
  endif()
endif()

# CUDA is wanted when PyTorch was built with it and nvcc can be found, unless GPUAUG_CUDA=OFF.
include(CheckLanguage)
set(GPUAUG_WITH_CUDA OFF)
if(NOT GPUAUG_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND (GPUAUG_TORCH_CUDA OR NOT Python3_Interpreter_FOUND OR GPUAUG_CUDA STREQUAL "ON"))
    set(GPUAUG_WITH_CUDA ON)
  elseif(GPUAUG_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GPUAUG_CUDA=ON but nvcc was not found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()

# Architectures: GPUAUG_CUDA_ARCHITECTURES (CMake syntax, e.g. "90;100-virtual"), else
# TORCH_CUDA_ARCH_LIST ("9.0;10.0+PTX"), else Hopper machine code plus PTX for newer GPUs.
if(NOT GPUAUG_CUDA_ARCHITECTURES)
  set(_arch_list "$ENV{TORCH_CUDA_ARCH_LIST}")
  if(TORCH_CUDA_ARCH_LIST)
    set(_arch_list "${TORCH_CUDA_ARCH_LIST}")
  endif()
  if(_arch_list)
    string(REPLACE " " ";" _arch_list "${_arch_list}")
    foreach(_arch IN LISTS _arch_list)
      string(REGEX MATCH "^([0-9]+)\\.([0-9]+[af]?)(\\+PTX)?$" _ok "${_arch}")
      if(NOT _ok)
        message(FATAL_ERROR "TORCH_CUDA_ARCH_LIST entry '${_arch}' is not like 9.0 or 9.0+PTX")
      endif()
      if(CMAKE_MATCH_3)
        list(APPEND GPUAUG_CUDA_ARCHITECTURES "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      else()
        list(APPEND GPUAUG_CUDA_ARCHITECTURES "${CMAKE_MATCH_1}${CMAKE_MATCH_2}-real")
      endif()
    endforeach()
  else()
    set(GPUAUG_CUDA_ARCHITECTURES 90)   # sm_90 machine code + compute_90 PTX
  endif()
endif()
set(GPUAUG_CUDA_ARCHITECTURES "${GPUAUG_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures for the kernels")

if(GPUAUG_WITH_CUDA)
  # Torch enables CUDA itself, adds its own -gencode list (probing for a GPU) and ignores
  # CMAKE_CUDA_ARCHITECTURES; give it a harmless list, then put ours back on our target.
  set(TORCH_CUDA_ARCH_LIST "9.0")
  cmake_policy(SET CMP0104 OLD)  # no default CMAKE_CUDA_ARCHITECTURES for Torch to warn about
endif()
find_package(Torch REQUIRED)
if(GPUAUG_WITH_CUDA)
  string(REGEX REPLACE "-gencode;?[^ ;]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
  string(REGEX REPLACE "-gencode +[^ ]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
  if(NOT CAFFE2_USE_CUDA)
    message(FATAL_ERROR "gpuaug: the PyTorch found has no CUDA; configure with -DGPUAUG_CUDA=OFF")
  endif()
endif()
if(NOT GPUAUG_TORCH_VERSION)
  set(GPUAUG_TORCH_VERSION "${Torch_VERSION}")
endif()
message(STATUS "gpuaug: PyTorch ${GPUAUG_TORCH_VERSION}, CUDA kernels ${GPUAUG_WITH_CUDA} (${GPUAUG_CUDA_ARCHITECTURES})")
