// gpuaug::jit_elementwise: schema, C++ API, Meta kernels and bodies of the run-time compiled
// element-wise operators. There is no run-time compiler for the CPU: a CPU tensor is an error
// that names the operator (Python's gpuaug.jit.elementwise can route it to a fallback instead).
#include "ops/jit_elementwise.h"

#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <set>

#include "gpuaug/ops.h"
#include "ops/checks.h"
#ifdef GPUAUG_WITH_CUDA
#include "kernels/cuda/jit/elementwise.h"
#endif

namespace gpuaug {

namespace {
std::string jit_elementwise_ptx(const std::string& name, const std::string& expression,
                                const std::vector<std::string>& names, at::ScalarType dtype,
                                int64_t arch, const std::string& layout);
std::vector<int64_t> jit_cache_info();
}  // namespace

TORCH_LIBRARY_FRAGMENT(gpuaug, m) {
  m.def(
      "jit_elementwise(str name, str expression, str[] names, Tensor[] inputs, str[]? grads=None) "
      "-> Tensor");
  m.def(
      "_jit_elementwise_backward(str name, str[] grads, str[] names, Tensor grad, Tensor[] inputs) "
      "-> Tensor[]");
  m.def("_jit_elementwise_ptx(str name, str expression, str[] names, ScalarType dtype, int arch, "
        "str layout=\"vectorized\") -> str",
        &jit_elementwise_ptx);
  m.def("_jit_cache_info() -> int[]", &jit_cache_info);
}

at::Tensor jit_elementwise(const std::string& name, const std::string& expression,
                           const std::vector<std::string>& names, at::TensorList inputs,
                           const std::optional<std::vector<std::string>>& grads) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::jit_elementwise", "")
          .typed<at::Tensor(const std::string&, const std::string&, const std::vector<std::string>&,
                            at::TensorList, const std::optional<std::vector<std::string>>&)>();
  return op.call(name, expression, names, inputs, grads);
}

std::vector<at::Tensor> jit_elementwise_backward(const std::string& name,
                                                 const std::vector<std::string>& grads,
                                                 const std::vector<std::string>& names,
                                                 const at::Tensor& grad, at::TensorList inputs) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("gpuaug::_jit_elementwise_backward", "")
          .typed<std::vector<at::Tensor>(const std::string&, const std::vector<std::string>&,
                                         const std::vector<std::string>&, const at::Tensor&,
                                         at::TensorList)>();
  return op.call(name, grads, names, grad, inputs);
}

