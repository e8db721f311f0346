#pragma once
// A developer switch for rdmax-pipeline-bench --emulate-cores (tests/bench/README.md). Each
// stage's work on the workers (hashing a chunk, reading a chunk, writing a chunk) is
// replaced by a wait as long as that work took when it was measured, while it holds one of
// N emulated cores, so that a machine of two cores shows how the pipeline would scale on N
// and which stages serialise it. What is not replaced (the event loops, folding, the
// commit) runs for real. While it is on, files hold no data and the digest is a stand-in
// both sides compute alike (common/digest/file_hasher.cpp); the programs never turn it on.

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace rdmax::emulation {

enum class Work : std::uint8_t { Hash, Read, Write };

// CPU seconds per byte of each kind of work, as measured.
struct Costs {
  double hash = 0;
  double read = 0;
  double write = 0;
};

// Turns it on for the whole process, with `cores` emulated cores (>= 1); turn it on and off
// only while no pipeline runs.
void start(unsigned cores, const Costs& costs);
void stop();
bool active();

// When it is on: waits as long as `bytes` of `work` take, on one of the emulated cores (a
// wait for a core first, if all are taken), and returns true: the caller skips the work.
// When it is off: returns false at once.
bool instead(Work work, std::size_t bytes);
// When it is on: waits `cpu` on one of the emulated cores (what a modelled system call costs,
// rdmax-pipeline-bench --grant-us) and returns true. When it is off: returns false at once.
bool spend(std::chrono::nanoseconds cpu);

}  // namespace rdmax::emulation
