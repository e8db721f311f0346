#pragma once
// The sender's data-phase rules for one file (docs/PROTOCOL.md 5.2-5.3) as the sender applies
// them: a session of one file entry in its SendLedger, which is how rdma-send sends
// every file (a single file too, and to a version-1 receiver through its edge,
// sender/version1_transport.hpp). The one-file view of that ledger, for the tests that pin
// the one-file rules (send_ledger_test.cpp) and run them against the receiver's
// (ledger_simulation_test.cpp, tests/fuzz/fuzz_ledgers.cpp). Which slots are credited and
// busy is followed from what the ledger accepted, so that a test can show that a refused
// call changed nothing.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/chunk_plan.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"

namespace rdmax::test {

class OneFileSendLedger {
 public:
  // One chunk to RDMA WRITE now, then announce with Chunk{offset, length, slot}.
  struct Planned {
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
    bool operator==(const Planned&) const = default;
  };

  OneFileSendLedger() = default;
  // At most `max_active_slots` slots are written (0 is taken as 1), and no more than the file
  // has chunks (so none for an empty file), as the session driver asks of its ledger.
  // `start`: a Resume's offset (PROTOCOL.md 7.6).
  OneFileSendLedger(std::uint64_t file_size, const proto::Accept& accept,
                    std::uint32_t max_active_slots, std::uint64_t start = 0)
      : plan_{file_size, accept.slot_size},
        active_(static_cast<std::uint32_t>(std::min<std::uint64_t>(
            std::min(accept.slot_count, std::max(max_active_slots, 1U)), plan_.chunk_count()))),
        start_(start),
        ledger_({{proto::EntryKind::File, file_size}}, accept, std::max(active_, 1U)),
        credited_(accept.slot_count, false),
        busy_(accept.slot_count, false) {
    (void)ledger_.next_offer();
    (void)ledger_.taken(0, start);
  }

  [[nodiscard]] std::optional<proto::CreditError> credit(const proto::Credit& c) {
    auto error = ledger_.credit(c);
    if (!error) credited_[c.slot] = true;
    return error;
  }
  [[nodiscard]] std::optional<Planned> next() {
    const auto p = ledger_.next_chunk();
    if (!p) return std::nullopt;
    credited_[p->slot] = false;
    busy_[p->slot] = true;
    bytes_sent_ += p->length;
    return Planned{p->slot, p->offset, p->length, p->remote_addr, p->rkey};
  }
  std::uint32_t completed(std::uint32_t slot) {
    const std::uint32_t length = ledger_.completed(slot);
    if (length > 0) busy_[slot] = false;
    return length;
  }

  bool all_done() const {
    return bytes_sent_ == plan_.file_size - std::min(start_, plan_.file_size) &&
           ledger_.bytes_completed() == bytes_sent_;
  }
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  std::uint64_t bytes_completed() const { return ledger_.bytes_completed(); }
  std::uint32_t active_slots() const { return active_; }
  std::uint32_t slot_count() const { return static_cast<std::uint32_t>(credited_.size()); }
  bool credited(std::uint32_t slot) const { return slot < credited_.size() && credited_[slot]; }
  bool busy(std::uint32_t slot) const { return slot < busy_.size() && busy_[slot]; }
  const proto::ChunkPlan& plan() const { return plan_; }

 private:
  proto::ChunkPlan plan_{};
  std::uint32_t active_ = 0;
  std::uint64_t start_ = 0;
  proto::SendLedger ledger_;
  std::vector<bool> credited_;
  std::vector<bool> busy_;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace rdmax::test
