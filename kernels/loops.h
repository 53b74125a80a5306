// One body per operator for every backend (ATen's dispatch-stub idea): the op's file in ops/
// checks the arguments, allocates the output and builds the iterator, and registers that body for
// CPU and (in a build with CUDA, GPUAUG_WITH_CUDA) for CUDA; the op's CPU and CUDA files only
// register the loop that fills it.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

namespace gpuaug {

template <typename Loop>
struct Loops {
  Loop cpu = nullptr;
  Loop cuda = nullptr;

  // The loop for tensors on `device`, or an error naming the op.
  Loop on(const char* op, c10::DeviceType device) const {
    const Loop loop = device == c10::DeviceType::CPU    ? cpu
                      : device == c10::DeviceType::CUDA ? cuda
                                                        : nullptr;
    TORCH_CHECK(loop != nullptr, op, ": this build of gpuaug has no kernel for ", device,
                " tensors");
    return loop;
  }
};

}  // namespace gpuaug

// Sets LOOPS.BACKEND (cpu or cuda) to FN when the library is loaded. LOOPS is constant-initialised
// (null), so it is ready before any registration runs.
#define GPUAUG_REGISTER_LOOP(LOOPS, BACKEND, FN) \
  static const bool C10_ANONYMOUS_VARIABLE(gpuaug_loop_) = ((LOOPS).BACKEND = (FN), true)
