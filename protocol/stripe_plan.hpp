#pragma once
// One file's chunks handed out over the connections of a stripe group (docs/STRIPING.md),
// the sender's side: whichever member has a free credit asks for the next chunk, in file
// order, so a slower connection (a slower port) carries less and none waits for the slowest.
// The plan knows which member carries each chunk until its slot comes back credited (the
// receiver stored it), so that it can say, at any time, how far the file is stored in file
// order, what each member sent (its FileDone's total), when a member has nothing more to do,
// and, when a member's connection is lost, that the file is interrupted: nothing more is
// handed out, and a resume (PROTOCOL.md 7.6) continues from at most the stored prefix.
//
// Pure bookkeeping: no I/O, no clock. Memory: one record per chunk in flight (at most the
// members' windows together) and one per chunk stored out of file order (as many).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace rdmax::proto {

class StripePlan {
 public:
  struct Chunk {
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    bool operator==(const Chunk&) const = default;
  };

  // A file of `size` bytes cut into chunks of `chunk_size` (the last one shorter), handed out
  // from `from` (0, or a Resume's offset: a multiple of `chunk_size` below `size`), over
  // `members` connections (at least 1). std::invalid_argument otherwise.
  StripePlan(std::uint64_t size, std::uint32_t chunk_size, std::uint64_t from,
             std::uint16_t members);

  // The next chunk for `member`, in file order: none once every chunk is handed out, once
  // the plan is interrupted, or for a member that is lost or out of range.
  [[nodiscard]] std::optional<Chunk> next(std::uint16_t member);
  // `member`'s chunk at `offset` is stored (its slot came back). False, and nothing changes,
  // when that member has no such chunk in flight (a peer's answer the caller must refuse).
  [[nodiscard]] bool stored(std::uint16_t member, std::uint64_t offset);
  // `member`'s connection ended. Its chunks in flight are not known stored; the plan is
  // interrupted (nothing more is handed out to anyone). Returns the stored prefix.
  std::uint64_t lose(std::uint16_t member);

  // The length of the chunk next() would hand `member` now, without handing it out.
  [[nodiscard]] std::optional<std::uint32_t> peek(std::uint16_t member) const;
  // Every chunk of the file has been handed out (none is left for anyone).
  bool all_handed() const { return next_ >= size_; }
  // Bytes stored from `from` on, in file order without a gap: what a resume may keep at best.
  std::uint64_t stored_prefix() const { return prefix_; }
  // Every chunk of the file is stored (never after an interruption left a gap).
  bool all_stored() const { return prefix_ == size_; }
  bool interrupted() const { return interrupted_; }
  // `member` has nothing more to do for the file: no chunk left to hand out and none of its
  // own in flight (its FileDone may go), or it is lost.
  bool member_done(std::uint16_t member) const;
  // What `member` was handed (its FileDone's total_bytes), and what it has stored.
  std::uint64_t handed(std::uint16_t member) const;
  std::uint64_t stored_by(std::uint16_t member) const;
  std::size_t in_flight(std::uint16_t member) const;

 private:
  struct Member {
    std::set<std::uint64_t> in_flight;  // offsets
    std::uint64_t handed = 0;
    std::uint64_t stored = 0;
    bool lost = false;
  };
  std::uint32_t length_at(std::uint64_t offset) const;

  std::uint64_t size_;
  std::uint32_t chunk_size_;
  std::uint64_t next_;                    // the next offset to hand out
  std::uint64_t prefix_;                  // stored in file order up to here
  std::set<std::uint64_t> stored_ahead_;  // stored chunks past the prefix
  std::vector<Member> members_;
  bool interrupted_ = false;
};

}  // namespace rdmax::proto
