// The window a session's chunks are written into: allocated with the Open's acceptance
// (send_accept), its slots registered when the first file is taken, and each registered
// again when it is credited back to the sender; revoked while its chunk is stored.

#include <spdlog/spdlog.h>

#include "receiver/connection.hpp"

namespace rdmax::receiver {

bool Connection::register_window() {
  if (window_registered_) return true;
  try {
    for (std::uint32_t slot = 0; slot < slot_count_ && window_charge_ > 0; ++slot)
      register_slot(slot);
    window_registered_ = true;
    return true;
  } catch (const std::exception& e) {
    spdlog::error("[{}] cannot register the receive window: {}", label(), e.what());
    for (std::uint32_t slot = 0; slot < slot_keys_.size(); ++slot) revoke_slot(slot);
    return false;
  }
}

void Connection::grant_slot(std::uint32_t slot) {
  if (!ledger_.grant(slot)) return;
  // A slot credited back gets a fresh registration, hence a fresh key; the first time, the
  // one register_window made.
  if (!slot_keys_[slot]) register_slot(slot);
  post(proto::Credit{slot, slot_keys_[slot]->rkey});
}

void Connection::grant_idle_slots() {
  for (std::uint32_t slot = 0; slot < slot_count_ && window_charge_ > 0; ++slot)
    if (ledger_.slot_state(slot) == proto::ReceiveLedger::SlotState::Idle) grant_slot(slot);
}

void Connection::register_slot(std::uint32_t slot) {
  slot_keys_[slot] = transport()->register_memory(slot_bytes(slot), Access::RemoteWrite);
}

void Connection::revoke_slot(std::uint32_t slot) {
  if (!slot_keys_[slot]) return;
  transport()->deregister(*slot_keys_[slot]);
  slot_keys_[slot].reset();
}

std::span<std::uint8_t> Connection::slot_bytes(std::uint32_t slot) {
  const std::size_t size = context_.options.slot_size;
  return window_.subspan(static_cast<std::size_t>(slot) * size, size);
}

}  // namespace rdmax::receiver
