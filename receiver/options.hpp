#pragma once
// rdma-recv's command line, parsed and validated before the daemon starts.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/rdma/address_filter.hpp"
#include "receiver/metrics.hpp"

namespace rdmax::receiver {

unsigned default_workers();

// rdma-recv --from (receiver/fetch_command.hpp): what to fetch, from where.
struct FetchOptions {
  std::string host;
  std::uint16_t port = 18516;      // rdma-send --serve's (sender/options.hpp, kServePort)
  std::vector<std::string> paths;  // within the server's export ("." for all of it)
  bool recursive = false;          // -r: directories with their trees
  // --files-from LIST (-0: NUL-separated): `paths` are the list's (receiver/fetch_list.hpp,
  // read before anything connects), each arriving under its whole path.
  std::optional<std::string> files_from;
  bool from0 = false;
  std::uint32_t shard_index = 0;
  std::uint32_t shard_count = 1;
  // -P N: N connections, each asking for its part of the share (docs/PROTOCOL.md 7.13's
  // extension 0x8008), so that the server spreads the files over them.
  std::uint32_t connections = 1;
  // --json / --json-lines: stdout carries the report (receiver/fetch_report.hpp), nothing else.
  bool json = false;
  bool json_lines = false;
  // --key-file FILE (never RDMAX_KEY_FILE, a push's): prove this key (`ID KEY`, rdma-send
  // --key-file's format) to a server started with --readers, demand its proof back, and seal
  // (7.13).
  std::optional<std::string> key_file;
};

struct ReceiverOptions {
  std::uint16_t port = 18515;
  std::optional<std::string> bind_address;  // default: every IPv4 address
  std::optional<std::string> device;        // -d: RDMA device; without --bind, its first IPv4
  bool list_devices = false;                // --list-devices: print them and exit
  bool check = false;                       // --check: preflight checks only (preflight.hpp)
  std::string dir = ".";
  std::optional<std::string> secrets_file;
  // --senders: 'ID KEY [SUBDIR]' lines; when given, only senders proving a listed key get
  // in (docs/PROTOCOL.md 7.8), each beneath its SUBDIR.
  std::optional<std::string> senders_file;
  // A keyed sender must seal everything after the proofs (7.11); one that does not is
  // refused (SealRequired). The parser sets it with --senders unless --allow-clear (then one
  // that does not seal is served in clear, with a warning); false here is --allow-clear.
  bool require_seal = false;
  std::uint64_t max_size = UINT64_MAX;
  bool overwrite = false;
  // With overwrite, a file in place that is identical to the one offered is still kept
  // (Have) and only a different one replaced: a fetch's way (--from), where DIR is to end up
  // holding what the server has without moving what it holds already.
  bool keep_identical = false;
  // Files written with O_DIRECT where the file system allows it (no copy into the page
  // cache; receiver/output_file.hpp): the default since it cost a third less CPU and ran 38%
  // faster into ext4 (docs/BENCHMARKS.md); --no-direct-io writes through the cache.
  bool direct_io = true;
  std::uint32_t slot_size = 1u << 20;
  // 16 MiB in flight: what a connection carries at ~10 GiB/s over a chunk's cycle of ~1.5 ms
  // (read, WRITE, hash and write, Credit), measured on 16 cores (docs/BENCHMARKS.md).
  std::uint32_t slots = 16;
  std::uint32_t max_connections = 64;
  std::uint64_t max_memory = 1ull << 30;  // receive windows of all connections together
  std::chrono::seconds timeout{30};       // no progress for this long ends a connection
  // Threads for disk and hashing work (common/work/work_pool.hpp). More than the CPUs: a thread
  // waiting on one file's fsync must not hold up every other connection's writes.
  unsigned workers = default_workers();
  int verbosity = 0;
  // Partial files (receiver/partial_store.hpp): what an interrupted transfer leaves for the
  // same command to continue. Off with --no-partial.
  bool partials = true;
  std::chrono::seconds partial_ttl{24 * 3600};  // --partial-ttl: untouched this long, removed
  std::uint64_t partial_max = 64ull << 30;      // --partial-max: all partials together
  // --grace: after SIGINT/SIGTERM, how long transfers under way may still take to finish.
  std::chrono::seconds grace{30};
  // --metrics ADDRESS:PORT: Prometheus metrics at http://ADDRESS:PORT/metrics
  // (common/metrics/metrics_server.hpp).
  std::optional<MetricsAddress> metrics;
  // --allow / --deny (receiver/address_filter.hpp): names resolved at start.
  std::vector<IpPrefix> allow;
  std::vector<IpPrefix> deny;
  // --from HOST[:PORT] PATH...: fetch them into --dir instead of serving (none: the daemon).
  std::optional<FetchOptions> fetch;
};

// A duration as people type it: digits and one unit, s, m, h or d (no bare digits).
// Rejects empty input, signs, fractions, unknown units, 0 and values past 100 years.
[[nodiscard]] std::optional<std::chrono::seconds> parse_duration(std::string_view text);

// rdma-recv's exit statuses (README, --help, the manual page).
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;  // cannot listen (port in use, no device, ...)
inline constexpr int kExitUsage = 2;    // command line, directory or secrets file

// Either options, or the exit status to leave with (0 after --help/--version).
[[nodiscard]] std::variant<ReceiverOptions, int> parse_receiver_options(int argc, char** argv);

}  // namespace rdmax::receiver
