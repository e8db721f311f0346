#include "receiver/receive_window.hpp"

namespace rdmax::receiver {

void ReceiveWindow::allocate(Transport& transport, std::uint32_t slots, std::uint32_t slot_size,
                             std::uint64_t bytes) {
  transport_ = &transport;
  slot_size_ = slot_size;
  in_use_ += bytes;
  bytes_ = bytes;
  if (bytes_ > 0) memory_ = transport.allocate(static_cast<std::size_t>(bytes_));
  keys_.resize(slots);
}

std::optional<std::string> ReceiveWindow::register_slots() {
  if (registered_) return std::nullopt;
  try {
    for (std::uint32_t slot = 0; slot < keys_.size() && bytes_ > 0; ++slot) register_slot(slot);
    registered_ = true;
    return std::nullopt;
  } catch (const std::exception& e) {
    for (std::uint32_t slot = 0; slot < keys_.size(); ++slot) revoke(slot);
    return e.what();
  }
}

std::optional<proto::Credit> ReceiveWindow::grant(proto::ReceiveLedger& ledger,
                                                  std::uint32_t slot) {
  if (!ledger.grant(slot)) return std::nullopt;
  // A slot credited back gets a fresh registration, hence a fresh key; the first time, the
  // one register_slots made.
  if (!keys_[slot]) register_slot(slot);
  return proto::Credit{slot, keys_[slot]->rkey};
}

std::vector<proto::Credit> ReceiveWindow::grant_idle(proto::ReceiveLedger& ledger) {
  std::vector<proto::Credit> credits;
  for (std::uint32_t slot = 0; slot < keys_.size() && bytes_ > 0; ++slot) {
    if (ledger.slot_state(slot) != proto::ReceiveLedger::SlotState::Idle) continue;
    if (auto credit = grant(ledger, slot)) credits.push_back(*credit);
  }
  return credits;
}

void ReceiveWindow::revoke(std::uint32_t slot) {
  if (!keys_[slot]) return;
  transport_->deregister(*keys_[slot]);
  keys_[slot].reset();
}

void ReceiveWindow::revoke_credited(const proto::ReceiveLedger& ledger) {
  for (std::uint32_t slot = 0; slot < keys_.size(); ++slot)
    if (ledger.slot_state(slot) == proto::ReceiveLedger::SlotState::Credited) revoke(slot);
}

std::span<std::uint8_t> ReceiveWindow::slot(std::uint32_t slot) const {
  return memory_.subspan(static_cast<std::size_t>(slot) * slot_size_, slot_size_);
}

void ReceiveWindow::register_slot(std::uint32_t slot) {
  keys_[slot] = transport_->register_memory(this->slot(slot), Access::RemoteWrite);
}

}  // namespace rdmax::receiver
