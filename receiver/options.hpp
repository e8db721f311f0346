#pragma once
// rdma-recv's command line, parsed and validated before the daemon starts.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace rdmax::receiver {

unsigned default_workers();

struct ReceiverOptions {
  std::uint16_t port = 18515;
  std::optional<std::string> bind_address;  // default: every IPv4 address
  std::optional<std::string> device;        // -d: RDMA device; without --bind, its first IPv4
  bool list_devices = false;                // --list-devices: print them and exit
  bool check = false;                       // --check: preflight checks only (preflight.hpp)
  std::string dir = ".";
  std::optional<std::string> secrets_file;
  std::uint64_t max_size = UINT64_MAX;
  bool overwrite = false;
  std::uint32_t slot_size = 1u << 20;
  std::uint32_t slots = 8;
  std::uint32_t max_connections = 64;
  std::uint64_t max_memory = 1ull << 30;  // receive windows of all connections together
  std::chrono::seconds timeout{30};       // no progress for this long ends a connection
  // Threads for disk and hashing work (common/work_pool.hpp). More than the CPUs: a thread
  // waiting on one file's fsync must not hold up every other connection's writes.
  unsigned workers = default_workers();
  int verbosity = 0;
};

// rdma-recv's exit statuses (README, --help, the manual page).
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;  // cannot listen (port in use, no device, ...)
inline constexpr int kExitUsage = 2;    // command line, directory or secrets file

// Either options, or the exit status to leave with (0 after --help/--version).
[[nodiscard]] std::variant<ReceiverOptions, int> parse_receiver_options(int argc, char** argv);

}  // namespace rdmax::receiver
