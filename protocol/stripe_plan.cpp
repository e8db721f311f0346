#include "protocol/stripe_plan.hpp"

#include <algorithm>
#include <stdexcept>

namespace rdmax::proto {

StripePlan::StripePlan(std::uint64_t size, std::uint32_t chunk_size, std::uint64_t from,
                       std::uint16_t members)
    : size_(size), chunk_size_(chunk_size), next_(from), prefix_(from), members_(members) {
  if (chunk_size == 0) throw std::invalid_argument("a stripe plan needs a chunk size");
  if (members == 0) throw std::invalid_argument("a stripe plan needs a member");
  // A resume starts on the chunk grid and leaves something to send (7.6); a whole file
  // from 0 may be empty.
  if (from % chunk_size != 0 || (from > 0 && from >= size))
    throw std::invalid_argument("a stripe plan starts on the chunk grid, inside the file");
}

std::uint32_t StripePlan::length_at(std::uint64_t offset) const {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(chunk_size_, size_ - offset));
}

std::optional<StripePlan::Chunk> StripePlan::next(std::uint16_t member) {
  if (interrupted_ || member >= members_.size() || members_[member].lost || next_ >= size_)
    return std::nullopt;
  const Chunk chunk{next_, length_at(next_)};
  next_ += chunk.length;
  Member& m = members_[member];
  m.in_flight.insert(chunk.offset);
  m.handed += chunk.length;
  return chunk;
}

std::optional<std::uint32_t> StripePlan::peek(std::uint16_t member) const {
  if (interrupted_ || member >= members_.size() || members_[member].lost || next_ >= size_)
    return std::nullopt;
  return length_at(next_);
}

bool StripePlan::stored(std::uint16_t member, std::uint64_t offset) {
  if (member >= members_.size()) return false;
  Member& m = members_[member];
  if (m.in_flight.erase(offset) == 0) return false;
  m.stored += length_at(offset);
  // The prefix grows over this chunk and every one stored ahead of it that now joins.
  if (offset != prefix_) {
    stored_ahead_.insert(offset);
    return true;
  }
  prefix_ += length_at(offset);
  for (auto it = stored_ahead_.begin(); it != stored_ahead_.end() && *it == prefix_;
       it = stored_ahead_.erase(it))
    prefix_ += length_at(*it);
  return true;
}

std::uint64_t StripePlan::lose(std::uint16_t member) {
  if (member < members_.size()) {
    Member& m = members_[member];
    m.lost = true;
    m.in_flight.clear();
  }
  interrupted_ = true;
  return prefix_;
}

bool StripePlan::member_done(std::uint16_t member) const {
  if (member >= members_.size()) return true;
  const Member& m = members_[member];
  return m.lost || ((next_ >= size_ || interrupted_) && m.in_flight.empty());
}

std::uint64_t StripePlan::handed(std::uint16_t member) const {
  return member < members_.size() ? members_[member].handed : 0;
}

std::uint64_t StripePlan::stored_by(std::uint16_t member) const {
  return member < members_.size() ? members_[member].stored : 0;
}

std::size_t StripePlan::in_flight(std::uint16_t member) const {
  return member < members_.size() ? members_[member].in_flight.size() : 0;
}

}  // namespace rdmax::proto
