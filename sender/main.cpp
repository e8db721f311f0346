// rdma-send: sends files (and with -r directories) to an rdma-recv daemon and reports the
// verdicts, or (--checksum) prints files' digests. When sending, the secret (if an --id was given
// and accepted) is the only thing written to stdout.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <utility>

#include "common/checksum_line.hpp"
#include "common/digest_cache.hpp"
#include "common/error.hpp"
#include "common/error_hints.hpp"
#include "common/input_file.hpp"
#include "common/logging.hpp"
#include "common/loopback.hpp"
#include "common/progress_bar.hpp"
#include "common/rdma/devices.hpp"
#include "common/sha256.hpp"
#include "protocol/sizes.hpp"
#include "sender/exit_codes.hpp"
#include "sender/hashing_pass.hpp"
#include "sender/memlock.hpp"
#include "sender/options.hpp"
#include "sender/preflight.hpp"
#include "sender/report.hpp"
#include "sender/send_session.hpp"
#include "sender/session_command.hpp"

using namespace rdmax;

namespace {

// The digest cache, unless --no-digest-cache or there is no home to keep it in.
std::optional<DigestCache> open_digest_cache(const sender::SenderOptions& options) {
  if (!options.digest_cache) return std::nullopt;
  auto path = DigestCache::default_path();
  if (!path) {
    spdlog::debug("digest cache: neither XDG_CACHE_HOME nor HOME is set; not caching");
    return std::nullopt;
  }
  return DigestCache(*path);
}

// Opens FILE for sending or hashing; logs why not.
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
  auto cache = open_digest_cache(options);
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
      const std::string line = checksum_line(
          options.digest == proto::DigestAlgorithm::FsVeritySha256 ? ChecksumFormat::FsVerity
                                                                   : ChecksumFormat::Sha256,
          pass.digest.value, path);
      std::fwrite(line.data(), 1, line.size(), stdout);
      std::fputc('\n', stdout);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      spdlog::error("cannot hash {}: {}", path, e.what());
      rc = sender::kExitOther;
    }
  }
  sender::commit_digest_cache(batch);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = sender::parse_sender_options(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& options = std::get<sender::SenderOptions>(parsed);
  init_logging(options.verbosity, "rdma-send");
  if (options.checksum) return print_checksums(options);

  // Local input first (rdma-send(1), EXIT STATUS 2): every PATH and --name is checked
  // before any device, route or connection work, so that a wrong PATH is reported as such
  // and not as a missing device or an unreachable host.
  std::optional<sender::SourceTree> tree;
  if (!options.check) {
    tree = sender::walk_local_input(options);
    if (!tree) return sender::kExitUsage;
  }
  // No RDMA device serves loopback: rdma_cm would fail at the route, naming no cause.
  if (resolves_to_loopback(options.host)) {
    spdlog::error(
        "-H {}: RDMA does not work over loopback, even to a receiver on this host; {}; then "
        "`rdma-send --check -H ADDRESS` checks the set-up",
        options.host, loopback_remedy());
    return sender::kExitUsage;
  }
  if (options.check) return sender::run_preflight(options, std::cout);

  const bool many = sender::needs_session(options);
  std::optional<InputFile> file;
  if (!many) {
    file = open_input(options.file);
    if (!file) return sender::kExitUsage;
  }

  // Fail before hashing a large file when this host cannot do RDMA at all.
  if (!any_rdma_device()) {
    spdlog::error("{}", no_rdma_device_message());
    return sender::kExitConnection;
  }
  for (const auto& device : options.devices) {
    if (!rdma_device_exists(device)) {
      spdlog::error("{}", unknown_device_message(device));
      return sender::kExitUsage;
    }
  }
  if (many) {
    if (options.zero_copy) spdlog::warn("--zero-copy applies to single-file transfers only");
    try {
      return sender::run_session_command(
          options, std::move(*tree), choose_progress_mode(options.progress, options.verbosity < 0));
    } catch (const SysError& e) {
      const std::string hint = rdma_setup_hint(e.error());
      spdlog::error("{}{}{}", e.what(), hint.empty() ? "" : "; ", hint);
      return hint.empty() ? sender::kExitOther : sender::kExitConnection;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return sender::kExitOther;
    }
  }

  try {
    using Clock = std::chrono::steady_clock;
    const ProgressMode progress = choose_progress_mode(options.progress, options.verbosity < 0);
    const auto t0 = Clock::now();
    auto cache = open_digest_cache(options);
    auto batch = sender::open_digest_cache_batch(cache ? &*cache : nullptr);
    sender::HashingSettings hashing{options.digest, options.hash_threads, progress,
                                    batch ? &*batch : nullptr};
    sender::HashingPass pass = sender::hash_file(*file, hashing);
    sender::commit_digest_cache(batch);

    sender::SenderSettings settings{
        options.name,    options.id,        proto::kLatestVersion,     options.connect_timeout,
        options.timeout, options.zero_copy, options.inject_corruption, progress,
        options.bwlimit};
    sender::MemlockBudget memlock(preflight::current_memlock_limit(), 1, sender::kOneFileDepths);
    settings.memlock = &memlock;
    std::optional<sender::SendSession> session;
    session.emplace(options, settings, *file, pass.digest);
    proto::SenderOutcome outcome = session->run();
    if (outcome == proto::SenderOutcome::VersionUnsupported) {
      // A receiver from before version 2 refuses our Hello with Reject(UnsupportedVersion):
      // version 1 does everything it can, but carries only the whole-file SHA-256 (and no
      // keepalives while it commits).
      const bool rehash = pass.digest.algorithm != proto::DigestAlgorithm::WholeFileSha256;
      spdlog::warn("the receiver speaks only protocol version 1: connecting again with version 1{}",
                   rehash ? " (and the whole-file SHA-256 digest it knows)" : "");
      if (rehash) {
        hashing.algorithm = proto::DigestAlgorithm::WholeFileSha256;
        const double first = pass.seconds;
        pass = sender::hash_file(*file, hashing);
        sender::commit_digest_cache(batch);
        pass.seconds += first;
      }
      settings.version = proto::kVersion1;
      session.emplace(options, settings, *file, pass.digest);
      outcome = session->run();
    }
    const auto& stats = session->stats();
    const int rc = sender::exit_code_for(outcome);
    if (outcome == proto::SenderOutcome::Success && stats.skipped) {
      spdlog::info("skipped {} as '{}': identical on the receiver ({} {})", options.file,
                   options.name, proto::to_string(pass.digest.algorithm),
                   to_hex(pass.digest.value));
    } else if (outcome == proto::SenderOutcome::Success) {
      const double rate =
          stats.data_seconds > 0 ? static_cast<double>(stats.bytes) / stats.data_seconds : 0;
      const std::string resumed =
          stats.resumed_from > 0 ? " (resumed at " + proto::format_size(stats.resumed_from) + ")"
                                 : std::string();
      spdlog::info("sent {} as '{}': {}{} in {:.2f}s ({}/s), verified ({} {})", options.file,
                   options.name, proto::format_size(stats.bytes), resumed, stats.data_seconds,
                   proto::format_size(static_cast<std::uint64_t>(rate)),
                   proto::to_string(pass.digest.algorithm), to_hex(pass.digest.value));
    } else {
      spdlog::error("transfer failed: {}", outcome_message(outcome));
    }
    if (options.json) {
      sender::Report report{options.file,
                            options.name,
                            file->size(),
                            pass.digest,
                            pass.from_cache,
                            pass.seconds,
                            stats.connect_seconds,
                            stats.data_seconds,
                            stats.verify_seconds,
                            std::chrono::duration<double>(Clock::now() - t0).count(),
                            stats.zero_copy,
                            outcome,
                            rc,
                            session->secret()};
      report.bytes_sent = stats.bytes;
      report.resumed_from = stats.resumed_from;
      report.skipped = stats.skipped;
      std::puts(sender::to_json(report).c_str());
    } else if (outcome == proto::SenderOutcome::Success && !session->secret().empty()) {
      std::fwrite(session->secret().data(), 1, session->secret().size(), stdout);
      std::fputc('\n', stdout);
    }
    return rc;
  } catch (const SysError& e) {
    // Setting up the CM channel or id (before any connection attempt).
    const std::string hint = rdma_setup_hint(e.error());
    spdlog::error("{}{}{}", e.what(), hint.empty() ? "" : "; ", hint);
    return hint.empty() ? sender::kExitOther : sender::kExitConnection;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return sender::kExitOther;
  }
}