namespace {

constexpr size_t kMaxInputs = 8;

std::string describe(const std::string& name) { return "gpuaug::jit_elementwise '" + name + "'"; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (const char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// The generated source names its own things gpuaug_*, GPUAUG_* and opmath_t, and the backward
// adds the input `grad`.
void check_names(const std::string& name, const std::vector<std::string>& names,
                 size_t num_inputs) {
  const std::string op = describe(name);
  TORCH_CHECK(is_identifier(name), "gpuaug::jit_elementwise: expected 'name' to be a C identifier "
              "(letters, digits and _, not starting with a digit), but got '", name, "'");
  TORCH_CHECK(names.size() == num_inputs, op, ": expected one name in 'names' per tensor of "
              "'inputs', but got ", std::to_string(names.size()), " names for ",
              std::to_string(num_inputs), " tensors");
  TORCH_CHECK(num_inputs >= 1 && num_inputs <= kMaxInputs, op, ": expected 1 to ",
              std::to_string(kMaxInputs), " inputs, but got ", std::to_string(num_inputs));
  std::set<std::string> seen;
  for (const auto& input : names) {
    TORCH_CHECK(is_identifier(input), op, ": expected each of 'names' to be a C identifier, but "
                "got '", input, "'");
    TORCH_CHECK(input != "grad" && input != "opmath_t" && input.rfind("gpuaug_", 0) != 0 &&
                    input.rfind("GPUAUG_", 0) != 0,
                op, ": the input name '", input, "' is reserved (grad, opmath_t, gpuaug_*, "
                "GPUAUG_*)");
    TORCH_CHECK(seen.insert(input).second, op, ": the input name '", input, "' appears twice in 'names'");
  }
}

void check_inputs(const std::string& op, const std::vector<std::string>& names,
                  at::TensorList inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_defined(op.c_str(), names[i].c_str(), inputs[i]);
    check_floating(op.c_str(), names[i].c_str(), inputs[i]);
    if (i > 0) {
      check_same_dtype_and_device(op.c_str(), names[0].c_str(), inputs[0], names[i].c_str(), inputs[i]);
    }
  }
}

// PyTorch's broadcasting rule over every input, with an error that names the op and the inputs.
c10::SymDimVector broadcast_shape(const std::string& op, const std::vector<std::string>& names,
                                  at::TensorList inputs) {
  c10::SymDimVector shape(inputs[0].sym_sizes().begin(), inputs[0].sym_sizes().end());
  for (size_t i = 1; i < inputs.size(); ++i) {
    const auto sizes = inputs[i].sym_sizes();
    const size_t ndim = std::max(shape.size(), sizes.size());
    c10::SymDimVector result(ndim, 1);
    for (size_t d = 0; d < ndim; ++d) {
      const c10::SymInt a = d < shape.size() ? shape[shape.size() - 1 - d] : c10::SymInt(1);
      const c10::SymInt b = d < sizes.size() ? sizes[sizes.size() - 1 - d] : c10::SymInt(1);
      TORCH_CHECK(a == b || a == 1 || b == 1, op, ": the shape of '", names[i], "' ",
                  shape_str(sizes), " does not broadcast with ", shape_str(shape), " (from '",
                  names[0], "')");
      result[ndim - 1 - d] = a == 1 ? b : a;
    }
    shape = std::move(result);
  }
  return shape;
}

// Inputs of one shape and one dense layout give an output of that layout (channels_last stays
// channels_last); broadcasting gives a contiguous one.
at::Tensor empty_output(at::TensorList inputs, c10::SymIntArrayRef shape) {
  for (const auto& input : inputs) {
    if (input.sym_sizes() != inputs[0].sym_sizes() || input.sym_strides() != inputs[0].sym_strides()) {
      return at::empty_symint(shape, inputs[0].options());
    }
  }
  return empty_dense_like(inputs[0]);
}

}  // namespace

at::Tensor jit_elementwise_meta(const std::string& name, const std::string& expression,
                                const std::vector<std::string>& names, at::TensorList inputs,
                                const std::optional<std::vector<std::string>>& grads) {
  check_names(name, names, inputs.size());
  const std::string op = describe(name);
  TORCH_CHECK(!expression.empty(), op, ": 'expression' is empty");
  TORCH_CHECK(!grads || grads->size() == names.size(), op, ": expected one expression in 'grads' "
              "per input, but got ", std::to_string(grads ? grads->size() : 0), " for ",
              std::to_string(names.size()), " inputs");
  check_inputs(op, names, inputs);
  return empty_output(inputs, broadcast_shape(op, names, inputs));
}

std::vector<at::Tensor> jit_elementwise_backward_meta(const std::string& name,
                                                      const std::vector<std::string>& grads,
                                                      const std::vector<std::string>& names,
                                                      const at::Tensor& grad, at::TensorList inputs) {
  check_names(name, names, inputs.size());
  const std::string op = describe(name) + " (backward)";
  TORCH_CHECK(grads.size() == names.size(), op, ": expected one expression in 'grads' per input "
              "(empty for none), but got ", std::to_string(grads.size()), " for ",
              std::to_string(names.size()), " inputs");
  check_inputs(op, names, inputs);
  check_defined(op.c_str(), "grad", grad);
  check_same_dtype_and_device(op.c_str(), names[0].c_str(), inputs[0], "grad", grad);
  const auto shape = broadcast_shape(op, names, inputs);
  TORCH_CHECK(grad.sym_sizes() == c10::SymIntArrayRef(shape), op, ": expected 'grad' of the "
              "broadcast shape ", shape_str(shape), ", but got ", shape_str(grad.sym_sizes()));
  std::vector<at::Tensor> outputs;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].empty()) outputs.push_back(empty_dense_like(inputs[i]));
  }
  return outputs;
}

