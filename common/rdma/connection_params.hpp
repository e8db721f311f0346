#pragma once
// The connection parameters both programs use, chosen deliberately (docs/PROTOCOL.md 4.1).

#include <rdma/rdma_cma.h>

#include <cstdint>

namespace rdmax {

// ACK timeout exponent: 4.096 us * 2^17 ~ 0.54 s. With 6 retries a peer that vanished is
// noticed within ~4 s of a send; shorter values misfire under software emulation, where a
// busy host can delay an ACK by hundreds of milliseconds.
inline constexpr std::uint8_t kAckTimeoutExponent = 17;
inline constexpr std::uint8_t kRetryCount = 6;

inline rdma_conn_param reliable_conn_param() {
  rdma_conn_param param{};
  // RDMA WRITE needs no responder resources at the writer's peer; one keeps rdma_cm happy.
  param.initiator_depth = 1;
  param.responder_resources = 1;
  // RC retransmits lost packets itself, 6 times at most. Not 7: Soft-RoCE (rdma_rxe) reads
  // a retry count of 7 as "forever", as the spec does only for RNR retries, and a QP whose
  // peer died unheard (its disconnect lost on a cut wire) then retransmits without end; a
  // receiver waiting on that peer (an entry Held, PROTOCOL.md 7.9) never learns it is gone.
  // The accepting side's QP takes the count from the connect request: the connecting side's
  // value (the sender's; in a fetch the receiver's) governs both.
  // RNR retry 7 means "forever", so a receiver momentarily out of posted receives slows the
  // peer instead of killing it.
  param.retry_count = kRetryCount;
  param.rnr_retry_count = 7;
  return param;
}

}  // namespace rdmax
