// TensorIterators for the element-wise kernels of both backends: they broadcast the inputs to the
// preallocated output and merge dimensions, so dense tensors of any layout become one flat run.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>

#include "kernels/loops.h"

namespace gpuaug {

inline at::TensorIterator make_iterator(const at::Tensor& out, const at::Tensor& in0) {
  return at::TensorIteratorConfig().add_output(out).add_const_input(in0).build();
}

inline at::TensorIterator make_iterator(const at::Tensor& out, const at::Tensor& in0,
                                        const at::Tensor& in1) {
  return at::TensorIteratorConfig().add_output(out).add_const_input(in0).add_const_input(in1).build();
}

// What an element-wise op's CPU and CUDA files register (kernels/loops.h): fills the iterator's
// output from its inputs.
using ElementwiseLoop = void (*)(at::TensorIteratorBase& iter);

// The body of an element-wise op: fills `out`, which its Meta function allocated, from `inputs`
// with the loop registered for their device.
template <typename... Inputs>
at::Tensor fill_elementwise(const char* op, const Loops<ElementwiseLoop>& loops, at::Tensor out,
                            const Inputs&... inputs) {
  auto iter = make_iterator(out, inputs...);
  loops.on(op, out.device().type())(iter);
  return out;
}

}  // namespace gpuaug
