#include "common/rdma/protection_domain.hpp"

namespace rdmax {

ProtectionDomain::ProtectionDomain(ibv_context* context) {
  // ibv_alloc_pd returns NULL; providers set errno, but do not trust a stale value.
  errno = 0;
  pd_.reset(::ibv_alloc_pd(context));
  if (!pd_) throw_sys("ibv_alloc_pd", errno != 0 ? errno : ENOMEM);
}

}  // namespace rdmax
