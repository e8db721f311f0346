#include "receiver/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "common/cli/cli_checks.hpp"
#include "common/cli/shard_spec.hpp"
#include "protocol/sizes.hpp"
#include "protocol/wire.hpp"
#include "version.hpp"

namespace rdmax::receiver {

namespace {
constexpr const char* kFooter =
    R"(Each accepted file is written to a temporary in DIR and appears under its name
only after its digest matched and it was fsynced. Runs until SIGINT or SIGTERM.
Senders whose --id is not in the secrets file (or every sender, without one) still
deliver files; they only get no secret. With --senders, a sender must first prove
that it holds a listed key; nothing is granted to one that does not, and what such a
sender sends after the proofs (names, data, verdicts, the secret) is sealed with
AES-256-GCM under keys drawn from that key. A keyed sender that will not seal
(rdma-send --no-seal, a release before sealing) is refused unless --allow-clear.

Exit status:
  0  stopped by SIGINT or SIGTERM, or --list-devices found a device
  1  cannot listen (port in use, no RDMA device for the address, ...), or
     --list-devices found no device
  2  usage error (a loopback --bind among them), or DIR / the secrets file / the
     senders file / -d / the --metrics port is unusable (nothing was started)
  --check: 0 when every check passed, 1 when one failed, 2 usage error

Examples:
  rdma-recv --list-devices
  rdma-recv --check -o /srv/incoming --secrets /etc/rdmax/secrets
  rdma-recv -o /srv/incoming --secrets /etc/rdmax/secrets
  rdma-recv -o /srv/incoming --senders /etc/rdmax/senders --allow 192.0.2.0/24
  rdma-recv -d mlx5_0 -p 18515 --max-size 10G --overwrite
  rdma-recv -o /srv/incoming --metrics 127.0.0.1:9464
  rdma-recv -a 192.0.2.1 -o /srv/incoming
  rdma-recv --from storage1 -r datasets/set1 -o /scratch    (from rdma-send --serve)

--from HOST[:PORT] PATH... fetches PATHs from an rdma-send --serve on HOST (port
18516 unless given) into DIR, and exits: 0 when every file is here and verified,
3 the connection failed or was lost (run the same command again: it continues),
4 refused (a PATH the server does not export, a file refused here), 5 a digest
mismatch, 7 keys, 1 anything else, 2 usage. A file already here and identical
is not sent again; a different one is replaced once the new one is verified.)";

// --from's HOST[:PORT], [IPV6]:PORT or a bare IPv6 address; nullopt: not one.
std::optional<FetchOptions> parse_fetch_source(const std::string& text) {
  FetchOptions f;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) return std::nullopt;
    f.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return std::nullopt;
      port = text.substr(close + 2);
      if (port.empty()) return std::nullopt;
    }
  } else if (const auto colon = text.find(':');
             colon != std::string::npos && text.find(':', colon + 1) == std::string::npos) {
    f.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return std::nullopt;
  } else {
    f.host = text;  // a name, an IPv4 address, or an IPv6 one without a port
  }
  if (f.host.empty()) return std::nullopt;
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const unsigned long value = std::stoul(port);
    if (value == 0 || value > 65535) return std::nullopt;
    f.port = static_cast<std::uint16_t>(value);
  }
  return f;
}

// A CLI11 validator for sizes such as 64K, 16MiB, 2G.
std::optional<std::uint64_t> size_option(const std::string& text, const char* what) {
  auto v = proto::parse_size(text);
  if (!v)
    std::cerr << "rdma-recv: " << what << ": '" << text << "' is not a size (e.g. 64K, 16M, 2G)\n";
  return v;
}
}  // namespace

std::optional<std::chrono::seconds> parse_duration(std::string_view text) {
  constexpr std::uint64_t kLimit = 100ull * 365 * 24 * 3600;
  std::size_t i = 0;
  std::uint64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (value > kLimit) return std::nullopt;
  }
  if (i == 0 || text.size() - i > 1) return std::nullopt;
  // A unit is required: a bare "5" could mean anything, and as seconds it would expire
  // partials five seconds old.
  if (i == text.size()) return std::nullopt;
  std::uint64_t unit = 1;
  {
    switch (text[i]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 24 * 3600;
        break;
      default:
        return std::nullopt;
    }
  }
  if (value == 0 || value > kLimit / unit) return std::nullopt;
  return std::chrono::seconds(static_cast<std::int64_t>(value * unit));
}

unsigned default_workers() {
  return std::max(4u, std::thread::hardware_concurrency());
}

