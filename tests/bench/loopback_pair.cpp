#include "loopback_pair.hpp"

#include <poll.h>

#include <algorithm>
#include <stdexcept>

#include "common/error.hpp"
#include "common/rdma/connection_params.hpp"

namespace rdmax::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCqEntries = 32;
constexpr std::uint32_t kSendDepth = 16;  // a bind, an invalidate or a WRITE at a time

ibv_qp_init_attr qp_attributes(CompletionQueue& cq) {
  ibv_qp_init_attr attr{};
  attr.send_cq = cq.get();
  attr.recv_cq = cq.get();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = kSendDepth;
  attr.cap.max_recv_wr = 1;  // RDMA WRITE without immediate consumes no receive
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.sq_sig_all = 0;
  return attr;
}

std::string event_text(const CmEvent& event) {
  return std::string(event.name()) + " (status " + std::to_string(event.status()) + ")";
}

}  // namespace

Side::Side(ibv_context* device) : pd(device), cq(device, kCqEntries, nullptr) {}

LoopbackPair::LoopbackPair(const std::string& address, std::chrono::milliseconds timeout)
    : timeout_(timeout), listener_(channel_), writer_id_(channel_) {
  channel_.set_nonblocking();
  listener_.bind_and_listen(address.c_str(), 0, 1);

  writer_id_.resolve_addr(address.c_str(), listener_.local_port(), timeout_);
  expect(writer_id_.get(), RDMA_CM_EVENT_ADDR_RESOLVED);
  writer_id_.resolve_route(timeout_);
  expect(writer_id_.get(), RDMA_CM_EVENT_ROUTE_RESOLVED);
  writer_.emplace(writer_id_.verbs());
  writer_qp_.emplace(writer_id_, writer_->pd.get(), qp_attributes(writer_->cq));
  rdma_conn_param param = reliable_conn_param();
  writer_id_.connect(param);

  {
    CmEvent request = expect(listener_.get(), RDMA_CM_EVENT_CONNECT_REQUEST);
    owner_id_.emplace(CmId::adopt(request.id()));
    // Acked here, before anything below can throw and destroy the adopted id.
  }
  owner_.emplace(owner_id_->verbs());
  owner_qp_.emplace(*owner_id_, owner_->pd.get(), qp_attributes(owner_->cq));
  owner_id_->accept(param);

  // Both ends report ESTABLISHED, in either order.
  bool writer_up = false;
  bool owner_up = false;
  while (!writer_up || !owner_up) {
    CmEvent event = next_event();
    if (event.type() != RDMA_CM_EVENT_ESTABLISHED) {
      throw std::runtime_error("connecting the loopback pair: unexpected " + event_text(event));
    }
    (event.id() == writer_id_.get() ? writer_up : owner_up) = true;
  }
}

CmEvent LoopbackPair::next_event() {
  const auto deadline = Clock::now() + timeout_;
  for (;;) {
    if (auto event = channel_.try_get()) return std::move(*event);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw std::runtime_error("no rdma_cm event within " + std::to_string(timeout_.count()) +
                               " ms");
    }
    pollfd fd{channel_.fd(), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) throw_sys("poll");
  }
}

CmEvent LoopbackPair::expect(rdma_cm_id* id, rdma_cm_event_type type) {
  CmEvent event = next_event();
  const rdma_cm_id* subject =
      event.type() == RDMA_CM_EVENT_CONNECT_REQUEST ? event->listen_id : event.id();
  if (event.type() != type || subject != id) {
    throw std::runtime_error(std::string("connecting the loopback pair: waited for ") +
                             ::rdma_event_str(type) + ", got " + event_text(event));
  }
  return event;
}

ibv_wc wait_completion(CompletionQueue& cq, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  ibv_wc wc{};
  // Busy polling: the figure wanted is the verbs' own latency, not a wake-up's.
  while (cq.poll(std::span(&wc, 1)) == 0) {
    if (Clock::now() > deadline) {
      throw std::runtime_error("no completion within " + std::to_string(timeout.count()) + " ms");
    }
  }
  return wc;
}

void post_send(ibv_qp* qp, ibv_send_wr& wr, const char* what) {
  ibv_send_wr* bad = nullptr;
  // Returns the errno value itself.
  if (const int err = ::ibv_post_send(qp, &wr, &bad); err != 0) {
    throw SysError(std::string("ibv_post_send ") + what, err);
  }
}

void post_write(ibv_qp* qp, std::span<const std::uint8_t> local, std::uint32_t lkey,
                std::uint64_t remote_addr, std::uint32_t rkey, std::uint64_t wr_id) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(local.data());
  sge.length = static_cast<std::uint32_t>(local.size());
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  post_send(qp, wr, "(RDMA WRITE)");
}

}  // namespace rdmax::bench
