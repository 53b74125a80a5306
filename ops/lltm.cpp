// gpuaug::lltm: schema, C++ API, Meta kernels and the bodies its CPU and CUDA loops share. The
// matrix products go to ATen (cuBLAS on CUDA); each pointwise stage is one loop of kernels/.
#include "ops/lltm.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "gpuaug/ops.h"
#include "kernels/lltm.h"
#include "ops/checks.h"

namespace gpuaug {

Loops<LltmForwardLoop> lltm_forward_loops;
Loops<LltmBackwardLoop> lltm_backward_loops;

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def("lltm(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell) "
        "-> (Tensor, Tensor)");
  m.def("_lltm_forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("_lltm_backward(Tensor grad_h, Tensor grad_cell, Tensor linear, Tensor input, "
        "Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
}

using Pair = std::tuple<at::Tensor, at::Tensor>;
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Grads = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using In = const at::Tensor&;

Pair lltm(In input, In weights, In bias, In old_h, In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::lltm", "")
                             .typed<Pair(In, In, In, In, In)>();
  return op.call(input, weights, bias, old_h, old_cell);
}

Triple lltm_forward(In input, In weights, In bias, In old_h, In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_lltm_forward", "")
                             .typed<Triple(In, In, In, In, In)>();
  return op.call(input, weights, bias, old_h, old_cell);
}

Grads lltm_backward(In grad_h, In grad_cell, In linear, In input, In weights, In bias, In old_h,
                    In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_lltm_backward", "")
                             .typed<Grads(In, In, In, In, In, In, In, In)>();
  return op.call(grad_h, grad_cell, linear, input, weights, bias, old_h, old_cell);
}

namespace {

struct LltmSizes {
  c10::SymInt batch, input_features, state;
};

void check_rank(const char* op, const char* arg, const at::Tensor& t, int64_t rank,
                const char* layout) {
  TORCH_CHECK(t.dim() == rank, op, ": expected '", arg, "' of shape ", layout, ", but got shape ",
              shape_str(t.sym_sizes()));
}

void check_shape(const char* op, const char* arg, const at::Tensor& t,
                 std::initializer_list<c10::SymInt> expected, const char* layout,
                 const LltmSizes& sizes) {
  TORCH_CHECK(t.sym_sizes() == c10::SymIntArrayRef(expected.begin(), expected.size()), op,
              ": expected '", arg, "' of shape ", layout, " = ",
              shape_str(c10::SymIntArrayRef(expected.begin(), expected.size())), " (B = ",
              size_str(sizes.batch), " from 'input', I = ", size_str(sizes.input_features),
              " from 'input', S = ", size_str(sizes.state), " from 'old_h'), but got ",
              shape_str(t.sym_sizes()));
}

// Every check of the forward's arguments; the sizes they agree on.
LltmSizes check_lltm_args(const char* op, In input, In weights, In bias, In old_h, In old_cell) {
  check_floating(op, "input", input);
  const std::pair<const char*, const at::Tensor*> others[] = {
      {"weights", &weights}, {"bias", &bias}, {"old_h", &old_h}, {"old_cell", &old_cell}};
  for (const auto& [name, tensor] : others) {
    check_defined(op, name, *tensor);
    check_same_dtype_and_device(op, "input", input, name, *tensor);
  }
  check_rank(op, "input", input, 2, "[B, I]");
  check_rank(op, "old_h", old_h, 2, "[B, S]");
  const LltmSizes sizes{input.sym_size(0), input.sym_size(1), old_h.sym_size(1)};
  const auto& [b, i, s] = sizes;
  check_shape(op, "old_h", old_h, {b, s}, "[B, S]", sizes);
  check_shape(op, "old_cell", old_cell, {b, s}, "[B, S]", sizes);
  check_shape(op, "weights", weights, {3 * s, s + i}, "[3 * S, S + I]", sizes);
  check_shape(op, "bias", bias, {3 * s}, "[3 * S]", sizes);
  return sizes;
}

at::Tensor empty_matrix(const c10::SymInt& rows, const c10::SymInt& cols, In like) {
  return at::empty_symint({rows, cols}, like.options());
}

}  // namespace

Triple lltm_forward_meta(In input, In weights, In bias, In old_h, In old_cell) {
  const auto [b, i, s] = check_lltm_args("gpuaug::lltm", input, weights, bias, old_h, old_cell);
  return {empty_matrix(b, s, input), empty_matrix(b, s, input), empty_matrix(b, 3 * s, input)};
}

Pair lltm_meta(In input, In weights, In bias, In old_h, In old_cell) {
  const auto [b, i, s] = check_lltm_args("gpuaug::lltm", input, weights, bias, old_h, old_cell);
  return {empty_matrix(b, s, input), empty_matrix(b, s, input)};
}

Grads lltm_backward_meta(In grad_h, In grad_cell, In linear, In input, In weights, In bias, In old_h,
                         In old_cell) {
  constexpr const char* kOp = "gpuaug::_lltm_backward";
  const auto sizes = check_lltm_args(kOp, input, weights, bias, old_h, old_cell);
  const auto& [b, i, s] = sizes;
  const std::pair<const char*, const at::Tensor*> grads[] = {
      {"grad_h", &grad_h}, {"grad_cell", &grad_cell}, {"linear", &linear}};
  for (const auto& [name, tensor] : grads) {
    check_defined(kOp, name, *tensor);
    check_same_dtype_and_device(kOp, "input", input, name, *tensor);
  }
  check_shape(kOp, "grad_h", grad_h, {b, s}, "[B, S]", sizes);
  check_shape(kOp, "grad_cell", grad_cell, {b, s}, "[B, S]", sizes);
  check_shape(kOp, "linear", linear, {b, 3 * s}, "[B, 3 * S]", sizes);
  return {empty_matrix(b, i, input), empty_matrix(3 * s, s + i, input),
          at::empty_symint({3 * s}, input.options()), empty_matrix(b, s, input),
          empty_matrix(b, s, input)};
}

namespace {

Triple lltm_forward_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, linear] = lltm_forward_meta(input, weights, bias, old_h, old_cell);
  at::mm_out(linear, at::cat({old_h, input}, 1), weights.t());
  lltm_forward_loops.on("gpuaug::lltm", input.device().type())(
      linear, bias.contiguous(), old_cell.contiguous(), new_h, new_cell);
  return {new_h, new_cell, linear};
}

Pair lltm_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, linear] = lltm_forward_kernel(input, weights, bias, old_h, old_cell);
  return {new_h, new_cell};
}

