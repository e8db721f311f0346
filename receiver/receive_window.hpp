#pragma once
// The window a session's chunks are written into (docs/PROTOCOL.md 5.4): allocated when the
// Open is accepted, the process's own memory until the first file is taken, then registered
// a slot at a time. A slot's key is revoked as soon as its FileChunk arrives (nothing
// legitimate still lands there: RC delivers in order) and a fresh one is made when the slot
// is credited back, so that a key the sender no longer holds writes nothing; both on workers
// (receiver/slot_intake.hpp), the window handing the key out and taking the new one in. The ledger
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

// The receives a connection keeps posted (and the sends it may have in flight) for a window of
// `slots`: a Chunk per slot, an Offer and a FileDone per entry in flight towards us and a Take
// (or Refuse) and a FileVerdict towards the sender (docs/PROTOCOL.md 4.2, 7.5), and a few
// other messages that can accompany them.
[[nodiscard]] constexpr std::uint32_t control_depth(std::uint32_t slots) {
  return slots + 2 * proto::kMaxEntriesInFlight + 8;
}

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
  Transport& transport() const { return *transport_; }
  std::uint64_t address() const { return reinterpret_cast<std::uintptr_t>(memory_.data()); }
  // The first file taken: every slot registered. The error, if one could not be (then none is).
  std::optional<std::string> register_slots();
  // The slot's key, taken out of the window to be revoked (receiver/slot_intake.hpp), if it
  // has one.
  std::optional<Registration> take_key(std::uint32_t slot);
  // A fresh key of the slot (SlotIntake::grant); the slot's Credit may carry it, unless the
  // window closed meanwhile: then it is revoked at once and none is returned.
  std::optional<proto::Credit> set_key(std::uint32_t slot, const Registration& key);
  // The slot's Credit if it holds a key now (none: a fresh one must be registered first).
  std::optional<proto::Credit> credit(std::uint32_t slot) const;
  // No key of the slot works from here.
  void revoke(std::uint32_t slot);
  // Once no byte may come: every slot still credited revoked, and no key set from here on.
  void revoke_credited(std::span<const proto::ReceiveSlotState> slots);
  bool closed() const { return closed_; }
  std::span<std::uint8_t> slot(std::uint32_t slot) const;

 private:
  void register_slot(std::uint32_t slot);

  std::uint64_t& in_use_;
  Transport* transport_ = nullptr;
  std::uint32_t slot_size_ = 0;
  std::uint64_t bytes_ = 0;
  std::span<std::uint8_t> memory_;  // the transport's allocation
  bool registered_ = false;
  bool closed_ = false;                            // revoke_credited(): no byte may come
  std::vector<std::optional<Registration>> keys_;  // engaged: the slot is registered
};

}  // namespace rdmax::receiver
