// Calls gpuaug::relu through the dispatcher by name only: this program references no symbol of
// libgpuaug, so it works only if the library was kept at link time (its static initialisers
// register the operators). Returns 1 if the operator is missing or computes a wrong result.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <iostream>

int main() {
  try {
    const auto relu = c10::Dispatcher::singleton()
                          .findSchemaOrThrow("gpuaug::relu", "")
                          .typed<at::Tensor(const at::Tensor&)>();
    const auto x = at::tensor({-2.0f, 0.0f, 3.5f});
    const auto y = relu.call(x);
    std::cout << "gpuaug::relu([-2, 0, 3.5]) = [" << y[0].item<float>() << ", "
              << y[1].item<float>() << ", " << y[2].item<float>() << "]\n";
    if (!at::equal(y, at::tensor({0.0f, 0.0f, 3.5f}))) {
      std::cout << "MISMATCH\n";
      return 1;
    }
  } catch (const c10::Error& e) {
    std::cout << "error: " << e.what_without_backtrace() << "\n";
    return 1;
  }
  std::cout << "gpuaug::relu found by name\n";
  return 0;
}
