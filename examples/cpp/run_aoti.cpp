// Runs an AOTInductor package (torch.export, then torch._inductor.aoti_compile_and_package) that
// calls gpuaug's operators, as a deployment without Python would:
//   gpuaug_run_aoti MODEL.pt2 INPUTS.pt OUTPUTS.pt [SEED]
// INPUTS.pt holds the exported program's inputs flattened, a list of tensors from torch.save (in
// Python: torch.utils._pytree.tree_leaves((args, kwargs))); OUTPUTS.pt gets its flat outputs as a
// tuple. SEED seeds torch's generators first, as torch.manual_seed(SEED) does in Python.
// The package's code calls gpuaug's operators through the dispatcher: linking gpuaug::gpuaug
// registers them.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/utils.h>

#include <iostream>
#include <string>
#include <vector>

#include "pickled_files.h"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt2 INPUTS.pt OUTPUTS.pt [SEED]\n";
    return 2;
  }
  try {
    if (argc == 5) torch::manual_seed(std::stoull(argv[4]));
    torch::inductor::AOTIModelPackageLoader package(argv[1]);
    const c10::IValue inputs = read_pickled(argv[2]);
    if (!inputs.isList()) throw std::runtime_error("INPUTS.pt must hold a list of tensors");
    std::vector<at::Tensor> tensors;
    for (const c10::IValue& input : inputs.toListRef()) tensors.push_back(input.toTensor());
    const std::vector<at::Tensor> outputs = package.run(tensors);
    // a tuple: torch.load reads it as is (a tensor list pickles as a TorchScript type)
    write_pickled(argv[3], c10::ivalue::Tuple::create(
                               std::vector<c10::IValue>(outputs.begin(), outputs.end())));
    std::cout << "ran " << argv[1] << ": " << tensors.size() << " inputs, " << outputs.size()
              << " outputs\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
