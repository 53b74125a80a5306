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
  m.def("_lltm_backward(Tensor grad_h, Tensor grad_cell, Tensor gates, Tensor bias, "
        "Tensor old_cell) -> (Tensor, Tensor)");
}

using Pair = std::tuple<at::Tensor, at::Tensor>;
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
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

Pair lltm_backward(In grad_h, In grad_cell, In gates, In bias, In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_lltm_backward", "")
                             .typed<Pair(In, In, In, In, In)>();
  return op.call(grad_h, grad_cell, gates, bias, old_cell);
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

// sizes_from: the argument B and S were read from ("old_cell" for the backward, which has no I).
void check_shape(const char* op, const char* arg, const at::Tensor& t,
                 std::initializer_list<c10::SymInt> expected, const char* layout,
                 const LltmSizes& sizes, const char* sizes_from = nullptr) {
  const c10::SymIntArrayRef want(expected.begin(), expected.size());
  if (t.sym_sizes() == want) return;
  const std::string origin =
      sizes_from ? "(B = " + size_str(sizes.batch) + ", S = " + size_str(sizes.state) +
                       " from '" + sizes_from + "')"
                 : "(B = " + size_str(sizes.batch) + " from 'input', I = " +
                       size_str(sizes.input_features) + " from 'input', S = " +
                       size_str(sizes.state) + " from 'old_h')";
  TORCH_CHECK(false, op, ": expected '", arg, "' of shape ", layout, " = ", shape_str(want), " ",
              origin, ", but got ", shape_str(t.sym_sizes()));
}

// `first` floating; each of `others` defined, with first's dtype and device.
void check_floating_alike(const char* op, const char* first_name, In first,
                          std::initializer_list<std::pair<const char*, const at::Tensor*>> others) {
  check_floating(op, first_name, first);
  for (const auto& [name, tensor] : others) {
    check_defined(op, name, *tensor);
    check_same_dtype_and_device(op, first_name, first, name, *tensor);
  }
}

// Every check of the forward's arguments; the sizes they agree on.
LltmSizes check_lltm_args(const char* op, In input, In weights, In bias, In old_h, In old_cell) {
  check_floating_alike(op, "input", input,
                       {{"weights", &weights}, {"bias", &bias}, {"old_h", &old_h},
                        {"old_cell", &old_cell}});
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
  return {empty_matrix(b, s, input), empty_matrix(b, s, input), empty_matrix(3 * s, b, input)};
}

Pair lltm_meta(In input, In weights, In bias, In old_h, In old_cell) {
  const auto [b, i, s] = check_lltm_args("gpuaug::lltm", input, weights, bias, old_h, old_cell);
  return {empty_matrix(b, s, input), empty_matrix(b, s, input)};
}

Pair lltm_backward_meta(In grad_h, In grad_cell, In gates, In bias, In old_cell) {
  constexpr const char* kOp = "gpuaug::_lltm_backward";
  check_floating_alike(kOp, "old_cell", old_cell,
                       {{"grad_h", &grad_h}, {"grad_cell", &grad_cell}, {"gates", &gates},
                        {"bias", &bias}});
  check_rank(kOp, "old_cell", old_cell, 2, "[B, S]");
  const c10::SymInt b = old_cell.sym_size(0), s = old_cell.sym_size(1);
  const LltmSizes sizes{b, c10::SymInt(0), s};
  check_shape(kOp, "grad_h", grad_h, {b, s}, "[B, S]", sizes, "old_cell");
  check_shape(kOp, "grad_cell", grad_cell, {b, s}, "[B, S]", sizes, "old_cell");
  check_shape(kOp, "gates", gates, {3 * s, b}, "[3 * S, B]", sizes, "old_cell");
  check_shape(kOp, "bias", bias, {3 * s}, "[3 * S]", sizes, "old_cell");
  return {empty_matrix(3 * s, b, old_cell), empty_matrix(b, s, old_cell)};
}

namespace {

Triple lltm_forward_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, gates] = lltm_forward_meta(input, weights, bias, old_h, old_cell);
  // weights @ X^T rather than X @ weights^T: for few samples cuBLAS picks a kernel several times
  // faster in this orientation (H100, B = 16, S = 128: 9 us against 33 us), and the same one for
  // many (B = 256, S = 1024: 66 us both).
  at::mm_out(gates, weights, at::cat({old_h, input}, 1).t());
  lltm_forward_loops.on("gpuaug::lltm", input.device().type())(
      gates, bias.contiguous(), old_cell.contiguous(), new_h, new_cell);
  return {new_h, new_cell, gates};
}

Pair lltm_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, gates] = lltm_forward_kernel(input, weights, bias, old_h, old_cell);
  return {new_h, new_cell};
}

Pair lltm_backward_kernel(In grad_h, In grad_cell, In gates, In bias, In old_cell) {
  auto [grad_gates, grad_old_cell] = lltm_backward_meta(grad_h, grad_cell, gates, bias, old_cell);
  lltm_backward_loops.on("gpuaug::_lltm_backward", old_cell.device().type())(
      grad_h.contiguous(), grad_cell.contiguous(), gates.contiguous(), bias.contiguous(),
      old_cell.contiguous(), grad_gates, grad_old_cell);
  return {grad_gates, grad_old_cell};
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
