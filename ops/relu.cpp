// gpuaug::relu: schema, C++ API and Meta kernel.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/backward.h"
#include "ops/checks.h"
#include "ops/meta.h"

namespace gpuaug {

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_backward(Tensor grad, Tensor x) -> Tensor");
}

at::Tensor relu(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::relu", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

at::Tensor relu_backward(const at::Tensor& grad, const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::relu_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, x);
}

at::Tensor relu_meta(const at::Tensor& x) {
  check_floating("gpuaug::relu", "x", x);
  return empty_dense_like(x);
}

at::Tensor relu_backward_meta(const at::Tensor& grad, const at::Tensor& x) {
  check_floating("gpuaug::relu_backward", "x", x);
  check_same_dtype_and_device("gpuaug::relu_backward", "x", x, "grad", grad);
  check_same_shape("gpuaug::relu_backward", "x", x, "grad", grad);
  return empty_dense_like(x);
}

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("relu", &relu_meta);
  m.impl("relu_backward", &relu_backward_meta);
}

}  // namespace gpuaug
