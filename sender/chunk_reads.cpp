#include "sender/chunk_reads.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

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
                       ReadFn read)
    : pool_(pool), ready_(std::move(ready)), read_(std::move(read)) {
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
  chunks_.push_back({sequence, {chunk, source, {}, {}}, false});
  if (pool_ == nullptr || chunk.slot >= queues_.size()) {
    Pending& p = chunks_.back();
    try {
      read_(file->fd(), into.first(chunk.length), chunk.offset);
      p.chunk.bytes = into.first(chunk.length);
    } catch (const std::exception& e) {
      p.chunk.error = e.what();
    } catch (...) {
      p.chunk.error = "the read failed";
    }
    p.done = true;
    return;
  }
  auto error = std::make_shared<std::string>();
  const int fd = file->fd();  // before `file` moves into the completion
  queues_[chunk.slot]->post(
      [this, fd, into = into.first(chunk.length), offset = chunk.offset, error] {
        try {
          read_(fd, into, offset);
        } catch (const std::exception& e) {
          *error = e.what();
        } catch (...) {
          *error = "the read failed";
        }
      },
      // The file is let go here, on the loop, once its read is over.
      [this, sequence, into, error, file = std::move(file)] {
        Pending* p = find(sequence);
        if (p == nullptr) return;  // stopped meanwhile
        p->done = true;
        p->chunk.error = std::move(*error);
        if (p->chunk.error.empty()) p->chunk.bytes = into.first(p->chunk.planned.length);
        ready_();
      });
}

void ChunkReads::add_ready(const Planned& chunk, Registration source,
                           std::span<const std::uint8_t> bytes) {
  chunks_.push_back({next_sequence_++, {chunk, source, bytes, {}}, true});
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
