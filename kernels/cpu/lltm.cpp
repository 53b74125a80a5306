// gpuaug::lltm's CPU loops over the pointwise stage; ops/lltm.cpp does the matrix products,
// checks, allocates and calls them.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include "kernels/lltm.h"

namespace gpuaug::cpu {
namespace {

// Rows of B, in parallel; a row's S elements per task at least.
constexpr int64_t kGrainElements = 4096;

template <typename Row>
void for_each_row(int64_t batch, int64_t state, Row row) {
  const int64_t grain_rows = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(state, 1));
  at::parallel_for(0, batch, grain_rows, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) row(b);
  });
}

void lltm_forward(const at::Tensor& linear, const at::Tensor& bias, const at::Tensor& old_cell,
                  const at::Tensor& new_h, const at::Tensor& new_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, linear.scalar_type(), "gpuaug::lltm", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const scalar_t* gates = linear.const_data_ptr<scalar_t>();
    const scalar_t* bias_ = bias.const_data_ptr<scalar_t>();
    const scalar_t* old_cell_ = old_cell.const_data_ptr<scalar_t>();
    scalar_t* new_h_ = new_h.mutable_data_ptr<scalar_t>();
    scalar_t* new_cell_ = new_cell.mutable_data_ptr<scalar_t>();
    for_each_row(batch, state, [&](int64_t b) {
      const scalar_t* row = gates + b * 3 * state;
      for (int64_t s = 0; s < state; ++s) {
        auto gate = [&](int k) {
          return opmath_t(row[k * state + s]) + opmath_t(bias_[k * state + s]);
        };
        const LltmCell<opmath_t> cell(gate(0), gate(1), gate(2), opmath_t(old_cell_[b * state + s]));
        new_h_[b * state + s] = scalar_t(cell.new_h());
        new_cell_[b * state + s] = scalar_t(cell.new_cell);
      }
    });
  });
}

void lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& linear,
                   const at::Tensor& bias, const at::Tensor& old_cell, const at::Tensor& grad_gates,
                   const at::Tensor& grad_old_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, linear.scalar_type(), "gpuaug::_lltm_backward", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const scalar_t* gates = linear.const_data_ptr<scalar_t>();
    const scalar_t* bias_ = bias.const_data_ptr<scalar_t>();
    const scalar_t* old_cell_ = old_cell.const_data_ptr<scalar_t>();
    const scalar_t* grad_h_ = grad_h.const_data_ptr<scalar_t>();
    const scalar_t* grad_cell_ = grad_cell.const_data_ptr<scalar_t>();
    scalar_t* grad_gates_ = grad_gates.mutable_data_ptr<scalar_t>();
    scalar_t* grad_old_cell_ = grad_old_cell.mutable_data_ptr<scalar_t>();
    for_each_row(batch, state, [&](int64_t b) {
      const scalar_t* row = gates + b * 3 * state;
      scalar_t* grad_row = grad_gates_ + b * 3 * state;
      for (int64_t s = 0; s < state; ++s) {
        auto gate = [&](int k) {
          return opmath_t(row[k * state + s]) + opmath_t(bias_[k * state + s]);
        };
        const opmath_t c = gate(2);
        const int64_t at = b * state + s;
        const LltmCell<opmath_t> cell(gate(0), gate(1), c, opmath_t(old_cell_[at]));
        const LltmCellGrad<opmath_t> grad{opmath_t(grad_h_[at]), opmath_t(grad_cell_[at]), c, cell};
        grad_row[s] = scalar_t(grad.i);
        grad_row[state + s] = scalar_t(grad.o);
        grad_row[2 * state + s] = scalar_t(grad.c);
        grad_old_cell_[at] = scalar_t(grad.old_cell);
      }
    });
  });
}

}  // namespace

GPUAUG_REGISTER_LOOP(lltm_forward_loops, cpu, &lltm_forward);
GPUAUG_REGISTER_LOOP(lltm_backward_loops, cpu, &lltm_backward);

}  // namespace gpuaug::cpu
