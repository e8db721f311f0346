#include "receiver/chunk_opener.hpp"

#include <algorithm>

#include "common/crypto/seal.hpp"

namespace rdmax::receiver {

ChunkOpener::ChunkOpener(WorkPool& pool, std::uint32_t slots, const proto::SealKey& key)
    : key_(key) {
  queues_.reserve(slots);
  for (std::uint32_t i = 0; i < slots; ++i)
    queues_.push_back(std::make_unique<WorkQueue>(pool, "receiver: a slot's openings"));
}

void ChunkOpener::open(const proto::FileChunk& chunk, std::span<std::uint8_t> bytes, Opened then) {
  const std::uint64_t sequence = next_sequence_++;
  pending_.push_back({sequence, false, false, std::move(then)});
  auto opened = std::make_shared<bool>(false);
  queues_.at(chunk.slot)
      ->post(
          [this, bytes, chunk, opened] {
            try {
              *opened = chunk.seal &&
                        open_in_place(key_, chunk.seal->counter,
                                      proto::chunk_aad(chunk.entry, chunk.offset, chunk.length),
                                      bytes, chunk.seal->tag);
            } catch (...) {
              *opened = false;  // OpenSSL failed: the chunk is not believed either way
            }
          },
          [this, sequence, opened] {
            const auto it = std::find_if(pending_.begin(), pending_.end(),
                                         [&](const Pending& p) { return p.sequence == sequence; });
            if (it == pending_.end()) return;  // cancelled meanwhile
            it->done = true;
            it->opened = *opened;
            answer();
          });
}

void ChunkOpener::answer() {
  // Each answer may cancel the rest (a chunk that does not open ends the connection).
  while (!pending_.empty() && pending_.front().done) {
    Pending front = std::move(pending_.front());
    pending_.pop_front();
    front.then(front.opened);
  }
}

void ChunkOpener::cancel() {
  pending_.clear();
  for (auto& q : queues_) q->cancel();
}

bool ChunkOpener::idle() const {
  return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q->idle(); });
}

}  // namespace rdmax::receiver
