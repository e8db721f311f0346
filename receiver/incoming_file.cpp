#include "receiver/incoming_file.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>

#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"
#include "receiver/file_record.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

IncomingFile::IncomingFile(WorkPool& pool, int dir_fd, std::string path, bool overwrite,
                           proto::DigestAlgorithm algorithm, StoreWork work)
    : dir_fd_(dir_fd),
      path_(std::move(path)),
      overwrite_(overwrite),
      algorithm_(algorithm),
      work_(std::move(work)),
      pool_(pool),
      disk_(pool, "receiver: a file's disk work") {
  lanes_.emplace_back(pool, "receiver: a file's chunk writes");
}

void IncomingFile::set_write_lanes(std::uint32_t lanes) {
  while (lanes_.size() < std::max<std::uint32_t>(lanes, 1))
    lanes_.emplace_back(pool_, "receiver: a file's chunk writes");
}

bool IncomingFile::lanes_idle() const {
  return std::all_of(lanes_.begin(), lanes_.end(), [](const WorkQueue& q) { return q.idle(); });
}

bool IncomingFile::idle() const {
  return disk_.idle() && lanes_idle() && !after_writes_ && (!hasher_ || hasher_->idle());
}

void IncomingFile::after_writes(std::function<void()> work) {
  if (lanes_idle()) return disk_.post(std::move(work), [] {});
  after_writes_ = std::move(work);  // posted by the last lane's completion
}

void IncomingFile::create(std::uint64_t size, SpaceReservations& space, Done done) {
  // Here, where the size is known: BLAKE3 hashes a chunk by where the file ends.
  hasher_ = work_.hashing.make(pool_, algorithm_, size);
  // A partial pays off only for a file of more than one chunk.
  // A tree's nodes can be kept (fs-verity's, BLAKE3's); SHA-256's stream cannot.
  if (resume_.partials != nullptr && algorithm_ != proto::DigestAlgorithm::WholeFileSha256 &&
      resume_.align > 0 && size > resume_.align)
    progress_.emplace(disk_, *resume_.partials, path_, resume_.digest, resume_.align, algorithm_);
  if (progress_) progress_->continue_as(resume_.match, resume_.limit);
  auto outcome = std::make_shared<Outcome>();
  disk_.post(
      [this, size, &space, outcome] {
        using Kind = Outcome::Kind;
        try {
          const Fd parent = open_parent_beneath(dir_fd_, path_, true);
          const std::string name = name_in_parent(path_);
          // --overwrite asks for every file to be written again: no Have then (but for a
          // fetch, which replaces only what differs).
          if (resume_.may_have && (!overwrite_ || keep_identical_) &&
              is_identical_file(parent.get(), name, size, algorithm_, resume_.digest)) {
            *outcome = {Kind::Have, ""};
            return;
          }
          if (progress_) {
            if (auto adopted = progress_->open(parent.get(), name, size, overwrite_))
              file_.emplace(std::move(*adopted));
          }
          auto hold = space.admit(
              size - resumed_from(), [&] { return OutputFile::free_bytes(parent.get()); },
              [&] {
                if (!file_) file_.emplace(OutputFile::create(parent.get(), name, overwrite_));
                preallocated_ = file_->preallocate(size);
                return preallocated_;
              });
          if (!hold) {
            *outcome = {Kind::NoSpace, "not enough free space"};
            file_.reset();
          } else {
            space_ = std::move(*hold);
            if (direct_io_ && !file_->use_direct_io())
              spdlog::debug("'{}': no direct I/O on this file system: written through the cache",
                            proto::escape_for_log(path_));
            if (lanes_.size() > 1) file_->write_lanes(size);  // false: pwrite alone
          }
        } catch (const FileExistsError& e) {
          *outcome = {Kind::Exists, e.what()};
          file_.reset();
        } catch (const SysError& e) {
          // ELOOP: a symbolic link on the way; ENOTDIR: something other than a directory
          // where one should be (receiver/output_tree.hpp). The sender's path is at fault,
          // not the receiver.
          const int err = e.error();
          const bool bad_path = err == ELOOP || err == ENOTDIR;
          *outcome = {bad_path ? Kind::BadPath : Kind::Failed, e.what()};
          file_.reset();
        } catch (const std::exception& e) {
          *outcome = {Kind::Failed, e.what()};
          file_.reset();  // removes a temporary that could not be preallocated
        }
        if (!outcome->ok() && progress_) progress_->let_go();
      },
      [this, outcome, done = std::move(done)] {
        if (progress_ && outcome->ok()) {
          // The verified prefix goes first into the tree: the sender starts after it.
          hasher_->fold(progress_->start());
          bytes_stored_ = progress_->resumed_from();
        } else if (progress_) {
          progress_->abandon_start();
        }
        done(*outcome);
      });
}

