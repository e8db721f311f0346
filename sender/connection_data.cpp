// The session's data path (sender/connection.hpp): what goes next (the Offers, the
// chunks the ledger plans as credits and --bwlimit allow, the FileDones), and where each
// chunk's bytes come from: the file's registered mapping (--zero-copy, sender/file_windows.hpp)
// or a read into the staging buffer's slot.

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"
#include "sender/connection.hpp"

namespace rdmax::sender {

namespace {

constexpr std::uint32_t kNoEntry = UINT32_MAX;  // a slot whose chunk was copied

}  // namespace

void Connection::use_staging() {
  if (staging_key_) return;
  staging_ = transport()->allocate(std::size_t{ledger_.active_slots()} * accept_.slot_size);
  staging_key_ = transport()->register_memory(staging_, Access::LocalRead);
}

// The windows of a file sent zero-copy, registered from `offset` on its first chunk; none
// when its mapping cannot be registered (a file system that cannot be mapped): it is copied
// through the staging buffer instead.
FileWindows* Connection::windows_for(OutgoingEntry& e, std::uint64_t offset) {
  if (e.windows) return &*e.windows;
  try {
    e.windows.emplace(*transport(), e.input().map(), window_bytes_);
    e.windows->register_ahead(offset);
    return &*e.windows;
  } catch (const std::exception& error) {
    e.windows.reset();
    spdlog::warn("{}: zero-copy unavailable, copying through a buffer instead: {}",
                 proto::quoted_for_log(e.planned.local_path), error.what());
    return nullptr;
  }
}

void Connection::start_chunk(const proto::SendLedger::Planned& c) {
  OutgoingEntry& e = offered(c.entry);
  const bool copying = window_bytes_ == 0 || (e.result.bytes > 0 && !e.result.zero_copy);
  if (FileWindows* w = copying ? nullptr : windows_for(e, c.offset)) {
    in_flight_[c.slot] = {c.entry, c.offset};
    e.result.zero_copy = true;
    const Registration key = w->acquire(c.offset, c.length);
    // Pin the next window while this one is on the wire; best effort (acquire registers it
    // when its first chunk is due otherwise).
    if (c.offset + c.length < e.planned.size) {
      try {
        w->register_ahead(c.offset + c.length);
      } catch (const std::exception& error) {
        spdlog::debug("not registering ahead: {}", error.what());
      }
    }
    return reads_->add_ready(c, key, w->bytes(c.offset, c.length));
  }
  use_staging();
  if (c.slot < in_flight_.size()) in_flight_[c.slot] = {kNoEntry, 0};
  std::uint8_t* buffer = staging_.data() + std::size_t{c.slot} * accept_.slot_size;
  reads_->read(c, e.shared_input(), {buffer, c.length}, *staging_key_);
}

bool Connection::post_chunks() {
  bool freed = false;
  while (auto chunk = reads_->next()) {
    const auto& c = chunk->planned;
    // Abandoned or settled (a bad verdict) while it was read: it does not go.
    if (ledger_.state(c.entry) != proto::EntryState::Taken) {
      ledger_.unplan(c);
      freed = true;
      continue;
    }
    OutgoingEntry& e = offered(c.entry);
    if (!chunk->error.empty()) {
      // A file offered without its digest can be abandoned (FileAbort): one that cannot
      // be read now costs that file, not the session. One offered with it cannot.
      if (!e.digest_in_flight())
        throw std::runtime_error(proto::quoted_for_log(e.planned.local_path) + ": " + chunk->error);
      unreadable_chunk(c, chunk->error);
      freed = true;
      continue;
    }
    // (Never zero-copy: start_session() copies when asked to corrupt.)
    if (const auto at = settings_.inject_corruption;
        at && *at >= c.offset && *at < c.offset + c.length) {
      staging_[std::size_t{c.slot} * accept_.slot_size + (*at - c.offset)] ^= 0xFF;
      spdlog::warn("testing: corrupted the byte at offset {} of {}", *at,
                   proto::quoted_for_log(e.planned.local_path));
    }
    if (e.digest_in_flight()) hash_in_flight(e, c, chunk->bytes);
    transport()->write(chunk->source, chunk->bytes, c.remote_addr, c.rkey);
    post(proto::FileChunk{c.entry, c.slot, c.offset, c.length}, c.slot + 1);
    e.result.bytes += c.length;
    abort_if_due(e);  // it changed while it was read: after this, its last FileChunk
  }
  return freed;
}

void Connection::pump() {
  if (state_ != State::InSession) return;
  while (auto entry = ledger_.next_offer()) {
    open_.try_emplace(*entry, *entry, planned(*entry), result(*entry));
    post(offer_of(*entry, planned(*entry)));
  }
  // --bwlimit: a chunk goes only when the shared bucket holds its length (as for one
  // file, so that the rate is never beaten); the run wakes the connection at resume_at().
  resume_at_.reset();
  // Until no chunk read is dropped: a dropped one (its file settled or unreadable meanwhile)
  // freed its slot for another file's chunk, and no later event may come to plan it.
  do {
    while (auto length = ledger_.next_chunk_length()) {
      if (bwlimit_ != nullptr) {
        const auto now = Clock::now();
        TokenBucket& bucket = bwlimit_->bucket(now, accept_.slot_size);
        if (const auto at = bucket.ready_at(*length, now); at > now) {
          resume_at_ = at;
          break;
        }
        bucket.take(*length, now);
      }
      const auto chunk = ledger_.next_chunk();
      try {
        start_chunk(*chunk);
      } catch (const std::exception& e) {
        // As for a read that fails (post_chunks): the file's, or the session's.
        if (planned(chunk->entry).digest_known) throw;
        unreadable_chunk(*chunk, e.what());
      }
    }
  } while (post_chunks());
  while (auto entry = ledger_.next_file_done()) {
    OutgoingEntry& e = offered(*entry);
    e.close();  // every chunk of it has been read and written
    proto::FileDone done{*entry, e.planned.size};
    if (e.digest_in_flight()) {
      done.digest = digest_at_end(e);
      if (!done.digest) {  // a chunk could not be hashed: nothing to vouch for
        spdlog::error("{}: cannot compute its digest", proto::quoted_for_log(e.planned.local_path));
        return dispatch({Event::LocalFailure,
                         SenderInput::Abort{proto::ErrorCode::Internal, "cannot hash a file"}});
      }
    }
    post(done);
  }
  if (ledger_.all_settled() && !holding_ && !settled_signalled_) {
    settled_signalled_ = true;
    // The id is presented only when every entry of the command is good.
    const bool good = failures_ == 0 && others_failures_ == 0;
    dispatch({SenderInput::Settled{good}, {}});
  }
}

void Connection::start_session(const proto::Accept& accept) {
  if (const auto problem = proto::check_accept(accept, plan_.algorithm, 0))
    return violation(proto::describe(*problem, accept, 0));
  accept_ = accept;
  std::vector<proto::SendLedger::EntryPlan> plans;
  plans.reserve(entries_.size());
  for (std::uint32_t index : entries_)
    plans.push_back({plan_.entries[index].kind, plan_.entries[index].size});
  // What is pinned must fit RLIMIT_MEMLOCK (sender/memlock.hpp): fewer slots in flight,
  // smaller zero-copy windows, or, when not even one slot fits, no session.
  const std::uint32_t wanted = std::min(accept.slot_count, kMaxActiveSlots);
  std::uint32_t slots = wanted;
  // Copying is the default: pinning page-cache pages cost more than copying them where it
  // was measured (docs/BENCHMARKS.md). --zero-copy asks for it.
  if (settings_.zero_copy && !settings_.inject_corruption && wanted > 0) {
    const std::uint64_t preferred = preferred_window_chunks(accept.slot_size, wanted);
    std::optional<proto::WindowFit> fit = proto::WindowFit{
        static_cast<std::uint32_t>(std::min<std::uint64_t>(preferred, UINT32_MAX)), wanted};
    if (settings_.memlock != nullptr)
      fit = settings_.memlock->file_windows(accept.slot_size, wanted, preferred);
    if (fit) {
      slots = fit->slots;
      window_bytes_ = std::uint64_t{fit->window_chunks} * accept.slot_size;
    } else {
      spdlog::warn(
          "zero-copy unavailable, copying through a buffer instead: RLIMIT_MEMLOCK cannot hold "
          "three windows of one chunk");
    }
  }
  if (window_bytes_ == 0 && settings_.memlock != nullptr && wanted > 0)
    slots = settings_.memlock->staging_slots(accept.slot_size, wanted);
  if (wanted > 0 && slots == 0) {
    settings_.memlock->cannot_fit(accept.slot_size);
    return dispatch(
        {Event::LocalFailure,
         SenderInput::Abort{proto::ErrorCode::Internal,
                            "the sender cannot pin one slot under its RLIMIT_MEMLOCK"}});
  }
  ledger_ = proto::SendLedger(std::move(plans), accept, slots);
  ledger_.allow_directories(!holding_);
  in_flight_.assign(ledger_.active_slots(), {0, 0});
  reads_.emplace(settings_.pool, ledger_.active_slots(), [this] { guarded([&] { pump(); }); });
  if (window_bytes_ == 0) use_staging();
  spdlog::debug(
      "data phase: chunks of {}, {} slots in flight, {}", proto::format_size(accept.slot_size),
      ledger_.active_slots(),
      window_bytes_ > 0 ? "zero-copy from the files' mappings" : "copied through a buffer");
  expect("the receiver's answers", settings_.timeout);
  pump();
}

}  // namespace rdmax::sender
