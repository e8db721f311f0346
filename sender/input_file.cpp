#include "sender/input_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <stdexcept>
#include <utility>

#include "common/error.hpp"
#include "common/os/beneath.hpp"

namespace rdmax {

InputFile::InputFile(const std::string& path) : InputFile(-1, path) {}

InputFile::InputFile(int dir_fd, const std::string& path) : path_(path) {
  if (dir_fd >= 0) {
    fd_ = open_file_beneath(dir_fd, path, O_RDONLY | O_CLOEXEC);
  } else {
    // O_NONBLOCK so that naming a FIFO fails below instead of hanging in open() until a
    // writer appears; it has no effect on reads from a regular file.
    fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd_) {
      const int err = errno;
      throw_sys("open " + path, err);
    }
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    const int err = errno;
    throw_sys("fstat " + path, err);
  }
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory");
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(path + ": not a regular file");
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      size_(std::exchange(other.size_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    fd_ = std::move(other.fd_);
    size_ = std::exchange(other.size_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
  }
  return *this;
}

InputFile::~InputFile() {
  unmap();
}

void InputFile::unmap() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, static_cast<size_t>(size_));
  mapping_ = nullptr;
}

std::span<const uint8_t> InputFile::map() {
  if (size_ == 0) return {};  // mmap of length 0 is EINVAL
  if (mapping_ == nullptr) {
    // MAP_PRIVATE, although nothing writes it: Linux 6.1 refuses to register (pin for the
    // long term) pages of a MAP_SHARED file mapping, with EFAULT, but accepts a private
    // read-only one, whose pages are the page cache's own until someone writes them.
    void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd_.get(), 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      throw_sys("mmap " + path_, err);
    }
    mapping_ = p;
    // Advisory: aggressive readahead and early reclaim of pages behind the reader.
    (void)::madvise(mapping_, static_cast<size_t>(size_), MADV_SEQUENTIAL);
  }
  return {static_cast<const uint8_t*>(mapping_), static_cast<size_t>(size_)};
}

}  // namespace rdmax
