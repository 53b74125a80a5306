// Argument checks and output allocation shared by the Meta, CPU and CUDA kernels, so every
// backend rejects the same inputs with the same message and allocates the same layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace gpuaug {

// `t` must be a defined tensor: C++ callers can pass at::Tensor(), and Python's None for a Tensor
// argument arrives as one.
void check_defined(const char* op, const char* arg, const at::Tensor& t);

// The same for each (name, tensor): an autograd kernel's first step, as Function::apply reads every
// tensor argument's device before the op's own checks run, and fails without naming the op.
void check_defined(const char* op,
                   std::initializer_list<std::pair<const char*, const at::Tensor*>> args);

// Floating dtypes the element-wise operators take.
void check_floating(const char* op, const char* arg, const at::Tensor& t);

// `b` must have the dtype and device of `a`.
void check_same_dtype_and_device(const char* op, const char* arg_a, const at::Tensor& a,
                                 const char* arg_b, const at::Tensor& b);

// `b` must have the shape of `a`.
void check_same_shape(const char* op, const char* arg_a, const at::Tensor& a, const char* arg_b,
                      const at::Tensor& b);

// An output conversion's `mean` and `std` (Normalize): both or neither, a floating output, one
// value per channel, no zero std.
void check_normalisation(const char* op, const c10::SymInt& channels, at::ScalarType out_dtype,
                         std::optional<c10::ArrayRef<double>> mean,
                         std::optional<c10::ArrayRef<double>> stddev);

// Numbers for error messages, as strings, formatted without iostreams. Streaming an integer into
// TORCH_CHECK's message segfaults when the extension is compiled by GCC 13 (Ubuntu 24.04) against
// the PyTorch 2.11 wheel, in C++17 and C++20 alike, and in a minimal torch.utils.cpp_extension
// module too, so it is neither gpuaug's code nor a mix of standards: the backtrace shows
// std::ostream::_M_insert<long> instantiated inside the extension calling a codecvt<char16_t>
// method, i.e. the wrong facet, as when the facet ids the extension resolves (some from the
// wheel's own copy of libstdc++ internals) are not the ones the runtime libstdc++ registered.
// GCC 12 is unaffected. Strings and c10's own types never touch those facets.
std::string shape_str(c10::SymIntArrayRef sizes);
std::string size_str(const c10::SymInt& size);
std::string number_str(double value);
std::string values_str(c10::ArrayRef<double> values);

// An output for an element-wise op on `x`: x's strides when x is dense (so channels_last and
// other permutations survive and the op is one flat pass), else contiguous.
at::Tensor empty_dense_like(const at::Tensor& x);

}  // namespace gpuaug
