// gpuaug::lltm: schema, C++ API, Meta kernels and the bodies its CPU and CUDA loops share. The
// matrix products go to ATen (cuBLAS on CUDA); each pointwise stage is one loop of kernels/.
// At the sizes where the host's time is the op's, every launch counts: the forward is three (the
// concatenation, the product, the cell), the backward three for B <= 32 (the cell with the bias's
// sum, the two products), and nothing is made contiguous or zero-filled on the way.
#include "ops/lltm.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mm.h>
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
        "-> (Tensor, Tensor, Tensor, Tensor)");
  m.def("_lltm_backward(Tensor? grad_h, Tensor? grad_cell, Tensor gates, Tensor x, "
        "Tensor weights, Tensor bias, Tensor old_cell, bool[5] needs) -> Tensor[]");
}

using Pair = std::tuple<at::Tensor, at::Tensor>;
using Quad = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using In = const at::Tensor&;
using OptIn = const std::optional<at::Tensor>&;

Pair lltm(In input, In weights, In bias, In old_h, In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::lltm", "")
                             .typed<Pair(In, In, In, In, In)>();
  return op.call(input, weights, bias, old_h, old_cell);
}

Quad lltm_forward(In input, In weights, In bias, In old_h, In old_cell) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("gpuaug::_lltm_forward", "")
                             .typed<Quad(In, In, In, In, In)>();
  return op.call(input, weights, bias, old_h, old_cell);
}

std::vector<at::Tensor> lltm_backward(OptIn grad_h, OptIn grad_cell, In gates, In x, In weights,
                                      In bias, In old_cell, LltmNeeds needs) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_lltm_backward", "")
          .typed<std::vector<at::Tensor>(OptIn, OptIn, In, In, In, In, In, LltmNeeds)>();
  return op.call(grad_h, grad_cell, gates, x, weights, bias, old_cell, needs);
}

namespace {

struct LltmSizes {
  c10::SymInt batch, input_features, state;
};

bool present(OptIn t) { return t.has_value() && t->defined(); }

void check_rank(const char* op, const char* arg, const at::Tensor& t, int64_t rank,
                const char* layout) {
  TORCH_CHECK(t.dim() == rank, op, ": expected '", arg, "' of shape ", layout, ", but got shape ",
              shape_str(t.sym_sizes()));
}

// sizes_from: the argument B and S were read from ("old_cell" for the backward).
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

// The columns of cat([old_h, input], 1) whose gradient is needed: (first, count).
std::pair<c10::SymInt, c10::SymInt> needed_columns(const c10::SymInt& state,
                                                   const c10::SymInt& input_features,
                                                   LltmNeeds needs) {
  if (!needs[kLltmInput]) return {0, state};
  if (!needs[kLltmOldH]) return {state, input_features};
  return {0, state + input_features};
}

}  // namespace

Quad lltm_forward_meta(In input, In weights, In bias, In old_h, In old_cell) {
  const auto [b, i, s] = check_lltm_args("gpuaug::lltm", input, weights, bias, old_h, old_cell);
  return {empty_matrix(b, s, input), empty_matrix(b, s, input), empty_matrix(3 * s, b, input),
          empty_matrix(b, s + i, input)};
}

Pair lltm_meta(In input, In weights, In bias, In old_h, In old_cell) {
  const auto [b, i, s] = check_lltm_args("gpuaug::lltm", input, weights, bias, old_h, old_cell);
  return {empty_matrix(b, s, input), empty_matrix(b, s, input)};
}

