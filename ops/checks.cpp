#include "ops/checks.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <cstdio>

namespace gpuaug {

void check_defined(const char* op, const char* arg, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

void check_defined(const char* op,
                   std::initializer_list<std::pair<const char*, const at::Tensor*>> args) {
  for (const auto& [name, tensor] : args) check_defined(op, name, *tensor);
}

void check_floating(const char* op, const char* arg, const at::Tensor& t) {
  check_defined(op, arg, t);
  const auto dtype = t.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf ||
                  dtype == at::kBFloat16,
              op, ": expected argument '", arg,
              "' to have a floating dtype (float32, float64, float16 or bfloat16), but got ",
              dtype);
}

void check_same_dtype_and_device(const char* op, const char* arg_a, const at::Tensor& a,
                                 const char* arg_b, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op, ": expected '", arg_b,
              "' to have the dtype of '", arg_a, "' (", a.scalar_type(), "), but got ",
              b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), op, ": expected '", arg_b, "' on the device of '",
              arg_a, "' (", a.device(), "), but got ", b.device());
}

std::string size_str(const c10::SymInt& size) {
  if (const auto value = size.maybe_as_int()) return std::to_string(*value);
  return size.toSymNodeImplUnowned()->str();
}

std::string shape_str(c10::SymIntArrayRef sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + size_str(sizes[i]);
  return out + "]";
}

std::string number_str(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

std::string values_str(c10::ArrayRef<double> values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + number_str(values[i]);
  return out + "]";
}

void check_same_shape(const char* op, const char* arg_a, const at::Tensor& a, const char* arg_b,
                      const at::Tensor& b) {
  TORCH_CHECK(a.sym_sizes() == b.sym_sizes(), op, ": expected '", arg_b, "' to have the shape of '",
              arg_a, "' ", shape_str(a.sym_sizes()), ", but got ", shape_str(b.sym_sizes()));
}

void check_normalisation(const char* op, const c10::SymInt& channels, at::ScalarType out_dtype,
                         std::optional<c10::ArrayRef<double>> mean,
                         std::optional<c10::ArrayRef<double>> stddev) {
  TORCH_CHECK(mean.has_value() == stddev.has_value(), op,
              ": 'mean' and 'std' normalise together: pass both or neither, but got only '",
              mean.has_value() ? "mean" : "std", "'");
  if (!mean.has_value()) return;
  TORCH_CHECK(out_dtype != at::kByte, op,
              ": 'mean' and 'std' need a floating output dtype, but the output is ", out_dtype);
  for (const auto& [name, values] : {std::pair{"mean", *mean}, std::pair{"std", *stddev}}) {
    TORCH_CHECK(channels == static_cast<int64_t>(values.size()), op, ": expected '", name,
                "' of length ", size_str(channels), " (one value per channel), but got ",
                std::to_string(values.size()));
  }
  for (double s : *stddev) {
    TORCH_CHECK(s != 0.0, op, ": 'std' must not contain 0, but got ", values_str(*stddev));
  }
}

at::Tensor empty_dense_like(const at::Tensor& x) {
  if (x.is_non_overlapping_and_dense()) {
    return at::empty_strided_symint(x.sym_sizes(), x.sym_strides(), x.options());
  }
  return at::empty_symint(x.sym_sizes(), x.options());
}

}  // namespace gpuaug
