// Compiled kernels kept on disk under $GPUAUG_CACHE_DIR, so a second process skips NVRTC. The
// directory is not a way in: it must be the user's own and private (created 0700; a symlink, or
// one that others can write, is refused with a warning and nothing is cached), entries are
// written atomically (a temp file, then rename) and carry their full key and a checksum, and an
// entry that does not verify is ignored (then recompiled and overwritten), never loaded.
#pragma once

#include <optional>
#include <string>

#include "kernels/cuda/jit/nvrtc.h"

namespace gpuaug::jit {

// The entry stored under `key` (everything the code depends on), if the cache is on and has it.
std::optional<CompiledCode> disk_cache_load(const std::string& key);

// Stores `code` under `key` when the cache is on; a failure warns and is otherwise ignored.
void disk_cache_store(const std::string& key, const CompiledCode& code);

}  // namespace gpuaug::jit
