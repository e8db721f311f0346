#pragma once
// rdma-send's command line, parsed and validated before anything touches the network.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/metrics/metrics_address.hpp"
#include "common/rdma/address_filter.hpp"
#include "protocol/wire.hpp"
#include "sender/receivers.hpp"
#include "sender/shard.hpp"

namespace rdmax::sender {

struct SenderOptions {
  std::string host;            // the first receiver's (-H, -p)
  std::uint16_t port = 18515;  // -p: the port of every receiver -H names without one
  // -H HOST1,HOST2,...: the connections are spread over these (one, usually).
  std::vector<Receiver> receivers;
  std::optional<std::string> device;  // -d with one device: the connection must use it
  std::vector<std::string> devices;   // -d DEV1,DEV2: connections spread over these
  std::optional<std::string> id;
  // --key-file, else RDMAX_KEY_FILE: 'ID KEY' to prove to a receiver that requires keys
  // (docs/PROTOCOL.md 7.8); with it, only a receiver that proves the same key gets a byte.
  std::optional<std::string> key_file;
  // With a key: seal everything after the proofs (docs/PROTOCOL.md 7.11); --no-seal: not.
  bool seal = true;
  std::optional<std::string> rename;  // --name: the single file's name at the receiver
  std::vector<std::string> files;     // every PATH given
  bool recursive = false;             // -r: directories and their trees
  unsigned parallel = 1;              // -P: connections to spread the files over
  // The digest (--digest): BLAKE3 (default; fs-verity for a receiver without it), fs-verity
  // or whole-file SHA-256; digest_chosen: --digest was given.
  proto::DigestAlgorithm digest = proto::DigestAlgorithm::Blake3;
  bool digest_chosen = false;
  unsigned hash_threads = 1;  // --hash-threads, default: the online CPUs
  bool digest_cache = true;   // --no-digest-cache turns it off
  bool checksum = false;      // --checksum: print each FILE's digest line, connect nowhere
  int verbosity = 0;
  bool json = false;  // one JSON object on stdout instead of the bare secret
  // --progress / --no-progress; unset: a progress bar exactly when stderr is a terminal.
  std::optional<bool> progress;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{30};                // no progress for this long ends the transfer
  std::optional<std::uint64_t> inject_corruption;  // testing: flip the byte at this offset
  // Register the file's pages instead of copying them through a buffer (sender/file_windows.hpp).
  bool zero_copy = false;
  // Files not in the digest cache are hashed as they are sent, their digest at their end
  // (docs/PROTOCOL.md 7.9); --digest-first hashes them all before the connection instead.
  bool digest_at_end = true;
  std::optional<std::uint64_t> bwlimit;  // --bwlimit: bytes per second
  // --stripe-min: with -P N, a file of at least this many bytes goes over all N connections
  // at once (docs/PROTOCOL.md 7.12) to a receiver that stripes.
  std::uint64_t stripe_min = std::uint64_t{256} << 20;
  bool check = false;  // --check: preflight checks only (sender/preflight.hpp)
  // --shard I/N, auto, auto/N (sender/shard.hpp): this process sends only its share.
  ShardSpec shard;
  // --files-from FILE ("-": stdin): the entries, named relative to `base` (sender/file_list.hpp)
  std::optional<std::string> files_from;
  std::string base = ".";   // --base DIR
  bool from0 = false;       // -0/--from0: the list is NUL-separated
  bool json_lines = false;  // --json-lines: one JSON line per entry as it settles, then totals
  // --serve DIR (sender/serve_daemon.hpp): serve DIR, read only, to fetchers (rdma-recv
  // --from, docs/PROTOCOL.md 7.13) on -p (kServePort unless given), instead of sending PATHs.
  std::optional<std::string> serve;
  std::optional<std::string> bind_address;  // -a/--bind with --serve: default every IPv4 one
  unsigned max_connections = 64;            // --max-connections with --serve
  // --readers FILE with --serve: only fetchers that prove a key it lists (`ID KEY [SUBDIR]`
  // lines, the format of rdma-recv --senders), each confined to its SUBDIR, sealed.
  std::optional<std::string> readers_file;
  // --metrics ADDRESS:PORT with --serve: Prometheus metrics (sender/serve_metrics.hpp).
  std::optional<MetricsAddress> metrics;
  // --allow / --deny with --serve (common/rdma/address_filter.hpp): names resolved at start.
  std::vector<IpPrefix> allow;
  std::vector<IpPrefix> deny;
};

// The port rdma-send --serve listens on unless -p says another (rdma-recv's is 18515: both
// daemons may run on one host).
inline constexpr std::uint16_t kServePort = 18516;

// Either options, or the exit status to leave with (0 after --help/--version).
[[nodiscard]] std::variant<SenderOptions, int> parse_sender_options(int argc, char** argv);
// The same, with --shard auto reading `env` instead of the process's environment.
[[nodiscard]] std::variant<SenderOptions, int> parse_sender_options_in(
    int argc, char** argv, const EnvironmentLookup& env);

}  // namespace rdmax::sender
