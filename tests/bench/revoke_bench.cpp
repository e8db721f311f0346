// rdmax-revoke-bench: what revoking a slot's remote key costs (docs/PROTOCOL.md 5.4), by
// re-registering the slot's memory region (what rdma-recv does) or by invalidating and
// re-binding a type-2 memory window, set against the time one slot's RDMA WRITE takes;
// and whether a revoked key really stops a WRITE. One process, one RDMA device: the
// writer and the slot's owner are the two ends of an rdma_cm loopback connection.
//
// Output: PASS/FAIL lines, then Markdown tables, on stdout; exit 0 when every check
// passed, 1 when one failed, 2 for a usage or setup error.

#include <sys/utsname.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "measurements.hpp"
#include "protocol/sizes.hpp"
#include "slot_keys.hpp"

using namespace rdmax;
using namespace rdmax::bench;

namespace {

constexpr int kExitFailedCheck = 1;
constexpr int kExitSetup = 2;
// The owner's window holds this many slots; the one under test is not the first, so a
// key's address range is checked against a neighbour on either side.
constexpr unsigned kWindowSlots = 4;
constexpr unsigned kSlotUnderTest = 1;
constexpr std::size_t kMethods = 3;  // re-registration first: the ratios divide by the others

struct DeviceFacts {
  std::string name;
  unsigned port = 0;
  unsigned active_mtu = 0;
  std::uint64_t max_message = 0;
  std::string memory_windows;  // what the device advertises
};

struct MethodResult {
  std::optional<Timing> timing;
  Safety safety;  // check_safety reports its own failures, so there is always a result
};

std::optional<Settings> parse(int argc, char** argv, int& exit_code) {
  Settings settings;
  std::string slot_size = "1M";
  unsigned timeout_s = 10;
  settings.cycles = 2000;
  settings.rounds = 10;
  settings.warmup = 20;
  settings.writes = 9;
  CLI::App app{
      "Times revoking and re-granting an RDMA slot's remote key by memory-region "
      "re-registration and by type-2 memory windows, and checks that a revoked key stops "
      "an RDMA WRITE. Needs an RDMA device (Soft-RoCE will do); run it through "
      "scripts/rxe-run.",
      "rdmax-revoke-bench"};
  app.add_option("-a,--address", settings.address,
                 "IP address of the RDMA device's netdev (with rxe, not 127.0.0.1)")
      ->required();
  app.add_option("-s,--slot-size", slot_size, "slot size S, e.g. 64K, 1M")->capture_default_str();
  app.add_option("-n,--cycles", settings.cycles, "timed revocation cycles N")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10'000'000u));
  app.add_option("--rounds", settings.rounds,
                 "the methods take turns this many times, N/rounds cycles each time")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10'000'000u));
  app.add_option("--warmup", settings.warmup, "untimed cycles before them")->capture_default_str();
  app.add_option("--writes", settings.writes, "timed S-byte WRITEs (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100'000u));
  app.add_option("--timeout", timeout_s, "seconds for each connection step or completion")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600u));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e) == 0 ? 0 : kExitSetup;
    return std::nullopt;
  }
  const auto size = proto::parse_size(slot_size);
  if (!size || *size == 0 || *size > 0xffffffffu) {
    std::cerr << "rdmax-revoke-bench: --slot-size " << slot_size
              << ": give a size from 1 byte to 4 GiB, e.g. 64K or 1M\n";
    exit_code = kExitSetup;
    return std::nullopt;
  }
  settings.slot_size = static_cast<std::size_t>(*size);
  settings.rounds = std::min(settings.rounds, settings.cycles);
  settings.timeout = std::chrono::seconds(timeout_s);
  return settings;
}

DeviceFacts probe(const Settings& settings) {
  LoopbackPair pair(settings.address, settings.timeout);
  ibv_device_attr device{};
  if (const int err = ::ibv_query_device(pair.device(), &device); err != 0) {
    throw_sys("ibv_query_device", err);
  }
  ibv_port_attr port{};
  if (const int err = ::ibv_query_port(pair.device(), pair.port_num(), &port); err != 0) {
    throw_sys("ibv_query_port", err);
  }
  DeviceFacts facts;
  facts.name = ::ibv_get_device_name(pair.device()->device);
  facts.port = pair.port_num();
  facts.active_mtu = 128u << port.active_mtu;  // IBV_MTU_256 is 1
  facts.max_message = port.max_msg_sz;
  const auto flags = device.device_cap_flags;
  facts.memory_windows = (flags & IBV_DEVICE_MEM_WINDOW) ? "advertised" : "not advertised";
  if (flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) facts.memory_windows += ", type 2A";
  if (flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) facts.memory_windows += ", type 2B";
  facts.memory_windows += ", max_mw " + std::to_string(device.max_mw);
  return facts;
}

std::string kernel_release() {
  utsname names{};
  return ::uname(&names) == 0 ? names.release : "unknown";
}

std::string fixed(double value, int decimals = 1) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string yes_no(bool value) {
  return value ? "yes" : "no";
}

