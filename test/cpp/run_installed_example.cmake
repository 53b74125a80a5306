# ctest driver (cmake -P): installs a gpuaug build into a scratch prefix, configures and builds
# examples/cpp against it with find_package(gpuaug), and runs both example programs.
# Variables: GPUAUG_BUILD_DIR, EXAMPLE_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER,
# CUDA_COMPILER (may be empty), TORCH_PREFIX (torch.utils.cmake_prefix_path), TORCH_LIBRARY_DIR,
# GPUAUG_WITH_CUDA.
cmake_minimum_required(VERSION 3.18)

# Known bug (an expected failure, checked strictly): the installed libgpuaug.so has RUNPATH
# $ORIGIN only, so the loader cannot find the Torch/CUDA libraries it needs (libc10_cuda.so of a
# CUDA build) when the program itself does not list them, which Torch's own "-Wl,--as-needed"
# entries in TORCH_LIBRARIES make the usual case. While set, a run failing with "cannot open
# shared object file" is retried with LD_LIBRARY_PATH=<torch lib dir> and must then pass; a
# first run that passes fails the test, to have this switched off once
# cmake/GpuaugInstall.cmake is fixed. (A CPU-only build needs nothing the program lacks.)
set(EXPECT_RUNPATH_BUG ${GPUAUG_WITH_CUDA})

function(run_step name)
  message(STATUS "[${name}] ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${name}] failed (${rc})")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

run_step(install "${CMAKE_COMMAND}" --install "${GPUAUG_BUILD_DIR}" --prefix "${prefix}")

# An initial cache carries the CMAKE_PREFIX_PATH list (a ';' would split a command argument).
set(cache "set(CMAKE_PREFIX_PATH \"${prefix};${TORCH_PREFIX}\" CACHE STRING \"\")\n")
string(APPEND cache "set(CMAKE_CXX_COMPILER \"${CXX_COMPILER}\" CACHE FILEPATH \"\")\n")
string(APPEND cache "set(CMAKE_BUILD_TYPE Release CACHE STRING \"\")\n")
if(CUDA_COMPILER)
  # Torch's own CMake config looks for the CUDA toolkit when PyTorch has CUDA.
  string(APPEND cache "set(CMAKE_CUDA_COMPILER \"${CUDA_COMPILER}\" CACHE FILEPATH \"\")\n")
endif()
file(WRITE "${WORK_DIR}/initial_cache.cmake" "${cache}")
run_step(configure "${CMAKE_COMMAND}" -C "${WORK_DIR}/initial_cache.cmake" -S "${EXAMPLE_SOURCE_DIR}"
         -B "${build}" -G "${GENERATOR}")

# The example must have found this installation, not another gpuaug.
file(STRINGS "${build}/CMakeCache.txt" found REGEX "^gpuaug_DIR:")
string(FIND "${found}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "the example found '${found}', not the package installed in ${prefix}")
endif()

run_step(build "${CMAKE_COMMAND}" --build "${build}")
function(run_program name)
  set(program "${build}/${name}")
  message(STATUS "[${name}] ${program}")
  execute_process(COMMAND "${program}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(rc EQUAL 0)
    if(EXPECT_RUNPATH_BUG)
      message(FATAL_ERROR "[${name}] passed without LD_LIBRARY_PATH: the RUNPATH bug is fixed, "
                          "set EXPECT_RUNPATH_BUG OFF in ${CMAKE_CURRENT_LIST_FILE}")
    endif()
    return()
  endif()
  if(NOT (EXPECT_RUNPATH_BUG AND err MATCHES "error while loading shared libraries: .*cannot open shared object file"))
    message(FATAL_ERROR "[${name}] failed (${rc})")
  endif()
  message(WARNING "[${name}] expected failure (known bug, installed libgpuaug.so cannot find its "
                  "Torch libraries): retrying with LD_LIBRARY_PATH=${TORCH_LIBRARY_DIR}")
  set(path "${TORCH_LIBRARY_DIR}")
  if(DEFINED ENV{LD_LIBRARY_PATH})
    string(APPEND path ":$ENV{LD_LIBRARY_PATH}")
  endif()
  run_step(${name} "${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${path}" "${program}")
endfunction()

run_program(gpuaug_example)
run_program(gpuaug_by_name)
