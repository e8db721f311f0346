#include "receiver/incoming_entry.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "common/digest/merkle.hpp"
#include "common/error.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "receiver/file_record.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;
using Result = proto::WorkResult;

// How a file that is not good ended, by its verdict.
FileOutcome failed_file(proto::VerdictCode code) {
  switch (code) {
    case proto::VerdictCode::HashMismatch:
      return FileOutcome::BadDigest;
    case proto::VerdictCode::SizeMismatch:
      return FileOutcome::BadSize;
    case proto::VerdictCode::Abandoned:
      return FileOutcome::Abandoned;
    default:
      return FileOutcome::StorageError;
  }
}
}  // namespace

void IncomingEntry::make_directory(const EntryPort& port) {
  struct Outcome {
    bool ok = true;
    bool bad_path = false;
    std::string error;
  };
  auto outcome = std::make_shared<Outcome>();
  const proto::Offer o = offer;  // (a directory: never joined)
  const int dir_fd = port.context.dir_fd;
  const timespec mtime{static_cast<time_t>(o.mtime_sec), static_cast<long>(o.mtime_nsec)};
  const bool deferred = port.context.deferred_directories != nullptr;
  port.directories->post(
      [o, dir_fd, outcome, mtime, deferred] {
        try {
          make_directory_beneath(dir_fd, o.path);
          if (!deferred)
            set_directory_attributes(dir_fd, o.path, static_cast<mode_t>(o.mode), mtime);
        } catch (const SysError& e) {
          outcome->ok = false;
          // A symbolic link or a non-directory on the way (receiver/output_tree.hpp).
          outcome->bad_path = e.error() == ELOOP || e.error() == ENOTDIR;
          outcome->error = e.what();
        } catch (const std::exception& e) {
          outcome->ok = false;
          outcome->error = e.what();
        }
      },
      [&port, number = id, outcome, path = o.path, mode = static_cast<mode_t>(o.mode), mtime] {
        port.after_job(number, [&](IncomingEntry&) {
          if (outcome->ok) {
            if (auto* later = port.context.deferred_directories)
              later->push_back({path, mode, mtime});
            return port.settle(number, proto::VerdictCode::Good);
          }
          if (outcome->bad_path)
            return port.refuse(number, proto::RejectReason::BadName, outcome->error);
          spdlog::error("[{}] cannot make directory: {}", port.label, outcome->error);
          port.refuse(number, proto::RejectReason::Internal, "cannot make the directory");
        });
      });
}

void IncomingEntry::create(const EntryPort& port, std::optional<IncomingFile::Resume> resume) {
  const auto& context = port.context;
  file = std::make_shared<IncomingFile>(context.pool, context.dir_fd, offer.path,
                                        context.options.overwrite, port.algorithm, context.work);
  if (resume) file->set_resume(*resume);
  file->set_direct_io(context.options.direct_io);
  file->set_partial_area(context.partials);
  file->set_keep_identical(context.options.keep_identical);
  // As many of its chunks written at once as the window holds: one file alone fills it.
  file->set_write_lanes(port.write_lanes);
  file->create(offer.size, port.context.space,
               [&port, number = id](const IncomingFile::Outcome& outcome) {
                 port.after_job(number, [&](IncomingEntry& e) {
                   using Kind = IncomingFile::Outcome::Kind;
                   using R = proto::RejectReason;
                   switch (outcome.kind) {
                     case Kind::Ok:
                       if (e.file->resumed_from() > 0)
                         return port.raise(input<Result::EntryResumed>(Input::EntryTaken{number}));
                       return port.raise(input<Result::EntryTaken>(Input::EntryTaken{number}));
                     case Kind::Have:
                       return port.raise(input<Result::EntryHave>(Input::EntryTaken{number}));
                     case Kind::Exists:
                       return port.refuse(number, R::Exists, "a file of that name exists");
                     case Kind::NoSpace:
                       return port.refuse(number, R::NoSpace, "not enough free space");
                     case Kind::BadPath:
                       return port.refuse(number, R::BadName, outcome.error);
                     case Kind::Failed:
                       spdlog::error("[{}] cannot create {}: {}", port.label,
                                     proto::quoted_for_log(e.offer.path), outcome.error);
                       return port.refuse(number, R::Internal, "cannot create the file");
                   }
                 });
               });
}

