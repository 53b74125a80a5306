// Runs a TorchScript model that uses gpuaug's operators, as a deployment would:
//   gpuaug_run_scripted MODEL.pt INPUTS.pt OUTPUTS.pt [SEED]
// MODEL.pt from torch.jit.save; INPUTS.pt a tuple of forward's arguments from torch.save (nested
// tuples such as (input, (h, c)) and dicts such as a transform's params included). The result
// goes to OUTPUTS.pt, which torch.load reads. SEED seeds torch's generators first, as
// torch.manual_seed(SEED) does in Python, so that a model's random draws (gpuaug.transforms'
// fresh draws) are the ones Python's would be.
// Linking gpuaug::gpuaug registers the operators the model calls.
#include <torch/script.h>
#include <torch/utils.h>

#include <iostream>
#include <string>
#include <vector>

#include "pickled_files.h"

namespace {

// `value` with the containers `type` declares: pickle_load gives dicts and lists of Any, which
// forward's argument check refuses where it declares, say, Dict[str, Tensor].
c10::IValue typed_as(const c10::IValue& value, const c10::TypePtr& type) {
  if (const auto optional = type->cast<c10::OptionalType>()) {
    return value.isNone() ? value : typed_as(value, optional->getElementType());
  }
  if (const auto dict_type = type->cast<c10::DictType>(); dict_type && value.isGenericDict()) {
    c10::impl::GenericDict dict(dict_type->getKeyType(), dict_type->getValueType());
    for (const auto& entry : value.toGenericDict()) {
      dict.insert(typed_as(entry.key(), dict_type->getKeyType()),
                  typed_as(entry.value(), dict_type->getValueType()));
    }
    return dict;
  }
  if (const auto list_type = type->cast<c10::ListType>(); list_type && value.isList()) {
    c10::impl::GenericList list(list_type->getElementType());
    for (const c10::IValue& element : value.toListRef()) {
      list.push_back(typed_as(element, list_type->getElementType()));
    }
    return list;
  }
  if (const auto tuple_type = type->cast<c10::TupleType>(); tuple_type && value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    if (elements.size() != tuple_type->elements().size()) return value;  // forward's check says so
    std::vector<c10::IValue> typed;
    for (size_t i = 0; i < elements.size(); ++i) {
      typed.push_back(typed_as(elements[i], tuple_type->elements()[i]));
    }
    return c10::ivalue::Tuple::create(std::move(typed));
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt INPUTS.pt OUTPUTS.pt [SEED]\n";
    return 2;
  }
  try {
    if (argc == 5) torch::manual_seed(std::stoull(argv[4]));
    torch::jit::script::Module model = torch::jit::load(argv[1]);
    model.eval();
    const c10::IValue inputs = read_pickled(argv[2]);
    if (!inputs.isTuple()) throw std::runtime_error("INPUTS.pt must hold a tuple of arguments");
    const auto& elements = inputs.toTupleRef().elements();
    // forward's schema: self, then its arguments
    const auto& declared = model.get_method("forward").function().getSchema().arguments();
    std::vector<c10::IValue> arguments;
    for (size_t i = 0; i < elements.size(); ++i) {
      arguments.push_back(i + 1 < declared.size() ? typed_as(elements[i], declared[i + 1].type())
                                                  : elements[i]);
    }
    const c10::IValue output = model.forward(arguments);
    write_pickled(argv[3], output);
    std::cout << "ran " << argv[1] << " on " << elements.size() << " arguments\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
