#include "common/rdma/endpoint.hpp"

#include "common/error.hpp"
#include "protocol/secure_wipe.hpp"

namespace rdmax {
namespace {
constexpr std::size_t kBuf = proto::kMaxMessageSize;

// A work request over one buffer: every post here names exactly one (`sge` must outlive the
// post).
template <typename WorkRequest>
WorkRequest one_buffer(ibv_sge& sge, const void* data, std::size_t length, std::uint32_t lkey,
                       std::uint64_t wr_id) {
  sge = {reinterpret_cast<std::uintptr_t>(data), static_cast<std::uint32_t>(length), lkey};
  WorkRequest wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return wr;
}
}  // namespace

Endpoint::Endpoint(ibv_context* device, std::uint32_t recv_depth, std::uint32_t send_depth,
                   std::uint32_t extra_send_wrs)
    : recv_depth_(recv_depth),
      send_depth_(send_depth),
      extra_send_wrs_(extra_send_wrs),
      pd_(device),
      channel_(device),
      cq_(device, static_cast<int>(recv_depth + send_depth + extra_send_wrs + 8), &channel_),
      recv_buffers_(recv_depth * kBuf),
      send_buffers_(send_depth * kBuf),
      recv_mr_(pd_.get(), recv_buffers_.data(), recv_buffers_.size(), IBV_ACCESS_LOCAL_WRITE),
      send_mr_(pd_.get(), send_buffers_.data(), send_buffers_.size(), 0) {
  channel_.set_nonblocking();
  free_sends_.reserve(send_depth);
  sent_bytes_.assign(send_depth, 0);
  for (std::uint32_t i = send_depth; i > 0; --i) free_sends_.push_back(i - 1);
  cq_.request_notify();
}

ibv_qp_init_attr Endpoint::qp_attributes() const {
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_.get();
  attr.recv_cq = cq_.get();
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;
  attr.cap.max_send_wr = send_depth_ + extra_send_wrs_;
  attr.cap.max_recv_wr = recv_depth_;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  return attr;
}

void Endpoint::attach(ibv_qp* qp) {
  qp_ = qp;
  for (std::uint32_t i = 0; i < recv_depth_; ++i) post_recv(i);
}

void Endpoint::post_recv(std::uint32_t index) {
  ibv_sge sge;
  auto wr = one_buffer<ibv_recv_wr>(sge, recv_buffers_.data() + index * kBuf, kBuf, recv_mr_.lkey(),
                                    make_wr_id(WorkKind::Recv, index));
  ibv_recv_wr* bad = nullptr;
  if (int err = ::ibv_post_recv(qp_, &wr, &bad); err != 0) throw_sys("ibv_post_recv", err);
}

void Endpoint::drain_completions(std::vector<ibv_wc>& out) {
  out.clear();
  while (cq_.get_event_and_ack()) {
  }
  cq_.request_notify();
  ibv_wc batch[32];
  for (;;) {
    int n = cq_.poll(batch);
    for (int i = 0; i < n; ++i) out.push_back(batch[i]);
    if (n < static_cast<int>(std::size(batch))) break;
  }
}

std::variant<proto::Message, proto::DecodeFailure> Endpoint::take_received(const ibv_wc& wc,
                                                                           std::uint16_t* version) {
  const std::uint32_t index = wr_index(wc.wr_id);
  auto bytes = std::span<const std::uint8_t>(recv_buffers_.data() + index * kBuf,
                                             std::min<std::size_t>(wc.byte_len, kBuf));
  if (version != nullptr) *version = proto::peek_version(bytes).value_or(0);
  auto result = proto::decode(bytes);
  // A received Secret does not linger in the registered buffer.
  proto::secure_wipe(recv_buffers_.data() + index * kBuf, bytes.size());
  post_recv(index);
  return result;
}

std::optional<std::uint32_t> Endpoint::send(const proto::Message& message, std::uint16_t version) {
  if (free_sends_.empty()) return std::nullopt;
  const std::uint32_t index = free_sends_.back();
  auto buffer = std::span<std::uint8_t>(send_buffers_.data() + index * kBuf, kBuf);
  const std::size_t length = proto::encode_into(message, buffer, version);
  if (length == 0) throw std::logic_error("message does not encode: a bug in the caller");
  ibv_sge sge;
  auto wr = one_buffer<ibv_send_wr>(sge, buffer.data(), length, send_mr_.lkey(),
                                    make_wr_id(WorkKind::Send, index));
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int err = ::ibv_post_send(qp_, &wr, &bad); err != 0) throw_sys("ibv_post_send", err);
  free_sends_.pop_back();
  sent_bytes_[index] = static_cast<std::uint32_t>(length);
  return index;
}

void Endpoint::send_completed(std::uint32_t index) {
  if (index >= send_depth_) return;
  // A sent message may have carried a secret: it does not outlive its send.
  // Only the encoded bytes were written: a Chunk costs 32, not the whole buffer.
  proto::secure_wipe(send_buffers_.data() + index * kBuf, sent_bytes_[index]);
  free_sends_.push_back(index);
}

void Endpoint::post_write(std::span<const std::uint8_t> local, std::uint32_t lkey,
                          std::uint64_t remote_addr, std::uint32_t rkey, bool signaled,
                          std::uint32_t index) {
  ibv_sge sge;
  auto wr = one_buffer<ibv_send_wr>(sge, local.data(), local.size(), lkey,
                                    make_wr_id(WorkKind::Write, index));
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (int err = ::ibv_post_send(qp_, &wr, &bad); err != 0) throw_sys("ibv_post_send", err);
}

}  // namespace rdmax
