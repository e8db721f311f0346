#include "receiver/mapped_writes.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C libraries lack the name
#endif

namespace rdmax {
namespace {

constexpr std::uint64_t kPage = 4096;

}  // namespace

MappedWrites::MappedWrites(int fd, std::uint64_t size) {
  if (size == 0) return;
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return;  // every chunk through pwrite: slower, not wrong
  base_ = static_cast<std::uint8_t*>(base);
  size_ = size;
}

MappedWrites::~MappedWrites() {
  if (base_ != nullptr && ::munmap(base_, size_) != 0) warn_release_failure("munmap", errno);
}

bool MappedWrites::write(std::uint64_t offset, std::span<const std::uint8_t> data) {
  if (base_ == nullptr || refused_.load(std::memory_order_relaxed) || offset > size_ ||
      data.size() > size_ - offset)
    return false;
  // A write past the file-size limit (systemd's LimitFSIZE=) fails with EFBIG through
  // pwrite; a mapping would not be stopped by it.
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      offset + data.size() > limit.rlim_cur)
    return false;
  // Whole pages around the chunk: madvise wants a page-aligned start.
  const std::uint64_t first = offset / kPage * kPage;
  const std::uint64_t end = offset + data.size();
  if (::madvise(base_ + first, end - first, MADV_POPULATE_WRITE) != 0) {
    // EINVAL: a kernel without it. EFAULT, ENOMEM, EHWPOISON: the fault would have raised
    // SIGBUS or failed; pwrite says what it was.
    if (errno == EINVAL) refused_ = true;
    return false;
  }
  std::memcpy(base_ + offset, data.data(), data.size());
  const std::uint64_t copied = since_release_.fetch_add(data.size()) + data.size();
  if (copied >= kReleaseBytes && since_release_.exchange(0) >= kReleaseBytes) release();
  return true;
}

// The pages stay in the page cache (dirty until written back); only this process's
// page-table entries go. A writer between its populate and its copy faults its pages back
// in, from the page cache. One call for the whole mapping: its cost is the flush of the
// other threads' TLBs, the same for any range.
void MappedWrites::release() {
  if (::madvise(base_, size_, MADV_DONTNEED) != 0) warn_release_failure("madvise", errno);
}

}  // namespace rdmax