void IncomingFile::set_metadata(std::uint32_t mode, std::int64_t mtime_sec,
                                std::uint32_t mtime_nsec) {
  metadata_ = Metadata{mode, mtime_sec, mtime_nsec};
}

void IncomingFile::store(std::uint32_t slot, std::uint64_t offset,
                         std::span<const std::uint8_t> bytes, StoreDone done) {
  const std::uint64_t sequence = next_sequence_++;
  stores_.emplace(sequence, PendingStore{offset,
                                         {slot, static_cast<std::uint32_t>(bytes.size()), {}},
                                         false,
                                         false,
                                         {},
                                         std::move(done)});
  hasher_->hash(offset, bytes,
                [this, sequence](std::vector<merkle::Node> nodes, const std::string& error) {
                  PendingStore* p = entry(sequence);
                  if (p == nullptr) return;  // discarded meanwhile
                  p->tree_nodes = std::move(nodes);
                  p->hashed = true;
                  if (!error.empty() && p->stored.outcome.ok())
                    p->stored.outcome = {Outcome::Kind::Failed, error};
                  finish_store(sequence);
                });
  auto write_error = std::make_shared<std::string>();
  lanes_[slot % lanes_.size()].post(
      [this, offset, bytes, write_error] {
        try {
          if (!file_) throw std::runtime_error("the file was not created");
          if (work_.write)
            work_.write(*file_, offset, bytes);
          else
            file_->write_at(offset, bytes);
        } catch (const std::exception& e) {
          *write_error = e.what();
        }
      },
      [this, sequence, write_error] {
        if (after_writes_ && lanes_idle()) {
          // Discarded or kept while this write ran: the file can be closed now.
          disk_.post(std::move(after_writes_), [] {});
          after_writes_ = nullptr;
        }
        PendingStore* p = entry(sequence);
        if (p == nullptr) return;  // discarded meanwhile
        p->written = true;
        if (write_error->empty())
          space_.release(p->stored.length);  // on the disk: the free space counts it now
        else if (p->stored.outcome.ok())
          p->stored.outcome = {Outcome::Kind::Failed, *write_error};
        finish_store(sequence);
      });
}

IncomingFile::PendingStore* IncomingFile::entry(std::uint64_t sequence) {
  auto it = stores_.find(sequence);
  return it == stores_.end() ? nullptr : &it->second;
}

// A chunk is done once both its hash and its write are: its result goes back at once,
// whatever chunks before it still do (its slot is free again). Its tree nodes wait in
// `unfolded_` until every byte before it is stored, and are then folded in file order.
void IncomingFile::finish_store(std::uint64_t sequence) {
  auto it = stores_.find(sequence);
  if (it == stores_.end() || !it->second.hashed || !it->second.written) return;
  PendingStore p = std::move(it->second);
  stores_.erase(it);
  if (p.stored.outcome.ok()) {
    if (!hasher_->has_gap())
      unfolded_.emplace(p.offset, Unfolded{p.stored.length, std::move(p.tree_nodes)});
    fold_stored_prefix();
  } else {
    // The tree has a gap and is not folded further (the transfer fails anyway).
    hasher_->gap();
    unfolded_.clear();
  }
  p.done(p.stored);
}

