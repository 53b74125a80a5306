#include <torch/library.h>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/scalar_ops.h"
#include "ops/meta.h"

namespace gpuaug::cuda {
namespace {

at::Tensor relu(const at::Tensor& x) {
  at::Tensor out = relu_meta(x);
  auto iter = make_iterator(out, x);
  for_each_element<1>(iter, ReluOp{});
  return out;
}

at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x) {
  at::Tensor out = relu_backward_meta(grad, x);
  auto iter = make_iterator(out, grad, x);
  for_each_element<2>(iter, ReluBackwardOp{});
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) {
  m.impl("relu", &relu);
  m.impl("relu_backward", &relu_backward);
}

}  // namespace gpuaug::cuda