// Looked for on the directories' queue (in order with them, never on the loop): a regular
// file of the offered size (unless --overwrite without keep_identical, as for Have), else a kept
// partial of the path and size, whatever digest it was kept for. The partial's prefix is checked
// again, and cut below the whole size, when it is opened for the Resume.
void IncomingEntry::look_for_held(const EntryPort& port, IncomingFile::Resume fresh) {
  struct Found {
    std::optional<proto::Holds> held;
  };
  auto found = std::make_shared<Found>();
  const std::uint32_t number = id;  // (the jobs hold copies, never the entry)
  const std::string path = offer.path;
  const std::uint64_t file_size = offer.size;
  const int dir_fd = port.context.dir_fd;
  const bool overwrite = port.context.options.overwrite && !port.context.options.keep_identical;
  const proto::DigestAlgorithm algorithm = port.algorithm;
  PartialStore* partials = port.context.partials;
  const std::uint32_t align = port.context.options.slot_size;
  port.directories->post(
      [=] {
        try {
          if (!overwrite) {
            const Fd parent = open_parent_beneath(dir_fd, path, false);
            if (auto digest =
                    current_digest(parent.get(), name_in_parent(path), file_size, algorithm)) {
              found->held = proto::Holds{number, file_size, *digest};
              return;
            }
          }
          if (partials == nullptr || algorithm == proto::DigestAlgorithm::WholeFileSha256 ||
              file_size <= align)
            return;
          if (auto kept = partials->peek({path, file_size, {}, algorithm}, align, file_size - 1))
            found->held = proto::Holds{number, kept->bytes, kept->digest};
        } catch (const std::exception& e) {
          // Nothing usable is here (a missing directory, a link on the way, an unreadable
          // file): the file is sent whole; creating it says what is wrong, if anything.
          spdlog::debug("nothing held for '{}': {}", proto::escape_for_log(path), e.what());
        }
      },
      [&port, number, found, fresh] {
        port.after_job(number, [&](IncomingEntry& e) {
          if (found->held)
            return port.raise(input<Result::EntryHeld>(
                Input::EntryHeld{number, found->held->length, *found->held->digest}));
          e.create(port, fresh);
        });
      });
}

// The sender says its file is the one here (Continue from its size). It may have hashed for
// minutes since our Holds: what is here is looked at again, on the directories' queue, and
// the entry is had only if it still has that digest. Gone or changed, it is a new file
// (PROTOCOL.md 7.9): created and taken, or refused if another file is in the way.
void IncomingEntry::confirm_whole(const EntryPort& port, const proto::Holds& whole,
                                  IncomingFile::Resume fresh) {
  auto same = std::make_shared<bool>(false);
  const std::string path = offer.path;
  const int dir_fd = port.context.dir_fd;
  const proto::DigestAlgorithm algorithm = port.algorithm;
  port.directories->post(
      [=] {
        try {
          const Fd parent = open_parent_beneath(dir_fd, path, false);
          *same = current_digest(parent.get(), name_in_parent(path), whole.length, algorithm) ==
                  whole.digest;
        } catch (const std::exception& e) {
          spdlog::debug("'{}' is no longer here: {}", proto::escape_for_log(path), e.what());
        }
      },
      [&port, number = id, same, whole, fresh] {
        port.after_job(number, [&](IncomingEntry& e) {
          if (!*same) {
            spdlog::info("[{}] {} changed after we said we held it: taking it whole", port.label,
                         proto::quoted_for_log(e.offer.path));
            return e.create(port, fresh);
          }
          e.offer.digest = *whole.digest;
          port.raise(input<Result::EntryHave>(Input::EntryTaken{number}));
        });
      });
}

void IncomingEntry::send_take(const EntryPort& port, std::uint64_t from) {
  taken = Clock::now();
  if (joined_to) {
    spdlog::info("[{}] carrying chunks of {} (entry {} of the lead)", port.label,
                 proto::quoted_for_log(offer.path), *joined_to);
    return port.hooks.send(proto::Take{id});
  }
  if (from == 0) {
    spdlog::info("[{}] receiving {} ({})", port.label, proto::quoted_for_log(offer.path),
                 proto::format_size(offer.size));
    return port.hooks.send(proto::Take{id});
  }
  spdlog::info("[{}] resuming {} ({}) at {}", port.label, proto::quoted_for_log(offer.path),
               proto::format_size(offer.size), proto::format_size(from));
  port.hooks.send(proto::Resume{id, from});
  ++port.context.metrics.files_resumed;
}

void IncomingEntry::send_have(const EntryPort& port) const {
  spdlog::info("[{}] {} ({}) is here already: nothing to receive", port.label,
               proto::quoted_for_log(offer.path), proto::format_size(offer.size));
  if (offer.kind == proto::EntryKind::File) port.context.metrics.count(FileOutcome::Identical);
  if (port.context.reports != nullptr)
    (*port.context.reports)(report_of(offer, EntryReport::Status::Identical));
  port.hooks.send(proto::Have{id, offer.digest});
}

