// gpuaug from C++: relu, mul and round_ste from <gpuaug/ops.h> on the CPU (and on CUDA when
// there is a GPU and gpuaug has CUDA kernels), forward and autograd backward.
// Prints the results; returns 1 on any mismatch.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <gpuaug/ops.h>

#include <iostream>
#include <sstream>
#include <string>

namespace {

int failures = 0;

std::string values(const at::Tensor& t) {
  std::ostringstream out;
  const auto flat = t.detach().cpu().to(at::kDouble).flatten();
  for (int64_t i = 0; i < flat.numel(); ++i) out << (i ? " " : "[") << flat[i].item<double>();
  return out.str() + "]";
}

void check(const char* what, const at::Tensor& actual, const at::Tensor& expected) {
  const bool ok = actual.sizes() == expected.sizes() &&
                  at::equal(actual.detach().cpu(), expected.cpu());
  std::cout << (ok ? "ok       " : "MISMATCH ") << what << " = " << values(actual);
  if (!ok) {
    std::cout << ", expected " << values(expected);
    ++failures;
  }
  std::cout << "\n";
}

void run(at::Device device) {
  std::cout << "--- " << device << "\n";
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  const auto x = at::tensor({-1.5f, -0.5f, 0.0f, 0.49f, 0.5f, 2.5f}, opts);
  check("relu(x)", gpuaug::relu(x), at::tensor({0.0f, 0.0f, 0.0f, 0.49f, 0.5f, 2.5f}, opts));
  // floor(x + 0.5): ties go up (at::round would give -2, -0, 0, 0, 0, 2).
  check("round_ste(x)", gpuaug::round_ste(x),
        at::tensor({-1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 3.0f}, opts));
  // Broadcasting: [2, 1] * [3] -> [2, 3].
  const auto a = at::tensor({2.0f, -3.0f}, opts).reshape({2, 1});
  const auto b = at::tensor({1.0f, 0.5f, -4.0f}, opts);
  check("mul(a, b)", gpuaug::mul(a, b),
        at::tensor({2.0f, 1.0f, -8.0f, -3.0f, -1.5f, 12.0f}, opts).reshape({2, 3}));

  // Autograd: loss = sum(round_ste(mul(relu(x), w))); round_ste passes the gradient through,
  // mul scales it by w, relu keeps it where x > 0. d loss / d w = relu(x).
  auto xg = x.detach().clone().requires_grad_(true);
  auto w = at::tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, opts).requires_grad_(true);
  gpuaug::round_ste(gpuaug::mul(gpuaug::relu(xg), w)).sum().backward();
  check("d/dx", xg.grad(), at::tensor({0.0f, 0.0f, 0.0f, 4.0f, 5.0f, 6.0f}, opts));
  check("d/dw", w.grad(), at::tensor({0.0f, 0.0f, 0.0f, 0.49f, 0.5f, 2.5f}, opts));
}

}  // namespace

int main() {
  try {
    run(at::kCPU);
    if (GPUAUG_EXAMPLE_WITH_CUDA && torch::cuda::is_available()) {
      run(at::Device(at::kCUDA, 0));
    } else {
      std::cout << "--- cuda: skipped (no GPU or gpuaug built without CUDA)\n";
    }
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << "\n";
    return 1;
  }
  std::cout << (failures ? "FAILED\n" : "all results as expected\n");
  return failures ? 1 : 0;
}
