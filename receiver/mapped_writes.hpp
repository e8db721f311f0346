#pragma once
// Writing one file's chunks from several threads at once. The kernel serialises buffered
// writes to one file (pwrite takes the inode's lock), so chunks written by several threads
// with pwrite wait on each other: one file stayed at one writer's rate however many cores
// (docs/BENCHMARKS.md, "One file on many lanes"). Page faults on a shared mapping of the
// file take no such lock, so a writer that finds another writer of the same file in pwrite
// copies its chunk into the mapping instead; one writer at a time keeps the cheaper pwrite
// (a mapped write also pays for zeroing each new page and for its fault: 0.81 CPU s/GiB
// against pwrite's 0.48 into tmpfs, measured alone on one thread).
//
// A fault on a mapping reports a full disk or an I/O error as SIGBUS, which would kill the
// daemon. So a chunk's pages are populated first with MADV_POPULATE_WRITE (Linux 5.14),
// which returns that error instead: then the chunk goes through pwrite, which says which
// error it was. A kernel without it never maps.
//
// Both paths go through the page cache, so they see each other's bytes; fsync makes the
// mapping's dirty pages durable as it does pwrite's. The pages a writer touched stay
// mapped, and count in the process's resident set, until release() (every kReleaseBytes
// copied), which drops the mapping's page-table entries but not the pages themselves.
//
// Threads: write() from any number of threads at once; the constructor and destructor
// when none runs.

#include <atomic>
#include <cstdint>
#include <span>

namespace rdmax {

class MappedWrites {
 public:
  // Maps the first `size` bytes of `fd` (the file must be at least that long); an owner
  // without a mapping (size 0, or mmap failed) writes every chunk with pwrite.
  MappedWrites(int fd, std::uint64_t size);
  MappedWrites(const MappedWrites&) = delete;
  MappedWrites& operator=(const MappedWrites&) = delete;
  ~MappedWrites();

  bool mapped() const { return base_ != nullptr; }
  // Copies `data` to `offset` if the mapping covers it, the process's file-size limit allows
  // it (as it would pwrite) and its pages could be populated; false (nothing written)
  // otherwise: the caller writes it with pwrite.
  [[nodiscard]] bool write(std::uint64_t offset, std::span<const std::uint8_t> data);

  static constexpr std::uint64_t kReleaseBytes = std::uint64_t{64} << 20;

 private:
  void release();

  std::uint8_t* base_ = nullptr;
  std::uint64_t size_ = 0;
  std::atomic<bool> refused_{false};             // the kernel cannot populate: never again
  std::atomic<std::uint64_t> since_release_{0};  // bytes copied since the last release()
};

}  // namespace rdmax
