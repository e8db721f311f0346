#include "sender/chunk_reads.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/crypto/seal.hpp"
#include "common/error.hpp"
#include "common/work/work_emulation.hpp"

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
                       ReadFn read, std::optional<Sealing> sealing)
    : pool_(pool), ready_(std::move(ready)), read_(std::move(read)), sealing_(std::move(sealing)) {
  if (!read_) {
    read_ = [](int fd, std::span<std::uint8_t> into, std::uint64_t offset) {
      if (!emulation::instead(emulation::Work::Read, into.size()))
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
                      std::span<std::uint8_t> into, Registration source) {
  const std::uint64_t sequence = next_sequence_++;
  chunks_.push_back({sequence, {chunk, source, {}, {}, {}, {}}, false});
  into = into.first(chunk.length);
  // Where the bytes are read to: the slot, or its plain buffer when they are sealed into it.
  std::span<std::uint8_t> plain = into;
  auto seal = std::make_shared<std::optional<proto::ChunkSeal>>();
  if (sealing_) {
    plain = sealing_->plain.subspan(std::size_t{chunk.slot} * sealing_->slot_size, chunk.length);
    seal->emplace().counter = next_seal_++;
  }
  auto error = std::make_shared<std::string>();
  auto work = [this, fd = file->fd(), into, plain, planned = chunk, seal, error] {
    try {
      read_(fd, plain, planned.offset);
      if (*seal)
        (*seal)->tag =
            seal_into(sealing_->key, (*seal)->counter,
                      proto::chunk_aad(planned.entry, planned.offset, planned.length), plain, into);
    } catch (const std::exception& e) {
      *error = e.what();
    } catch (...) {
      *error = "the read failed";
    }
  };
  // False: stopped meanwhile, nothing is waiting for it.
  auto done = [this, sequence, into, plain, seal, error] {
    Pending* p = find(sequence);
    if (p == nullptr) return false;
    p->done = true;
    p->chunk.error = std::move(*error);
    if (p->chunk.error.empty()) {
      p->chunk.bytes = into;
      p->chunk.plain = plain;
      p->chunk.seal = *seal;
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
  if (sealing_) throw std::logic_error("a chunk in a file's mapping cannot be sealed");
  chunks_.push_back({next_sequence_++, {chunk, source, bytes, {}, bytes, {}}, true});
}

std::optional<ChunkReads::Chunk> ChunkReads::next() {
  if (chunks_.empty() || !chunks_.front().done) return std::nullopt;
  Chunk chunk = std::move(chunks_.front().chunk);
  chunks_.pop_front();
  return chunk;
}

void ChunkReads::stop() {
  chunks_.clear();  // the reads' `done`s find nothing now
  for (auto& q : queues_) q->cancel();
  // A read cannot be interrupted: it writes into the buffer its owner is about to free. Only
  // that is waited for, not the completions of reads already over (they touch no buffer and
  // find nothing): this may run inside another completion, whose batch holds them.
  auto running = [&] {
    for (const auto& q : queues_)
      if (q->running()) return true;
    return false;
  };
  while (running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace rdmax::sender
