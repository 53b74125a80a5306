# ctest driver (cmake -P): installs a gpuaug build into a scratch prefix, configures and builds
# examples/cpp against it with find_package(gpuaug), and runs the example programs.
# Variables: GPUAUG_BUILD_DIR, EXAMPLE_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER,
# CUDA_COMPILER (may be empty), TORCH_PREFIX (torch.utils.cmake_prefix_path).
cmake_minimum_required(VERSION 3.18)

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
# The programs must run as built: libgpuaug.so's run path finds PyTorch's libraries.
function(run_program name)
  run_step(${name} "${build}/${name}")
endfunction()

run_program(gpuaug_example)
run_program(gpuaug_by_name)
run_program(gpuaug_train_lltm)   # fails unless the loss falls
# gpuaug_run_scripted and gpuaug_run_aoti need a model saved from Python:
# test/python/test_cpp_examples.py runs them.
