#include <torch/library.h>

#include "kernels/cpu/elementwise.h"
#include "kernels/scalar_ops.h"
#include "kernels/sum_to.h"
#include "ops/meta.h"

namespace gpuaug::cpu {
namespace {

void multiply(at::TensorIteratorBase& iter) { for_each_element<2>(iter, MulOp{}); }

at::Tensor mul(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out = mul_meta(a, b);
  auto iter = make_iterator(out, a, b);
  multiply(iter);
  return out;
}

std::tuple<at::Tensor, at::Tensor> mul_backward(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
  auto [grad_a, grad_b] = mul_backward_meta(grad, a, b);
  product_summed_to(grad_a, grad, b, multiply);
  product_summed_to(grad_b, grad, a, multiply);
  return {grad_a, grad_b};
}

}  // namespace

TORCH_LIBRARY_IMPL(gpuaug, CPU, m) {
  m.impl("mul", &mul);
  m.impl("mul_backward", &mul_backward);
}

}  // namespace gpuaug::cpu
