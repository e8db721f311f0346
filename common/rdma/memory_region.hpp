#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rdmax {

// Owns an ibv_mr: pins [addr, addr+length) and makes it reachable by the HCA. The memory
// must outlive the region, and the region must be destroyed before its ProtectionDomain.
//
// Registration pins pages, which counts against RLIMIT_MEMLOCK for unprivileged users;
// when ibv_reg_mr fails with ENOMEM or EPERM and the limit explains it, the SysError
// message carries memlock_hint().
class MemoryRegion {
 public:
  MemoryRegion(ibv_pd* pd, void* addr, size_t length, int access);

  ibv_mr* get() const noexcept { return mr_.get(); }
  uint32_t lkey() const noexcept { return mr_->lkey; }
  uint32_t rkey() const noexcept { return mr_->rkey; }
  // Deregisters now: from here its keys fail at the peer's adapter. Throws SysError if the
  // device refused (the region stays registered, and its keys may still work: whoever
  // revokes a key to protect the memory must not read it then).
  void deregister();

 private:
  struct Deregister {  // and count the bytes unpinned (common/rdma/owned.hpp's shape)
    void operator()(ibv_mr* mr) const noexcept;
  };
  std::unique_ptr<ibv_mr, Deregister> mr_;
};

// If `requested` bytes of pinned memory exceed the soft RLIMIT_MEMLOCK, a sentence saying
// so and how to raise the limit; otherwise empty.
std::string memlock_hint(size_t requested);

// With CAP_IPC_LOCK (e.g. root) RLIMIT_MEMLOCK does not apply.
bool has_ipc_lock_capability();

}  // namespace rdmax
