#pragma once
// A directory of a test's own (mkdtemp under `parent`), open for the *at() calls the file
// code uses, and removed with everything in it when the test ends.

#include <fcntl.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/os/fd.hpp"

namespace rdmax {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix, const std::string& parent = "/tmp") {
    std::string pattern = parent + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    path_ = pattern;
    fd_ = Fd(::open(pattern.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd_) throw std::runtime_error("open " + pattern);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_.get(); }

 private:
  std::filesystem::path path_;
  Fd fd_;
};

}  // namespace rdmax