namespace {

[[noreturn]] void no_cpu_compiler(const std::string& op, const std::vector<std::string>& names) {
  TORCH_CHECK(false, op, ": '", names[0], "' is a CPU tensor, but run-time compiled operators run "
              "on CUDA tensors only (there is no run-time compiler for the CPU; from Python, give "
              "gpuaug.jit.elementwise a cpu_fallback)");
}

at::Tensor jit_elementwise_cpu(const std::string& name, const std::string& expression,
                               const std::vector<std::string>& names, at::TensorList inputs,
                               const std::optional<std::vector<std::string>>& grads) {
  jit_elementwise_meta(name, expression, names, inputs, grads);
  no_cpu_compiler(describe(name), names);
}

std::vector<at::Tensor> jit_elementwise_backward_cpu(const std::string& name,
                                                     const std::vector<std::string>& grads,
                                                     const std::vector<std::string>& names,
                                                     const at::Tensor& grad, at::TensorList inputs) {
  jit_elementwise_backward_meta(name, grads, names, grad, inputs);
  no_cpu_compiler(describe(name) + " (backward)", names);
}

// The PTX of the kernel for `layout` (vectorized, contiguous, strided32 or strided64) and
// `dtype`, for compute capability `arch`: compiles without a GPU, to inspect the generated code
// and to test NVRTC.
std::string jit_elementwise_ptx(const std::string& name, const std::string& expression,
                                const std::vector<std::string>& names, at::ScalarType dtype,
                                int64_t arch, const std::string& layout) {
  check_names(name, names, names.size());
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16,
              describe(name), ": expected 'dtype' float32, float64, float16 or bfloat16, but got ",
              c10::toString(dtype));
#ifdef GPUAUG_WITH_CUDA
  const std::pair<const char*, jit::Layout> layouts[] = {
      {"vectorized", jit::Layout::kVectorized}, {"contiguous", jit::Layout::kContiguous},
      {"strided32", jit::Layout::kStrided32}, {"strided64", jit::Layout::kStrided64}};
  for (const auto& [label, value] : layouts) {
    if (layout == label) {
      return jit::ElementwiseKernels(describe(name), {name, {expression}, names})
          .ptx(dtype, value, static_cast<int>(arch));
    }
  }
  TORCH_CHECK(false, describe(name), ": expected 'layout' vectorized, contiguous, strided32 or "
              "strided64, but got '", layout, "'");
#else
  TORCH_CHECK(false, describe(name), ": this build of gpuaug has no CUDA, so no NVRTC");
#endif
}

// [kernels compiled by NVRTC, read from $GPUAUG_CACHE_DIR, loaded] in this process so far.
std::vector<int64_t> jit_cache_info() {
#ifdef GPUAUG_WITH_CUDA
  const auto counters = jit::cache_counters();
  return {counters.compiled, counters.from_disk, counters.loaded};
#else
  return {0, 0, 0};
#endif
}

#ifdef GPUAUG_WITH_CUDA

at::Tensor jit_elementwise_cuda(const std::string& name, const std::string& expression,
                                const std::vector<std::string>& names, at::TensorList inputs,
                                const std::optional<std::vector<std::string>>& grads) {
  at::Tensor out = jit_elementwise_meta(name, expression, names, inputs, grads);
  at::TensorIteratorConfig config;
  config.add_output(out);
  for (const auto& input : inputs) config.add_const_input(input);
  auto iter = config.build();
  jit::cached_kernels(describe(name), name, expression, names).run(iter);
  return out;
}

std::vector<at::Tensor> jit_elementwise_backward_cuda(const std::string& name,
                                                      const std::vector<std::string>& grads,
                                                      const std::vector<std::string>& names,
                                                      const at::Tensor& grad, at::TensorList inputs) {
  auto outputs = jit_elementwise_backward_meta(name, grads, names, grad, inputs);
  if (outputs.empty()) return outputs;
  // An input that was broadcast gets its gradient at full size first, then summed down.
  std::vector<std::string> inputs_and_grad = names;
  inputs_and_grad.push_back("grad");
  std::vector<std::string> expressions;
  std::vector<at::Tensor> full(outputs.size());
  at::TensorIteratorConfig config;
  for (size_t i = 0, k = 0; i < grads.size(); ++i) {
    if (grads[i].empty()) continue;
    expressions.push_back(grads[i]);
    full[k] = inputs[i].sizes() == grad.sizes() ? outputs[k] : at::empty(grad.sizes(), grad.options());
    config.add_output(full[k++]);
  }
  for (const auto& input : inputs) config.add_const_input(input);
  config.add_const_input(grad);
  auto iter = config.build();
  jit::cached_kernels(describe(name) + " (backward)", name + "_backward", expressions,
                      inputs_and_grad)
      .run(iter);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!full[k].is_same(outputs[k])) outputs[k].copy_(at::sum_to(full[k], outputs[k].sizes()));
  }
  return outputs;
}

#endif

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, Meta, m) {
  m.impl("jit_elementwise", &jit_elementwise_meta);
  m.impl("_jit_elementwise_backward", &jit_elementwise_backward_meta);
}

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) {
  m.impl("jit_elementwise", &jit_elementwise_cpu);
  m.impl("_jit_elementwise_backward", &jit_elementwise_backward_cpu);
}

#ifdef GPUAUG_WITH_CUDA
TORCH_LIBRARY_IMPL(gpuaug, CUDA, m) {
  m.impl("jit_elementwise", &jit_elementwise_cuda);
  m.impl("_jit_elementwise_backward", &jit_elementwise_backward_cuda);
}
#endif

}  // namespace gpuaug
