#include "common/rdma/queue_pair.hpp"

#include "common/error.hpp"
#include "common/rdma/cm_id.hpp"

namespace rdmax {

QueuePair::QueuePair(CmId& id, ibv_pd* pd, ibv_qp_init_attr attr) : id_(id.get()) {
  if (::rdma_create_qp(id_, pd, &attr) != 0) throw_sys("rdma_create_qp");
  qp_ = id_->qp;
}

QueuePair::~QueuePair() {
  // rdma_destroy_qp also clears id->qp, which rdma_destroy_id then finds empty.
  ::rdma_destroy_qp(id_);
}

void QueuePair::to_error() noexcept {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ::ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
}

}  // namespace rdmax