void IncomingEntry::verify(const EntryPort& port) {
  using Code = proto::VerdictCode;
  if (joined_to) {
    // A member's part of a striped file (7.12): its chunks are stored; the file is the lead's
    // to verify. `received` is what arrived on this connection.
    return port.settle(id, done_total == received ? Code::Good : Code::SizeMismatch);
  }
  const auto started = Clock::now();
  ReceiverMetrics& metrics = port.context.metrics;
  auto verified = [&metrics, started] { metrics.count_verification(Clock::now() - started); };
  // `received` counts the bytes before a Resume offset too (the ledger starts there); a
  // striped file's chunks came on several connections: it must be stored whole, with no hole.
  const bool whole = striped ? file->bytes_stored() == offer.size && done_total == offer.size
                             : received == offer.size && done_total == received;
  // (A striped file with a hole has no digest to finish.)
  if (whole || !striped) computed = file->finish_hash();
  if (!whole || computed != offer.digest) {
    verified();
    file->keep_nothing();
    return port.settle(id, whole ? Code::HashMismatch : Code::SizeMismatch);
  }
  // A Hello says nothing of its file's mode and time: the file keeps ours (PROTOCOL.md 4.2).
  if (port.offers_metadata) file->set_metadata(offer.mode, offer.mtime_sec, offer.mtime_nsec);
  file->commit([&port, number = id, verified](const IncomingFile::Outcome& outcome) {
    verified();
    if (outcome.ok()) port.context.metrics.count(FileOutcome::Good);
    bool answered = false;
    port.after_job(number, [&](IncomingEntry& e) {
      answered = true;
      if (!outcome.ok())
        spdlog::error("[{}] cannot store {}: {}", port.label, proto::quoted_for_log(e.offer.path),
                      outcome.error);
      port.settle(number, outcome.ok() ? Code::Good : Code::StorageError);
      // A shutdown asked for during the commits: their senders have their verdicts first.
      port.hooks.committed();
    });
    if (!answered && outcome.ok())
      spdlog::warn("[{}] entry {} was committed, but the sender was gone before its verdict",
                   port.label, number);
  });
}

void IncomingEntry::record_verdict(const EntryPort& port, proto::VerdictCode code) const {
  const bool good = code == proto::VerdictCode::Good;
  if (joined_to) {
    // A member's part (7.12): the file's own verdict is the lead's to give.
    spdlog::debug("[{}] our part of {}: {}", port.label, proto::quoted_for_log(offer.path),
                  proto::to_string(code));
    return;
  }
  EntryReport report =
      report_of(offer, good ? EntryReport::Status::Good : EntryReport::Status::Failed,
                good ? std::string() : std::string(proto::to_string(code)));
  report.algorithm = port.algorithm;
  auto tell = [&] {
    if (port.context.reports != nullptr) (*port.context.reports)(std::move(report));
  };
  if (offer.kind != proto::EntryKind::File) {
    spdlog::debug("[{}] directory {}: {}", port.label, proto::quoted_for_log(offer.path),
                  proto::to_string(code));
    return tell();
  }
  if (!good) port.context.metrics.count(failed_file(code));
  if (code == proto::VerdictCode::Abandoned) {
    spdlog::info("[{}] {}: abandoned by the sender, nothing kept", port.label,
                 proto::quoted_for_log(offer.path));
    return tell();
  }
  const std::uint64_t from = file ? file->resumed_from() : 0;
  // A striped file cut short (7.12) has only its stored prefix.
  const std::uint64_t to = striped ? file->bytes_stored() : offer.size;
  log_end(port, to - from, computed, proto::to_string(code));
  report.bytes_received = to - from;
  report.resumed_from = from;
  if (good) report.digest = computed;
  tell();
}

void IncomingEntry::settled() {
  if (file && !joined_to && !file->committed()) file->discard();
}

void IncomingEntry::cut_short(const EntryPort& port, bool keep_nothing) {
  if (!file || joined_to || file->committed()) return;
  if (taken != Clock::time_point{}) log_end(port, received, {}, nullptr);
  if (keep_nothing)
    file->discard();
  else
    file->keep();  // (which discards a file whose data is bad)
}

void IncomingEntry::log_end(const EntryPort& port, std::uint64_t bytes, const Digest& digest,
                            const char* verdict) const {
  const double seconds = std::chrono::duration<double>(Clock::now() - taken).count();
  const double rate = seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  const std::string progress = fmt::format("{} of {} in {:.2f}s ({}/s)", proto::format_size(bytes),
                                           proto::format_size(offer.size), seconds,
                                           proto::format_size(static_cast<std::uint64_t>(rate)));
  const std::string name = proto::escape_for_log(offer.path);
  // Abandoned: no digest was computed, and there is no verdict to name.
  if (verdict == nullptr) {
    spdlog::info("[{}] '{}': abandoned after {}", port.label, name, progress);
    return;
  }
  spdlog::info("[{}] '{}': {}, {} {}, verdict {}", port.label, name, progress,
               proto::to_string(port.algorithm), to_hex(digest), verdict);
}

}  // namespace rdmax::receiver
