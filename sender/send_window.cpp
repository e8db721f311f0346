#include "sender/send_window.hpp"

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "protocol/transfer_rules.hpp"

namespace rdmax::sender {

namespace {

constexpr std::uint32_t kNoEntry = UINT32_MAX;  // a slot whose chunk was copied

}  // namespace

void SendWindow::use_staging() {
  if (staging_key_) return;
  staging_ = transport_->allocate(std::size_t{entries_.ledger().active_slots()} * slot_size_);
  staging_key_ = transport_->register_memory(staging_, Access::LocalRead);
}

// The windows of a file sent zero-copy, registered from `offset` on its first chunk; none
// when its mapping cannot be registered (a file system that cannot be mapped): it is copied
// through the staging buffer instead.
FileWindows* SendWindow::windows_for(OutgoingEntry& e, std::uint64_t offset) {
  if (e.windows) return &*e.windows;
  try {
    e.windows.emplace(*transport_, e.input().map(), window_bytes_);
    e.windows->register_ahead(offset);
    return &*e.windows;
  } catch (const std::exception& error) {
    e.windows.reset();
    spdlog::warn("{}: zero-copy unavailable, copying through a buffer instead: {}",
                 proto::quoted_for_log(e.planned.local_path), error.what());
    return nullptr;
  }
}

void SendWindow::start_chunk(const proto::PlannedChunk& c) {
  OutgoingEntry& e = entries_.offered(c.entry);
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
  std::uint8_t* buffer = staging_.data() + std::size_t{c.slot} * slot_size_;
  // A sealed chunk's bytes in clear exist only in its read: a digest at the end is hashed
  // there.
  FileHasher::ChunkNodes nodes;
  if (reads_->seals() && e.digest_in_flight()) {
    nodes = settings_.hashing.chunk_nodes(entries_.algorithm(), e.planned.size);
    if (!nodes) throw std::logic_error("a sealed chunk's digest at the end needs a tree digest");
  }
  reads_->read(c, e.shared_input(), {buffer, c.length}, *staging_key_, std::move(nodes));
}

bool SendWindow::post_chunks() {
  bool freed = false;
  while (auto chunk = reads_->next()) {
    const auto& c = chunk->planned;
    // Abandoned or settled (a bad verdict) while it was read: it does not go.
    if (entries_.ledger().state(c.entry) != proto::EntryState::Taken) {
      entries_.ledger().unplan(c);
      freed = true;
      continue;
    }
    OutgoingEntry& e = entries_.offered(c.entry);
    if (!chunk->error.empty()) {
      // A file offered without its digest can be abandoned (FileAbort): one that cannot
      // be read now costs that file, not the session. One offered with it cannot.
      if (!e.digest_in_flight())
        throw std::runtime_error(proto::quoted_for_log(e.planned.local_path) + ": " + chunk->error);
      entries_.unreadable_chunk(c, chunk->error);
      freed = true;
      continue;
    }
    if (chunk->nodes)
      entries_.hashed_in_read(e, c, std::move(*chunk->nodes), chunk->hash_error);
    else if (e.digest_in_flight())
      entries_.hash_in_flight(e, c, chunk->bytes);
    transport_->write(chunk->source, chunk->bytes, c.remote_addr, c.rkey);
    hooks_.send(proto::FileChunk{c.entry, c.slot, c.offset, c.length, chunk->seal}, c.slot + 1);
    e.result.bytes += c.length;
    entries_.abort_if_due(e);  // it changed while it was read: after this, its last FileChunk
  }
  return freed;
}

void SendWindow::send_chunks() {
  auto& ledger = entries_.ledger();
  // --bwlimit: a chunk goes only when the shared bucket holds its length (as for one
  // file, so that the rate is never beaten); the run wakes the connection at resume_at().
  resume_at_.reset();
  // Until no chunk read is dropped: a dropped one (its file settled or unreadable meanwhile)
  // freed its slot for another file's chunk, and no later event may come to plan it.
  do {
    while (auto length = ledger.next_chunk_length()) {
      if (settings_.shared_bwlimit != nullptr) {
        const auto now = Clock::now();
        TokenBucket& bucket = settings_.shared_bwlimit->bucket(now, slot_size_);
        if (const auto at = bucket.ready_at(*length, now); at > now) {
          resume_at_ = at;
          break;
        }
        bucket.take(*length, now);
      }
      const auto chunk = ledger.next_chunk();
      if (!chunk) break;  // (next_chunk_length() said one was due: a bug, not a crash)
      try {
        start_chunk(*chunk);
      } catch (const std::exception& e) {
        // As for a read that fails (post_chunks): the file's, or the session's.
        if (entries_.planned(chunk->entry).digest_known) throw;
        entries_.unreadable_chunk(*chunk, e.what());
      }
    }
  } while (post_chunks());
}

bool SendWindow::credit(const proto::Credit& credit) {
  if (auto error = entries_.ledger().credit(credit)) {
    hooks_.violation(std::string("bad credit: ") + proto::to_string(*error));
    return false;
  }
  if (data_began_ == Clock::time_point{}) data_began_ = Clock::now();
  return true;
}

bool SendWindow::completed(std::uint32_t slot) {
  if (entries_.ledger().completed(slot) == 0) return false;
  last_data_ = Clock::now();
  if (slot < in_flight_.size() && window_bytes_ > 0) {
    const auto [entry, offset] = in_flight_[slot];
    if (OutgoingEntry* e = entries_.open_entry(entry); e != nullptr && e->windows)
      e->windows->release(offset);
  }
  return true;
}

std::optional<std::pair<SendWindow::Clock::time_point, SendWindow::Clock::time_point>>
SendWindow::data_span() const {
  if (last_data_ == Clock::time_point{}) return std::nullopt;
  return std::pair{data_began_, last_data_};
}

void SendWindow::stop() {
  if (reads_) reads_->stop();
}

void SendWindow::cancel() {
  if (reads_) reads_->cancel();
}

bool SendWindow::busy() const {
  return reads_ && reads_->running();
}

std::optional<std::uint32_t> SendWindow::fit(const proto::Accept& accept) {
  // What is pinned must fit RLIMIT_MEMLOCK (sender/memlock.hpp): fewer slots in flight,
  // smaller zero-copy windows, or, when not even one slot fits, no session.
  const std::uint32_t wanted = std::min(accept.slot_count, kMaxActiveSlots);
  std::uint32_t slots = wanted;
  // Copying is the default: pinning page-cache pages cost more than copying them where it
  // was measured (docs/BENCHMARKS.md). --zero-copy asks for it.
  // A sealed connection copies: each chunk is sealed into its slot (rdma-send refuses
  // --zero-copy with a key unless --no-seal). So does --inject-corruption: its byte is flipped
  // in our copy (sender/corrupting_transport.hpp), never in the file's pages.
  const bool seals =
      (settings_.key != nullptr && settings_.seal) || settings_.proven_chunk_key != nullptr;
  if (settings_.zero_copy && !settings_.inject_corruption && !seals && wanted > 0) {
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
    return std::nullopt;
  }
  return slots;
}

void SendWindow::start(Transport& transport, std::uint32_t slot_size,
                       const proto::SealKey* chunk_key) {
  transport_ = &transport;
  slot_size_ = slot_size;
  const std::uint32_t slots = entries_.ledger().active_slots();
  in_flight_.assign(slots, {0, 0});
  std::optional<proto::SealKey> seal_key;
  if (chunk_key != nullptr) {
    if (window_bytes_ > 0) throw std::logic_error("a sealed connection cannot be --zero-copy");
    seal_key = *chunk_key;
  }
  reads_.emplace(
      settings_.pool, slots, [this] { hooks_.in_session(hooks_.pump); }, settings_.read, seal_key);
  if (window_bytes_ == 0) use_staging();
  spdlog::debug(
      "data phase: chunks of {}, {} slots in flight, {}", proto::format_size(slot_size), slots,
      window_bytes_ > 0 ? "zero-copy from the files' mappings" : "copied through a buffer");
}

}  // namespace rdmax::sender
