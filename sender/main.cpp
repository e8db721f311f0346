// rdma-send: sends files (and with -r directories) to an rdma-recv daemon and reports the
// verdicts, or (--checksum) prints files' digests. When sending, the secret (if an --id was given
// and accepted) is the only thing written to stdout. With --serve DIR, a daemon that serves
// DIR to fetchers (sender/serve_daemon.hpp).

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <utility>

#include "common/cli/error_hints.hpp"
#include "common/cli/logging.hpp"
#include "common/cli/loopback.hpp"
#include "common/crypto/key_files.hpp"
#include "common/error.hpp"
#include "common/metrics/metrics_server.hpp"
#include "common/os/fd.hpp"
#include "common/rdma/devices.hpp"
#include "protocol/names.hpp"
#include "sender/checksum_line.hpp"
#include "sender/digest_cache.hpp"
#include "sender/exit_codes.hpp"
#include "sender/hashing_pass.hpp"
#include "sender/input_file.hpp"
#include "sender/interrupt_flag.hpp"
#include "sender/options.hpp"
#include "sender/preflight.hpp"
#include "sender/progress_bar.hpp"
#include "sender/report.hpp"
#include "sender/serve_daemon.hpp"
#include "sender/serve_metrics.hpp"
#include "sender/transfer_command.hpp"

using namespace rdmax;

