#pragma once
// rdmax-pipeline-bench --emulate-cores N (tests/bench/README.md). Each stage's work on the
// workers (reading a chunk, hashing it, writing it) is replaced by a wait as long as that
// work took when it was measured, while it holds one of N emulated cores, so that a machine
// of two cores shows how the pipeline would scale on N and which stages serialise it. What is
// not replaced (the event loops, folding, the commit) runs for real.
//
// The stand-ins go in where the drivers are given their work on a chunk: the sender's read
// (SenderSettings::read) and hashing (SenderSettings::hashing), the receiver's write and
// hashing (ReceiverContext::work). With them files hold no data, and the digest is a stand-in
// both sides compute alike: the SHA-256 of the file's size. The stand-in hasher posts each
// chunk's wait on queues named as the real tree's (common/digest/file_hasher.cpp), so that
// the stages' CPU stays comparable with the measured runs.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "common/digest/file_hasher.hpp"
#include "receiver/store_work.hpp"
#include "sender/chunk_reads.hpp"

namespace rdmax::bench {

enum class Work : std::uint8_t { Hash, Read, Write };

// CPU seconds per byte of each kind of work, as measured.
struct Costs {
  double hash = 0;
  double read = 0;
  double write = 0;
};

// N emulated cores and what each kind of work costs on one. It must outlive every stand-in
// it gives (they wait on it).
class EmulatedCores {
 public:
  EmulatedCores(unsigned cores, const Costs& costs);
  EmulatedCores(const EmulatedCores&) = delete;
  EmulatedCores& operator=(const EmulatedCores&) = delete;

  // Waits as long as `bytes` of `work` take, on one of the cores (for a core first, if all
  // are taken).
  void work(Work work, std::size_t bytes);
  // Waits `cpu` on one of the cores: what a modelled system call costs (--grant-us).
  void spend(std::chrono::nanoseconds cpu);

  // The stand-ins: a chunk's read (reads nothing), a file's hashing (hashes nothing; the
  // digest is the size's), and the receiver's store (writes nothing, hashes as hashing()).
  sender::ChunkRead read();
  FileHashing hashing();
  receiver::StoreWork store_work();

 private:
  void wait_on_a_core(double seconds);

  Costs costs_;
  std::mutex mutex_;
  std::condition_variable freed_;
  unsigned free_cores_;
};

}  // namespace rdmax::bench
