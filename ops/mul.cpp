// gpuaug::mul: schema, C++ API, Meta kernels and the bodies its CPU and CUDA loops share.
#include "ops/mul.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "kernels/cpu/sum_to.h"
#include "kernels/mul.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<ElementwiseLoop> mul_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("mul(Tensor a, Tensor b) -> Tensor");
  m.def("_mul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");
}

at::Tensor mul(const at::Tensor& a, const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::mul", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(a, b);
}

std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_mul_backward", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&)>();
  return op.call(grad, a, b);
}

namespace {

// PyTorch's broadcasting rule, with an error that names the op.
c10::SymDimVector broadcast_shape(const char* op, const at::Tensor& a, const at::Tensor& b) {
  const auto sa = a.sym_sizes();
  const auto sb = b.sym_sizes();
  const size_t ndim = std::max(sa.size(), sb.size());
  c10::SymDimVector shape(ndim, 1);
  for (size_t i = 0; i < ndim; ++i) {
    const c10::SymInt da = i < sa.size() ? sa[sa.size() - 1 - i] : c10::SymInt(1);
    const c10::SymInt db = i < sb.size() ? sb[sb.size() - 1 - i] : c10::SymInt(1);
    TORCH_CHECK(da == db || da == 1 || db == 1, op, ": shapes of 'a' ", shape_str(sa), " and 'b' ",
                shape_str(sb), " do not broadcast (dimension ", std::to_string(int64_t(ndim) - 1 - int64_t(i)), ": ",
                size_str(da), " vs ", size_str(db), ")");
    shape[ndim - 1 - i] = da == 1 ? db : da;
  }
  return shape;
}

void check_mul_args(const char* op, const at::Tensor& a, const at::Tensor& b) {
  check_floating(op, "a", a);
  check_same_dtype_and_device(op, "a", a, "b", b);
}

}  // namespace

at::Tensor mul_meta(const at::Tensor& a, const at::Tensor& b) {
  check_mul_args("gpuaug::mul", a, b);
  const auto shape = broadcast_shape("gpuaug::mul", a, b);
  // Operands of one shape and one dense layout keep it (channels_last stays channels_last).
  if (a.sym_sizes() == b.sym_sizes() && a.sym_strides() == b.sym_strides()) {
    return empty_dense_like(a);
  }
  return at::empty_symint(shape, a.options());
}

std::tuple<at::Tensor, at::Tensor> mul_backward_meta(const at::Tensor& grad, const at::Tensor& a,
                                                     const at::Tensor& b) {
  check_mul_args("gpuaug::_mul_backward", a, b);
  check_same_dtype_and_device("gpuaug::_mul_backward", "a", a, "grad", grad);
  const auto shape = broadcast_shape("gpuaug::_mul_backward", a, b);
  TORCH_CHECK(grad.sym_sizes() == c10::SymIntArrayRef(shape),
              "gpuaug::_mul_backward: expected 'grad' of the broadcast shape ", shape_str(shape),
              ", but got ", shape_str(grad.sym_sizes()));
  return {empty_dense_like(a), empty_dense_like(b)};
}

namespace {

at::Tensor mul_kernel(const at::Tensor& a, const at::Tensor& b) {
  return fill_elementwise("gpuaug::mul", mul_loops, mul_meta(a, b), a, b);
}

// out = grad * other, summed over the dimensions along which out's input was broadcast.
void product_summed_to(const at::Tensor& out, const at::Tensor& grad, const at::Tensor& other,
                       ElementwiseLoop multiply) {
  if (out.sizes() == grad.sizes()) {
    auto iter = make_iterator(out, grad, other);
    multiply(iter);
    return;
  }
  at::Tensor full = at::empty(grad.sizes(), grad.options());
  auto iter = make_iterator(full, grad, other);
  multiply(iter);
  out.copy_(full.is_cpu() ? cpu::deterministic_sum_to(full, out.sizes())
                          : at::sum_to(full, out.sizes()));
}

std::tuple<at::Tensor, at::Tensor> mul_backward_kernel(const at::Tensor& grad, const at::Tensor& a,
                                                       const at::Tensor& b) {
  auto [grad_a, grad_b] = mul_backward_meta(grad, a, b);
  const ElementwiseLoop multiply = mul_loops.on("gpuaug::_mul_backward", a.device().type());
  product_summed_to(grad_a, grad, b, multiply);
  product_summed_to(grad_b, grad, a, multiply);
  return {grad_a, grad_b};
}

void register_kernels(torch::Library& m) {
  m.impl("mul", &mul_kernel);
  m.impl("_mul_backward", &mul_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("mul", &mul_meta);
  m.impl("_mul_backward", &mul_backward_meta);
}

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif

}  // namespace gpuaug
