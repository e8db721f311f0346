#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "common/error.hpp"

namespace rdmax {

// Page-aligned, zero-filled heap buffer, suitable for registration as an RDMA memory
// region. Backed by an anonymous mmap rather than aligned_alloc so that a large buffer
// goes straight back to the OS when freed instead of lingering in the malloc arena.
class AlignedBuffer {
 public:
  AlignedBuffer() noexcept = default;
  explicit AlignedBuffer(size_t size) : size_(size) {
    if (size == 0) return;
    void* p = ::mmap(nullptr, mapped_length(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw_sys("mmap(anonymous " + std::to_string(size) + " bytes)");
    data_ = static_cast<uint8_t*>(p);
  }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      free();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { free(); }

  uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  std::span<uint8_t> span() const noexcept { return {data_, size_}; }

 private:
  size_t mapped_length() const noexcept {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return (size_ + page - 1) / page * page;
  }
  void free() noexcept {
    if (data_ != nullptr) ::munmap(data_, mapped_length());
    data_ = nullptr;
  }

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rdmax
