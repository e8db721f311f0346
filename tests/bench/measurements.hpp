#pragma once
// What rdmax-revoke-bench measures and checks for the key methods (slot_keys.hpp): the
// timing on one LoopbackPair per method, each safety scenario on a fresh one.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/os/aligned_buffer.hpp"
#include "loopback_pair.hpp"
#include "slot_keys.hpp"

namespace rdmax::bench {

struct Settings {
  std::string address;                   // the device's IP address
  std::size_t slot_size = 0;             // S
  unsigned cycles = 0;                   // N timed revocation cycles
  unsigned rounds = 0;                   // the methods take turns this many times
  unsigned warmup = 0;                   // untimed cycles first
  unsigned writes = 0;                   // timed S-byte WRITEs (the median is reported)
  std::chrono::milliseconds timeout{0};  // each connection step and completion wait
};

// The owner's window of slots (the slot under test is one of them, not the first) and the
// writer's source buffer. They outlive every pair and registration.
struct Memory {
  Memory(std::size_t slot_size, unsigned window_slots, unsigned slot_index);
  AlignedBuffer window;
  std::span<std::uint8_t> slot;
  AlignedBuffer source;
};

struct Method {
  std::string name;
  std::function<std::unique_ptr<SlotKeys>(LoopbackPair&, Memory&)> make;
};

struct Timing {
  std::vector<double> cycle_us;                // revoke + grant, per timed cycle
  std::vector<double> revoke_us;               // the revoking half
  std::vector<double> grant_us;                // the granting half
  std::vector<double> write_us;                // one S-byte WRITE, post to completion at the writer
  std::size_t distinct_keys = 0;               // over the timed cycles
  std::optional<unsigned> shortest_key_reuse;  // cycles between two grants of one rkey
};

struct Safety {
  // Every WRITE with a revoked key failed at the writer with a remote error and changed
  // nothing, while the slot was revoked and after it was granted again.
  bool revoked_key_refused = false;
  // A WRITE with the current key running past the slot's end failed and changed nothing.
  bool confined_to_slot = false;
};

// PASS/FAIL lines on stdout, as they happen.
class Report {
 public:
  void check(bool passed, const std::string& what, const std::string& detail = {});
  bool all_passed() const { return failures_ == 0; }

 private:
  unsigned failures_ = 0;
};

// Times every method's revocation cycles and S-byte WRITEs, the methods taking turns in
// rounds so that a change in the machine's load weighs on each alike (under emulation, and
// with another guest or build on the host, it does change). A method that fails is
// reported and drops out: its entry is empty.
std::vector<std::optional<Timing>> measure(const Settings& settings,
                                           std::span<const Method> methods, Memory& memory,
                                           Report& report);

// Runs the safety scenarios, each on a fresh pair: a WRITE with the current key lands; a
// WRITE with a revoked key fails at the writer and leaves the window untouched, both while
// the slot is revoked and after it was granted again; a WRITE running past the slot's end
// fails; and the method's standing key (if any) grants nothing.
Safety check_safety(const Settings& settings, const Method& method, Memory& memory, Report& report);

// Nearest-rank percentile (0 < p <= 1) of `values`, which must not be empty.
double percentile(std::vector<double> values, double p);

}  // namespace rdmax::bench
