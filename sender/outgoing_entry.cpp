// The digest at the end (docs/PROTOCOL.md 7.9) of one file, the sender's side: hashed as its
// chunks are read for sending (each byte read once), folded in file order, and the file
// checked unchanged from its first read to its last (as tar checks); a change is an abort due.

#include "sender/outgoing_entry.hpp"

#include "common/digest/file_digest.hpp"

namespace rdmax::sender {

DigestInFlight& OutgoingEntry::digest_made(const DigestTerms& terms) {
  if (!digest) digest.emplace();  // made by start_tree_at() for a resumed file
  DigestInFlight& d = *digest;
  if (!d.hasher) d.hasher = terms.hasher(planned.size);
  if (!d.opened && d.failure.empty()) {
    try {
      d.opened = identity_of(input().fd());
    } catch (const std::exception& error) {
      d.failure = error.what();
    }
    // The file read must have the size offered (the walk's); from here on it must not
    // change at all (checked after its last read).
    if (d.opened && d.opened->size != planned.size && !abort_due_)
      abort_due_ = proto::AbortReason::Changed;
  }
  return d;
}

void OutgoingEntry::fold(std::uint64_t offset, std::uint32_t length,
                         std::vector<merkle::Node> nodes, const std::string& error) {
  if (!digest) return;
  DigestInFlight& d = *digest;
  if (!error.empty() && d.failure.empty()) d.failure = error;
  d.pending[offset] = {length, std::move(nodes)};
  // Folded in file order, however the chunks' hashes finished.
  for (auto p = d.pending.begin(); p != d.pending.end() && p->first == d.folded;
       p = d.pending.erase(p)) {
    d.hasher->fold(p->second.second);
    d.folded += p->second.first;
  }
}

void OutgoingEntry::check_unchanged() {
  try {
    if (identity_of(input().fd()) != *digest->opened) abort_due_ = proto::AbortReason::Changed;
  } catch (const std::exception&) {
    abort_due_ = proto::AbortReason::Unreadable;
  }
}

void OutgoingEntry::check_last_read(const proto::PlannedChunk& c) {
  // The last read of the file: it must be as it was at the first. Not for a striped file
  // (7.12): another connection may read its last chunk, or still read others, and its
  // FileAbort must wait until all are done (striped_file_changed()).
  if (striped || !digest || !digest->opened || abort_due_) return;
  if (c.offset + c.length == planned.size) check_unchanged();
}

bool OutgoingEntry::striped_file_changed() {
  // Every connection has read its part of the file (its FileDone is due): it must still be
  // as it was when the first chunk was hashed here.
  if (!striped || !digest || !digest->opened) return false;
  check_unchanged();
  return abort_due_.has_value();
}

std::optional<Digest> OutgoingEntry::digest_at_end(const DigestTerms& terms,
                                                   std::vector<DigestCacheEntry>& learned) {
  if (!digest) {  // an empty file has no chunk
    if (planned.size != 0) return std::nullopt;
    planned.digest = terms.hasher(0)->finish(0);
    return planned.digest;
  }
  DigestInFlight& d = *digest;
  if (!d.failure.empty() || d.folded != planned.size || !d.hasher->idle()) return std::nullopt;
  const Digest computed = d.hasher->finish(d.folded);
  planned.digest = computed;
  if (d.opened) learned.push_back({terms.algorithm, *d.opened, computed});
  digest.reset();
  return computed;
}

void OutgoingEntry::start_tree_at(const DigestTerms& terms, std::uint64_t offset) {
  if (!continued) return;
  CheckedPrefix prefix = std::move(*continued);
  continued.reset();
  if (offset == 0) return;  // a Take: the tree starts from nothing
  if (!digest) digest.emplace();
  DigestInFlight& d = *digest;
  d.hasher = terms.hasher(planned.size);
  // The receiver may resume below what it held (it checked its partial again): our nodes
  // are cut there, at a chunk boundary.
  const std::uint64_t cut =
      merkle::cut_nodes(prefix.nodes, offset, terms.slot_size, node_bytes_of(terms.algorithm));
  if (cut != offset) d.failure = "the resumed prefix does not end on a tree node";
  d.hasher->fold(prefix.nodes);
  d.folded = cut;
}

}  // namespace rdmax::sender
