// gpuaug::lltm's CPU pointwise stages, through ATen's vectorised kernels, a pass each over the
// gates or the state: on the CPU a fused loop's transcendental functions, four an element in
// the forward and scalar, cost several times the passes. ops/lltm.cpp does the matrix products,
// checks, allocates and calls them.
#include <ATen/OpMathType.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/square.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>

#include "kernels/lltm.h"

namespace gpuaug::cpu {
namespace {

// The gates' linear term plus the bias, in the compute type: [3S, B].
at::Tensor gate_inputs(const at::Tensor& gates, const at::Tensor& bias, at::ScalarType opmath) {
  return at::add(gates.to(opmath), bias.to(opmath).unsqueeze(1));
}

// Rows [k S, (k + 1) S) of a gate-major [3S, B] tensor as [B, S].
at::Tensor gate(const at::Tensor& rows, int k, int64_t state) {
  return rows.narrow(0, k * state, state).t();
}

void lltm_forward(const at::Tensor& gates, const at::Tensor& bias, const at::Tensor& old_cell,
                  const at::Tensor& new_h, const at::Tensor& new_cell) {
  const int64_t state = old_cell.size(1);
  const at::ScalarType opmath = at::toOpMathType(gates.scalar_type());
  // in place: sigmoid(i), sigmoid(o), elu(c)
  const at::Tensor activations = gate_inputs(gates, bias, opmath);
  at::Tensor input_and_output = activations.narrow(0, 0, 2 * state);
  at::Tensor candidate = activations.narrow(0, 2 * state, state);
  at::sigmoid_(input_and_output);
  at::elu_(candidate);
  at::Tensor cell = at::addcmul(old_cell.to(opmath), gate(activations, 2, state),
                                gate(activations, 0, state));
  new_cell.copy_(cell);
  new_h.copy_(at::tanh_(cell).mul_(gate(activations, 1, state)));
}

// The activations again from the gates' linear term (all the forward keeps), then the chain
// rule; the gradients are stored (rounded to the gates' dtype) before the bias's sums them.
void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& gates,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_bias, const at::Tensor& grad_old_cell) {
  const int64_t state = old_cell.size(1);
  const at::ScalarType opmath = at::toOpMathType(gates.scalar_type());
  const at::Tensor inputs = gate_inputs(gates, bias, opmath);
  const at::Tensor c = inputs.narrow(0, 2 * state, state);
  const at::Tensor input_and_output = at::sigmoid(inputs.narrow(0, 0, 2 * state));
  const at::Tensor input_gate = gate(input_and_output, 0, state);
  const at::Tensor output_gate = gate(input_and_output, 1, state);
  const at::Tensor candidate = at::elu(c).t();
  // elu'(c): exp(c) for c <= 0, computed afresh (candidate + 1 would lose its digits), else 1
  const at::Tensor candidate_slope = at::exp(at::clamp_max(c, 0)).t();
  at::Tensor tanh_cell = at::addcmul(old_cell.to(opmath), candidate, input_gate);
  at::tanh_(tanh_cell);
  const at::Tensor grad_h_ = grad_h.defined() ? grad_h.to(opmath) : at::zeros_like(tanh_cell);
  const at::Tensor grad_h_gated = at::mul(grad_h_, output_gate);
  // d new_cell = grad_cell + grad_h * output_gate * (1 - tanh(new_cell)^2)
  at::Tensor grad_new_cell = at::mul(grad_h_gated, at::rsub(at::square(tanh_cell), 1));
  if (grad_cell.defined()) grad_new_cell.add_(grad_cell);
  gate(grad_gates, 0, state)
      .copy_(at::mul(grad_new_cell, candidate).mul_(input_gate).mul_(at::rsub(input_gate, 1)));
  gate(grad_gates, 1, state)
      .copy_(at::mul(grad_h_gated, tanh_cell).mul_(at::rsub(output_gate, 1)));
  gate(grad_gates, 2, state).copy_(at::mul(grad_new_cell, input_gate).mul_(candidate_slope));
  if (grad_old_cell.defined()) grad_old_cell.copy_(grad_new_cell);
  if (grad_bias.defined()) {
    at::Tensor out = grad_bias;
    at::sum_out(out, grad_gates, 1);
  }
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cpu, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cpu, &lltm_backward);

}  // namespace gpuaug::cpu
