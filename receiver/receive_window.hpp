#pragma once
// The window a session's chunks are written into (docs/PROTOCOL.md 5.4): allocated when the
// Open is accepted, the process's own memory until the first file is taken, then registered
// a slot at a time. A slot's key is revoked as soon as its FileChunk arrives (nothing
// legitimate still lands there: RC delivers in order) and a fresh one is made when the slot
// is credited back, so that a key the sender no longer holds writes nothing. The ledger
// (protocol/receive_ledger.hpp) says which slot may be credited; this owns the memory and
// the keys. The window's bytes count against --max-memory while it lives.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/connection/transport.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

class ReceiveWindow {
 public:
  // `in_use`: the bytes the windows of every connection hold (the daemon's count).
  explicit ReceiveWindow(std::uint64_t& in_use) : in_use_(in_use) {}
  ReceiveWindow(const ReceiveWindow&) = delete;
  ReceiveWindow& operator=(const ReceiveWindow&) = delete;
  ~ReceiveWindow() { in_use_ -= bytes_; }

  // The Open was accepted: `slots` slots of `slot_size` bytes (`bytes` in all; 0: none).
  void allocate(Transport& transport, std::uint32_t slots, std::uint32_t slot_size,
                std::uint64_t bytes);
  std::uint64_t address() const { return reinterpret_cast<std::uintptr_t>(memory_.data()); }
  // The first file taken: every slot registered. The error, if one could not be (then none is).
  std::optional<std::string> register_slots();
  // The slot's Credit, if the ledger lets it be credited now (with a fresh key if its last was
  // revoked); the idle slots' Credits.
  std::optional<proto::Credit> grant(proto::ReceiveLedger& ledger, std::uint32_t slot);
  std::vector<proto::Credit> grant_idle(proto::ReceiveLedger& ledger);
  // No key of the slot works from here; of every slot still credited, once no byte may come.
  void revoke(std::uint32_t slot);
  void revoke_credited(const proto::ReceiveLedger& ledger);
  std::span<std::uint8_t> slot(std::uint32_t slot) const;

 private:
  void register_slot(std::uint32_t slot);

  std::uint64_t& in_use_;
  Transport* transport_ = nullptr;
  std::uint32_t slot_size_ = 0;
  std::uint64_t bytes_ = 0;
  std::span<std::uint8_t> memory_;  // the transport's allocation
  bool registered_ = false;
  std::vector<std::optional<Registration>> keys_;  // engaged: the slot is registered
};

}  // namespace rdmax::receiver
