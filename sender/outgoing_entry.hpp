#pragma once
// One entry of a session while the sender has it offered, with all that is kept for it:
// the plan's entry and its result, its open file, its windows registered for --zero-copy,
// its digest as it is computed while it is sent (docs/PROTOCOL.md 7.9) and the checks that
// the file did not change meanwhile, what our Continue agreed with the receiver, and an abort
// that is due; and what the rules know of it (the ledger's SendEntry: its state, where its
// next chunk starts, its chunks out). The ledger
// (protocol/send_ledger.hpp) holds one per entry offered, made by the connection's entries
// (sender/outgoing_entries.hpp), which drop it once it is settled and no hash of its bytes
// still runs.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/digest/file_hasher.hpp"
#include "common/digest/merkle.hpp"
#include "protocol/send_ledger.hpp"
#include "protocol/wire.hpp"
#include "sender/file_windows.hpp"
#include "sender/input_file.hpp"
#include "sender/transfer_plan.hpp"

namespace rdmax::sender {

// The digest at the end of a file offered without it: its hasher, the nodes of chunks
// hashed ahead of the fold (by offset: length, nodes), how far it is folded, and the file as
// it was at its first read (checked again after its last).
struct DigestInFlight {
  std::unique_ptr<FileHasher> hasher;
  std::map<std::uint64_t, std::pair<std::uint32_t, std::vector<merkle::Node>>> pending;
  std::uint64_t folded = 0;
  std::optional<FileIdentity> opened;
  std::string failure;
};

// The first bytes of a file that the receiver holds and we checked (our Continue from
// them): the tree of the rest starts from their nodes.
struct CheckedPrefix {
  std::uint64_t length = 0;
  std::vector<merkle::Node> nodes;
};

// What an entry's digest needs of its session: how a file is hashed, with which algorithm
// and on which pool, and the Accept's slot size (where a resumed tree is cut).
struct DigestTerms {
  const FileHashing& hashing;
  WorkPool* pool = nullptr;  // (set wherever a file's digest comes at its end)
  proto::DigestAlgorithm algorithm{};
  std::uint32_t slot_size = 0;

  std::unique_ptr<FileHasher> hasher(std::uint64_t file_size) const {
    return hashing.make(*pool, algorithm, file_size);
  }
};

class OutgoingEntry final : public proto::SendEntry {
 public:
  // `source_dir`: TransferPlan::source_dir.
  OutgoingEntry(std::uint32_t number, PlannedEntry& what, EntryResult& outcome, int source_dir)
      : entry(number), planned(what), result(outcome), source_dir_(source_dir) {}

  // The file, opened at its first use; a read job holds it until the job is over.
  const std::shared_ptr<InputFile>& shared_input() {
    if (!file) file = std::make_shared<InputFile>(source_dir_, planned.local_path);
    return file;
  }
  InputFile& input() { return *shared_input(); }
  // Every chunk of it has been read and written: the windows go first (they cover the
  // mapping), then the file.
  void close() {
    windows.reset();
    file.reset();
  }
  // Offered without its digest (7.9): hashed as it is read, the digest in its FileDone.
  bool digest_in_flight() const { return !planned.digest_known; }
  // A hash of its bytes runs or waits on the pool (the hasher must outlive it).
  bool hashing() const { return digest && digest->hasher && !digest->hasher->idle(); }

  // The digest at the end as its chunks go (sender/outgoing_entry.cpp): made at its first
  // chunk (the file's identity noted: a size other than the one offered is a change), each
  // chunk's nodes folded in file order, the file checked unchanged at its last read.
  DigestInFlight& digest_made(const DigestTerms& terms);
  void fold(std::uint64_t offset, std::uint32_t length, std::vector<merkle::Node> nodes,
            const std::string& error);
  void check_last_read(const proto::PlannedChunk& chunk);
  // A striped file (7.12) whose FileDone is due: changed since its first hashed chunk? (Then
  // its FileAbort is due.)
  bool striped_file_changed();
  // Every chunk folded: the digest (none: a chunk could not be hashed or read), known from
  // now on (a later Have is checked against it) and, with the file's identity, `learned`.
  std::optional<Digest> digest_at_end(const DigestTerms& terms,
                                      std::vector<DigestCacheEntry>& learned);
  // A Take or Resume answering our Continue from a prefix (`continued`): the tree starts from
  // the nodes we checked, cut at `offset` (from nothing: a Take).
  void start_tree_at(const DigestTerms& terms, std::uint64_t offset);
  // It changed or could not be read: its FileAbort goes after the FileChunk being posted.
  // Once: the reason, or none.
  std::optional<proto::AbortReason> take_abort_due() { return std::exchange(abort_due_, {}); }

  const std::uint32_t entry;  // its number in the session
  PlannedEntry& planned;
  EntryResult& result;
  std::shared_ptr<InputFile> file;
  // --zero-copy; after the file, so that they are deregistered before its mapping goes.
  std::optional<FileWindows> windows;
  std::optional<DigestInFlight> digest;
  // After our Continue from a prefix of it (where it continued is the ledger's:
  // SendEntry::continued_from).
  std::optional<CheckedPrefix> continued;
  // One file over several connections (7.12). On the lead: offered striped. On a member:
  // joined to the lead's striped entry `lead_entry`, whose digest (the lead's entries'
  // `lead`) folds what this connection reads.
  bool striped = false;
  class OutgoingEntries* lead = nullptr;
  std::uint32_t lead_entry = 0;
  std::uint32_t plan_index = 0;  // the plan's entry (the file)

 private:
  // The file as it is now differs from the one first read (or cannot be looked at).
  void check_unchanged();

  std::optional<proto::AbortReason> abort_due_;
  int source_dir_;
};

}  // namespace rdmax::sender
