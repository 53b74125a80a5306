// gpuaug::lltm's CPU loops over the pointwise stage (and the bias's gradient, ATen's sum);
// ops/lltm.cpp does the matrix products, checks, allocates and calls them.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/sum.h>

#include <algorithm>

#include "kernels/lltm.h"

namespace gpuaug::cpu {
namespace {

constexpr int64_t kGrainElements = 4096;  // per parallel task, at least

// Calls element(b, s) for every sample b and state column s, rows of samples in parallel.
template <typename Element>
void for_each_cell(int64_t batch, int64_t state, Element element) {
  const int64_t grain_rows = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(state, 1));
  at::parallel_for(0, batch, grain_rows, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t s = 0; s < state; ++s) element(b, s);
    }
  });
}

// A [B, S] operand of any strides, element (b, s) in the compute type; undefined reads as zeros.
template <typename T, typename OpMath>
struct StridedReader {
  const T* data;
  int64_t stride_b, stride_s;

  explicit StridedReader(const at::Tensor& t)
      : data(t.defined() ? t.const_data_ptr<T>() : nullptr),
        stride_b(t.defined() ? t.stride(0) : 0),
        stride_s(t.defined() ? t.stride(1) : 0) {}

  OpMath operator()(int64_t b, int64_t s) const {
    return data ? OpMath(data[b * stride_b + s * stride_s]) : OpMath(0);
  }
};

void lltm_forward(const at::Tensor& gates, const at::Tensor& bias, const at::Tensor& old_cell,
                  const at::Tensor& new_h, const at::Tensor& new_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::lltm", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const scalar_t* gates_ = gates.const_data_ptr<scalar_t>();
    const scalar_t* bias_ = bias.const_data_ptr<scalar_t>();
    const StridedReader<scalar_t, opmath_t> old_cell_(old_cell);
    scalar_t* new_h_ = new_h.mutable_data_ptr<scalar_t>();
    scalar_t* new_cell_ = new_cell.mutable_data_ptr<scalar_t>();
    for_each_cell(batch, state, [&](int64_t b, int64_t s) {
      auto gate = [&](int k) {
        const int64_t row = k * state + s;
        return opmath_t(gates_[row * batch + b]) + opmath_t(bias_[row]);
      };
      const int64_t at = b * state + s;
      const LltmCell<opmath_t> cell(gate(0), gate(1), gate(2), old_cell_(b, s));
      new_h_[at] = scalar_t(cell.new_h());
      new_cell_[at] = scalar_t(cell.new_cell);
    });
  });
}

void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& gates,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_bias, const at::Tensor& grad_old_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "gpuaug::_lltm_backward", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const scalar_t* gates_ = gates.const_data_ptr<scalar_t>();
    const scalar_t* bias_ = bias.const_data_ptr<scalar_t>();
    const StridedReader<scalar_t, opmath_t> old_cell_(old_cell), grad_h_(grad_h),
        grad_cell_(grad_cell);
    scalar_t* grad_gates_ = grad_gates.mutable_data_ptr<scalar_t>();
    scalar_t* grad_old_cell_ = grad_old_cell.defined() ? grad_old_cell.mutable_data_ptr<scalar_t>()
                                                       : nullptr;
    for_each_cell(batch, state, [&](int64_t b, int64_t s) {
      auto at_gate = [&](int k) { return (k * state + s) * batch + b; };
      auto gate = [&](int k) {
        return opmath_t(gates_[at_gate(k)]) + opmath_t(bias_[k * state + s]);
      };
      const opmath_t c = gate(2);
      const LltmCell<opmath_t> cell(gate(0), gate(1), c, old_cell_(b, s));
      const LltmCellGrad<opmath_t> grad{grad_h_(b, s), grad_cell_(b, s), c, cell};
      grad_gates_[at_gate(0)] = scalar_t(grad.i);
      grad_gates_[at_gate(1)] = scalar_t(grad.o);
      grad_gates_[at_gate(2)] = scalar_t(grad.c);
      if (grad_old_cell_) grad_old_cell_[b * state + s] = scalar_t(grad.old_cell);
    });
  });
  if (grad_bias.defined()) {
    at::Tensor out = grad_bias;
    at::sum_out(out, grad_gates, 1);
  }
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cpu, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cpu, &lltm_backward);

}  // namespace gpuaug::cpu
