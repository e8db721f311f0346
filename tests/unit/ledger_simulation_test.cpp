#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "one_file_receive_ledger.hpp"
#include "one_file_send_ledger.hpp"

// The sender's and the receiver's ledgers of one file (each a session of one entry,
// one_file_send_ledger.hpp and one_file_receive_ledger.hpp) talking to each other the way the
// programs do (docs/PROTOCOL.md 5.2-5.5), with the file's bytes really carried: the sender "RDMA
// WRITEs" into the receiver's slot memory, which only works with the key the receiver last
// granted and has not revoked; the receiver copies a slot to the output when it stores the
// chunk. Every legal interleaving is fair game: messages in each direction arrive in order
// (one RC queue pair) but at any time relative to the other direction, SEND completions and
// stores finish in any order. Each run asserts that neither side ever reports an error,
// that the sender always has a chunk to send when the rules allow one, and that the output
// is the file, every byte written exactly once, the chunks accepted in file order.

namespace {

using namespace rdmax::proto;
using ReceiveLedger = rdmax::test::OneFileReceiveLedger;
using SendLedger = rdmax::test::OneFileSendLedger;

constexpr std::uint64_t kRegion = 0x5500'0000'0000;

struct Config {
  std::uint64_t file_size = 0;
  std::uint32_t slot_size = 1;
  std::uint32_t slot_count = 1;  // announced by the receiver
  std::uint32_t max_active = 1;  // the sender's limit
  std::uint64_t seed = 0;

  std::string describe() const {
    return "file_size=" + std::to_string(file_size) + " slot_size=" + std::to_string(slot_size) +
           " slot_count=" + std::to_string(slot_count) +
           " max_active=" + std::to_string(max_active) + " seed=" + std::to_string(seed);
  }
};

std::uint8_t file_byte(std::uint64_t offset) {
  return static_cast<std::uint8_t>(((offset * 2654435761ULL) >> 7) ^ offset);
}

class Simulation {
 public:
  explicit Simulation(const Config& config)
      : config_(config),
        random_(config.seed),
        sender_(config.file_size, Accept{kRegion, 0, config.slot_size, config.slot_count},
                config.max_active),
        receiver_(config.file_size, config.slot_size, config.slot_count),
        slot_memory_(config.slot_count, std::vector<std::uint8_t>(config.slot_size)),
        slot_key_(config.slot_count, kRevoked),
        output_(config.file_size),
        writes_(config.file_size) {
    // Each run favours some events over others, so that both starved and flooded
    // schedules occur (e.g. credits piling up, or every slot waiting for a store).
    for (unsigned& w : weights_) w = 1 + static_cast<unsigned>(random_() % 10);
  }

  void run() {
    // Right after Accept: a Credit for every slot, none for an empty file.
    for (std::uint32_t s = 0; s < config_.slot_count; ++s) {
      ASSERT_EQ(receiver_.grant(s), config_.file_size > 0) << "slot " << s;
      if (config_.file_size > 0) send_credit(s);
    }
    std::uint64_t steps = 0;
    while (!finished()) {
      ASSERT_LT(++steps, 100'000'000U);
      const std::vector<Event> enabled = enabled_events();
      ASSERT_FALSE(enabled.empty()) << "deadlock after " << steps << " steps";
      step(pick(enabled));
      if (::testing::Test::HasFatalFailure()) return;
      check_invariants();
      if (::testing::Test::HasFatalFailure()) return;
    }
    check_result();
  }

 private:
  enum Event : std::size_t {
    SendNext,
    SendCompletes,
    ChunkArrives,
    Store,
    CreditArrives,
    SendDone
  };
  static constexpr std::size_t kEvents = 6;
  static constexpr std::uint32_t kRevoked = 0;

  struct InFlight {
    std::uint32_t slot;
    std::uint32_t length;
  };

  bool finished() const {
    return done_sent_ && receiver_closed_ && to_receiver_.empty() && to_sender_.empty() &&
           in_flight_.empty() && storing_.empty();
  }

  bool sender_can_send() const {
    if (done_sent_ || sender_.bytes_sent() >= config_.file_size) return false;
    for (std::uint32_t s = 0; s < sender_.active_slots(); ++s)
      if (sender_.credited(s) && !sender_.busy(s)) return true;
    return false;
  }

