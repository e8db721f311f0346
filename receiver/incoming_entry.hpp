#pragma once
// One file or directory of a session while the receiver has it in flight, from its Offer to
// its settlement, as one object: what the rules know of it (the ledger's ReceiveEntry: its
// state in the entry machine, its chunks; the ledger holds it and moves it:
// protocol/receive_ledger.hpp), the Offer as it is acted on (its path beneath a sender's
// subdirectory, the digest that came with its FileDone), its file, the digest computed, what
// we said we hold of it (7.9), and the work on it: its directory made or its file created,
// what is here of it looked for, its chunks stored, the file verified and committed, and its
// closing line. Disk and hashing work runs on the daemon's pool; each result comes back as
// the machine's next input, through the session's port (receiver/entry_port.hpp).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "common/digest/sha256.hpp"
#include "protocol/receive_ledger.hpp"
#include "protocol/wire.hpp"
#include "receiver/entry_port.hpp"
#include "receiver/incoming_file.hpp"

namespace rdmax::receiver {

class IncomingEntry final : public proto::ReceiveEntry {
 public:
  using Clock = std::chrono::steady_clock;

  explicit IncomingEntry(const proto::Offer& o) : ReceiveEntry(o), id(o.entry), offer(o) {}
  // Joined to a striped file (7.12) as entry `number` of this connection: the lead's Offer.
  IncomingEntry(const proto::Offer& lead_offer, std::uint32_t number)
      : ReceiveEntry(lead_offer), id(number), offer(lead_offer) {}

  // Its directory is made (-> EntrySettled Good, or EntryRefused).
  void make_directory(const EntryPort& port);
  // Its file is created: a new one, a resumed partial, or Have (-> EntryTaken, EntryResumed,
  // EntryHave or EntryRefused).
  void create(const EntryPort& port, std::optional<IncomingFile::Resume> resume);
  // Offered without its digest (7.9): what is here of it (-> EntryHeld, or on to create()
  // with `fresh`), and the whole file confirmed after a Continue from its size (-> EntryHave,
  // or created with `fresh`).
  void look_for_held(const EntryPort& port, IncomingFile::Resume fresh);
  void confirm_whole(const EntryPort& port, const proto::Holds& held, IncomingFile::Resume fresh);
  // Hashes and writes a chunk, checked (and opened, on a sealed connection); `done` with what
  // was stored.
  void store(const proto::FileChunk& chunk, std::span<const std::uint8_t> bytes,
             std::function<void(const IncomingFile::Stored&)> done) {
    file->store(chunk.slot, chunk.offset, bytes, std::move(done));
  }
  // Taken (its data begins `from`, a Resume's offset): Take or Resume goes.
  void send_take(const EntryPort& port, std::uint64_t from);
  // In place already: Have goes, with its digest; nothing of it moves.
  void send_have(const EntryPort& port) const;
  // Every chunk stored after its FileDone: verified, and committed if good (-> EntrySettled).
  void verify(const EntryPort& port);
  // Its verdict is about to go: counted (a file's failure) and told in its closing line.
  void record_verdict(const EntryPort& port, proto::VerdictCode code) const;
  // Settled: a file not committed is removed (nothing of it kept for a resume), unless it is
  // another connection's striped file (that one's to keep or discard).
  void settled();
  // The session was cut short: what it stored is kept for a resume, unless `keep_nothing`
  // (the sender broke the rules) or its data is bad.
  void cut_short(const EntryPort& port, bool keep_nothing);

  // Its file's jobs are done (none, for a directory or a joined entry's: the lead's file).
  bool idle() const { return !file || joined_to || file->idle(); }
  // Its file is being committed (a shutdown waits for it).
  bool committing() const { return file && !joined_to && file->committing(); }

  const std::uint32_t id;  // its number in this session (a joined entry's: its Join's)
  proto::Offer offer;      // of an entry joined to a striped file (7.12): the lead's
  // Files only. Shared only by a striped file's entry (its owner: it keeps, discards or
  // commits it) and the entries joined to it on other connections (they only store chunks).
  std::shared_ptr<IncomingFile> file;
  Digest computed{};
  Clock::time_point taken{};         // its Take or Resume: its data began
  std::optional<proto::Holds> held;  // 7.9: what we said we hold of it

 private:
  // Its closing line: what arrived, when, the digest computed and the verdict (none:
  // abandoned, with no digest to name).
  void log_end(const EntryPort& port, std::uint64_t received, const Digest& digest,
               const char* verdict) const;
};

}  // namespace rdmax::receiver
