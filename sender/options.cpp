#include "sender/options.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "common/cli/cli_checks.hpp"
#include "protocol/sizes.hpp"
#include "sender/exit_codes.hpp"
#include "sender/rate_limit.hpp"
#include "version.hpp"

namespace rdmax::sender {

namespace {
constexpr const char* kFooter = R"(Exit status:
  0  success: the receiver verified the file, every file of several (and the secret,
     if any, is on stdout); with several files, else the status of the first that failed
  1  any other failure (for example the receiver could not store the file)
  2  usage error: a PATH or the --files-from LIST cannot be read, a listed name
     outside --base, a bad --name or --shard, a loopback HOST (checked
     before any device work; nothing was sent)
  3  cannot connect, or the connection broke or timed out
  4  rejected by the receiver (name, size, existing file, no space)
  5  verdict bad: the receiver's digest differs from the sender's
  6  the receiver denied the ID
  7  authentication failed: the receiver requires a key and we have none, does not
     know our ID or holds another key for it, or could not prove it holds ours
     (--key-file); nothing was sent
  --check: 0 when every check passed, 1 when one failed, 2 usage error

Several PATHs, -r or -P send every file in one version-2 session per connection
(a directory DIR arrives as DIR's base name with its tree under it, as with
cp -r; modes and modification times are kept; links and special files are
skipped with a warning). One summary line counts the files good, failed and
skipped; --json gives one entry per file.

Many machines: --shard I/N sends shard I (from 0) of N of what the command
names, a partition of its files balanced by bytes that is the same on every
run of the same tree; N commands, one per shard, send it all, each file once.
--shard auto takes I and N from Slurm (SLURM_PROCID, SLURM_NTASKS), Open MPI
(OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or PMI (PMI_RANK, PMI_SIZE);
--shard auto/N from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX.
--files-from LIST sends the entries LIST names (one a line, or NUL-separated
with -0, as find -print0 writes), relative to --base DIR or absolute beneath
it; each arrives under its path relative to DIR. An entry that is missing or
unreadable is reported as failed and the others go on (exit status 1).
--json-lines prints one JSON object a line on stdout: {"entry":{...}} as each
entry settles (the objects of --json's "entries"), then {"summary":{...}}
(--json's object without "entries"; the secret, if any, is in it).
-H HOST1,HOST2,... (each HOST, HOST:PORT or [IPV6]:PORT) spreads the
connections over several receivers, one each at least, files balanced by
bytes; a receiver that fails fails only its own files, and the closing lines
(and --json's "receivers") say what each one got. -H ADDR1+ADDR2 names one
receiver by two addresses (two ports of one host): with -P 2 -d DEV1,DEV2 a
connection goes from each device to each address, and one big file is striped
over both (multi-rail).

Progress (hashing, then sending: bytes, rate, ETA, and the files settled when
there are several) is drawn on stderr when it is a terminal; --progress prints
it as plain lines elsewhere, --no-progress hides it. Logs go to stderr; stdout carries the secret and nothing else, so
  SECRET=$(rdma-send -H HOST --id ID FILE) captures it
(with --json or --json-lines, stdout carries JSON only, the secret in it).

The digest (--digest): "blake3" (default) is BLAKE3, as `b3sum FILE` prints
it (`rdma-send --checksum FILE` prints exactly that), hashed on every core at
both ends; a receiver without it (a release before it) is sent the fs-verity
digest instead, with no failed file. "fsverity" is the fs-verity file
digest, SHA-256 over 4 KiB blocks as a Merkle tree, also hashed on every core,
at about three times BLAKE3's CPU time; `rdma-send --checksum --digest fsverity
FILE` prints it exactly as `fsverity digest --hash-alg=sha256 --block-size=4096
FILE` does. "sha256" is the whole file's SHA-256, as `sha256sum FILE` prints
it (one core per end).
A receiver older than protocol version 2 knows only "sha256": rdma-send then
falls back to it and says so. Digests are cached per file (device, inode,
size, times) under ~/.cache/rdmax, so an unchanged file is not hashed again.

Examples:
  rdma-send -H 192.0.2.1 backup.tar
  rdma-send --checksum backup.tar
  rdma-send --check -H 192.0.2.1
  rdma-send -H 192.0.2.1 --bwlimit 500M backup.tar
  srun -n 8 rdma-send -H 192.0.2.1 -r --shard auto --json-lines dataset
  find dataset -type f -print0 | rdma-send -H 192.0.2.1 --files-from - -0
  rdma-send -H recv.example.org --id alice --name today.tar backup.tar
  rdma-send -H fd00::2 -d mlx5_0 -p 18600 image.iso)";

// What --files-from, --base and -0 may not be combined with; nullopt when fine.
std::optional<std::string> check_list_options(const SenderOptions& o, bool base_given) {
  if (!o.files_from) {
    if (base_given) return "--base: it applies to --files-from names; give --files-from LIST";
    if (o.from0) return "-0 (--from0): it applies to --files-from; give --files-from LIST";
    return std::nullopt;
  }
  if (!o.files.empty()) {
    return "--files-from names what to send: give no PATH beside it (found '" + o.files.front() +
           "')";
  }
  if (o.recursive) {
    return "--files-from sends each listed entry as it is, a directory without its contents: "
           "-r does not apply (list the files, e.g. with find DIR -print0)";
  }
  if (o.rename) return "--name renames a single FILE; it does not apply to --files-from";
  if (o.checksum) return "--checksum takes PATHs, not --files-from";
  if (o.files_from->empty()) return "--files-from: an empty file name ('-' is standard input)";
  return std::nullopt;
}
// --serve DIR: a daemon; what names files to send, or a receiver, does not apply.
std::variant<SenderOptions, int> checked_serve_options(SenderOptions o, bool port_given,
                                                       bool shard_given, bool device_given) {
  const std::pair<bool, const char*> not_with_serve[] = {
      {!o.files.empty(), "a PATH (a fetcher names what it wants: rdma-recv --from HOST PATH)"},
      {!o.host.empty(), "-H (the server listens; fetchers connect to it)"},
      {o.files_from.has_value(), "--files-from"},
      {o.recursive, "-r (a fetcher asks for a tree with rdma-recv --from -r)"},
      {o.rename.has_value(), "--name"},
      {o.checksum, "--checksum"},
      {o.json || o.json_lines, "--json and --json-lines"},
      {o.id.has_value(), "--id"},
      {o.key_file.has_value(), "--key-file (a server lists the fetchers' keys: --readers FILE)"},
      {!o.seal, "--no-seal (a server with --readers always seals)"},
      {o.parallel > 1, "-P"},
      {shard_given, "--shard (a fetcher asks for its share: rdma-recv --from --shard)"},
      {device_given, "-d (--bind names the address, and so the device, to listen on)"},
  };
  for (const auto& [given, what] : not_with_serve) {
    if (given) {
      std::cerr << "rdma-send: --serve DIR: " << what << " does not apply\n";
      return kExitUsage;
    }
  }
  if (o.serve->empty()) {
    std::cerr << "rdma-send: --serve: an empty directory name\n";
    return kExitUsage;
  }
  if (!port_given) o.port = kServePort;
  return o;
}
}  // namespace

std::variant<SenderOptions, int> parse_sender_options(int argc, char** argv) {
  return parse_sender_options_in(argc, argv, process_environment());
}

std::variant<SenderOptions, int> parse_sender_options_in(int argc, char** argv,
                                                         const EnvironmentLookup& env) {
  SenderOptions o;
  CLI::App app{
      "Send files and directories to an rdma-recv daemon over RDMA, each verified by its digest.",
      "rdma-send"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("rdma-send ") + kVersion);
  app.add_option("-H,--host", o.host,
                 "receiver host name or address (IPv4 or IPv6), or several, comma-separated "
                 "(HOST, HOST:PORT or [IPV6]:PORT), to spread the connections over; "
                 "HOST1+HOST2: several addresses of one receiver (its ports: multi-rail); "
                 "required unless --checksum");
  auto* port_option =
      app.add_option("-p,--port", o.port,
                     "receiver port (with --serve: the port to listen on, default 18516)")
          ->capture_default_str()
          ->check(cli::number_in(1, 65535, "port number"));
  std::string devices;
  app.add_option("-d,--device", devices,
                 "RDMA device the connection must go through (exit 3 if the route to HOST "
                 "uses another); DEV1,DEV2,...: spread the -P connections over these devices, "
                 "each connecting from its device's first IPv4 address");
  app.add_option(
      "--id", o.id,
      "identity to present after a good verdict; the secret the receiver holds for it goes "
      "to stdout");
  app.add_option("--key-file", o.key_file,
                 "file (mode 0600) of one 'ID KEY' line: prove to the receiver that we hold "
                 "the key it lists for ID (rdma-recv --senders), and send only to a receiver "
                 "that proves it holds it too (default: $RDMAX_KEY_FILE)");
  bool no_seal = false;
  app.add_flag("--no-seal", no_seal,
               "with a key: send names, data, verdicts and the secret in clear after the key "
               "proofs (default: sealed with AES-256-GCM under keys drawn from the key), for a "
               "trusted fabric or a receiver of a release before sealing");
  app.add_option(
      "--name", o.rename,
      "name to store a single FILE under: one plain file name, no '/' (default: its base "
      "name); checked before connecting");
  app.add_flag("-r,--recursive", o.recursive,
               "send directories with everything under them (a directory DIR arrives as "
               "DIR's base name, like cp -r); symbolic links and special files are skipped");
  app.add_option("-P,--parallel", o.parallel,
                 "spread the files over N connections (largest files first), on one device or "
                 "on those of -d DEV1,DEV2")
      ->capture_default_str()
      ->check(cli::number_in(1, 64));
  auto* json = app.add_flag(
      "--json", o.json,
      "print one JSON object on stdout: bytes, phase timings, throughput, verdict, secret");
  app.add_flag("--json-lines", o.json_lines,
               "print one JSON object a line on stdout: {\"entry\":...} as each file and "
               "directory settles, then {\"summary\":...} with the totals (and the secret)")
      ->excludes(json);
  std::optional<std::string> shard;
  app.add_option("--shard", shard,
                 "send only shard I (0 to N-1) of N of the files, balanced by bytes and the same "
                 "on every run; auto: I and N from Slurm, Open MPI or PMI; auto/N: I from "
                 "JOB_COMPLETION_INDEX")
      ->option_text("I/N|auto|auto/N");
  app.add_option("--files-from", o.files_from,
                 "send the entries LIST names, one a line (or NUL-separated with -0); '-' reads "
                 "standard input")
      ->option_text("LIST");
  std::optional<std::string> base;
  app.add_option("--base", base,
                 "the directory --files-from names are relative to, and absolute ones must lie "
                 "beneath; each entry arrives under its path relative to it (default: the "
                 "working directory)")
      ->option_text("DIR");
  app.add_flag("-0,--from0", o.from0, "--files-from LIST is NUL-separated (find -print0)");
  // Two callbacks rather than one "!--no-progress" flag: CLI11 would set an unset
  // optional<bool> to false, losing "not asked" (which means: a bar on a terminal).
  auto* progress = app.add_flag_callback(
      "--progress", [&o] { o.progress = true; },
      "show progress (bytes, rate, ETA) on stderr, as plain lines when it is not a terminal");
  app.add_flag_callback(
         "--no-progress", [&o] { o.progress = false; },
         "never show progress (default: a bar when stderr is a terminal)")
      ->excludes(progress);
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more logging (repeat for trace)");
  app.add_flag("-q,--quiet", quiet, "errors only");
  std::uint32_t connect_s = 10, timeout_s = 30;
  app.add_option("--connect-timeout", connect_s, "seconds to establish the connection")
      ->capture_default_str()
      ->check(cli::number_in(1, 3600));
  app.add_option("--timeout", timeout_s, "seconds without progress before giving up")
      ->capture_default_str()
      ->check(cli::number_in(1, 3600));
  app.add_option("--inject-corruption", o.inject_corruption,
                 "testing: flip the byte at this file offset after hashing")
      ->group("");
  // Two callbacks, as for --progress: the default (the digest at the end) is the field's.
  auto* at_end = app.add_flag_callback(
      "--digest-at-end", [&o] { o.digest_at_end = true; },
      "the default: a file the digest cache does not know is hashed as it is sent (one read "
      "of every byte), and its digest goes at its end (a receiver that does not take it, or "
      "--digest sha256, gets the digests first)");
  app.add_flag_callback(
         "--digest-first", [&o] { o.digest_at_end = false; },
         "hash every file before the connection, and announce each file's digest before its "
         "data (the order of version 1: every byte is read twice)")
      ->excludes(at_end);
  app.add_flag("--zero-copy", o.zero_copy,
               "register the file's pages for the RDMA WRITEs instead of copying them through "
               "a buffer: no copy, but every page is pinned (slower on Soft-RoCE; see "
               "docs/BENCHMARKS.md)");
  std::string digest = "blake3";
  auto* digest_option = app.add_option(
      "--digest", digest,
      "how the file is verified: blake3 (BLAKE3, as b3sum, hashed on every core; default; "
      "a receiver without it gets fsverity), fsverity (the fs-verity SHA-256 digest, hashed "
      "on every core) or sha256 (the whole file's SHA-256, as sha256sum)");
  digest_option->check(cli::one_of({"fsverity", "blake3", "sha256"}))
      ->option_text("fsverity|blake3|sha256");
  o.hash_threads = std::max(1u, std::thread::hardware_concurrency());
  app.add_option(
         "--hash-threads", o.hash_threads,
         "worker threads: they read the chunks to send and hash (blake3 and fsverity digests)")
      ->default_str("the online CPUs")
      ->check(cli::number_in(1, 1024));
  bool no_cache = false;
  app.add_flag("--no-digest-cache", no_cache,
               "neither look up nor remember digests: every file's digest is computed (as it "
               "is sent, or first with --digest-first) (default: reuse the digest of an "
               "unchanged file from ~/.cache/rdmax/digests)");
  app.add_flag("--checksum", o.checksum,
               "print each FILE's digest, in the format of the reference tool (b3sum; "
               "fsverity digest with --digest fsverity; sha256sum with --digest sha256), and "
               "connect nowhere");
  app.add_flag("--check", o.check,
               "check, one line each, what a transfer to HOST needs (device, port, route, "
               "memlock limit, a receiver answering), send nothing, and exit 0 if all passed; "
               "with --serve, what the server needs (device, port free, DIR, --readers, "
               "memlock), and serve nothing");
  std::optional<std::string> bwlimit;
  app.add_option("--bwlimit", bwlimit,
                 "send at most RATE bytes per second, e.g. 500M (K/M/G/T: powers of 1024, "
                 "as in every size)")
      ->option_text("RATE");
  std::optional<std::string> stripe_min;
  app.add_option("--stripe-min", stripe_min,
                 "with -P N, send a file of at least SIZE over all N connections at once "
                 "(default 256M; to a receiver that does not stripe it goes on one)")
      ->option_text("SIZE");
  app.add_option("--serve", o.serve,
                 "serve DIR, read only, to fetchers (rdma-recv --from HOST PATH...) instead of "
                 "sending: a daemon on port -p (default 18516) until SIGINT or SIGTERM")
      ->option_text("DIR");
  auto* bind_option = app.add_option(
      "-a,--bind", o.bind_address,
      "with --serve: the address to listen on (default: every IPv4 address; :: for IPv6 too)");
  std::vector<std::string> allow, deny;
  app.add_option("--allow", allow,
                 "with --serve: NET[,NET...]: accept fetchers only from these IPv4/IPv6 prefixes, "
                 "addresses or host names (resolved at start); others are refused before any "
                 "memory is registered")
      ->allow_extra_args(false);
  app.add_option("--deny", deny,
                 "with --serve: NET[,NET...]: refuse fetchers from these, even when --allow "
                 "matches")
      ->allow_extra_args(false);
  auto* max_connections = app.add_option("--max-connections", o.max_connections,
                                         "with --serve: concurrent fetchers (default 64)")
                              ->check(cli::number_in(1, 4096));
  app.add_option("--readers", o.readers_file,
                 "with --serve: file of 'ID KEY [SUBDIR]' lines (mode 0600): only fetchers that "
                 "prove they hold one of these keys may fetch, each only beneath its SUBDIR, "
                 "sealed")
      ->option_text("FILE");
  std::optional<std::string> metrics;
  app.add_option("--metrics", metrics, std::string("with --serve: ") + kMetricsOptionHelp)
      ->option_text("ADDRESS:PORT");
  app.add_option("PATH", o.files,
                 "files to send (and directories with -r; several with --checksum)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli::usage_error(app, e, "rdma-send", kExitUsage);
  }
  o.verbosity = quiet ? -1 : verbose;
  const bool port_given = port_option->count() > 0;
  o.connect_timeout = std::chrono::seconds(connect_s);
  o.timeout = std::chrono::seconds(timeout_s);
  if (!o.key_file && !o.serve) {
    if (auto path = env("RDMAX_KEY_FILE"); path && !path->empty()) o.key_file = std::move(*path);
  }
  o.seal = !no_seal;
  if (o.zero_copy && o.key_file && o.seal) {
    std::cerr << "rdma-send: --zero-copy cannot seal: a sealed chunk is written through a "
                 "buffer (add --no-seal to send in clear, or drop --zero-copy)\n";
    return kExitUsage;
  }
  const std::string digest_name = CLI::detail::to_lower(digest);
  o.digest = digest_name == "sha256"   ? proto::DigestAlgorithm::WholeFileSha256
             : digest_name == "blake3" ? proto::DigestAlgorithm::Blake3
                                       : proto::DigestAlgorithm::FsVeritySha256;
  o.digest_chosen = digest_option->count() > 0;
  o.digest_cache = !no_cache;
  if (bwlimit) {
    o.bwlimit = parse_rate(*bwlimit);
    if (!o.bwlimit) {
      std::cerr << "rdma-send: --bwlimit: '" << *bwlimit
                << "' is not a rate above 0 in bytes per second (e.g. 500M, 1GiB/s)\n";
      return kExitUsage;
    }
  }
  if (stripe_min) {
    const auto size = proto::parse_size(*stripe_min);
    if (!size) {
      std::cerr << "rdma-send: --stripe-min: '" << *stripe_min
                << "' is not a size (e.g. 256M, 1G)\n";
      return kExitUsage;
    }
    o.stripe_min = *size;
  }
  if (metrics) {
    if (!o.serve) {
      std::cerr << "rdma-send: --metrics applies to --serve DIR\n";
      return kExitUsage;
    }
    o.metrics = parse_metrics_address(*metrics);
    if (!o.metrics) {
      std::cerr << "rdma-send: " << not_a_metrics_address(*metrics) << "\n";
      return kExitUsage;
    }
  }
  if (o.serve) {
    if (const auto problem = parse_address_rules(allow, deny, o.allow, o.deny)) {
      std::cerr << "rdma-send: " << *problem << "\n";
      return kExitUsage;
    }
    return checked_serve_options(std::move(o), port_given, shard.has_value(), !devices.empty());
  }
  if (bind_option->count() > 0 || max_connections->count() > 0 || !allow.empty() || !deny.empty() ||
      o.readers_file) {
    std::cerr << "rdma-send: --bind, --allow, --deny, --max-connections and --readers apply to "
                 "--serve DIR\n";
    return kExitUsage;
  }
  if (o.files.empty() && !o.check && !o.files_from) {
    std::cerr << "rdma-send: PATH is required (or --files-from, --check, or --help)\n";
    return kExitUsage;
  }
  if (const auto problem = check_list_options(o, base.has_value())) {
    std::cerr << "rdma-send: " << *problem << "\n";
    return kExitUsage;
  }
  if (base) o.base = *base;
  if (shard) {
    auto parsed = parse_shard(*shard, env);
    if (const auto* problem = std::get_if<std::string>(&parsed)) {
      std::cerr << "rdma-send: --shard: " << *problem << "\n";
      return kExitUsage;
    }
    o.shard = std::get<ShardSpec>(parsed);
  }
  if (!o.checksum) {
    if (o.host.empty()) {
      std::cerr << "rdma-send: --host is required (unless --checksum)\n";
      return kExitUsage;
    }
    auto receivers = parse_receivers(o.host, o.port);
    if (const auto* problem = std::get_if<std::string>(&receivers)) {
      std::cerr << "rdma-send: -H: " << *problem << "\n";
      return kExitUsage;
    }
    o.receivers = std::get<std::vector<Receiver>>(std::move(receivers));
    o.host = o.receivers.front().host;
    o.port = o.receivers.front().port;
    if (o.rename && o.files.size() != 1) {
      std::cerr << "rdma-send: --name renames a single FILE; " << o.files.size()
                << " PATHs were given\n";
      return kExitUsage;
    }
  }
  for (std::size_t start = 0; start <= devices.size() && !devices.empty();) {
    const auto comma = std::min(devices.find(',', start), devices.size());
    o.devices.push_back(devices.substr(start, comma - start));
    if (o.devices.back().empty()) {
      std::cerr << "rdma-send: -d: an empty device name in '" << devices << "'\n";
      return kExitUsage;
    }
    start = comma + 1;
  }
  if (o.devices.size() == 1) o.device = o.devices.front();
  if (o.id && (o.id->empty() || o.id->size() > 256)) {
    std::cerr << "rdma-send: --id must be 1 to 256 bytes\n";
    return kExitUsage;
  }
  return o;
}

}  // namespace rdmax::sender