  std::vector<Event> enabled_events() const {
    std::vector<Event> events;
    if (sender_can_send()) events.push_back(SendNext);
    if (!in_flight_.empty()) events.push_back(SendCompletes);
    if (!to_receiver_.empty()) events.push_back(ChunkArrives);
    if (!storing_.empty()) events.push_back(Store);
    if (!to_sender_.empty()) events.push_back(CreditArrives);
    if (!done_sent_ && sender_.all_done()) events.push_back(SendDone);
    return events;
  }

  Event pick(const std::vector<Event>& enabled) {
    unsigned total = 0;
    for (Event e : enabled) total += weights_[e];
    unsigned r = static_cast<unsigned>(random_() % total);
    for (Event e : enabled) {
      if (r < weights_[e]) return e;
      r -= weights_[e];
    }
    return enabled.back();
  }

  std::size_t random_index(std::size_t size) { return static_cast<std::size_t>(random_() % size); }

  void step(Event e) {
    switch (e) {
      case SendNext:
        return send_next();
      case SendCompletes:
        return send_completes();
      case ChunkArrives:
        return chunk_arrives();
      case Store:
        return store();
      case CreditArrives:
        return credit_arrives();
      case SendDone:
        done_sent_ = true;
        to_receiver_.push_back(Done{sender_.bytes_completed()});
        return;
    }
  }

  void send_next() {
    const auto p = sender_.next();
    ASSERT_TRUE(p.has_value()) << "a slot is credited and free, yet no chunk";
    ASSERT_LT(p->slot, sender_.active_slots());
    const std::uint64_t left = config_.file_size - sent_;
    ASSERT_EQ(p->offset, sent_);
    ASSERT_EQ(p->length, std::min<std::uint64_t>(config_.slot_size, left));
    ASSERT_EQ(p->remote_addr, kRegion + std::uint64_t{p->slot} * config_.slot_size);
    // The RDMA WRITE: fails unless the key is the slot's current, unrevoked one.
    ASSERT_NE(slot_key_[p->slot], kRevoked) << "write to revoked slot " << p->slot;
    ASSERT_EQ(p->rkey, slot_key_[p->slot]) << "stale key for slot " << p->slot;
    for (std::uint32_t i = 0; i < p->length; ++i)
      slot_memory_[p->slot][i] = file_byte(p->offset + i);
    sent_ += p->length;
    to_receiver_.push_back(Chunk{p->offset, p->length, p->slot});
    in_flight_.push_back(InFlight{p->slot, p->length});
  }

  void send_completes() {
    const std::size_t i = random_index(in_flight_.size());
    const InFlight done = in_flight_[i];
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    ASSERT_TRUE(sender_.busy(done.slot));
    ASSERT_EQ(sender_.completed(done.slot), done.length);
    ASSERT_FALSE(sender_.busy(done.slot));
  }

  void chunk_arrives() {
    const auto message = to_receiver_.front();
    to_receiver_.pop_front();
    if (const auto* done = std::get_if<Done>(&message)) {
      // RC order: every Chunk arrived before Done.
      ASSERT_EQ(done->total_bytes, config_.file_size);
      ASSERT_EQ(receiver_.received(), config_.file_size);
      receiver_.close();
      receiver_closed_ = true;
      std::fill(slot_key_.begin(), slot_key_.end(), kRevoked);
      return;
    }
    const Chunk& chunk = std::get<Chunk>(message);
    const auto error = receiver_.accept_chunk(chunk);
    ASSERT_EQ(error, std::nullopt) << to_string(*error) << " for chunk at " << chunk.offset;
    ASSERT_EQ(chunk.offset, accepted_);  // in file order, nothing skipped or repeated
    accepted_ += chunk.length;
    ASSERT_EQ(receiver_.received(), accepted_);
    ASSERT_EQ(receiver_.state(chunk.slot), ReceiveLedger::SlotState::Storing);
    slot_key_[chunk.slot] = kRevoked;
    storing_.push_back(chunk);
  }

  void store() {
    const std::size_t i = random_index(storing_.size());
    const Chunk chunk = storing_[i];
    storing_.erase(storing_.begin() + static_cast<std::ptrdiff_t>(i));
    for (std::uint32_t b = 0; b < chunk.length; ++b) {
      output_[chunk.offset + b] = slot_memory_[chunk.slot][b];
      ++writes_[chunk.offset + b];
    }
    const bool again = receiver_.stored(chunk.slot);
    ASSERT_EQ(again, !receiver_.complete() && !receiver_closed_);
    if (again) {
      ASSERT_TRUE(receiver_.grant(chunk.slot));
      send_credit(chunk.slot);
    }
  }

