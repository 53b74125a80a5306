// Autograd kernel of gpuaug::_resized_crop_windows: its output is integers, with no gradient.
// autograd's not-implemented kernel lets inputs that require one through (it would fail a
// backward only through a floating output), and tells autograd the op is handled.
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

namespace gpuaug {

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("_resized_crop_windows", torch::autograd::autogradNotImplementedFallback());
}

}  // namespace gpuaug