std::vector<at::Tensor> lltm_backward_meta(OptIn grad_h, OptIn grad_cell, In gates, In x,
                                           In weights, In bias, In old_cell, LltmNeeds needs) {
  constexpr const char* kOp = "gpuaug::_lltm_backward";
  check_floating_alike(kOp, "old_cell", old_cell,
                       {{"gates", &gates}, {"x", &x}, {"weights", &weights}, {"bias", &bias}});
  for (const auto& [name, grad] :
       {std::pair{"grad_h", &grad_h}, std::pair{"grad_cell", &grad_cell}}) {
    if (present(*grad)) check_same_dtype_and_device(kOp, "old_cell", old_cell, name, **grad);
  }
  check_rank(kOp, "old_cell", old_cell, 2, "[B, S]");
  check_rank(kOp, "x", x, 2, "[B, S + I]");
  const c10::SymInt b = old_cell.sym_size(0), s = old_cell.sym_size(1), i = x.sym_size(1) - s;
  const LltmSizes sizes{b, i, s};
  if (present(grad_h)) check_shape(kOp, "grad_h", *grad_h, {b, s}, "[B, S]", sizes, "old_cell");
  if (present(grad_cell)) {
    check_shape(kOp, "grad_cell", *grad_cell, {b, s}, "[B, S]", sizes, "old_cell");
  }
  check_shape(kOp, "gates", gates, {3 * s, b}, "[3 * S, B]", sizes, "old_cell");
  check_shape(kOp, "bias", bias, {3 * s}, "[3 * S]", sizes, "old_cell");
  TORCH_SYM_CHECK(i.sym_ge(0), kOp, ": expected 'x' of shape [B, S + I] with S = ",
                  size_str(s), " from 'old_cell', but got ", shape_str(x.sym_sizes()));
  check_shape(kOp, "x", x, {b, s + i}, "[B, S + I]", sizes, "old_cell");
  check_shape(kOp, "weights", weights, {3 * s, s + i}, "[3 * S, S + I]", sizes, "old_cell");

  std::vector<at::Tensor> grads;
  if (needs[kLltmInput] || needs[kLltmOldH]) {
    // [B, n] with strides (1, B): the product's [n, B] result, transposed (see the body).
    const c10::SymInt n = needed_columns(s, i, needs).second;
    grads.push_back(at::empty_strided_symint({b, n}, {1, b}, x.options()));
  }
  if (needs[kLltmWeights]) grads.push_back(empty_matrix(3 * s, s + i, x));
  if (needs[kLltmBias]) grads.push_back(at::empty_symint({3 * s}, x.options()));
  if (needs[kLltmOldCell]) grads.push_back(empty_matrix(b, s, x));
  return grads;
}

namespace {

// The transpose of t's columns [first, first + count) as one dispatched op (t() and narrow() are
// three each, and a small step's host time is the op's).
at::Tensor transposed_columns(In t, int64_t first, int64_t count) {
  return t.as_strided({count, t.size(0)}, {t.stride(1), t.stride(0)},
                      t.storage_offset() + first * t.stride(1));
}

Quad lltm_forward_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, gates, x] = lltm_forward_meta(input, weights, bias, old_h, old_cell);
  at::cat_out(x, {old_h, input}, 1);
  // weights @ X^T rather than X @ weights^T: for few samples cuBLAS picks a kernel several times
  // faster in this orientation, and the same one for many.
  at::mm_out(gates, weights, transposed_columns(x, 0, x.size(1)));
  lltm_forward_loops.on("gpuaug::lltm", input.device().type())(gates, *bias.expect_contiguous(),
                                                                old_cell, new_h, new_cell);
  return {new_h, new_cell, gates, x};
}

Pair lltm_kernel(In input, In weights, In bias, In old_h, In old_cell) {
  auto [new_h, new_cell, gates, x] = lltm_forward_kernel(input, weights, bias, old_h, old_cell);
  return {new_h, new_cell};
}

// The whole backward in one op, so that one dispatch (and what tracing sees) covers it: the
// pointwise loop, then only the products whose results are needed.
std::vector<at::Tensor> lltm_backward_kernel(OptIn grad_h, OptIn grad_cell, In gates, In x,
                                             In weights, In bias, In old_cell, LltmNeeds needs) {
  auto grads = lltm_backward_meta(grad_h, grad_cell, gates, x, weights, bias, old_cell, needs);
  const int64_t state = old_cell.size(1);
  const at::Tensor grad_gates = at::empty({3 * state, old_cell.size(0)}, gates.options());
  size_t next = 0;
  at::Tensor grad_x, grad_weights, grad_bias, grad_old_cell;
  if (needs[kLltmInput] || needs[kLltmOldH]) grad_x = grads[next++];
  if (needs[kLltmWeights]) grad_weights = grads[next++];
  if (needs[kLltmBias]) grad_bias = grads[next++];
  if (needs[kLltmOldCell]) grad_old_cell = grads[next++];
  lltm_backward_loops.on("gpuaug::_lltm_backward", old_cell.device().type())(
      present(grad_h) ? *grad_h : at::Tensor(), present(grad_cell) ? *grad_cell : at::Tensor(),
      gates, *bias.expect_contiguous(), old_cell, grad_gates, grad_bias, grad_old_cell);
  if (grad_weights.defined()) at::mm_out(grad_weights, grad_gates, x);
  if (grad_x.defined()) {
    // (columns^T @ grad_gates)^T: [n, B] in the product's fast orientation for few samples (see
    // the forward), written through its transposed view.
    const auto [first, count] = needed_columns(state, x.size(1) - state, needs);
    at::Tensor out = transposed_columns(grad_x, 0, grad_x.size(1));
    at::mm_out(out, transposed_columns(weights, first.expect_int(), count.expect_int()),
               grad_gates);
  }
  return grads;
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
