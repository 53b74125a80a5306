// The shared step of mul_backward on both backends: out = grad * other, summed over the
// dimensions along which out's input was broadcast.
#pragma once

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

#include "kernels/iterator.h"

namespace gpuaug {

// for_each_product(iter) multiplies the iterator's two inputs into its output.
template <typename ForEachProduct>
void product_summed_to(const at::Tensor& out, const at::Tensor& grad, const at::Tensor& other,
                       ForEachProduct for_each_product) {
  if (out.sizes() == grad.sizes()) {
    auto iter = make_iterator(out, grad, other);
    for_each_product(iter);
    return;
  }
  at::Tensor full = at::empty(grad.sizes(), grad.options());
  auto iter = make_iterator(full, grad, other);
  for_each_product(iter);
  out.copy_(at::sum_to(full, out.sizes()));
}

}  // namespace gpuaug