Grads lltm_backward_kernel(In grad_h, In grad_cell, In linear, In input, In weights, In bias, In old_h,
                           In old_cell) {
  auto [grad_input, grad_weights, grad_bias, grad_old_h, grad_old_cell] =
      lltm_backward_meta(grad_h, grad_cell, linear, input, weights, bias, old_h, old_cell);
  const int64_t state = old_h.size(1);
  const at::Tensor grad_gates = at::empty({input.size(0), 3 * state}, input.options());
  lltm_backward_loops.on("gpuaug::_lltm_backward", input.device().type())(
      grad_h.contiguous(), grad_cell.contiguous(), linear.contiguous(), bias.contiguous(),
      old_cell.contiguous(), grad_gates, grad_old_cell);
  // X = cat([old_h, input], 1) is recomputed (one small copy) rather than kept from the forward.
  at::mm_out(grad_weights, grad_gates.t(), at::cat({old_h, input}, 1));
  at::sum_out(grad_bias, grad_gates, 0);
  // d X = grad_gates @ weights, written as its two blocks (outputs may not share storage).
  at::mm_out(grad_old_h, grad_gates, weights.narrow(1, 0, state));
  at::mm_out(grad_input, grad_gates, weights.narrow(1, state, input.size(1)));
  return {grad_input, grad_weights, grad_bias, grad_old_h, grad_old_cell};
}

void register_kernels(torch::Library& m) {
  m.impl("lltm", &lltm_kernel);
  m.impl("_lltm_forward", &lltm_forward_kernel);
  m.impl("_lltm_backward", &lltm_backward_kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("lltm", &lltm_meta);
  m.impl("_lltm_forward", &lltm_forward_meta);
  m.impl("_lltm_backward", &lltm_backward_meta);
}

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) { register_kernels(m); }
#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) { register_kernels(m); }
#endif

}  // namespace gpuaug
