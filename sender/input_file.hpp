#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/os/fd.hpp"

namespace rdmax {

// A regular file opened read-only for sending. The constructor refuses directories and
// other non-regular files ("PATH: is a directory"), since their size is meaningless.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  // `path` beneath the directory `dir_fd` (a server's export, docs/PROTOCOL.md 7.13): no
  // symbolic link followed, no way out of it (common/os/beneath.hpp); -1: `path` as given.
  InputFile(int dir_fd, const std::string& path);
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const noexcept { return path_; }
  uint64_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_.get(); }

  // Read-only (MAP_PRIVATE) mapping of the whole file, created on first call and unmapped on
  // destruction; empty for an empty file. Truncating the file while it is mapped makes
  // reads of the lost pages raise SIGBUS: callers that cannot trust the file should
  // pread instead.
  std::span<const uint8_t> map();

 private:
  void unmap() noexcept;

  std::string path_;
  Fd fd_;
  uint64_t size_ = 0;
  void* mapping_ = nullptr;
};

}  // namespace rdmax
