#pragma once

#include <infiniband/verbs.h>

#include "common/rdma/owned.hpp"

namespace rdmax {

inline constexpr char kDeallocPd[] = "ibv_dealloc_pd";

// Owns an ibv_pd. Destroy it after every QP (CmId) and MemoryRegion allocated in it;
// ibv_dealloc_pd fails with EBUSY otherwise (logged as a warning).
class ProtectionDomain {
 public:
  explicit ProtectionDomain(ibv_context* context);

  ibv_pd* get() const noexcept { return pd_.get(); }

 private:
  Owned<ibv_pd, ::ibv_dealloc_pd, kDeallocPd> pd_;
};

}  // namespace rdmax
