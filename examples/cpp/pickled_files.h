// Files that torch.save writes and torch.load reads, for the example programs that run models
// saved from Python: a value from one, a value into one.
#pragma once

#include <torch/serialize.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

inline c10::IValue read_pickled(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  return torch::pickle_load({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
}

inline void write_pickled(const char* path, const c10::IValue& value) {
  const std::vector<char> bytes = torch::pickle_save(value);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}
