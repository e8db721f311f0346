#include "common/rdma/protection_domain.hpp"

#include "common/error.hpp"

namespace rdmax {

ProtectionDomain::ProtectionDomain(ibv_context* context) {
  // ibv_alloc_pd returns NULL; providers set errno, but do not trust a stale value.
  errno = 0;
  pd_ = ::ibv_alloc_pd(context);
  if (pd_ == nullptr) throw_sys("ibv_alloc_pd", errno != 0 ? errno : ENOMEM);
}

ProtectionDomain& ProtectionDomain::operator=(ProtectionDomain&& other) noexcept {
  if (this != &other) {
    destroy();
    pd_ = std::exchange(other.pd_, nullptr);
  }
  return *this;
}

ProtectionDomain::~ProtectionDomain() {
  destroy();
}

void ProtectionDomain::destroy() noexcept {
  if (pd_ == nullptr) return;
  // Returns the errno value directly, not -1.
  if (int err = ::ibv_dealloc_pd(std::exchange(pd_, nullptr)); err != 0) {
    warn_release_failure("ibv_dealloc_pd", err);
  }
}

}  // namespace rdmax
