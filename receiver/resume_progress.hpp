#pragma once
// What an incoming file keeps so that an interrupted transfer can resume (docs/PROTOCOL.md
// 7.6): its partial file (receiver/partial_store.hpp), the tree nodes of the chunks stored
// since the last durable checkpoint, and the checkpoints that make the stored prefix durable
// together with its nodes about once a second.
//
// Owned by an IncomingFile (receiver/incoming_file.hpp), which calls it from its event loop
// and from the jobs of its disk queue, as each function says. The checkpoints run on that
// queue, between the file's writes; they capture this object, which the owner keeps alive
// until the queue is idle.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/digest/merkle.hpp"
#include "common/work/work_pool.hpp"
#include "receiver/output_file.hpp"
#include "receiver/partial_store.hpp"

namespace rdmax::receiver {

class ResumeProgress {
 public:
  // `align`: where a resumed transfer may start (the slot size). `algorithm`: the tree whose
  // nodes are kept (fs-verity's or BLAKE3's).
  ResumeProgress(WorkQueue& disk, PartialStore& partials, std::string path, proto::Digest digest,
                 std::uint32_t align, proto::DigestAlgorithm algorithm)
      : disk_(disk),
        partials_(partials),
        path_(std::move(path)),
        digest_(digest),
        align_(align),
        algorithm_(algorithm) {}
  ResumeProgress(const ResumeProgress&) = delete;
  ResumeProgress& operator=(const ResumeProgress&) = delete;
  // Which kept partial open() continues, and at most how much of it (PartialStore::open).
  void continue_as(PartialStore::Match match, std::uint64_t limit) {
    match_ = match;
    limit_ = limit;
  }

  // Disk. Continues (or starts) the partial of the file `name` of `size` bytes under
  // `parent_fd`, unless a file of that name exists and `overwrite` is off: the OutputFile
  // that writes into it, or none (no partial: another transfer holds it, or it cannot be
  // made).
  std::optional<OutputFile> open(int parent_fd, const std::string& name, std::uint64_t size,
                                 bool overwrite);
  // Disk, after a create that did not succeed: a partial with a verified prefix is kept as
  // it was, for a later attempt; an empty one (opened, perhaps made, by this attempt) is
  // removed, so that a refusal leaves nothing behind.
  void let_go();

  // Loop, once the create's result is known. Success: the verified prefix's nodes, to fold
  // into the file's tree before anything else; checkpoints start. Failure: nothing resumes.
  std::vector<merkle::Node> start();
  void abandon_start() { resumed_from_ = 0; }
  // Where the sender starts (0: from the beginning).
  std::uint64_t resumed_from() const { return resumed_from_; }

  // Loop: the chunk at `offset` is stored, with these tree nodes (in file order).
  void stored(std::uint64_t offset, std::uint32_t length, const std::vector<merkle::Node>& nodes);
  // Loop: makes what is stored durable if a checkpoint is due.
  void checkpoint_if_due();
  // Loop: whether anything was stored or resumed that a partial could keep.
  bool worth_keeping() const { return active_ && node_end_ > 0; }

  // Disk: the file is committed; the partial is forgotten.
  void committed();
  // Disk: the transfer is discarded; the partial goes.
  void remove();
  // The transfer was interrupted: keep() (loop) hands over what is not durable yet, and
  // keep_now() (disk) makes it durable and keeps the partial (or removes it if it cannot).
  struct Undurable {
    std::vector<std::pair<std::uint64_t, merkle::Node>> nodes;  // each with the offset it ends at
    std::uint64_t bytes = 0;
  };
  Undurable keep() { return {std::move(undurable_), node_end_}; }
  void keep_now(const Undurable& undurable);

 private:
  bool checkpoint(const std::vector<std::pair<std::uint64_t, merkle::Node>>& nodes,
                  std::uint64_t bytes);

  WorkQueue& disk_;
  PartialStore& partials_;
  std::string path_;
  proto::Digest digest_;
  std::uint32_t align_;
  proto::DigestAlgorithm algorithm_;
  PartialStore::Match match_ = PartialStore::Match::SameDigest;
  std::uint64_t limit_ = UINT64_MAX;
  // The disk queue's: the partial, and its verified prefix (handed from the create job to
  // the loop).
  std::optional<PartialStore::Handle> partial_;
  std::vector<merkle::Node> prefix_nodes_;
  bool opened_ = false;  // written by the create job, read after its completion
  bool broken_ = false;  // a checkpoint failed: the partial is void
  // The loop's: the nodes stored since the last durable checkpoint, each with the offset it
  // ends at.
  std::uint64_t resumed_from_ = 0;
  std::vector<std::pair<std::uint64_t, merkle::Node>> undurable_;
  std::uint64_t node_end_ = 0;  // where the next stored node starts
  bool active_ = false;         // checkpoints are made
  bool checkpointing_ = false;
  std::chrono::steady_clock::time_point last_checkpoint_{};
};

}  // namespace rdmax::receiver