void print_tables(const Settings& settings, const DeviceFacts& device,
                  const std::array<Method, kMethods>& methods,
                  const std::array<MethodResult, kMethods>& results) {
  const std::string size = proto::format_size(settings.slot_size);
  std::cout << "\n## Slot key revocation, S = " << size << "\n\n"
            << "Device " << device.name << " port " << device.port << " (active MTU "
            << device.active_mtu << ", max message " << proto::format_size(device.max_message)
            << "; memory windows " << device.memory_windows << "), kernel " << kernel_release()
            << ". N = " << settings.cycles << " timed cycles after " << settings.warmup
            << " warm-up, the methods taking turns in " << settings.rounds
            << " rounds; completions busy-polled; WRITE = median of " << settings.writes
            << ", post to completion at the writer. Memory window: LOCAL_INV then BIND_MW of a "
               "type-2 window over a region registered once, for the whole window of "
            << kWindowSlots << " slots or for each slot.\n\n";
  std::cout << "| method | µs per revocation cycle, median | p90 | one " << size
            << " WRITE, µs | revoked-key WRITE fails at writer | key confined to its slot |\n"
            << "| --- | ---: | ---: | ---: | --- | --- |\n";
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const auto& t = results[i].timing;
    std::cout << "| " << methods[i].name << " | "
              << (t ? fixed(percentile(t->cycle_us, 0.5)) : "n/a") << " | "
              << (t ? fixed(percentile(t->cycle_us, 0.9)) : "n/a") << " | "
              << (t ? fixed(percentile(t->write_us, 0.5)) : "n/a") << " | "
              << yes_no(results[i].safety.revoked_key_refused) << " | "
              << yes_no(results[i].safety.confined_to_slot) << " |\n";
  }
  std::cout << "\n| method | revoke µs, median | grant µs, median | cycle / one WRITE | "
               "distinct rkeys in N grants | shortest rkey reuse, cycles |\n"
            << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const auto& t = results[i].timing;
    if (!t) {
      std::cout << "| " << methods[i].name << " | n/a | n/a | n/a | n/a | n/a |\n";
      continue;
    }
    const double share = percentile(t->cycle_us, 0.5) / percentile(t->write_us, 0.5);
    std::cout << "| " << methods[i].name << " | " << fixed(percentile(t->revoke_us, 0.5)) << " | "
              << fixed(percentile(t->grant_us, 0.5)) << " | " << fixed(100 * share) << " % | "
              << t->distinct_keys << " | "
              << (t->shortest_key_reuse ? std::to_string(*t->shortest_key_reuse) : "none")
              << " |\n";
  }
  const auto& reg = results[0].timing;
  for (std::size_t i = 1; i < methods.size(); ++i) {
    const auto& other = results[i].timing;
    std::cout << "\nRatio re-registration / " << methods[i].name << ", per cycle: ";
    if (reg && other) {
      std::cout << fixed(percentile(reg->cycle_us, 0.5) / percentile(other->cycle_us, 0.5), 2)
                << "x (median), "
                << fixed(percentile(reg->cycle_us, 0.9) / percentile(other->cycle_us, 0.9), 2)
                << "x (p90).";
    } else {
      std::cout << "n/a (a method did not run).";
    }
  }
  std::cout << '\n';
}

int run(int argc, char** argv) {
  int exit_code = 0;
  const std::optional<Settings> parsed = parse(argc, argv, exit_code);
  if (!parsed) return exit_code;
  const Settings& settings = *parsed;

  DeviceFacts device;
  try {
    device = probe(settings);
  } catch (const std::exception& e) {
    std::cerr << "rdmax-revoke-bench: cannot set up a loopback connection on " << settings.address
              << ": " << e.what() << '\n';
    return kExitSetup;
  }
  if (settings.slot_size > device.max_message) {
    std::cerr << "rdmax-revoke-bench: --slot-size " << settings.slot_size << " exceeds "
              << device.name << "'s largest message (" << device.max_message << " bytes)\n";
    return kExitSetup;
  }

  Memory memory(settings.slot_size, kWindowSlots, kSlotUnderTest);
  const std::array<Method, kMethods> methods{
      Method{"re-registration (dereg + reg MR)",
             [](LoopbackPair& pair, Memory& m) -> std::unique_ptr<SlotKeys> {
               return std::make_unique<Reregistration>(pair, m.slot);
             }},
      Method{"memory window, MR per window",
             [](LoopbackPair& pair, Memory& m) -> std::unique_ptr<SlotKeys> {
               return std::make_unique<WindowKeys>(pair, m.window.span(), m.slot);
             }},
      // The same windows over one region per slot, so that the region's bounds are the
      // slot's (Soft-RoCE checks a WRITE through a window against its region only).
      Method{"memory window, MR per slot",
             [](LoopbackPair& pair, Memory& m) -> std::unique_ptr<SlotKeys> {
               return std::make_unique<WindowKeys>(pair, m.slot, m.slot);
             }},
  };
  std::array<MethodResult, kMethods> results;
  Report report;
  std::cerr << "rdmax-revoke-bench: S = " << proto::format_size(settings.slot_size)
            << ": timing every method\n";
  std::vector<std::optional<Timing>> timings = measure(settings, methods, memory, report);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    std::cerr << "rdmax-revoke-bench: " << methods[i].name << ": safety checks\n";
    results[i].timing = std::move(timings[i]);
    results[i].safety = check_safety(settings, methods[i], memory, report);
  }
  print_tables(settings, device, methods, results);
  return report.all_passed() ? 0 : kExitFailedCheck;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "rdmax-revoke-bench: " << e.what() << '\n';
    return kExitSetup;
  }
}
