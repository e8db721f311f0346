#pragma once
// Sealing (docs/PROTOCOL.md 7.11), the receiver's side of a chunk: each sealed chunk is
// opened in place, in its slot, by a job on the daemon's pool before anything hashes or
// writes a byte of it. One queue per slot, as the sender's reads: the slots' chunks open in
// parallel (no stage more on one file's path). The answers come back in the order the chunks
// arrived, so each file's stores still go in file order.
//
// The slot's key was revoked before the chunk is opened (receiver/incoming_entries.cpp), so
// nobody writes into what is being opened, hashed and written.
//
// Threads: every function and `Opened` runs on the event loop's thread; only the opening
// itself on a worker. Lifetime: the slots' memory outlives the jobs; the owner waits for
// idle() before it goes (cancel() drops what has not started).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/work/work_pool.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

class ChunkOpener {
 public:
  // false: the chunk does not open (its bytes were altered; they are garbage now).
  using Opened = std::function<void(bool opened)>;

  ChunkOpener(WorkPool& pool, std::uint32_t slots, const proto::SealKey& key);
  ChunkOpener(const ChunkOpener&) = delete;
  ChunkOpener& operator=(const ChunkOpener&) = delete;

  // Opens `chunk` (with its seal) in `bytes`, its slot's first chunk.length bytes.
  void open(const proto::FileChunk& chunk, std::span<std::uint8_t> bytes, Opened then);
  // Drops the openings not started, and every answer not given.
  void cancel();
  bool idle() const;

 private:
  struct Pending {
    std::uint64_t sequence = 0;
    bool done = false;
    bool opened = false;
    Opened then;
  };
  void answer();  // the oldest answers that are ready, in order

  proto::SealKey key_;
  std::deque<Pending> pending_;
  std::uint64_t next_sequence_ = 0;
  std::vector<std::unique_ptr<WorkQueue>> queues_;  // last: destroyed first
};

}  // namespace rdmax::receiver
