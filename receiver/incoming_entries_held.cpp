// A session's files offered without their digest (docs/PROTOCOL.md 7.9), the receiver's side:
// what is here of such a file is looked for off the loop and how much of it is told (Holds,
// never its digest: SECURITY.md); the sender's Continue, with its digest of as much of its
// own file, is compared with ours and acted on (Have, a Resume of the kept partial checked
// again, or a new file); a FileAbort discards the file. The digest it is verified against comes
// with its FileDone (receiver/connection.cpp), and finish() settles an abandoned file.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/digest/merkle.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "receiver/file_record.hpp"
#include "receiver/incoming_entries.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

namespace {
using Input = ReceiverInput;
}  // namespace

// Looked for on the directories' queue (in order with them, never on the loop): a regular
// file of the offered size (unless --overwrite, as for Have), else a kept partial of the
// path and size, whatever digest it was kept for. The partial's prefix is checked again, and
// cut below the whole size, when it is opened for the Resume.
void IncomingEntries::look_for_held(std::uint32_t id) {
  expect_next();
  const IncomingEntry& entry = *this->entry(id);
  struct Found {
    std::optional<proto::Holds> held;
  };
  auto found = std::make_shared<Found>();
  const std::string path = entry.offer.path;
  const std::uint64_t size = entry.offer.size;
  const int dir_fd = context_.dir_fd;
  const bool overwrite = context_.options.overwrite;
  const proto::DigestAlgorithm algorithm = open_.digest_algorithm;
  PartialStore* partials = context_.partials;
  const std::uint32_t align = context_.options.slot_size;
  directories_->post(
      [=] {
        try {
          const auto slash = path.rfind('/');
          const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
          if (!overwrite) {
            const Fd parent = open_parent_beneath(dir_fd, path, false);
            if (auto digest = current_digest(parent.get(), name, size, algorithm)) {
              found->held = proto::Holds{id, size, *digest};
              return;
            }
          }
          if (partials == nullptr || algorithm == proto::DigestAlgorithm::WholeFileSha256 ||
              size <= align)
            return;
          if (auto kept = partials->peek({path, size, {}, algorithm}, align, size - 1))
            found->held = proto::Holds{id, kept->bytes, kept->digest};
        } catch (const std::exception& e) {
          // Nothing usable is here (a missing directory, a link on the way, an unreadable
          // file): the file is sent whole; creating it says what is wrong, if anything.
          spdlog::debug("nothing held for '{}': {}", proto::escape_for_log(path), e.what());
        }
      },
      [this, id, found] {
        hooks_.in_session([&] {
          if (this->entry(id) == nullptr) return;
          if (found->held)
            return hooks_.raise(input<proto::WorkResult::EntryHeld>(
                Input::EntryHeld{id, found->held->length, *found->held->digest}));
          create_file(id, fresh_partial_);
        });
      });
}

void IncomingEntries::hold(const ReceiverInput::EntryHeld& held) {
  IncomingEntry& entry = *this->entry(held.entry);
  entry.held = proto::Holds{held.entry, held.length, held.digest};  // ours, kept here
  ledger_.hold_for_continue(held.entry);
  spdlog::info("[{}] {} ({}): {} of it is here; asking the sender", label_,
               proto::quoted_for_log(entry.offer.path), proto::format_size(entry.offer.size),
               held.length == entry.offer.size ? "all" : proto::format_size(held.length));
  hooks_.send(proto::Holds{held.entry, held.length, std::nullopt});
  expect_next();
}

void IncomingEntries::check_continue(const proto::Continue& next) {
  // Nothing is held for the sender where the Open did not ask for the digest at the end.
  if (!digest_at_end_) return violation("a Continue, the digest at the end not negotiated");
  if (auto error = ledger_.continued(next))
    return violation(std::string("bad Continue: ") + proto::to_string(*error));
  IncomingEntry& entry = *this->entry(next.entry);
  const proto::Holds held = entry.held.value();  // Held implies a Holds went
  if (next.from == 0) {
    if (next.digest) return violation("a Continue from 0 with a digest");
    return create_file(next.entry, fresh_partial_);
  }
  if (next.from != held.length) return violation("Continue.from is neither 0 nor what we hold");
  if (!next.digest) return violation("a Continue from what we hold without the sender's digest");
  if (*next.digest != *held.digest) {
    // Another file (or a guess at ours): sent whole, and counted, so that a session cannot
    // ask about what we hold without end.
    if (++held_guesses_ == proto::kMaxHeldGuesses)
      spdlog::warn(
          "[{}] {} files offered differ from what is here: telling this sender no more "
          "about what is held",
          label_, held_guesses_);
    spdlog::info("[{}] {} differs from what is here: taking it whole", label_,
                 proto::quoted_for_log(entry.offer.path));
    return create_file(next.entry, fresh_partial_);
  }
  if (held.length == entry.offer.size) return confirm_whole(next.entry, held);
  // Its prefix is ours: the partial continues, checked again and cut to at most `from`.
  create_file(next.entry, IncomingFile::Resume{context_.partials,
                                               {},
                                               context_.options.slot_size,
                                               false,
                                               PartialStore::Match::AnyDigest,
                                               next.from});
}

// The sender says its file is the one here (Continue from its size). It may have hashed for
// minutes since our Holds: what is here is looked at again, on the directories' queue, and
// the entry is had only if it still has that digest. Gone or changed, it is a new file
// (PROTOCOL.md 7.9): created and taken, or refused if another file is in the way.
void IncomingEntries::confirm_whole(std::uint32_t id, const proto::Holds& held) {
  expect_next();
  const IncomingEntry& entry = *this->entry(id);
  auto same = std::make_shared<bool>(false);
  const std::string path = entry.offer.path;
  const int dir_fd = context_.dir_fd;
  const proto::DigestAlgorithm algorithm = open_.digest_algorithm;
  directories_->post(
      [=] {
        try {
          const auto slash = path.rfind('/');
          const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
          const Fd parent = open_parent_beneath(dir_fd, path, false);
          *same = current_digest(parent.get(), name, held.length, algorithm) == held.digest;
        } catch (const std::exception& e) {
          spdlog::debug("'{}' is no longer here: {}", proto::escape_for_log(path), e.what());
        }
      },
      [this, id, same, held] {
        hooks_.in_session([&] {
          IncomingEntry* e = this->entry(id);
          if (e == nullptr) return;
          if (!*same) {
            spdlog::info("[{}] {} changed after we said we held it: taking it whole", label_,
                         proto::quoted_for_log(e->offer.path));
            return create_file(id, fresh_partial_);
          }
          e->offer.digest = *held.digest;
          hooks_.raise(input<proto::WorkResult::EntryHave>(Input::EntryTaken{id}));
        });
      });
}

void IncomingEntries::abandon(const proto::FileAbort& abort) {
  if (!digest_at_end_) return violation("a FileAbort, the digest at the end not negotiated");
  if (auto error = ledger_.abort(abort))
    return violation(std::string("bad FileAbort: ") + proto::to_string(*error));
  const IncomingEntry* entry = this->entry(abort.entry);
  if (entry == nullptr) return;  // its write had failed: the sender has that verdict
  spdlog::warn("[{}] the sender abandoned {}: {}", label_, proto::quoted_for_log(entry->offer.path),
               abort.reason == proto::AbortReason::Changed ? "it changed while it was read"
                                                           : "it could not be read");
}

}  // namespace rdmax::receiver
