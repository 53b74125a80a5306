// gpuaug::relu's CUDA loops, compiled at run time by NVRTC for the GPU in use: the arithmetic of
// kernels/relu.h's ReluOp and ReluBackwardOp as source text. ops/relu.cpp checks, allocates and
// calls them.
#include "kernels/cuda/jit/elementwise.h"
#include "kernels/relu.h"

namespace gpuaug::jit {
namespace {

ElementwiseKernels& relu_kernels() {
  // x < 0 is false for NaN, so NaN passes through.
  static ElementwiseKernels kernels("gpuaug::relu", {"relu", {"x < 0 ? opmath_t(0) : x"}, {"x"}});
  return kernels;
}

ElementwiseKernels& relu_backward_kernels() {
  static ElementwiseKernels kernels("gpuaug::_relu_backward",
                                    {"relu_backward", {"x > 0 ? grad : opmath_t(0)"}, {"grad", "x"}});
  return kernels;
}

}  // namespace

GPUAUG_REGISTER_LOOP(relu_loops, cuda, [](at::TensorIteratorBase& iter) { relu_kernels().run(iter); });
GPUAUG_REGISTER_LOOP(relu_backward_loops, cuda,
                     [](at::TensorIteratorBase& iter) { relu_backward_kernels().run(iter); });

}  // namespace gpuaug::jit
