#include "receiver/slot_intake.hpp"

#include <algorithm>

#include "common/crypto/seal.hpp"

namespace rdmax::receiver {

SlotIntake::SlotIntake(WorkPool& pool, Transport& transport, std::uint32_t slots,
                       const proto::SealKey* chunk_key)
    : transport_(transport) {
  if (chunk_key != nullptr) chunk_key_ = *chunk_key;
  queues_.reserve(slots);
  for (std::uint32_t i = 0; i < slots; ++i)
    queues_.push_back(std::make_unique<WorkQueue>(pool, "receiver: a slot's keys and openings"));
}

void SlotIntake::take(const proto::FileChunk& chunk, std::optional<Registration> key,
                      std::optional<std::span<std::uint8_t>> bytes, TakenThen then) {
  const std::uint64_t sequence = next_sequence_++;
  pending_.push_back({sequence, false, Taken::Ready, std::move(then)});
  auto taken = std::make_shared<Taken>(Taken::Ready);
  queues_.at(chunk.slot)
      ->post(
          [this, bytes, chunk, key, taken] {
            try {
              if (key) transport_.deregister(*key);
            } catch (...) {
              *taken = Taken::RevokeFailed;
              return;
            }
            if (!chunk_key_ || !bytes) return;
            try {
              const bool opened =
                  chunk.seal &&
                  open_in_place(*chunk_key_, chunk.seal->counter,
                                proto::chunk_aad(chunk.entry, chunk.offset, chunk.length), *bytes,
                                chunk.seal->tag);
              *taken = opened ? Taken::Ready : Taken::DoesNotOpen;
            } catch (...) {
              *taken = Taken::DoesNotOpen;  // OpenSSL failed: the chunk is not believed either way
            }
          },
          [this, sequence, taken] {
            const auto it = std::find_if(pending_.begin(), pending_.end(),
                                         [&](const Pending& p) { return p.sequence == sequence; });
            if (it == pending_.end()) return;  // cancelled meanwhile
            it->done = true;
            it->taken = *taken;
            answer();
          });
}

void SlotIntake::grant(std::uint32_t slot, std::span<std::uint8_t> memory, GrantedThen then) {
  struct Result {
    std::optional<Registration> key;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  queues_.at(slot)->post(
      [this, memory, result] {
        try {
          result->key = transport_.register_memory(memory, Access::RemoteWrite);
        } catch (const std::exception& e) {
          result->error = e.what();
        }
      },
      [result, then = std::move(then)] { then(result->key, result->error); });
}

void SlotIntake::answer() {
  // Each answer may cancel the rest (a chunk that does not open ends the connection).
  while (!pending_.empty() && pending_.front().done) {
    Pending front = std::move(pending_.front());
    pending_.pop_front();
    front.then(front.taken);
  }
}

void SlotIntake::cancel() {
  pending_.clear();
  for (auto& q : queues_) q->cancel();
}

bool SlotIntake::idle() const {
  return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q->idle(); });
}

}  // namespace rdmax::receiver
