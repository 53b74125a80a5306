// gpuaug::lltm's pointwise arithmetic per element, as the CUDA kernels run it (the CPU loops run
// the same formulas as ATen's vectorised passes), and the table of the CPU and CUDA loops. T is
// the compute type (float for the half types, double for float64: the ELU must not go through
// single precision, or float64 gradients fail gradcheck).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cmath>

#include "kernels/loops.h"

namespace gpuaug {

// One cell element. i, o, c: the three gate pre-activations, linear term and bias added.
template <typename T>
struct LltmCell {
  T input_gate, output_gate, candidate, new_cell, tanh_new_cell;

  C10_HOST_DEVICE LltmCell(T i, T o, T c, T old_cell) {
    input_gate = T(1) / (T(1) + std::exp(-i));
    output_gate = T(1) / (T(1) + std::exp(-o));
    candidate = c > T(0) ? c : std::expm1(c);  // elu, alpha = 1
    new_cell = old_cell + candidate * input_gate;
    tanh_new_cell = std::tanh(new_cell);
  }

  C10_HOST_DEVICE T new_h() const { return tanh_new_cell * output_gate; }
};

// The gradients of one cell element with respect to its gate pre-activations and old_cell;
// c is the candidate's pre-activation.
template <typename T>
struct LltmCellGrad {
  T i, o, c, old_cell;

  C10_HOST_DEVICE LltmCellGrad(T grad_h, T grad_cell, T c_pre, const LltmCell<T>& cell) {
    const T d_tanh = T(1) - cell.tanh_new_cell * cell.tanh_new_cell;
    const T d_new_cell = grad_cell + grad_h * cell.output_gate * d_tanh;
    old_cell = d_new_cell;
    o = grad_h * cell.tanh_new_cell * cell.output_gate * (T(1) - cell.output_gate);
    i = d_new_cell * cell.candidate * cell.input_gate * (T(1) - cell.input_gate);
    // elu'(c) = exp(c) for c <= 0, computed afresh: candidate + 1 would lose its digits.
    c = d_new_cell * cell.input_gate * (c_pre > T(0) ? T(1) : std::exp(c_pre));
  }
};

// gates [3S, B]: weights @ cat([old_h, input], 1)^T, gate-major (rows i, then o, then c; one
// column per sample), the orientation in which cuBLAS multiplies fastest for small B; gates,
// grad_gates and bias contiguous. The [B, S] operands may have any strides (a gradient arrives as
// the transposed view the backward's product returns, or expanded from a sum), and an undefined
// grad_h or grad_cell is zero; new_h, new_cell and grad_old_cell are contiguous.
using LltmForwardLoop = void (*)(const at::Tensor& gates, const at::Tensor& bias,
                                 const at::Tensor& old_cell, const at::Tensor& new_h,
                                 const at::Tensor& new_cell);
// grad_bias = grad_gates.sum(1) [3S] and grad_old_cell are written when defined.
using LltmBackwardLoop = void (*)(const at::Tensor& grad_h, const at::Tensor& grad_cell,
                                  const at::Tensor& gates, const at::Tensor& bias,
                                  const at::Tensor& old_cell, const at::Tensor& grad_gates,
                                  const at::Tensor& grad_bias, const at::Tensor& grad_old_cell);

extern Loops<LltmForwardLoop> lltm_forward_loops;
extern Loops<LltmBackwardLoop> lltm_backward_loops;

}  // namespace gpuaug
