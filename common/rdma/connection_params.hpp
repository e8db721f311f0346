#pragma once
// The connection parameters both programs use, chosen deliberately (docs/PROTOCOL.md 4.1).

#include <rdma/rdma_cma.h>

#include <cstdint>

namespace rdmax {

// ACK timeout exponent: 4.096 us * 2^17 ~ 0.54 s. With 7 retries a peer that vanished is
// noticed within ~4 s of a send; shorter values misfire under software emulation, where a
// busy host can delay an ACK by hundreds of milliseconds.
inline constexpr std::uint8_t kAckTimeoutExponent = 17;

inline rdma_conn_param reliable_conn_param() {
  rdma_conn_param param{};
  // RDMA WRITE needs no responder resources at the writer's peer; one keeps rdma_cm happy.
  param.initiator_depth = 1;
  param.responder_resources = 1;
  // RC retransmits lost packets itself: 7 is the maximum. RNR retry 7 means "forever", so
  // a receiver momentarily out of posted receives slows the peer instead of killing it.
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  return param;
}

}  // namespace rdmax
