// Argument checks and output allocation shared by the Meta, CPU and CUDA kernels, so every
// backend rejects the same inputs with the same message and allocates the same layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace gpuaug {

// Floating dtypes the element-wise operators take.
void check_floating(const char* op, const char* arg, const at::Tensor& t);

// `b` must have the dtype and device of `a`.
void check_same_dtype_and_device(const char* op, const char* arg_a, const at::Tensor& a,
                                 const char* arg_b, const at::Tensor& b);

// `b` must have the shape of `a`.
void check_same_shape(const char* op, const char* arg_a, const at::Tensor& a, const char* arg_b,
                      const at::Tensor& b);

// Numbers for error messages, as strings: streaming an integer or a double into TORCH_CHECK's
// message segfaulted in the GPU machine's build (GCC 13; not with GCC 12 here), strings and
// c10's own types do not.
std::string shape_str(c10::SymIntArrayRef sizes);
std::string size_str(const c10::SymInt& size);
std::string number_str(double value);
std::string values_str(c10::ArrayRef<double> values);

// An output for an element-wise op on `x`: x's strides when x is dense (so channels_last and
// other permutations survive and the op is one flat pass), else contiguous.
at::Tensor empty_dense_like(const at::Tensor& x);

}  // namespace gpuaug
