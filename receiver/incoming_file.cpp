#include "receiver/incoming_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "common/error.hpp"
#include "receiver/output_tree.hpp"

namespace rdmax::receiver {

IncomingFile::IncomingFile(WorkPool& pool, int dir_fd, std::string path, bool overwrite,
                           proto::DigestAlgorithm algorithm)
    : dir_fd_(dir_fd),
      path_(std::move(path)),
      overwrite_(overwrite),
      algorithm_(algorithm),
      disk_(pool),
      hashing_(pool) {
  if (algorithm_ == proto::DigestAlgorithm::FsVeritySha256) {
    for (unsigned i = 0; i < pool.threads(); ++i)
      tree_queues_.push_back(std::make_unique<WorkQueue>(pool));
  }
}

bool IncomingFile::idle() const {
  for (const auto& queue : tree_queues_)
    if (!queue->idle()) return false;
  return disk_.idle() && hashing_.idle();
}

void IncomingFile::create(std::uint64_t size, std::uint64_t spoken_for, Done done) {
  auto outcome = std::make_shared<Outcome>();
  disk_.post(
      [this, size, spoken_for, outcome] {
        using Kind = Outcome::Kind;
        try {
          const Fd parent = open_parent_beneath(dir_fd_, path_, true);
          const std::uint64_t free = OutputFile::free_bytes(parent.get());
          if (free < size || free - size < spoken_for) {
            *outcome = {Kind::NoSpace, "not enough free space"};
            return;
          }
          const auto slash = path_.rfind('/');
          file_.emplace(OutputFile::create(
              parent.get(), slash == std::string::npos ? path_ : path_.substr(slash + 1),
              overwrite_));
          preallocated_ = file_->preallocate(size);
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
      },
      [outcome, done = std::move(done)] { done(*outcome); });
}

void IncomingFile::set_metadata(std::uint32_t mode, std::int64_t mtime_sec,
                                std::uint32_t mtime_nsec) {
  metadata_ = Metadata{mode, mtime_sec, mtime_nsec};
}

void IncomingFile::store(std::uint32_t slot, std::uint64_t offset,
                         std::span<const std::uint8_t> bytes, StoreDone done) {
  const std::uint64_t sequence = next_sequence_++;
  stores_.push_back({sequence,
                     {slot, static_cast<std::uint32_t>(bytes.size()), {}},
                     false,
                     false,
                     {},
                     std::move(done)});
  if (algorithm_ == proto::DigestAlgorithm::FsVeritySha256)
    hash_tree(sequence, offset, bytes);
  else
    hash_sequential(sequence, bytes);
  auto write_error = std::make_shared<std::string>();
  disk_.post(
      [this, offset, bytes, write_error] {
        try {
          if (!file_) throw std::runtime_error("the file was not created");
          file_->write_at(offset, bytes);
        } catch (const std::exception& e) {
          *write_error = e.what();
        }
      },
      [this, sequence, write_error] {
        PendingStore* p = entry(sequence);
        if (p == nullptr) return;  // discarded meanwhile
        p->written = true;
        if (!write_error->empty() && p->stored.outcome.ok())
          p->stored.outcome = {Outcome::Kind::Failed, *write_error};
        finish_stores();
      });
}

// Each job finds its entry by sequence number: entries leave only from the front, in
// order, once both of their jobs are done, or all at once on discard().
IncomingFile::PendingStore* IncomingFile::entry(std::uint64_t sequence) {
  if (stores_.empty() || sequence < stores_.front().sequence) return nullptr;
  const auto index = static_cast<std::size_t>(sequence - stores_.front().sequence);
  return index < stores_.size() ? &stores_[index] : nullptr;
}

void IncomingFile::hash_sequential(std::uint64_t sequence, std::span<const std::uint8_t> bytes) {
  auto error = std::make_shared<std::string>();
  hashing_.post(
      [this, bytes, error] {
        try {
          hash_.update(bytes);
        } catch (const std::exception& e) {
          *error = e.what();
        }
      },
      [this, sequence, error] { on_hashed(sequence, *error); });
}

void IncomingFile::hash_tree(std::uint64_t sequence, std::uint64_t offset,
                             std::span<const std::uint8_t> bytes) {
  struct Result {
    std::vector<merkle::Node> nodes;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  WorkQueue& queue = *tree_queues_[next_tree_queue_];
  next_tree_queue_ = (next_tree_queue_ + 1) % tree_queues_.size();
  queue.post(
      [offset, bytes, result] {
        try {
          merkle::BlockHasher hasher;
          hasher.nodes(offset, bytes, result->nodes);
        } catch (const std::exception& e) {
          result->error = e.what();
        }
      },
      [this, sequence, result] {
        if (PendingStore* p = entry(sequence)) p->tree_nodes = std::move(result->nodes);
        on_hashed(sequence, result->error);
      });
}

void IncomingFile::on_hashed(std::uint64_t sequence, const std::string& error) {
  PendingStore* p = entry(sequence);
  if (p == nullptr) return;  // discarded meanwhile
  p->hashed = true;
  if (!error.empty() && p->stored.outcome.ok()) p->stored.outcome = {Outcome::Kind::Failed, error};
  finish_stores();
}

void IncomingFile::finish_stores() {
  while (!stores_.empty() && stores_.front().hashed && stores_.front().written) {
    PendingStore p = std::move(stores_.front());
    stores_.pop_front();
    if (p.stored.outcome.ok()) {
      bytes_stored_ += p.stored.length;
      // In file order: stores leave the front in order. After a failed store the tree has
      // a gap and is not folded further (the transfer fails anyway).
      if (!tree_gap_) tree_.add(p.tree_nodes);
    } else {
      tree_gap_ = true;
    }
    p.done(p.stored);
  }
}

Digest IncomingFile::finish_hash() {
  if (!stores_.empty()) throw std::logic_error("finish_hash while chunks are being stored");
  if (algorithm_ == proto::DigestAlgorithm::FsVeritySha256)
    return tree_gap_ ? Digest{} : merkle::file_digest(bytes_stored_, tree_.root());
  return hash_.finish();
}

void IncomingFile::commit(Done done) {
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
          file_->commit();
        } catch (const FileExistsError& e) {
          *outcome = {Outcome::Kind::Exists, e.what()};
        } catch (const std::exception& e) {
          *outcome = {Outcome::Kind::Failed, e.what()};
        }
      },
      [this, outcome, done = std::move(done)] {
        committed_ = outcome->ok();
        done(*outcome);
      });
}

void IncomingFile::discard() {
  if (discarded_) return;
  discarded_ = true;
  disk_.cancel();
  hashing_.cancel();
  for (auto& queue : tree_queues_) queue->cancel();
  stores_.clear();  // their jobs were cancelled, or their results no longer matter
  disk_.post(
      [this] {
        if (file_) file_->discard();
      },
      [] {});
}

}  // namespace rdmax::receiver