namespace {

// --json promises one object whatever the outcome: for a command that ends before any
// transfer, one with no entries and the error; --json-lines its summary line. Returns
// `exit_code`.
int json_failure(const sender::SenderOptions& options, int exit_code, const std::string& error) {
  if (options.json) std::puts(sender::to_json_failure(exit_code, error).c_str());
  if (options.json_lines) std::puts(sender::to_json_failure_line(exit_code, error).c_str());
  return exit_code;
}

// Opens FILE for hashing; logs why not.
std::optional<InputFile> open_input(const std::string& path) {
  try {
    return InputFile(path);
  } catch (const SysError& e) {
    const std::string hint = input_file_hint(e.error());
    spdlog::error(
        "cannot read {}: {}", path,
        hint.empty() ? e.what() : std::system_category().message(e.error()) + "; " + hint);
  } catch (const std::exception& e) {
    if (std::filesystem::is_directory(path))
      spdlog::error("cannot send {}: it is a directory; {}", path, input_file_hint(EISDIR));
    else
      spdlog::error("cannot send {}: {}", path, e.what());
  }
  return std::nullopt;
}

// --checksum: each FILE's digest line, as the reference tool prints it. Like sha256sum, a
// file that cannot be read is reported and skipped, and the exit status says so.
int print_checksums(const sender::SenderOptions& options) {
  InterruptFlag interrupts;
  auto cache = sender::open_digest_cache(options.digest_cache);
  auto batch = sender::open_digest_cache_batch(cache ? &*cache : nullptr);
  const ProgressMode progress = choose_progress_mode(options.progress, options.verbosity < 0);
  int rc = 0;
  for (const std::string& path : options.files) {
    auto file = open_input(path);
    if (!file) {
      rc = sender::kExitUsage;
      continue;
    }
    try {
      const auto pass = sender::hash_file(
          *file, {options.digest, options.hash_threads, progress, batch ? &*batch : nullptr});
      const ChecksumFormat format =
          options.digest == proto::DigestAlgorithm::FsVeritySha256 ? ChecksumFormat::FsVerity
          : options.digest == proto::DigestAlgorithm::Blake3       ? ChecksumFormat::B3sum
                                                                   : ChecksumFormat::Sha256;
      const std::string line = checksum_line(format, pass.digest.value, path);
      std::fwrite(line.data(), 1, line.size(), stdout);
      std::fputc('\n', stdout);
      std::fflush(stdout);
    } catch (const Interrupted& e) {
      sender::commit_digest_cache(batch);
      spdlog::warn("interrupted by signal {} while hashing {}", e.signal(), path);
      InterruptFlag::die_of(e.signal());
    } catch (const std::exception& e) {
      spdlog::error("cannot hash {}: {}", path, e.what());
      rc = sender::kExitOther;
    }
  }
  sender::commit_digest_cache(batch);
  return rc;
}

// --serve DIR: the daemon, until a signal stops it (0), or it cannot serve (1; 2: DIR).
int serve(const sender::SenderOptions& options) {
  const std::string& dir = *options.serve;
  Fd exported(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!exported) {
    spdlog::error("--serve {}: {}", proto::escape_for_log(dir), std::strerror(errno));
    return sender::kExitUsage;
  }
  // --readers is local input: a bad file is a usage error before anything listens.
  std::optional<proto::SenderKeyStore> readers;
  if (options.readers_file) {
    try {
      readers = load_key_store(*options.readers_file, "readers file");
    } catch (const std::exception& e) {
      spdlog::error("{}; fix the readers file (docs/SECURITY.md)", e.what());
      return sender::kExitUsage;
    }
  }
  // Bound before any device work: a port in use is a usage error, and nothing was started.
  sender::ServeMetrics metrics;
  std::optional<MetricsServer> metrics_server;
  if (!bind_metrics(metrics_server, options.metrics, [&metrics] { return metrics.render(); }))
    return sender::kExitUsage;
  if (!any_rdma_device()) {
    spdlog::error("{}", no_rdma_device_message());
    return sender::kExitOther;
  }
  try {
    sender::ServeDaemon daemon(options, std::move(exported), readers ? &*readers : nullptr,
                               options.metrics ? &metrics : nullptr);
    start_metrics(metrics_server, options.metrics);
    return daemon.run();
  } catch (const SysError& e) {
    const std::string hint = rdma_setup_hint(e.error());
    spdlog::error("cannot serve on port {}: {}{}{}", options.port, e.what(),
                  hint.empty() ? "" : "; ", hint);
    return sender::kExitOther;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return sender::kExitOther;
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = sender::parse_sender_options(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& options = std::get<sender::SenderOptions>(parsed);
  init_logging(options.verbosity, "rdma-send");
  if (options.checksum) return print_checksums(options);
  if (options.serve)
    return options.check ? sender::run_serve_preflight(options, std::cout) : serve(options);

  // Local input first (rdma-send(1), EXIT STATUS 2): every PATH and --name is checked
  // before any device, route or connection work, so that a wrong PATH is reported as such
  // and not as a missing device or an unreachable host.
  std::optional<sender::SourceTree> tree;
  if (!options.check) {
    std::string error;
    tree = sender::walk_local_input(options, error);
    if (!tree) return json_failure(options, sender::kExitUsage, error);
  }
  // No RDMA device serves loopback: rdma_cm would fail at the route, naming no cause.
  for (const auto& receiver : options.receivers) {
    for (std::size_t k = 0; k < receiver.addresses(); ++k) {
      if (!resolves_to_loopback(receiver.address(k))) continue;
      const std::string text = fmt::format(
          "-H {}: RDMA does not work over loopback, even to a receiver on this host; {}; then "
          "`rdma-send --check -H ADDRESS` checks the set-up",
          receiver.address(k), loopback_remedy());
      spdlog::error("{}", text);
      return json_failure(options, sender::kExitUsage, text);
    }
  }
  if (options.check) return sender::run_preflight(options, std::cout);
  // The key is local input too: a bad key file is a usage error before anything is sent.
  std::optional<proto::SenderKey> key;
  if (options.key_file) {
    try {
      key = load_key_file(*options.key_file);
    } catch (const std::exception& e) {
      const std::string text = std::string(e.what()) + "; fix the key file (docs/SECURITY.md)";
      spdlog::error("{}", text);
      return json_failure(options, sender::kExitUsage, text);
    }
  }

  // Fail before hashing a large file when this host cannot do RDMA at all.
  if (!any_rdma_device()) {
    spdlog::error("{}", no_rdma_device_message());
    return json_failure(options, sender::kExitConnection, no_rdma_device_message());
  }
  for (const auto& device : options.devices) {
    if (!rdma_device_exists(device)) {
      spdlog::error("{}", unknown_device_message(device));
      return json_failure(options, sender::kExitUsage, unknown_device_message(device));
    }
  }
  // SIGINT/SIGTERM before the transfer's event loop takes them (while hashing) stop the
  // command with a word, not silently.
  InterruptFlag interrupts;
  try {
    return sender::run_transfer(options, std::move(*tree),
                                choose_progress_mode(options.progress, options.verbosity < 0),
                                key ? &*key : nullptr);
  } catch (const Interrupted& e) {
    const std::string text = fmt::format(
        "interrupted by signal {} while hashing: nothing was sent. Run the same command again "
        "to continue (the digests computed so far are in the digest cache)",
        e.signal());
    spdlog::warn("{}", text);
    json_failure(options, 128 + e.signal(), text);
    std::fflush(stdout);
    InterruptFlag::die_of(e.signal());
  } catch (const SysError& e) {
    // Setting up the CM channel or id (before any connection attempt).
    const std::string hint = rdma_setup_hint(e.error());
    const std::string text = std::string(e.what()) + (hint.empty() ? "" : "; ") + hint;
    spdlog::error("{}", text);
    return json_failure(options, hint.empty() ? sender::kExitOther : sender::kExitConnection, text);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return json_failure(options, sender::kExitOther, e.what());
  }
}
