#pragma once

#include <infiniband/verbs.h>

#include <utility>

namespace rdmax {

// Owns an ibv_pd. Destroy it after every QP (CmId) and MemoryRegion allocated in it;
// ibv_dealloc_pd fails with EBUSY otherwise (logged as a warning).
class ProtectionDomain {
 public:
  explicit ProtectionDomain(ibv_context* context);
  ProtectionDomain(ProtectionDomain&& other) noexcept : pd_(std::exchange(other.pd_, nullptr)) {}
  ProtectionDomain& operator=(ProtectionDomain&& other) noexcept;
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;
  ~ProtectionDomain();

  ibv_pd* get() const noexcept { return pd_; }

 private:
  void destroy() noexcept;

  ibv_pd* pd_ = nullptr;
};

}  // namespace rdmax
