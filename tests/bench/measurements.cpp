#include "measurements.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <unordered_map>

#include "common/rdma/memory_region.hpp"

namespace rdmax::bench {
namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// Distinct seeds give patterns that differ in every byte.
void fill_pattern(std::span<std::uint8_t> bytes, std::uint8_t seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(i * 7 + seed);
  }
}

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// What a responder that refuses a request reports back to the writer.
bool is_remote_error(ibv_wc_status status) {
  return status == IBV_WC_REM_ACCESS_ERR || status == IBV_WC_REM_INV_REQ_ERR ||
         status == IBV_WC_REM_OP_ERR;
}

// A fresh pair, the writer's source buffer registered on it, and the method's keys for the
// slot. Member order is release order: the keys, the source region, then the pair.
struct Rig {
  Rig(const Settings& settings, const Method& method, Memory& buffers)
      : memory(buffers),
        pair(settings.address, settings.timeout),
        source_mr(pair.writer().pd.get(), buffers.source.data(), buffers.source.size(),
                  IBV_ACCESS_LOCAL_WRITE),
        keys(method.make(pair, buffers)) {}

  // Writes the whole source buffer to (remote_addr, rkey); returns the writer's completion.
  ibv_wc write(std::uint64_t remote_addr, std::uint32_t rkey) {
    post_write(pair.writer_qp(), memory.source.span(), source_mr.lkey(), remote_addr, rkey,
               ++writes);
    return wait_completion(pair.writer().cq, pair.timeout());
  }

  Memory& memory;
  LoopbackPair pair;
  MemoryRegion source_mr;
  std::unique_ptr<SlotKeys> keys;
  std::uint64_t writes = 0;
};

bool slot_holds_source(const Memory& memory) {
  return std::ranges::equal(memory.slot, memory.source.span());
}

// A WRITE of `seed`'s pattern with the current key must succeed and land in the slot.
void expect_lands(Rig& rig, Memory& memory, std::uint8_t seed, Report& report,
                  const std::string& label) {
  fill_pattern(memory.source.span(), seed);
  const ibv_wc wc = rig.write(rig.keys->remote_addr(), rig.keys->rkey());
  const bool landed = wc.status == IBV_WC_SUCCESS && slot_holds_source(memory);
  report.check(landed, label + ": WRITE with the current key succeeds and lands",
               wc_status_name(wc.status));
}

// A WRITE to (remote_addr, rkey) must fail at the writer with a remote error and leave
// the whole window as it was. Returns whether both held.
bool expect_refused(Rig& rig, Memory& memory, std::uint64_t remote_addr, std::uint32_t rkey,
                    std::uint8_t seed, Report& report, const std::string& what) {
  const std::vector<std::uint8_t> before(memory.window.span().begin(), memory.window.span().end());
  fill_pattern(memory.source.span(), seed);
  const ibv_wc wc = rig.write(remote_addr, rkey);
  const bool refused = is_remote_error(wc.status);
  report.check(refused, what + " fails at the writer", wc_status_name(wc.status));
  const bool unchanged = std::ranges::equal(memory.window.span(), before);
  report.check(unchanged, what + ": the window's bytes are unchanged");
  return refused && unchanged;
}

// A stale key, either while the slot has no key at all (between a Chunk's arrival and the
// next Credit) or after the slot was granted again (the sender reused a slot before the
// new Credit arrived, PROTOCOL 5.4).
bool stale_key(const Settings& settings, const Method& method, Memory& memory, Report& report,
               bool granted_again) {
  const std::string label =
      method.name + (granted_again ? ", slot granted again" : ", slot revoked");
  std::ranges::fill(memory.window.span(), 0);
  Rig rig(settings, method, memory);
  rig.keys->grant();
  const std::uint32_t revoked = rig.keys->rkey();
  if (granted_again) {
    rig.keys->revoke();
    rig.keys->grant();
    report.check(rig.keys->rkey() != revoked, label + ": the new key differs from the revoked one",
                 hex(revoked) + " -> " + hex(rig.keys->rkey()));
    expect_lands(rig, memory, 0x11, report, label);
  } else {
    expect_lands(rig, memory, 0x11, report, label);
    rig.keys->revoke();
  }
  return expect_refused(rig, memory, rig.keys->remote_addr(), revoked, 0x22, report,
                        label + ": WRITE with the revoked key " + hex(revoked));
}

// The key covers the slot and nothing more: S bytes from the slot's middle run past it.
bool past_the_end(const Settings& settings, const Method& method, Memory& memory, Report& report) {
  std::ranges::fill(memory.window.span(), 0);
  Rig rig(settings, method, memory);
  rig.keys->grant();
  return expect_refused(rig, memory, rig.keys->remote_addr() + memory.slot.size() / 2,
                        rig.keys->rkey(), 0x33, report,
                        method.name + ": WRITE of S bytes from the slot's middle (past its end)");
}

// The method's standing key, if it has one, must grant no remote access.
void standing_key(const Settings& settings, const Method& method, Memory& memory, Report& report) {
  std::ranges::fill(memory.window.span(), 0);
  Rig rig(settings, method, memory);
  const std::optional<std::uint32_t> standing = rig.keys->standing_rkey();
  if (!standing) return;
  rig.keys->grant();
  expect_refused(rig, memory, rig.keys->remote_addr(), *standing, 0x44, report,
                 method.name + ": WRITE with the registered region's own rkey " + hex(*standing));
}

}  // namespace

Memory::Memory(std::size_t slot_size, unsigned window_slots, unsigned slot_index)
    : window(slot_size * window_slots),
      slot(window.span().subspan(slot_size * slot_index, slot_size)),
      source(slot_size) {}

