#pragma once
// The reads of the chunks the sender copies (sender/send_window.cpp): each chunk's bytes
// are read from its file into its slot of the staging buffer by a job on the run's worker
// pool, so that the event loop only keeps books and posts, and the reads of different slots
// run at once (docs/BENCHMARKS.md: a loop that read every chunk itself capped a connection
// near 3 GiB/s on 16 cores, issue 37). The chunks come back in the order they were planned,
// whatever order their reads finish in, so each file's chunks go on the wire in file order
// (docs/PROTOCOL.md 7.5). A chunk whose bytes need no read (a registered mapping, --zero-copy)
// takes its turn too.
//
// Sealing (docs/PROTOCOL.md 7.11): a chunk is sealed in place in its slot by the job that read
// it (no stage more); a chunk whose file's digest comes at the end is hashed there first
// (its tree nodes come back with it), since its bytes in clear are gone after.
//
// Without a pool the read happens at once, on the caller's thread.
//
// Threads: every function, and `ready`, runs on the event loop's thread; only the read
// itself runs on a worker. Lifetime: the buffers read into must outlive the reads: stop()
// cancels the reads not started and waits for those running, before the owner frees them.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/connection/transport.hpp"
#include "common/digest/file_hasher.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/seal.hpp"
#include "protocol/send_ledger.hpp"
#include "sender/input_file.hpp"

namespace rdmax::sender {

// Reads `length` bytes at `offset` of `fd` into `out`; throws when the read fails or the
// file ends first ("the file shrank while it was being sent").
void read_fully(int fd, std::uint8_t* out, std::size_t length, std::uint64_t offset);

// How a chunk is read, on a worker: `into.size()` bytes at `offset` of `fd` into `into`; it
// throws to say the read failed. Empty: read_fully (the programs'); a test or the pipeline
// benchmark gives its own (SenderSettings::read).
using ChunkRead = std::function<void(int fd, std::span<std::uint8_t> into, std::uint64_t offset)>;

class ChunkReads {
 public:
  using Planned = proto::PlannedChunk;
  struct Chunk {
    Planned planned;
    Registration source;                   // what the WRITE reads through
    std::span<const std::uint8_t> bytes;   // its bytes, once read (sealed, when sealing)
    std::string error;                     // the read failed: why (bytes is empty)
    std::optional<proto::ChunkSeal> seal;  // when sealing: its FileChunk's
    // Hashed by its read (read() with `nodes`): its tree nodes, or why they are not.
    std::optional<std::vector<merkle::Node>> nodes;
    std::string hash_error;
  };

  // `ready` is called (on the loop) when a read finished: next() may have a chunk. Each
  // chunk is read by `read` (empty: read_fully). With `seal_key`, every chunk read is sealed
  // in place under it.
  ChunkReads(WorkPool* pool, std::uint32_t slots, std::function<void()> ready, ChunkRead read = {},
             std::optional<proto::SealKey> seal_key = std::nullopt);
  ChunkReads(const ChunkReads&) = delete;
  ChunkReads& operator=(const ChunkReads&) = delete;
  ~ChunkReads() { stop(); }

  // Reads the chunk's bytes from `file` into `into` (its slot of the staging buffer,
  // registered as `source`), hashed by `nodes` if given; `file` stays open until the read is
  // over.
  void read(const Planned& chunk, std::shared_ptr<const InputFile> file,
            std::span<std::uint8_t> into, Registration source, FileHasher::ChunkNodes nodes = {});
  bool seals() const { return seal_key_.has_value(); }
  // A chunk whose bytes are in place already.
  void add_ready(const Planned& chunk, Registration source, std::span<const std::uint8_t> bytes);
  // The oldest chunk, once its read is over; nothing while it is still being read.
  std::optional<Chunk> next();
  // Chunks planned and not taken by next() yet.
  std::size_t pending() const { return chunks_.size(); }
  // Cancels the reads not started, waits for the ones running, and drops every chunk.
  void stop();
  // stop()'s two halves, for a connection that must not block its loop: the reads cancelled
  // (none starts, the finished ones find nothing), and whether one still runs.
  void cancel();
  bool running() const;

 private:
  struct Pending {
    std::uint64_t sequence = 0;
    Chunk chunk;
    bool done = false;
  };
  Pending* find(std::uint64_t sequence);

  WorkPool* pool_;
  std::function<void()> ready_;
  ChunkRead read_;
  std::deque<Pending> chunks_;  // in the order planned
  std::uint64_t next_sequence_ = 0;
  std::optional<proto::SealKey> seal_key_;
  std::uint64_t next_seal_ = 0;  // the counter of the next chunk sealed: never one twice
  // One queue per slot: a slot holds one chunk at a time, so its queue runs one read at a
  // time while the slots' reads run in parallel. Last: destroyed first.
  std::vector<std::unique_ptr<WorkQueue>> queues_;
};

}  // namespace rdmax::sender
