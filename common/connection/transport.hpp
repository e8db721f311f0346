#pragma once
// The seam between a connection driver and the wire. A driver (receiver/connection.hpp,
// sender/connection.hpp) posts control messages and RDMA WRITEs and registers memory
// through a Transport; what comes back (received messages, send completions, a broken
// queue pair) reaches it through the TransportSink it passes to poll(). Two implementations
// exist: the verbs/rdma_cm one (common/rdma/rdma_transport.hpp) and an in-memory fake the
// unit tests drive message by message (tests/unit/fake_transport.hpp).
//
// Threads: register_memory() and deregister() may be called from any thread (the receiver
// grants and revokes its slots' keys on workers, so that no per-chunk system call runs on
// its loop); every other call only from the driver's loop.
//
// Error model: every Transport call that cannot do its job throws (TransportError for a
// peer that does not keep up, SysError for a failed verbs call); the driver's one dispatch
// guard turns that into a local failure of that connection (common/connection/driver_core.hpp).

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>

#include "protocol/wire.hpp"

namespace rdmax {

// Posting failed for a reason that is the peer's, not ours: every send buffer is in flight
// because the peer does not acknowledge.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A registered memory region: `handle` names it to the transport; lkey and rkey are the
// keys the hardware knows it by.
struct Registration {
  std::uint32_t handle = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

enum class Access : std::uint8_t {
  LocalRead,    // the source of our RDMA WRITEs
  RemoteWrite,  // a window the peer RDMA WRITEs into
};

// A received SEND: the version in its header (0 if it had none) and what it decoded to.
struct Inbound {
  std::uint16_t version = 0;
  std::variant<proto::Message, proto::DecodeFailure> decoded;
};

class TransportSink {
 public:
  virtual void on_received(Inbound inbound) = 0;
  // A SEND posted with this tag completed: the peer's adapter acknowledged it.
  virtual void on_send_completed(std::uint64_t tag) = 0;
  // A work completion failed: the queue pair is unusable.
  virtual void on_transport_failed(const std::string& why) = 0;

 protected:
  ~TransportSink() = default;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Posts one control message encoded in `version`; `tag` comes back in on_send_completed.
  virtual void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) = 0;
  // SENDs posted whose completion has not been delivered yet.
  virtual std::uint32_t sends_in_flight() const = 0;

  // RDMA WRITE of `local` (inside `source`, registered with Access::LocalRead) to
  // (remote_addr, rkey). Unsignaled: the signaled SEND that follows it on the same queue
  // pair completes after it.
  virtual void write(const Registration& source, std::span<const std::uint8_t> local,
                     std::uint64_t remote_addr, std::uint32_t rkey) = 0;

  // Registers memory the caller keeps alive for as long as this transport exists (or uses
  // allocate()). Throws SysError, with the memlock hint where that explains it.
  virtual Registration register_memory(std::span<std::uint8_t> memory, Access access) = 0;
  // Revokes a registration: from now on its keys fail at the peer's adapter. Throws if the
  // device refused: then the keys may still work, and the memory must not be trusted.
  virtual void deregister(const Registration& registration) = 0;
  // Page-aligned memory that lives exactly as long as this transport.
  virtual std::span<std::uint8_t> allocate(std::size_t bytes) = 0;

  // Delivers every completion that has arrived, in order.
  virtual void poll(TransportSink& sink) = 0;
  // rdma_disconnect: the peer sees DISCONNECTED. Idempotent; never throws.
  virtual void disconnect() noexcept = 0;
  // Moves the queue pair to the error state: nothing more lands in registered memory and
  // nothing more is sent. Never throws.
  virtual void shut_down() noexcept = 0;
};

}  // namespace rdmax
