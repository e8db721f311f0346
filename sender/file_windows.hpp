#pragma once
// Zero-copy sending: the file's read-only mapping is registered for local access one
// window at a time, and RDMA WRITEs read the page cache directly: no copy into a staging
// buffer. Registration pins the window's pages (faulting them in, which reads the file
// ahead of the writes); a window is deregistered as soon as every chunk in it has been
// written and the sender has moved past it, so pinned memory stays bounded
// (at most three windows: one draining, one being written, one registered ahead; two when
// registering ahead fails, since a window holds at least what can be in flight).
//
// Chunks never straddle windows: a window is a whole number of chunks.

#include <cstdint>
#include <deque>
#include <span>

#include "common/connection/transport.hpp"

namespace rdmax::sender {

// The window to register, in chunks, when `in_flight` chunks of `chunk` bytes may be in
// flight: 8x that, but at most 32 MiB (unless more than that can be in flight), so that
// registering costs little per byte and pinned memory (up to three windows) stays modest
// whatever the file size. What is pinned must still fit RLIMIT_MEMLOCK (sender/memlock.hpp).
[[nodiscard]] std::uint64_t preferred_window_chunks(std::uint64_t chunk, std::uint32_t in_flight);

class FileWindows {
 public:
  // `window_bytes` must be a multiple of the chunk size. The transport outlives this.
  FileWindows(Transport& transport, std::span<const std::uint8_t> mapping,
              std::uint64_t window_bytes);
  FileWindows(const FileWindows&) = delete;
  FileWindows& operator=(const FileWindows&) = delete;
  ~FileWindows();

  // The registration covering [offset, offset + length); registers its window if needed
  // and counts the chunk as in flight. Throws when registration fails.
  [[nodiscard]] Registration acquire(std::uint64_t offset, std::uint32_t length);
  // The chunk at `offset` has been written (its SEND completed).
  void release(std::uint64_t offset);
  // Registers the window holding `offset` and the one after it (if the file has one),
  // ahead of their first writes; does nothing for windows already registered.
  void register_ahead(std::uint64_t offset);

  std::span<const std::uint8_t> bytes(std::uint64_t offset, std::uint32_t length) const {
    return mapping_.subspan(static_cast<std::size_t>(offset), length);
  }

 private:
  struct Window {
    std::uint64_t index;
    Registration registration;
    std::uint32_t in_flight = 0;
  };
  Window& find_or_register(std::uint64_t index);
  void drop_finished();

  Transport& transport_;
  std::span<const std::uint8_t> mapping_;
  std::uint64_t window_bytes_;
  std::uint64_t posted_end_ = 0;  // end of the furthest chunk acquired so far
  std::deque<Window> windows_;    // ascending index
};

}  // namespace rdmax::sender
