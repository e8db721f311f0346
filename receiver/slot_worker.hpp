#pragma once
// Hashes and writes one connection's chunks off the event loop, so that SHA-256 and pwrite
// overlap the sender's next RDMA WRITEs instead of stalling the daemon's one event loop
// (which serves every connection).
//
// Division of labour. The event loop checks a Chunk, revokes its slot (deregisters the
// slot's MR: from then on the peer cannot write it) and submit()s it. Two threads then
// read the slot in place (no copy): one hashes it, one writes it to the file, each strictly
// in submission order (SHA-256 is sequential; chunks arrive in file order), so the hash of
// one chunk overlaps the write of another (measured: hashing ~85% and writing ~15% of a
// slot's time on Soft-RoCE, which one thread would add up). When both have finished a chunk
// `done` is signalled; the loop takes the result, registers the slot again and credits it
// back. The threads make no verbs and no CM call; they touch only revoked slots, the hash
// and the file.
//
// After a failed write nothing more is written: the transfer is over.
//
// Lifetime: the slots' memory, the file and `done` must outlive the worker. Destroying it
// drops the chunks still queued and joins both threads, each of which first finishes the
// chunk in progress; only after that may the caller release the slots or the file.

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
  // result not yet taken. Starts both threads.
  SlotWorker(OutputFile& file, EventFd& done, std::size_t capacity);
  SlotWorker(const SlotWorker&) = delete;
  SlotWorker& operator=(const SlotWorker&) = delete;
  // Stops and joins both threads (see the lifetime note above).
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
  // One entry per outstanding chunk, in a ring of `capacity` allocated up front (the
  // threads never allocate, except a failed write's message).
  struct Entry {
    Result result;           // the writer sets `stored`, `error` and `writing`
    std::string hash_error;  // the hasher's own outcome (empty: hashed)
  };
  enum class Stage { Hash, Write };
  void run(Stage stage, const std::stop_token& stop);
  void hash_one(Entry& entry);
  void write_one(Result& result);

  OutputFile& file_;
  EventFd& done_;
  Sha256 hash_;                  // the hashing thread's while chunks are outstanding
  std::size_t outstanding_ = 0;  // the event loop's own count

  std::mutex mutex_;
  std::condition_variable_any wake_;
  // Guarded by mutex_: counts since the start. Entry i lives in ring_[i % capacity];
  // taken_ <= min(hashed_, written_) and both <= submitted_.
  std::vector<Entry> ring_;
  std::uint64_t submitted_ = 0, hashed_ = 0, written_ = 0, taken_ = 0;

  // Last: they start once every member above exists and, being destroyed first, stop and
  // join the threads while they all still exist.
  std::jthread hasher_;
  std::jthread writer_;
};

}  // namespace rdmax::receiver
