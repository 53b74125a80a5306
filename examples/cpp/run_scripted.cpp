// Runs a TorchScript model that uses gpuaug's operators, as a deployment would:
//   gpuaug_run_scripted MODEL.pt INPUTS.pt OUTPUTS.pt
// MODEL.pt from torch.jit.save; INPUTS.pt a tuple of forward's arguments from torch.save (nested
// tuples such as (input, (h, c)) included). The result goes to OUTPUTS.pt, which torch.load reads.
// Linking gpuaug::gpuaug registers the operators the model calls.
#include <torch/script.h>
#include <torch/serialize.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt INPUTS.pt OUTPUTS.pt\n";
    return 2;
  }
  try {
    torch::jit::script::Module model = torch::jit::load(argv[1]);
    model.eval();
    const c10::IValue inputs = torch::pickle_load(read_file(argv[2]));
    if (!inputs.isTuple()) throw std::runtime_error("INPUTS.pt must hold a tuple of arguments");
    const auto& elements = inputs.toTupleRef().elements();
    const std::vector<c10::IValue> arguments(elements.begin(), elements.end());
    const c10::IValue output = model.forward(arguments);
    const std::vector<char> bytes = torch::pickle_save(output);
    std::ofstream(argv[3], std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    std::cout << "ran " << argv[1] << " on " << elements.size() << " arguments\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