namespace {

// One method's timing run: its rig stays connected across the rounds.
class TimedRun {
 public:
  TimedRun(const Settings& settings, const Method& method, Memory& memory)
      : memory_(memory), rig_(settings, method, memory) {
    timing_.cycle_us.reserve(settings.cycles);
    timing_.revoke_us.reserve(settings.cycles);
    timing_.grant_us.reserve(settings.cycles);
    rig_.keys->grant();
    for (unsigned i = 0; i < settings.warmup; ++i) {
      rig_.keys->revoke();
      rig_.keys->grant();
    }
  }

  void cycles(unsigned count) {
    SlotKeys& keys = *rig_.keys;
    for (unsigned i = 0; i < count; ++i) {
      const auto start = Clock::now();
      keys.revoke();
      const auto revoked = Clock::now();
      keys.grant();
      const auto granted = Clock::now();
      timing_.revoke_us.push_back(micros(revoked - start));
      timing_.grant_us.push_back(micros(granted - revoked));
      timing_.cycle_us.push_back(micros(granted - start));
      note_key(keys.rkey());
    }
  }

  // One S-byte WRITE with the current key into the cleared slot; it must land.
  void write() {
    fill_pattern(memory_.source.span(), 0x5a);
    std::ranges::fill(memory_.slot, 0);
    const auto start = Clock::now();
    const ibv_wc wc = rig_.write(rig_.keys->remote_addr(), rig_.keys->rkey());
    const auto done = Clock::now();
    if (wc.status != IBV_WC_SUCCESS) {
      throw std::runtime_error("RDMA WRITE with the current key completed with " +
                               wc_status_name(wc.status));
    }
    if (!slot_holds_source(memory_)) {
      throw std::runtime_error("RDMA WRITE completed but the slot does not hold its bytes");
    }
    timing_.write_us.push_back(micros(done - start));
  }

  Timing finish() {
    timing_.distinct_keys = last_grant_.size();
    return std::move(timing_);
  }

 private:
  void note_key(std::uint32_t rkey) {
    ++grants_;
    const auto [seen, first_time] = last_grant_.try_emplace(rkey, grants_);
    if (first_time) return;
    const unsigned distance = grants_ - seen->second;
    timing_.shortest_key_reuse = std::min(timing_.shortest_key_reuse.value_or(distance), distance);
    seen->second = grants_;
  }

  Memory& memory_;
  Rig rig_;
  Timing timing_;
  std::unordered_map<std::uint32_t, unsigned> last_grant_;  // rkey -> timed grant
  unsigned grants_ = 0;
};

}  // namespace

std::vector<std::optional<Timing>> measure(const Settings& settings,
                                           std::span<const Method> methods, Memory& memory,
                                           Report& report) {
  std::vector<std::optional<TimedRun>> runs(methods.size());
  // Runs a step of method i; a failure is reported and takes the method out.
  const auto step = [&](std::size_t i, const auto& action) {
    if (!runs[i]) return;
    try {
      action(*runs[i]);
    } catch (const std::exception& e) {
      report.check(false, methods[i].name + ": timing", e.what());
      runs[i].reset();
    }
  };
  for (std::size_t i = 0; i < methods.size(); ++i) {
    try {
      runs[i].emplace(settings, methods[i], memory);
    } catch (const std::exception& e) {
      report.check(false, methods[i].name + ": timing setup", e.what());
    }
  }
  for (unsigned round = 0; round < settings.rounds; ++round) {
    const unsigned count =
        settings.cycles / settings.rounds + (round < settings.cycles % settings.rounds ? 1 : 0);
    for (std::size_t i = 0; i < methods.size(); ++i) {
      step(i, [count](TimedRun& run) { run.cycles(count); });
    }
  }
  for (unsigned w = 0; w < settings.writes; ++w) {
    for (std::size_t i = 0; i < methods.size(); ++i) step(i, [](TimedRun& run) { run.write(); });
  }
  std::vector<std::optional<Timing>> timings(methods.size());
  for (std::size_t i = 0; i < methods.size(); ++i) {
    if (!runs[i]) continue;
    timings[i] = runs[i]->finish();
    report.check(true, methods[i].name + ": " + std::to_string(settings.cycles) +
                           " revocation cycles and " + std::to_string(settings.writes) +
                           " WRITEs with the current key");
  }
  return timings;
}

void Report::check(bool passed, const std::string& what, const std::string& detail) {
  if (!passed) ++failures_;
  std::cout << (passed ? "PASS  " : "FAIL  ") << what;
  if (!detail.empty()) std::cout << " (" << detail << ")";
  std::cout << '\n' << std::flush;
}

Safety check_safety(const Settings& settings, const Method& method, Memory& memory,
                    Report& report) {
  // Each scenario's own checks are reported as they run; an exception (a bind that
  // failed, a connection that could not be set up) is a failed check of its own.
  const auto run = [&](const std::string& name, const auto& scenario) {
    try {
      return scenario();
    } catch (const std::exception& e) {
      report.check(false, method.name + ": " + name, e.what());
      return false;
    }
  };
  Safety safety;
  const bool while_revoked = run("revoked-key scenario, slot revoked", [&] {
    return stale_key(settings, method, memory, report, false);
  });
  const bool after_regrant = run("revoked-key scenario, slot granted again",
                                 [&] { return stale_key(settings, method, memory, report, true); });
  safety.revoked_key_refused = while_revoked && after_regrant;
  safety.confined_to_slot =
      run("bounds scenario", [&] { return past_the_end(settings, method, memory, report); });
  run("standing-key scenario", [&] {
    standing_key(settings, method, memory, report);
    return true;
  });
  return safety;
}

double percentile(std::vector<double> values, double p) {
  std::ranges::sort(values);
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace rdmax::bench
