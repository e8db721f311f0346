#pragma once
// What happens to a slot off the event loop: its key revoked when its chunk arrives (and, on a
// sealed connection, the chunk opened, docs/PROTOCOL.md 7.11) before anything reads it, and
// a fresh key registered when it is credited back. Both are system calls into the device's
// driver (ibv_dereg_mr, ibv_reg_mr: pinning pages, writing the adapter's translation table),
// one of each per chunk; on the loop they would cap every connection at one thread's rate
// of them (docs/BENCHMARKS.md, rdmax-pipeline-bench --grant-us). So they run as jobs, one
// queue per slot as the sender's reads: the slots' chunks are taken in parallel.
//
// A chunk's answer comes back in the order the chunks arrived, so each file's stores still go
// in file order. A grant's comes back when it is done (Credits may go in any order).
//
// Threads: every function and every answer runs on the event loop's thread; only the
// revoking, opening and registering on a worker (Transport allows register_memory and
// deregister there). Lifetime: the slots' memory and the transport outlive the jobs; the owner
// waits for idle() before they go (cancel() drops what has not started).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/connection/transport.hpp"
#include "common/work/work_pool.hpp"
#include "protocol/seal.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {

class SlotIntake {
 public:
  enum class Taken : std::uint8_t {
    Ready,         // nobody can write the slot any more; its bytes are the chunk's, in clear
    DoesNotOpen,   // sealed, and its bytes were altered (they are garbage now)
    RevokeFailed,  // the key may still work: nothing of the slot may be read
  };
  using TakenThen = std::function<void(Taken)>;
  // The new key, or why the slot could not be registered.
  using GrantedThen = std::function<void(std::optional<Registration>, const std::string& error)>;

  // `chunk_key`: a sealed connection's chunks' key (null: in clear).
  SlotIntake(WorkPool& pool, Transport& transport, std::uint32_t slots,
             const proto::SealKey* chunk_key);
  SlotIntake(const SlotIntake&) = delete;
  SlotIntake& operator=(const SlotIntake&) = delete;

  // The chunk's slot, the first chunk.length bytes of which are `bytes`: `key` (the slot's,
  // if it has one) revoked, then the chunk opened if sealed. Without `bytes` (a chunk of an
  // abandoned file: nothing of it is read) only revoked.
  void take(const proto::FileChunk& chunk, std::optional<Registration> key,
            std::optional<std::span<std::uint8_t>> bytes, TakenThen then);
  // The slot's memory registered for the peer's WRITEs under a fresh key.
  void grant(std::uint32_t slot, std::span<std::uint8_t> memory, GrantedThen then);
  // Drops the jobs not started, and every answer not given.
  void cancel();
  bool idle() const;

 private:
  struct Pending {
    std::uint64_t sequence = 0;
    bool done = false;
    Taken taken = Taken::Ready;
    TakenThen then;
  };
  void answer();  // the oldest answers that are ready, in order

  Transport& transport_;
  std::optional<proto::SealKey> chunk_key_;
  std::deque<Pending> pending_;
  std::uint64_t next_sequence_ = 0;
  std::vector<std::unique_ptr<WorkQueue>> queues_;  // last: destroyed first
};

}  // namespace rdmax::receiver
