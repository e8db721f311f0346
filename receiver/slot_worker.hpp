#pragma once
// Hashes and writes one connection's chunks on a thread of its own, so that SHA-256 and
// pwrite overlap the sender's next RDMA WRITEs instead of stalling the daemon's one event
// loop (which serves every connection).
//
// Division of labour. The event loop checks a Chunk, revokes its slot (deregisters the
// slot's MR: from then on the peer cannot write it) and submit()s it. The worker hashes the
// slot's bytes in place (no copy) and writes them to the file, strictly in submission
// order (SHA-256 is sequential; chunks arrive in file order), then signals `done`. The loop
// takes the result, registers the slot again and credits it back. The worker makes no
// verbs and no CM call; it touches only revoked slots, its hash and the file.
//
// After a failed write the worker stores nothing more: the transfer is over.
//
// Lifetime: the slots' memory, the file and `done` must outlive the worker. Destroying it
// drops the chunks still queued and joins the thread, which first finishes the chunk in
// progress; only after that may the caller release the slots or the file.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/event_fd.hpp"
#include "common/output_file.hpp"
#include "common/sha256.hpp"

namespace rdmax::receiver {

class SlotWorker {
 public:
  using Clock = std::chrono::steady_clock;

  struct Chunk {
    std::uint32_t slot = 0;
    std::uint64_t offset = 0;             // in the file
    std::span<const std::uint8_t> bytes;  // the slot's, revoked until the result is taken
  };

  struct Result {
    Chunk chunk;
    bool stored = true;  // false: the write (or the hash) failed, and `error` says why
    std::string error;
    Clock::duration hashing{}, writing{};  // measured on the worker
  };

  // At most `capacity` chunks (one per slot) may be outstanding: submitted, and their
  // result not yet taken. Starts the thread.
  SlotWorker(OutputFile& file, EventFd& done, std::size_t capacity);
  SlotWorker(const SlotWorker&) = delete;
  SlotWorker& operator=(const SlotWorker&) = delete;
  // Stops and joins the thread (see the lifetime note above).
  ~SlotWorker() = default;

  // Queues a chunk; throws std::logic_error beyond `capacity`.
  void submit(const Chunk& chunk);

  // The oldest finished chunk's result, if any; each is taken exactly once, in order.
  std::optional<Result> take_finished();

  // Chunks submitted whose result has not been taken.
  std::size_t outstanding() const noexcept { return outstanding_; }

  // SHA-256 of every chunk stored, in order. Only when nothing is outstanding (else throws
  // std::logic_error): the hash is the worker's while it stores.
  Digest finish_hash();

 private:
  void run(const std::stop_token& stop);
  Result store(const Chunk& chunk);

  OutputFile& file_;
  EventFd& done_;
  Sha256 hash_;
  std::size_t outstanding_ = 0;  // the event loop's own count

  std::mutex mutex_;
  std::condition_variable_any wake_;
  // Guarded by mutex_. Finished results wait in a ring of `capacity` entries allocated up
  // front, so the worker never allocates (except a failed write's message).
  std::deque<Chunk> queued_;
  std::vector<Result> finished_;
  std::size_t first_finished_ = 0;
  std::size_t finished_count_ = 0;

  // Last: it starts once every member above exists and, being destroyed first, stops and
  // joins the thread while they all still exist.
  std::jthread thread_;
};

}  // namespace rdmax::receiver
