#include "sender/chunk_reads.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/crypto/seal.hpp"
#include "common/error.hpp"

namespace rdmax::sender {

void read_fully(int fd, std::uint8_t* out, std::size_t length, std::uint64_t offset) {
  while (length > 0) {
    ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_sys("pread");
    if (n == 0) throw std::runtime_error("the file shrank while it was being sent");
    out += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

ChunkReads::ChunkReads(WorkPool* pool, std::uint32_t slots, std::function<void()> ready,
                       ChunkRead read, std::optional<proto::SealKey> seal_key)
    : pool_(pool), ready_(std::move(ready)), read_(std::move(read)), seal_key_(seal_key) {
  if (!read_) {
    read_ = [](int fd, std::span<std::uint8_t> into, std::uint64_t offset) {
      read_fully(fd, into.data(), into.size(), offset);
    };
  }
  if (pool_ != nullptr) {
    queues_.reserve(slots);
    for (std::uint32_t i = 0; i < slots; ++i)
      queues_.push_back(std::make_unique<WorkQueue>(*pool_, "sender: a slot's reads"));
  }
}

ChunkReads::Pending* ChunkReads::find(std::uint64_t sequence) {
  if (chunks_.empty() || sequence < chunks_.front().sequence) return nullptr;
  const auto index = static_cast<std::size_t>(sequence - chunks_.front().sequence);
  return index < chunks_.size() ? &chunks_[index] : nullptr;
}

void ChunkReads::read(const Planned& chunk, std::shared_ptr<const InputFile> file,
                      std::span<std::uint8_t> into, Registration source,
                      FileHasher::ChunkNodes nodes) {
  const std::uint64_t sequence = next_sequence_++;
  chunks_.push_back({sequence, {chunk, source, {}, {}, {}, {}, {}}, false});
  into = into.first(chunk.length);
  // What the job finds, for its completion.
  struct Found {
    std::string error, hash_error;
    std::optional<proto::ChunkSeal> seal;
    std::optional<std::vector<merkle::Node>> nodes;
  };
  auto found = std::make_shared<Found>();
  if (seal_key_) found->seal.emplace().counter = next_seal_++;
  auto work = [this, fd = file->fd(), into, planned = chunk, nodes = std::move(nodes), found] {
    try {
      read_(fd, into, planned.offset);
    } catch (const std::exception& e) {
      found->error = e.what();
      return;
    } catch (...) {
      found->error = "the read failed";
      return;
    }
    if (nodes) {
      try {
        nodes(planned.offset, into, found->nodes.emplace());
      } catch (const std::exception& e) {
        found->hash_error = e.what();
      }
    }
    if (found->seal) {
      try {
        found->seal->tag =
            seal_in_place(*seal_key_, found->seal->counter,
                          proto::chunk_aad(planned.entry, planned.offset, planned.length), into);
      } catch (const std::exception& e) {
        found->error = std::string("sealing failed: ") + e.what();
      }
    }
  };
  // False: stopped meanwhile, nothing is waiting for it.
  auto done = [this, sequence, into, found] {
    Pending* p = find(sequence);
    if (p == nullptr) return false;
    p->done = true;
    p->chunk.error = std::move(found->error);
    if (p->chunk.error.empty()) {
      p->chunk.bytes = into;
      p->chunk.seal = found->seal;
      p->chunk.nodes = std::move(found->nodes);
      p->chunk.hash_error = std::move(found->hash_error);
    }
    return true;
  };
  if (pool_ == nullptr || chunk.slot >= queues_.size()) {
    work();
    done();
    return;
  }
  // The file is let go on the loop, once its read is over.
  queues_[chunk.slot]->post(std::move(work), [this, done, file = std::move(file)] {
    if (done()) ready_();
  });
}

void ChunkReads::add_ready(const Planned& chunk, Registration source,
                           std::span<const std::uint8_t> bytes) {
  if (seal_key_) throw std::logic_error("a chunk in a file's mapping cannot be sealed");
  chunks_.push_back({next_sequence_++, {chunk, source, bytes, {}, {}, {}, {}}, true});
}

std::optional<ChunkReads::Chunk> ChunkReads::next() {
  if (chunks_.empty() || !chunks_.front().done) return std::nullopt;
  Chunk chunk = std::move(chunks_.front().chunk);
  chunks_.pop_front();
  return chunk;
}

void ChunkReads::cancel() {
  chunks_.clear();  // the reads' `done`s find nothing now
  for (auto& q : queues_) q->cancel();
}

bool ChunkReads::running() const {
  for (const auto& q : queues_)
    if (q->running()) return true;
  return false;
}

void ChunkReads::stop() {
  cancel();
  // A read cannot be interrupted: it writes into the buffer its owner is about to free. Only
  // that is waited for, not the completions of reads already over (they touch no buffer and
  // find nothing): this may run inside another completion, whose batch holds them.
  while (running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace rdmax::sender
