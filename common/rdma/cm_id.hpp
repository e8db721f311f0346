#pragma once

#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/rdma/event_channel.hpp"
#include "common/rdma/owned.hpp"

namespace rdmax {

inline constexpr char kDestroyId[] = "rdma_destroy_id";

// Owns an rdma_cm_id (RDMA_PS_TCP, i.e. a reliable connected QP).
//
// Lifetime: destroy a CmId after the QueuePair created on it and the device resources
// (PD, CQ, MRs) of its connection, before the EventChannel it was created on, and only
// after every CmEvent naming it has been acked. common/rdma/rdma_transport.hpp is the
// owner that encodes this order.
//
// Setup calls throw SysError; results of the asynchronous steps (ADDR_RESOLVED,
// ESTABLISHED, ...) arrive as CM events on the channel.
class CmId {
 public:
  explicit CmId(EventChannel& channel, void* context = nullptr);
  // Takes ownership of the new id from a CONNECT_REQUEST event (event->id).
  static CmId adopt(rdma_cm_id* id) noexcept;

  // Active side. `host` is a name, an IPv4 or an IPv6 literal (brackets allowed).
  // `source`: the local address to connect from (and so the device), or null: the route's.
  void resolve_addr(const char* host, uint16_t port, std::chrono::milliseconds timeout,
                    const char* source = nullptr);
  void resolve_route(std::chrono::milliseconds timeout);
  void connect(rdma_conn_param& param);

  // Passive side. A null address binds 0.0.0.0 (IPv4 any); pass "::" for IPv6. Port 0
  // picks an ephemeral port, see local_port().
  void bind_and_listen(const char* addr_or_null, uint16_t port, int backlog);
  void accept(rdma_conn_param& param);
  void reject(const void* private_data, uint8_t length);

  // rdma_disconnect. It fails only when the connection is gone already (the peer left, or
  // it never connected), which is what the caller wants anyway: nothing to report.
  void disconnect() noexcept;
  // The RC ACK timeout, as the exponent of 4.096 us * 2^exponent (14 ~ 67 ms, 17 ~ 0.5 s).
  // With retry_count 6 it bounds how long a dead peer goes unnoticed while sending.
  void set_ack_timeout(std::uint8_t exponent);

  ibv_context* verbs() const noexcept { return id_->verbs; }
  rdma_cm_id* get() const noexcept { return id_.get(); }
  void set_context(void* context) noexcept { id_->context = context; }

  // Printable "ip:port" ("[ip6]:port" for IPv6); empty while unknown.
  std::string peer_address() const;
  std::string local_address() const;
  uint16_t local_port() const noexcept;

 private:
  explicit CmId(rdma_cm_id* id) noexcept : id_(id) {}

  Owned<rdma_cm_id, ::rdma_destroy_id, kDestroyId, true> id_;
};

// "ip:port" / "[ip6]:port" for AF_INET and AF_INET6, empty for anything else.
std::string sockaddr_to_string(const sockaddr* addr);
// "HOST:PORT" for a host name or address as the user wrote it, with an IPv6 literal in
// brackets ("[fd00::1]:18515"), as sockaddr_to_string writes resolved addresses.
std::string host_and_port(const std::string& host, std::uint16_t port);

}  // namespace rdmax
