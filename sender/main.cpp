// rdma-send: sends one file to an rdma-recv daemon and reports the verdict. The secret
// (if an --id was given and accepted) is the only thing written to stdout.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include "common/error.hpp"
#include "common/error_hints.hpp"
#include "common/input_file.hpp"
#include "common/logging.hpp"
#include "common/progress_bar.hpp"
#include "common/rdma/devices.hpp"
#include "common/sha256.hpp"
#include "protocol/sizes.hpp"
#include "sender/exit_codes.hpp"
#include "sender/options.hpp"
#include "sender/report.hpp"
#include "sender/send_session.hpp"

using namespace rdmax;

int main(int argc, char** argv) {
  auto parsed = sender::parse_sender_options(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& options = std::get<sender::SenderOptions>(parsed);
  init_logging(options.verbosity, "rdma-send");

  std::optional<InputFile> file;
  try {
    file.emplace(options.file);
  } catch (const SysError& e) {
    const std::string hint = input_file_hint(e.error());
    spdlog::error(
        "cannot read {}: {}", options.file,
        hint.empty() ? e.what() : std::system_category().message(e.error()) + "; " + hint);
    return sender::kExitUsage;
  } catch (const std::exception& e) {
    if (std::filesystem::is_directory(options.file))
      spdlog::error("cannot send {}: it is a directory; {}", options.file, input_file_hint(EISDIR));
    else
      spdlog::error("cannot send {}: {}", options.file, e.what());
    return sender::kExitUsage;
  }

  // Fail before hashing a large file when this host cannot do RDMA at all.
  if (!any_rdma_device()) {
    spdlog::error("{}", no_rdma_device_message());
    return sender::kExitConnection;
  }
  if (options.device && !rdma_device_exists(*options.device)) {
    spdlog::error("{}", unknown_device_message(*options.device));
    return sender::kExitUsage;
  }

  try {
    using Clock = std::chrono::steady_clock;
    const ProgressMode progress = choose_progress_mode(options.progress, options.verbosity < 0);
    const auto t0 = Clock::now();
    Digest digest;
    {
      ProgressBar bar(progress, "hashing", file->size());
      const auto show = [&](std::uint64_t done) { bar.update(done); };
      // Hashing the mapping in place avoids a copy; a file system that cannot map the
      // file still gets hashed, through pread.
      std::span<const std::uint8_t> mapping;
      try {
        mapping = file->map();
      } catch (const SysError& e) {
        spdlog::debug("hashing through pread: {}", e.what());
      }
      digest = mapping.size() == file->size() ? sha256_of_mapping(mapping, show)
                                              : sha256_of_file(file->fd(), file->size(), show);
      bar.finish();
    }
    const double hash_s = std::chrono::duration<double>(Clock::now() - t0).count();
    spdlog::debug("SHA-256 {} of {} in {:.2f}s", to_hex(digest), proto::format_size(file->size()),
                  hash_s);

    sender::SenderSettings settings{
        options.name,    options.id,        proto::kLatestVersion,     options.connect_timeout,
        options.timeout, options.zero_copy, options.inject_corruption, progress};
    std::optional<sender::SendSession> session;
    session.emplace(options, settings, *file, digest);
    proto::SenderOutcome outcome = session->run();
    if (outcome == proto::SenderOutcome::VersionUnsupported) {
      // A receiver from before version 2 refuses our Hello with Reject(UnsupportedVersion):
      // everything it can do, version 1 does (no keepalives while it commits).
      spdlog::warn("the receiver speaks only protocol version 1: connecting again with version 1");
      settings.version = proto::kVersion1;
      session.emplace(options, settings, *file, digest);
      outcome = session->run();
    }
    const auto& stats = session->stats();
    const int rc = sender::exit_code_for(outcome);
    if (outcome == proto::SenderOutcome::Success) {
      const double rate =
          stats.data_seconds > 0 ? static_cast<double>(stats.bytes) / stats.data_seconds : 0;
      spdlog::info("sent {} as '{}': {} in {:.2f}s ({}/s), verified", options.file, options.name,
                   proto::format_size(stats.bytes), stats.data_seconds,
                   proto::format_size(static_cast<std::uint64_t>(rate)));
    } else {
      spdlog::error("transfer failed: {}", outcome_message(outcome));
    }
    if (options.json) {
      sender::Report report{options.file,
                            options.name,
                            file->size(),
                            hash_s,
                            stats.connect_seconds,
                            stats.data_seconds,
                            stats.verify_seconds,
                            std::chrono::duration<double>(Clock::now() - t0).count(),
                            stats.zero_copy,
                            outcome,
                            rc,
                            session->secret()};
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
