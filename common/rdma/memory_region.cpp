#include "common/rdma/memory_region.hpp"

#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "common/error.hpp"

namespace rdmax {
namespace {

// Bytes pinned through MemoryRegion in this process. The limit applies to the sum of all
// registrations, so a hint based on the failing request alone would miss the common case
// of several buffers that together exceed it.
std::atomic<size_t> registered_bytes{0};

}  // namespace

// With CAP_IPC_LOCK (e.g. root) RLIMIT_MEMLOCK does not apply, so a hint about it would
// send the user the wrong way.
bool has_ipc_lock_capability() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    unsigned long long caps = 0;
    if (std::sscanf(line.c_str(), "CapEff: %llx", &caps) == 1)
      return (caps >> 14) & 1;  // CAP_IPC_LOCK
  }
  return false;
}

std::string memlock_hint(size_t requested) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return {};
  if (limit.rlim_cur == RLIM_INFINITY || requested <= limit.rlim_cur) return {};
  return "locked-memory limit (RLIMIT_MEMLOCK) is " + std::to_string(limit.rlim_cur) +
         " bytes; raise it with `ulimit -l unlimited` or LimitMEMLOCK=infinity in the "
         "systemd unit";
}

MemoryRegion::MemoryRegion(ibv_pd* pd, void* addr, size_t length, int access) {
  // ibv_reg_mr returns NULL and sets errno.
  errno = 0;
  mr_.reset(::ibv_reg_mr(pd, addr, length, access));
  if (!mr_) {
    const int err = errno != 0 ? errno : ENOMEM;
    std::string hint;
    if ((err == ENOMEM || err == EPERM) && !has_ipc_lock_capability()) {
      hint = memlock_hint(registered_bytes.load() + length);
    }
    throw SysError("ibv_reg_mr", err, hint);
  }
  registered_bytes += length;
}

void MemoryRegion::deregister() {
  if (!mr_) return;
  const size_t length = mr_->length;
  // Returns the errno value directly, not -1.
  if (int err = ::ibv_dereg_mr(mr_.get()); err != 0) throw SysError("ibv_dereg_mr", err);
  mr_.release();  // deregistered above
  registered_bytes -= length;
}

void MemoryRegion::Deregister::operator()(ibv_mr* mr) const noexcept {
  const size_t length = mr->length;
  // Returns the errno value directly, not -1.
  if (int err = ::ibv_dereg_mr(mr); err != 0) {
    warn_release_failure("ibv_dereg_mr", err);
    return;  // still pinned
  }
  registered_bytes -= length;
}

}  // namespace rdmax