  void send_credit(std::uint32_t slot) {
    slot_key_[slot] = next_key_++;  // registered again: a fresh key
    to_sender_.push_back(Credit{slot, slot_key_[slot]});
  }

  void credit_arrives() {
    const Credit credit = to_sender_.front();
    to_sender_.pop_front();
    const auto error = sender_.credit(credit);
    ASSERT_EQ(error, std::nullopt) << to_string(*error) << " for slot " << credit.slot;
    ASSERT_TRUE(sender_.credited(credit.slot));
  }

  void check_invariants() {
    ASSERT_LE(sender_.bytes_completed(), sender_.bytes_sent());
    ASSERT_LE(sender_.bytes_sent(), config_.file_size);
    ASSERT_EQ(sender_.bytes_sent(), sent_);
    ASSERT_LE(receiver_.received(), sender_.bytes_sent());
    ASSERT_EQ(receiver_.storing(), storing_.size());
  }

  void check_result() {
    EXPECT_TRUE(sender_.all_done());
    EXPECT_EQ(sender_.bytes_sent(), config_.file_size);
    EXPECT_EQ(sender_.bytes_completed(), config_.file_size);
    EXPECT_TRUE(receiver_.complete());
    EXPECT_EQ(receiver_.received(), config_.file_size);
    EXPECT_EQ(receiver_.storing(), 0U);
    for (std::uint32_t s = 0; s < config_.slot_count; ++s)
      EXPECT_EQ(receiver_.state(s), ReceiveLedger::SlotState::Idle) << "slot " << s;
    for (std::uint64_t i = 0; i < config_.file_size; ++i) {
      ASSERT_EQ(writes_[i], 1U) << "byte " << i;
      ASSERT_EQ(output_[i], file_byte(i)) << "byte " << i;
    }
  }

  Config config_;
  std::mt19937_64 random_;
  std::array<unsigned, kEvents> weights_{};
  SendLedger sender_;
  ReceiveLedger receiver_;
  std::vector<std::vector<std::uint8_t>> slot_memory_;
  std::vector<std::uint32_t> slot_key_;  // the receiver's registration of each slot
  std::uint32_t next_key_ = 1;
  std::deque<std::variant<Chunk, Done>> to_receiver_;
  std::deque<Credit> to_sender_;
  std::vector<InFlight> in_flight_;  // Chunk SENDs not yet completed at the sender
  std::vector<Chunk> storing_;       // accepted, not yet stored
  std::vector<std::uint8_t> output_;
  std::vector<unsigned> writes_;
  std::uint64_t sent_ = 0;
  std::uint64_t accepted_ = 0;
  bool done_sent_ = false;
  bool receiver_closed_ = false;
};

void simulate(const Config& config) {
  SCOPED_TRACE(config.describe());
  Simulation(config).run();
}

TEST(LedgerSimulation, EdgeSizes) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    simulate({0, 16, 1, 1, seed});           // empty
    simulate({0, 16, 4, 8, seed});           // empty, several slots
    simulate({1, 16, 1, 1, seed});           // one byte
    simulate({1, 16, 4, 4, seed});           // one byte, credits above the active slot
    simulate({16, 16, 2, 2, seed});          // exactly one slot
    simulate({5 * 16, 16, 3, 3, seed});      // exact multiple
    simulate({5 * 16 + 1, 16, 3, 3, seed});  // one byte over
    simulate({100, 1, 3, 2, seed});          // one-byte slots
    simulate({500, 7, 8, 3, seed});          // more slots announced than used
    simulate({500, 7, 2, 64, seed});         // more wanted than announced
    simulate({500, 7, 1, 1, seed});          // strictly one at a time
  }
}

TEST(LedgerSimulation, RandomSchedules) {
  std::mt19937_64 random(20261122);
  for (int run = 0; run < 400; ++run) {
    Config config;
    config.slot_size = static_cast<std::uint32_t>(1 + random() % 48);
    switch (random() % 4) {  // multiples, near-multiples and anything
      case 0:
        config.file_size = config.slot_size * (random() % 60);
        break;
      case 1:
        config.file_size = config.slot_size * (random() % 60) + 1;
        break;
      default:
        config.file_size = random() % 2000;
    }
    config.slot_count = static_cast<std::uint32_t>(1 + random() % 8);
    config.max_active = static_cast<std::uint32_t>(1 + random() % 10);
    config.seed = random();
    simulate(config);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
