// The digest at the end (docs/PROTOCOL.md 7.9), the sender's side: a file whose digest is not
// known when it is offered is hashed as its chunks are read for sending (each byte is read
// once), on the run's hashing threads; its FileDone carries the digest, folded in file order.
// A file that changed while it was read is abandoned (FileAbort): nothing of it is kept and
// nothing goes into the digest cache. When the receiver holds something at the path (Holds),
// our own first bytes are hashed (a local read, nothing is sent) and Continue says where the
// file goes on: from what is held, or from 0.

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "common/digest/file_digest.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "sender/connection.hpp"

namespace rdmax::sender {

namespace {
// How long stop_jobs() waits for a job that is already running (one chunk's hash, or a
// prefix being read): it reads buffers the connection is about to free.
constexpr auto kJobPoll = std::chrono::milliseconds(1);

const char* why_abandoned(proto::AbortReason reason) {
  return reason == proto::AbortReason::Changed ? "it changed while it was being sent"
                                               : "it could not be read";
}
}  // namespace

void Connection::hash_in_flight(const proto::SendLedger::Planned& c,
                                std::span<const std::uint8_t> bytes) {
  InFlightDigest& d = digests_[c.entry];  // made by start_tree_at() for a resumed file
  if (!d.hasher) d.hasher = FileHasher::make(*settings_.pool, plan_.algorithm, entry(c.entry).size);
  if (!d.opened && d.failure.empty()) {
    try {
      d.opened = identity_of(input(c.entry).fd());
    } catch (const std::exception& e) {
      d.failure = e.what();
    }
    // The file read must have the size offered (the walk's); from here on it must not
    // change at all (checked after its last read).
    if (d.opened && d.opened->size != entry(c.entry).size)
      aborts_.emplace_back(c.entry, proto::AbortReason::Changed);
  }
  ledger_.hold(c.slot);
  d.hasher->hash(
      c.offset, bytes,
      [this, local = c.entry, slot = c.slot, offset = c.offset, length = c.length](
          std::vector<merkle::Node> nodes, const std::string& error) {
        guarded([&] { on_chunk_hashed(local, slot, offset, length, std::move(nodes), error); });
      });
  // The last read of the file: it must be as it was at the first (as tar checks).
  if (c.offset + c.length == entry(c.entry).size && d.opened) {
    try {
      if (identity_of(input(c.entry).fd()) != *d.opened)
        aborts_.emplace_back(c.entry, proto::AbortReason::Changed);
    } catch (const std::exception&) {
      aborts_.emplace_back(c.entry, proto::AbortReason::Unreadable);
    }
  }
}

void Connection::on_chunk_hashed(std::uint32_t local, std::uint32_t slot, std::uint64_t offset,
                                 std::uint32_t length, std::vector<merkle::Node> nodes,
                                 const std::string& error) {
  ledger_.release(slot);  // its bytes may be overwritten now
  if (auto it = digests_.find(local); it != digests_.end()) {
    InFlightDigest& d = it->second;
    if (!error.empty() && d.failure.empty()) d.failure = error;
    d.pending[offset] = {length, std::move(nodes)};
    // Folded in file order, however the chunks' hashes finished.
    for (auto p = d.pending.begin(); p != d.pending.end() && p->first == d.folded;
         p = d.pending.erase(p)) {
      d.hasher->fold(p->second.second);
      d.folded += p->second.first;
    }
  }
  if (state_ == State::InSession) pump();
}

std::optional<Digest> Connection::digest_at_end(std::uint32_t local) {
  auto it = digests_.find(local);
  if (it == digests_.end()) {  // an empty file has no chunk
    if (entry(local).size != 0) return std::nullopt;
    entry(local).digest = FileHasher::make(*settings_.pool, plan_.algorithm, 0)->finish(0);
    return entry(local).digest;
  }
  InFlightDigest& d = it->second;
  if (!d.failure.empty() || d.folded != entry(local).size || !d.hasher->idle()) return std::nullopt;
  const Digest digest = d.hasher->finish(d.folded);
  // Known now: a later Have is checked against it, and the digest cache learns it.
  entry(local).digest = digest;
  if (d.opened) plan_.learned.push_back({plan_.algorithm, *d.opened, digest});
  digests_.erase(it);
  return digest;
}

void Connection::abandon(std::uint32_t local, proto::AbortReason reason, const std::string& why) {
  if (auto error = ledger_.abandon(local)) {
    // Settled meanwhile (a StorageError verdict), or its FileDone already went: nothing to
    // abandon on the wire.
    spdlog::debug("not abandoning entry {}: {}", local, proto::to_string(*error));
    return;
  }
  spdlog::error("{}: {}; the receiver keeps nothing of it",
                proto::quoted_for_log(entry(local).local_path), why);
  post(proto::FileAbort{local, reason});
}

void Connection::unreadable_chunk(const proto::SendLedger::Planned& chunk,
                                  const std::string& error) {
  ledger_.unplan(chunk);  // its slot goes to the next file
  abandon(chunk.entry, proto::AbortReason::Unreadable,
          std::string(why_abandoned(proto::AbortReason::Unreadable)) + " (" + error + ")");
  forget_file(chunk.entry);
}

void Connection::post_aborts() {
  for (auto [local, reason] : std::exchange(aborts_, {}))
    abandon(local, reason, why_abandoned(reason));
}

void Connection::check_holds(const proto::Holds& holds) {
  const std::uint32_t local = holds.entry;
  const std::uint64_t size = entry(local).size;
  const bool whole = holds.length == size;
  const bool aligned = accept_.slot_size > 0 && holds.length % accept_.slot_size == 0 &&
                       plan_.algorithm != proto::DigestAlgorithm::WholeFileSha256;
  if (holds.length == 0 || holds.length > size || (!whole && !aligned))
    return violation("bad Holds: " + std::to_string(holds.length) + " bytes of a file of " +
                     std::to_string(size));
  spdlog::info("{}: the receiver has {} of it; checking ours",
               proto::quoted_for_log(entry(local).local_path),
               whole ? std::string("a file of its size") : proto::format_size(holds.length));
  if (!checks_) checks_.emplace(*settings_.pool);
  struct Result {
    Digest digest{};
    std::vector<merkle::Node> nodes;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  const std::string path = entry(local).local_path;
  const auto algorithm = plan_.algorithm;
  const unsigned threads = settings_.pool->threads();
  checks_->post(
      [result, path, algorithm, threads, length = holds.length, size] {
        try {
          InputFile file(path);
          // A tree's prefix: its nodes too, to continue the tree from (a SHA-256 Holds is of
          // the whole file, checked above).
          if (algorithm != proto::DigestAlgorithm::WholeFileSha256)
            result->digest = tree_digest_of_file(algorithm, file.fd(), length, threads,
                                                 length < size ? &result->nodes : nullptr);
          else
            result->digest = sha256_of_file(file.fd(), length);
        } catch (const std::exception& e) {
          result->error = e.what();
        }
      },
      [this, local, holds, result] {
        guarded([&] {
          if (state_ == State::InSession)
            continue_from(local, holds, result->digest, std::move(result->nodes), result->error);
        });
      });
}

void Connection::continue_from(std::uint32_t local, const proto::Holds& holds, const Digest& ours,
                               std::vector<merkle::Node> nodes, const std::string& error) {
  if (!error.empty()) {
    abandon(local, proto::AbortReason::Unreadable, std::string("cannot read it: ") + error);
    return pump();
  }
  if (auto problem = ledger_.continued(local))
    return violation(std::string("cannot continue: ") + proto::to_string(*problem));
  const bool same = ours == holds.digest;
  const bool whole = holds.length == entry(local).size;
  if (same && whole) {
    entry(local).digest = ours;  // the Have that follows carries it
    continued_whole_.insert(local);
  }
  if (same && !whole) continued_[local] = {holds.length, std::move(nodes)};
  spdlog::debug("{}: {}", proto::quoted_for_log(entry(local).local_path),
                !same   ? "differs from what the receiver has: sending all of it"
                : whole ? "identical to the receiver's"
                        : "its first part is the receiver's");
  post(proto::Continue{local, same ? holds.length : 0});
  pump();
}

void Connection::start_tree_at(std::uint32_t local, std::uint64_t offset) {
  auto it = continued_.find(local);
  if (it == continued_.end()) return;
  auto [from, nodes] = std::move(it->second);
  continued_.erase(it);
  if (offset == 0) return;  // a Take: the tree starts from nothing
  InFlightDigest& d = digests_[local];
  d.hasher = FileHasher::make(*settings_.pool, plan_.algorithm, entry(local).size);
  // The receiver may resume below what it held (it checked its partial again): our nodes
  // are cut there, at a chunk boundary.
  const std::uint64_t cut =
      merkle::cut_nodes(nodes, offset, accept_.slot_size, node_bytes_of(plan_.algorithm));
  if (cut != offset) d.failure = "the resumed prefix does not end on a tree node";
  d.hasher->fold(nodes);
  d.folded = cut;
  (void)from;
}

void Connection::stop_jobs() {
  if (reads_) reads_->stop();
  for (auto& [local, d] : digests_) d.hasher->cancel();
  if (checks_) checks_->cancel();
  // Only the jobs that run are waited for (they read our buffers). The completions of jobs
  // already over are not run here: this may be inside another completion, whose batch holds
  // them, and they find the connection finished (or go with its queues).
  auto running = [&] {
    for (const auto& [local, d] : digests_)
      if (d.hasher->running()) return true;
    return checks_ && checks_->running();
  };
  while (running()) std::this_thread::sleep_for(kJobPoll);
}

}  // namespace rdmax::sender
