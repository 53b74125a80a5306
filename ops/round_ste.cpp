// gpuaug::round_ste: schema, C++ API and Meta kernel. Its backward, the straight-through
// estimator, is the identity: a composite op returning an alias of the gradient, so it costs no
// kernel and no copy and every backend and tracer handles it.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/alias.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "ops/backward.h"
#include "ops/checks.h"
#include "ops/meta.h"

namespace gpuaug {

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("round_ste(Tensor x) -> Tensor");
  m.def("round_ste_backward(Tensor(a) grad) -> Tensor(a)");
}

at::Tensor round_ste(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::round_ste", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

at::Tensor round_ste_backward(const at::Tensor& grad) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::round_ste_backward", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(grad);
}

at::Tensor round_ste_meta(const at::Tensor& x) {
  check_floating("gpuaug::round_ste", "x", x);
  return empty_dense_like(x);
}

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) { m.impl("round_ste", &round_ste_meta); }

TORCH_LIBRARY_IMPL(gpuaug, CompositeImplicitAutograd, m) {
  m.impl("round_ste_backward", [](const at::Tensor& grad) { return at::alias(grad); });
}

}  // namespace gpuaug
