// gpuaug::round_ste: schema, C++ API, Meta kernel and the body its CPU and CUDA loops share.
// Its backward, the straight-through estimator, is the identity: a composite op returning an
// alias of the gradient, so it costs no kernel and no copy and every backend and tracer handles it.
#include "ops/round_ste.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/alias.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "kernels/round_ste.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<ElementwiseLoop> round_ste_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("round_ste(Tensor x) -> Tensor");
  m.def("_round_ste_backward(Tensor(a) grad) -> Tensor(a)");
}

at::Tensor round_ste(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::round_ste", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

at::Tensor round_ste_backward(const at::Tensor& grad) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_round_ste_backward", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(grad);
}

at::Tensor round_ste_meta(const at::Tensor& x) {
  check_floating("gpuaug::round_ste", "x", x);
  return empty_dense_like(x);
}

namespace {

at::Tensor round_ste_kernel(const at::Tensor& x) {
  return fill_elementwise("gpuaug::round_ste", round_ste_loops, round_ste_meta(x), x);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) { m.impl("round_ste", &round_ste_meta); }
TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { m.impl("round_ste", &round_ste_kernel); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { m.impl("round_ste", &round_ste_kernel); }
#endif

TORCH_LIBRARY_IMPL(gpuaug, CompositeImplicitAutograd, m) {
  m.impl("_round_ste_backward", [](const at::Tensor& grad) { return at::alias(grad); });
}

}  // namespace gpuaug
