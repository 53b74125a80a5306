// Autograd kernel of gpuaug::auto_augment: no gradient yet (the chains' adjoint is not written).
// autograd's not-implemented kernel lets a call whose image requires one run, and fails only a
// backward through its output, naming the op.
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

namespace gpuaug {

TORCH_LIBRARY_IMPL(gpuaug, Autograd, m) {
  m.impl("auto_augment", torch::autograd::autogradNotImplementedFallback());
}

}  // namespace gpuaug