std::variant<ReceiverOptions, int> parse_receiver_options(int argc, char** argv) {
  ReceiverOptions o;
  CLI::App app{
      "Receive files and directory trees sent with rdma-send over RDMA; verify each file by its "
      "digest.",
      "rdma-recv"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("rdma-recv ") + kVersion);
  app.add_option("-p,--port", o.port, "port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(cli::number_in(0, 65535, "port number"));
  app.add_option("-a,--bind", o.bind_address,
                 "address to listen on, IPv4 or IPv6 (default: every IPv4 address; :: for "
                 "IPv6 as well)");
  app.add_option("-d,--device", o.device,
                 "RDMA device to use (see --list-devices); without --bind, listen on the "
                 "first IPv4 address of its network interface");
  app.add_flag("--list-devices", o.list_devices,
               "list RDMA devices, their ports, state, MTU, network interface and addresses, "
               "then exit");
  app.add_flag("--check", o.check,
               "check, one line each, what these options need (device, port, memlock limit, "
               "DIR, secrets and senders files), serve nothing, and exit 0 if all passed, "
               "else 1");
  std::vector<std::string> allow, deny;
  app.add_option("--allow", allow,
                 "NET[,NET...]: accept connections only from these IPv4/IPv6 prefixes, "
                 "addresses or host names (resolved at start); others are rejected before any "
                 "memory is registered")
      ->allow_extra_args(false);
  app.add_option("--deny", deny,
                 "NET[,NET...]: reject connections from these prefixes, addresses or host "
                 "names, even when --allow matches")
      ->allow_extra_args(false);
  app.add_option("-o,--dir", o.dir, "directory to store files in")->capture_default_str();
  app.add_option("--senders", o.senders_file,
                 "file of 'ID KEY [SUBDIR]' lines (mode 0600): only senders that prove they "
                 "hold a listed key (rdma-send --key-file) get memory or write files, each "
                 "beneath DIR/SUBDIR when one is given");
  // Sealing is required with --senders unless --allow-clear; --require-seal, the opt-in of
  // the release that introduced sealing, stays accepted and says the default.
  bool allow_clear = false, require_seal = false;
  auto* require = app.add_flag("--require-seal", require_seal,
                               "with --senders: refuse a sender that will not seal its data and "
                               "messages (the default; see --allow-clear)")
                      ->needs("--senders");
  app.add_flag("--allow-clear", allow_clear,
               "with --senders: serve a keyed sender that will not seal (rdma-send --no-seal; a "
               "release before sealing) in clear, with a warning for each such connection, "
               "instead of refusing it")
      ->needs("--senders")
      ->excludes(require);
  app.add_option(
      "--secrets", o.secrets_file,
      "file of 'ID SECRET' lines ('#' comments): senders presenting a listed --id get its secret");
  std::string max_size, slot_size = "1M";
  app.add_option("--max-size", max_size, "largest file accepted, e.g. 10G (default: no limit)");
  app.add_flag("--overwrite", o.overwrite, "replace existing files (default: reject the transfer)");
  // Two callbacks, as for rdma-send --digest-at-end: the default (direct I/O) is the field's.
  auto* direct = app.add_flag_callback(
      "--direct-io", [&o] { o.direct_io = true; },
      "the default: write files with O_DIRECT where the file system allows it (no copy into "
      "the page cache: less CPU per byte, the cache left to others); elsewhere, and for each "
      "file's unaligned tail, through the cache");
  app.add_flag_callback(
         "--no-direct-io", [&o] { o.direct_io = false; }, "write every file through the page cache")
      ->excludes(direct);
  app.add_option("--slot-size", slot_size, "size of one slot of the receive window, 4K to 8M")
      ->capture_default_str();
  app.add_option("--slots", o.slots, "slots per connection (window = slots x slot size)")
      ->capture_default_str()
      ->check(cli::number_in(1, proto::kMaxSlotCount));
  std::string max_memory = "1G";
  app.add_option("--max-memory", max_memory,
                 "cap on the receive windows registered for all connections together")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections, "concurrent senders")
      ->capture_default_str()
      ->check(cli::number_in(1, 4096));
  app.add_option("--workers", o.workers,
                 "threads for disk and hashing work, shared by every connection (default: the "
                 "number of CPUs, at least 4)")
      ->check(cli::number_in(1, 256));
  std::uint32_t timeout_s = 30;
  app.add_option("--timeout", timeout_s, "seconds without progress before a sender is dropped")
      ->capture_default_str()
      ->check(cli::number_in(1, 3600));
  bool no_partial = false;
  app.add_flag("--no-partial", no_partial,
               "discard what an interrupted transfer received (default: keep it in "
               "DIR/.rdmax-partial, mode 0700, so that the same command continues it)");
  std::string partial_ttl = "24h", partial_max = "64G";
  app.add_option("--partial-ttl", partial_ttl,
                 "remove a kept partial file untouched for this long (e.g. 90m, 24h, 7d)")
      ->capture_default_str();
  app.add_option("--partial-max", partial_max,
                 "cap on the kept partial files together; the oldest go first")
      ->capture_default_str();
  std::string grace = "30s";
  app.add_option("--grace", grace,
                 "on SIGINT/SIGTERM, let transfers under way finish for up to this long "
                 "(e.g. 30s, 5m; 0: stop at once; a second signal also stops at once)")
      ->capture_default_str();
  std::optional<std::string> metrics;
  app.add_option("--metrics", metrics, kMetricsOptionHelp)->option_text("ADDRESS:PORT");
  std::optional<std::string> from;
  std::vector<std::string> paths;
  bool recursive = false;
  app.add_option("--from", from,
                 "fetch PATHs from the rdma-send --serve at HOST (port 18516 unless given) into "
                 "DIR, then exit")
      ->option_text("HOST[:PORT]");
  app.add_option("PATH", paths,
                 "with --from: what to fetch, as named within the server's export ('.' for all "
                 "of it)");
  app.add_flag("-r,--recursive", recursive, "with --from: a directory comes with its tree");
  std::optional<std::string> files_from;
  bool from0 = false;
  app.add_option("--files-from", files_from,
                 "with --from: fetch what LIST names ('-': standard input), one a line, each "
                 "within the server's export: it arrives under that path, the directories above "
                 "it with their modes and times, a listed directory without its contents")
      ->option_text("LIST");
  app.add_flag("-0,--from0", from0, "--files-from LIST is NUL-separated (find -print0)");
  std::optional<std::string> key_file;
  app.add_option("--key-file", key_file,
                 "with --from: file with one 'ID KEY' line (mode 0600): "
                 "prove it to a server started with --readers, demand its proof back, and seal "
                 "the fetch")
      ->option_text("FILE");
  std::optional<std::string> shard;
  app.add_option("--shard", shard,
                 "with --from: fetch only share I (0 to N-1) of N of what the PATHs name, cut by "
                 "the server as rdma-send --shard cuts a tree (so N fetchers fetch each file "
                 "once); auto: I and N from Slurm, Open MPI or PMI; auto/N: I from them or "
                 "from a Kubernetes Indexed Job")
      ->option_text("I/N|auto|auto/N");
  std::uint32_t parallel = 1;
  app.add_option("-P,--parallel", parallel,
                 "with --from: fetch over N connections, each asking for its part of what the "
                 "PATHs name (of the --shard share), so that the server spreads the files over "
                 "them")
      ->check(cli::number_in(1, 64));
  bool json = false, json_lines = false;
  auto* json_option = app.add_flag("--json", json,
                                   "with --from: print one JSON object on stdout at the end: an "
                                   "entry per file and directory, and the totals");
  app.add_flag("--json-lines", json_lines,
               "with --from: print one JSON object a line on stdout: {\"entry\":...} as each "
               "file and directory ends here, then {\"summary\":...}")
      ->excludes(json_option);
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more logging (repeat for trace)");
  app.add_flag("-q,--quiet", quiet, "warnings and errors only");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli::usage_error(app, e, "rdma-recv", kExitUsage);
  }
  o.verbosity = quiet ? -1 : verbose;
  if (from) {
    // A fetch, not the daemon: what only the daemon does does not apply.
    for (const char* name : {"--port", "--bind", "--device", "--list-devices", "--check", "--allow",
                             "--deny", "--senders", "--secrets", "--max-connections", "--grace",
                             "--metrics", "--require-seal", "--allow-clear"}) {
      if (app.get_option(name)->count() > 0) {
        std::cerr << "rdma-recv: " << name << " applies to the daemon, not to --from\n";
        return kExitUsage;
      }
    }
    auto source = parse_fetch_source(*from);
    if (!source) {
      std::cerr << "rdma-recv: --from: '" << *from
                << "' is not HOST, HOST:PORT or [IPV6]:PORT (port 1 to 65535)\n";
      return kExitUsage;
    }
    if (files_from) {
      const char* problem =
          !paths.empty()        ? "--files-from names what to fetch: give no PATH beside it"
          : recursive           ? "--files-from fetches each listed entry as it is, a directory "
                                  "without its contents: list what is in it too (find DIR), or fetch "
                                  "it as a PATH with -r"
          : files_from->empty() ? "--files-from: an empty file name ('-' is standard input)"
                                : nullptr;
      if (problem != nullptr) {
        std::cerr << "rdma-recv: " << problem << "\n";
        return kExitUsage;
      }
    } else if (from0) {
      std::cerr << "rdma-recv: -0 (--from0): it applies to --files-from; give --files-from LIST\n";
      return kExitUsage;
    } else if (paths.empty()) {
      std::cerr << "rdma-recv: --from: name at least one PATH to fetch ('.' for all the server "
                   "exports, with -r), or --files-from LIST\n";
      return kExitUsage;
    }
    if (shard) {
      auto parsed = parse_shard(*shard, process_environment());
      if (const auto* problem = std::get_if<std::string>(&parsed)) {
        std::cerr << "rdma-recv: --shard: " << *problem << "\n";
        return kExitUsage;
      }
      const auto spec = std::get<ShardSpec>(parsed);
      source->shard_index = spec.index;
      source->shard_count = spec.count;
    }
    source->connections = parallel;
    source->json = json;
    source->json_lines = json_lines;
    source->paths = std::move(paths);
    source->recursive = recursive;
    source->files_from = std::move(files_from);
    source->from0 = from0;
    // Only as given: RDMAX_KEY_FILE is rdma-send's, and a push's key claimed by every fetch
    // would have each keyless server refuse it.
    source->key_file = std::move(key_file);
    o.fetch = std::move(*source);
    // A file that differs from the server's is replaced (once the new one is verified): the
    // command's promise is that DIR ends up holding what the server has.
    o.overwrite = true;
    o.keep_identical = true;
  } else if (!paths.empty() || recursive || shard || key_file ||
             app.get_option("--parallel")->count() > 0 || json || json_lines || files_from ||
             from0) {
    std::cerr << "rdma-recv: PATH, -r, --files-from, -0, -P, --shard, --key-file, --json and "
                 "--json-lines are a fetch's: give --from HOST too\n";
    return kExitUsage;
  }
  o.require_seal = o.senders_file.has_value() && !allow_clear;
  o.timeout = std::chrono::seconds(timeout_s);
  if (const auto problem = parse_address_rules(allow, deny, o.allow, o.deny)) {
    std::cerr << "rdma-recv: " << *problem << "\n";
    return kExitUsage;
  }
  if (!max_size.empty()) {
    auto v = size_option(max_size, "--max-size");
    if (!v) return kExitUsage;
    o.max_size = *v;
  }
  auto mm = size_option(max_memory, "--max-memory");
  if (!mm) return kExitUsage;
  o.max_memory = *mm;
  auto ss = size_option(slot_size, "--slot-size");
  if (!ss) return kExitUsage;
  // rxe on Linux 6.1 caps one message at 8 MiB; below 4 KiB the protocol refuses. Whole
  // 4 KiB blocks keep every chunk aligned to the fs-verity digest's blocks (PROTOCOL 7.4).
  if (*ss < 4096 || *ss > (8u << 20) || *ss % 4096 != 0) {
    std::cerr << "rdma-recv: --slot-size must be a multiple of 4K between 4K and 8M\n";
    return kExitUsage;
  }
  o.slot_size = static_cast<std::uint32_t>(*ss);
  o.partials = !no_partial;
  auto ttl = parse_duration(partial_ttl);
  if (!ttl) {
    std::cerr << "rdma-recv: --partial-ttl: '" << partial_ttl
              << "' is not a duration: digits and a unit, s, m, h or d (e.g. 90m, 24h, 7d)\n";
    return kExitUsage;
  }
  o.partial_ttl = *ttl;
  auto grace_time = grace == "0" ? std::optional(std::chrono::seconds(0)) : parse_duration(grace);
  if (!grace_time) {
    std::cerr << "rdma-recv: --grace: '" << grace
              << "' is not a duration: digits and a unit, s, m, h or d (e.g. 30s, 5m), or 0\n";
    return kExitUsage;
  }
  o.grace = *grace_time;
  if (metrics) {
    o.metrics = parse_metrics_address(*metrics);
    if (!o.metrics) {
      std::cerr << "rdma-recv: " << not_a_metrics_address(*metrics) << "\n";
      return kExitUsage;
    }
  }
  auto pm = size_option(partial_max, "--partial-max");
  if (!pm) return kExitUsage;
  o.partial_max = *pm;
  return o;
}

}  // namespace rdmax::receiver
