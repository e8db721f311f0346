#include "receiver/receive_window.hpp"

#include <utility>

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

std::optional<Registration> ReceiveWindow::take_key(std::uint32_t slot) {
  return std::exchange(keys_[slot], std::nullopt);
}

std::optional<proto::Credit> ReceiveWindow::set_key(std::uint32_t slot, const Registration& key) {
  keys_[slot] = key;
  if (!closed_) return credit(slot);
  revoke(slot);  // registered while the last bytes came in: nobody gets it
  return std::nullopt;
}

std::optional<proto::Credit> ReceiveWindow::credit(std::uint32_t slot) const {
  if (!keys_[slot]) return std::nullopt;
  return proto::Credit{slot, keys_[slot]->rkey};
}

void ReceiveWindow::revoke(std::uint32_t slot) {
  if (!keys_[slot]) return;
  transport_->deregister(*keys_[slot]);
  keys_[slot].reset();
}

void ReceiveWindow::revoke_credited(std::span<const proto::ReceiveSlotState> slots) {
  closed_ = true;
  for (std::uint32_t slot = 0; slot < keys_.size() && slot < slots.size(); ++slot)
    if (slots[slot] == proto::ReceiveSlotState::Credited) revoke(slot);
}

std::span<std::uint8_t> ReceiveWindow::slot(std::uint32_t slot) const {
  return memory_.subspan(static_cast<std::size_t>(slot) * slot_size_, slot_size_);
}

void ReceiveWindow::register_slot(std::uint32_t slot) {
  keys_[slot] = transport_->register_memory(this->slot(slot), Access::RemoteWrite);
}

}  // namespace rdmax::receiver
