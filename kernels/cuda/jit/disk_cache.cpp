#include "kernels/cuda/jit/disk_cache.h"

#include <c10/util/Exception.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuaug::jit {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'U', 'A', 'U', 'G', 'J', '1'};
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 28;

// The file header; the key and then the code follow it.
struct Header {
  char magic[8];
  uint64_t key_size;
  uint64_t code_size;
  uint64_t is_cubin;
  uint64_t checksum;  // of the key and the code
};

// FNV-1a: names entries (a collision only costs a recompile: the stored key is compared) and
// checks them (it catches truncation and flipped bytes, which is all it is for here).
uint64_t fnv1a(const std::string& data, uint64_t hash = 14695981039346656037ull) {
  for (const unsigned char c : data) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Creates `path` (and missing parents) 0700; true when it is then a real directory of ours that
// nobody else can write.
bool private_directory(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    mkdir(path.substr(0, slash).c_str(), 0700);
  }
  mkdir(path.c_str(), 0700);
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) {
    TORCH_WARN("gpuaug.jit: GPUAUG_CACHE_DIR=", path, " cannot be created (", std::strerror(errno),
               "); compiled kernels are not cached on disk");
    return false;
  }
  if (S_ISLNK(info.st_mode) || !S_ISDIR(info.st_mode) || info.st_uid != geteuid() ||
      (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    TORCH_WARN("gpuaug.jit: GPUAUG_CACHE_DIR=", path,
               " is refused: it must be a directory (not a symlink) owned by this user and "
               "writable by nobody else; compiled kernels are not cached on disk");
    return false;
  }
  return true;
}

// The cache directory, checked once per process; empty when the cache is off.
const std::string& cache_directory() {
  static const std::string directory = [] {
    const char* dir = std::getenv("GPUAUG_CACHE_DIR");
    if (dir == nullptr || *dir == '\0') return std::string();
    std::string path = dir;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return private_directory(path) ? path : std::string();
  }();
  return directory;
}

uint64_t entry_checksum(const std::string& key, const std::string& code) {
  return fnv1a(code, fnv1a(key));
}

bool read_exactly(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = read(fd, bytes, size);
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

bool write_exactly(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = write(fd, bytes, size);
    if (put <= 0) return false;
    bytes += put;
    size -= static_cast<size_t>(put);
  }
  return true;
}

std::optional<CompiledCode> read_entry(int fd, const std::string& key) {
  struct stat info {};
  Header header{};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || !read_exactly(fd, &header, sizeof(header)) ||
      std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.key_size != key.size() ||
      header.code_size > kMaxEntryBytes ||
      uint64_t(info.st_size) != sizeof(header) + header.key_size + header.code_size) {
    return std::nullopt;
  }
  std::string stored_key(header.key_size, '\0');
  CompiledCode code{std::string(header.code_size, '\0'), header.is_cubin != 0};
  if (!read_exactly(fd, stored_key.data(), stored_key.size()) || stored_key != key ||
      !read_exactly(fd, code.binary.data(), code.binary.size()) ||
      entry_checksum(key, code.binary) != header.checksum) {
    return std::nullopt;
  }
  return code;
}

std::string entry_path(const std::string& key) {
  return cache_directory() + "/" + hex(fnv1a(key)) + ".gpuaug-kernel";
}

}  // namespace

std::optional<CompiledCode> disk_cache_load(const std::string& key) {
  if (cache_directory().empty()) return std::nullopt;
  const int fd = open(entry_path(key).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto code = read_entry(fd, key);
  close(fd);
  return code;
}

void disk_cache_store(const std::string& key, const CompiledCode& code) {
  if (cache_directory().empty()) return;
  std::string temp = cache_directory() + "/.tmp-XXXXXX";
  const int fd = mkstemp(temp.data());  // O_EXCL, mode 0600
  if (fd < 0) {
    TORCH_WARN_ONCE("gpuaug.jit: cannot write to GPUAUG_CACHE_DIR (", std::strerror(errno), ")");
    return;
  }
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.key_size = key.size();
  header.code_size = code.binary.size();
  header.is_cubin = code.is_cubin;
  header.checksum = entry_checksum(key, code.binary);
  const bool written = write_exactly(fd, &header, sizeof(header)) &&
                       write_exactly(fd, key.data(), key.size()) &&
                       write_exactly(fd, code.binary.data(), code.binary.size());
  close(fd);
  if (!written || rename(temp.c_str(), entry_path(key).c_str()) != 0) {
    TORCH_WARN_ONCE("gpuaug.jit: cannot write to GPUAUG_CACHE_DIR (", std::strerror(errno), ")");
    unlink(temp.c_str());
  }
}

}  // namespace gpuaug::jit
