#pragma once
// --check (rdma-send and rdma-recv): the checks both programs share, each one line a person
// can act on: "ok   what was found" or "FAIL what is wrong: what to do". The pure pieces
// (line format, the memlock arithmetic and its remedy) are separate from the probes that
// ask the kernel, so tests can feed them any limit.

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics/metrics_address.hpp"
#include "common/rdma/event_channel.hpp"

namespace rdmax::preflight {

struct Check {
  bool ok = false;
  std::string what;    // ok: what was found; FAIL: what is wrong
  std::string remedy;  // FAIL only: what to do about it
};

inline Check pass(std::string what) {
  return {true, std::move(what), {}};
}
inline Check failure(std::string what, std::string remedy) {
  return {false, std::move(what), std::move(remedy)};
}

// "ok   WHAT" or "FAIL WHAT: REMEDY".
[[nodiscard]] std::string format_check(const Check& check);

// The lines of one --check run, printed as they come (a slow probe shows what it waits
// for after the lines before it).
class Report {
 public:
  explicit Report(std::ostream& out) : out_(out) {}
  void add(const Check& check);
  // Adds each; returns whether all of them passed (a later check may depend on them).
  bool add_all(const std::vector<Check>& checks);
  bool all_ok() const { return failed_ == 0; }
  int failed() const { return failed_; }

 private:
  std::ostream& out_;
  int failed_ = 0;
};

// What RLIMIT_MEMLOCK allows: a byte count, or no limit (RLIM_INFINITY, or CAP_IPC_LOCK).
struct MemlockLimit {
  std::optional<std::uint64_t> bytes;  // nullopt: unlimited
  bool capability = false;             // CAP_IPC_LOCK: the limit does not apply
};
// The limit of this process.
[[nodiscard]] MemlockLimit current_memlock_limit();
// `needed` bytes pinned for `purpose` (e.g. "one connection's receive window (8 x 1.0 MiB)")
[[nodiscard]] Check memlock_check(const MemlockLimit& limit, std::uint64_t needed,
                                  const std::string& purpose);
// How many units of `unit` bytes fit under the limit (SIZE_MAX-like for unlimited).
[[nodiscard]] std::uint64_t memlock_fits(const MemlockLimit& limit, std::uint64_t unit);

// The remedies, in one place.
std::string remedy_memlock();
std::string remedy_no_device();
std::string remedy_port_down(const std::vector<std::string>& netdevs);

// RDMA devices: one exists (or `wanted` does) with an ACTIVE port.
[[nodiscard]] std::vector<Check> device_checks(const std::optional<std::string>& wanted);

// Where a connection to `host`:`port` would go: rdma_resolve_addr on a throwaway cm_id (from
// `source`, an address of ours, when given), then the device, port and source GID it
// resolved to (and with `wanted`, that it is that device).
[[nodiscard]] Check route_check(const std::string& host, std::uint16_t port,
                                const std::optional<std::string>& wanted,
                                std::chrono::milliseconds timeout,
                                const std::optional<std::string>& source = std::nullopt);

// A directory the program writes into: exists, is a directory, a temporary file can be
// created and removed in it, and its free space (FAIL below `min_free` bytes).
[[nodiscard]] Check directory_check(const std::string& dir, std::uint64_t min_free);

// Binds and listens on `port` at `bind` (none: every IPv4 address), then closes it again: the
// port is free, and the device and GID a bound address uses. `in_use`: who else may hold the
// port, for the FAIL line ("another rdma-recv?").
[[nodiscard]] std::vector<Check> listen_checks(const std::optional<std::string>& bind,
                                               std::uint16_t port, const std::string& in_use);

// A file of credentials (--secrets, --senders, --readers): its mode first, with its own remedy
// (the loader checks it again, on what it reads), then its lines, loaded as the daemon loads
// them. `load` returns what the file holds, in words; `format` names a line's fields.
[[nodiscard]] Check credentials_check(const std::string& what, const std::string& path,
                                      const char* option, const char* format,
                                      const std::function<std::string()>& load);

// The device, port and GID a resolved or bound cm_id uses: "rxe0 port 1, GID
// ::ffff:192.0.2.1 (index 1)". Empty without a device (a wildcard address).
std::string describe_endpoint(const rdma_cm_id* id);

// The next event on `channel` (made non-blocking) before `deadline`, or nullopt.
[[nodiscard]] std::optional<CmEvent> wait_cm_event(EventChannel& channel,
                                                   std::chrono::steady_clock::time_point deadline);

// --metrics ADDRESS:PORT (either daemon): bound as the daemon binds it, then let go. None:
// no --metrics.
[[nodiscard]] std::optional<Check> metrics_check(const std::optional<MetricsAddress>& address);

}  // namespace rdmax::preflight
