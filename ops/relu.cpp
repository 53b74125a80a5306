// gpuaug::relu: schema, C++ API, Meta kernels and the body its CPU and CUDA loops share.
#include "ops/relu.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "kernels/relu.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<ElementwiseLoop> relu_loops;
Loops<ElementwiseLoop> relu_backward_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("_relu_backward(Tensor grad, Tensor x) -> Tensor");
}

at::Tensor relu(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::relu", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_relu_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, x);
}

at::Tensor relu_meta(const at::Tensor& x) {
  check_floating("gpuaug::relu", "x", x);
  return empty_dense_like(x);
}

at::Tensor relu_backward_meta(const at::Tensor& grad, const at::Tensor& x) {
  check_floating("gpuaug::_relu_backward", "x", x);
  check_same_dtype_and_device("gpuaug::_relu_backward", "x", x, "grad", grad);
  check_same_shape("gpuaug::_relu_backward", "x", x, "grad", grad);
  return empty_dense_like(x);
}

namespace {

at::Tensor relu_kernel(const at::Tensor& x) {
  return fill_elementwise("gpuaug::relu", relu_loops, relu_meta(x), x);
}

at::Tensor relu_backward_kernel(const at::Tensor& grad, const at::Tensor& x) {
  return fill_elementwise("gpuaug::_relu_backward", relu_backward_loops,
                          relu_backward_meta(grad, x), grad, x);
}

void register_kernels(torch::Library& m) {
  m.impl("relu", &relu_kernel);
  m.impl("_relu_backward", &relu_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("relu", &relu_meta);
  m.impl("_relu_backward", &relu_backward_meta);
}

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif

}  // namespace gpuaug
