#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

namespace rdmax {

class CmId;

// Owns the RC queue pair created on a cm_id (rdma_create_qp). Destroy it before the
// memory regions, CQ and PD it uses, and before its cm_id: declare it after them in the
// owner (common/rdma/rdma_transport.hpp encodes that order).
class QueuePair {
 public:
  QueuePair(CmId& id, ibv_pd* pd, ibv_qp_init_attr attr);
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;
  ~QueuePair();

  ibv_qp* get() const noexcept { return qp_; }
  // Moves the QP to the error state: outstanding work requests complete with
  // IBV_WC_WR_FLUSH_ERR and nothing more is sent or lands in our memory. It fails only for
  // a QP that is in error already, so there is nothing to report.
  void to_error() noexcept;

 private:
  rdma_cm_id* id_;
  ibv_qp* qp_;
};

}  // namespace rdmax