void IncomingFile::fold_stored_prefix() {
  while (!unfolded_.empty() && unfolded_.begin()->first == bytes_stored_) {
    auto node = unfolded_.extract(unfolded_.begin());
    hasher_->fold(node.mapped().nodes);
    if (progress_) progress_->stored(bytes_stored_, node.mapped().length, node.mapped().nodes);
    bytes_stored_ += node.mapped().length;
  }
  if (progress_ && !hasher_->has_gap()) progress_->checkpoint_if_due();
}

Digest IncomingFile::finish_hash() {
  if (!stores_.empty()) throw std::logic_error("finish_hash while chunks are being stored");
  if (!unfolded_.empty()) throw std::logic_error("finish_hash with a hole before a stored chunk");
  final_digest_ = hasher_->finish(bytes_stored_);
  return final_digest_;
}

void IncomingFile::commit(Done done) {
  committing_ = true;
  auto outcome = std::make_shared<Outcome>();
  disk_.post(
      [this, outcome, metadata = metadata_] {
        try {
          if (!file_) throw std::runtime_error("the file was not created");
          if (metadata) {
            file_->set_final_metadata(static_cast<mode_t>(metadata->mode),
                                      timespec{static_cast<time_t>(metadata->mtime_sec),
                                               static_cast<long>(metadata->mtime_nsec)});
          }
          record_digest(metadata);
          file_->commit();
          space_.release_all();
          if (progress_) progress_->committed();
          // Another transfer of this path may still hold a partial of it (an interrupted
          // connection not yet torn down when the sender's next attempt took the file whole).
          if (partial_area_ != nullptr) partial_area_->committed(path_);
        } catch (const FileExistsError& e) {
          *outcome = {Outcome::Kind::Exists, e.what()};
        } catch (const std::exception& e) {
          *outcome = {Outcome::Kind::Failed, e.what()};
        }
      },
      [this, outcome, done = std::move(done)] {
        committed_ = outcome->ok();
        committing_ = false;
        done(*outcome);
      });
}

// On the disk queue, before the commit's fsync (which makes the record durable too): what
// a later offer of the same file is checked against. The commit does not change the time
// it records: futimens sets the sender's time, fchmod changes only the inode's ctime.
void IncomingFile::record_digest(const std::optional<Metadata>& metadata) {
  FileRecord record{algorithm_, final_digest_, bytes_stored_, 0, 0};
  struct stat st {};
  if (metadata) {
    record.mtime_sec = metadata->mtime_sec;
    record.mtime_nsec = metadata->mtime_nsec;
  } else if (::fstat(file_->fd(), &st) == 0) {
    record.mtime_sec = st.st_mtim.tv_sec;
    record.mtime_nsec = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
  } else {
    return;
  }
  (void)write_record(file_->fd(), record);  // false: no user xattrs here; hashed when asked
}

void IncomingFile::stop_jobs() {
  discarded_ = true;
  disk_.cancel();
  for (WorkQueue& lane : lanes_) lane.cancel();
  if (hasher_) hasher_->cancel();
  stores_.clear();  // their jobs were cancelled, or their results no longer matter
  unfolded_.clear();
}

void IncomingFile::discard() {
  if (discarded_) return;
  stop_jobs();
  after_writes([this] {
    // Here, not on the loop: a create job still running may be setting space_.
    space_.release_all();
    if (file_) file_->discard();
    if (progress_) progress_->remove();
  });
}

void IncomingFile::keep() {
  if (discarded_) return;
  // Nothing stored, nothing resumed, or nothing good: nothing worth keeping.
  if (bad_ || !progress_ || !progress_->worth_keeping() || !hasher_ || hasher_->has_gap())
    return discard();
  stop_jobs();
  auto undurable = std::make_shared<ResumeProgress::Undurable>(progress_->keep());
  after_writes([this, undurable] {
    space_.release_all();
    if (file_) file_->discard();  // adopted: the data file stays in the partial
    progress_->keep_now(*undurable);
  });
}

}  // namespace rdmax::receiver
