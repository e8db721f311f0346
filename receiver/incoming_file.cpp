#include "receiver/incoming_file.hpp"

#include <memory>
#include <utility>

namespace rdmax::receiver {

IncomingFile::IncomingFile(WorkPool& pool, int dir_fd, std::string name, bool overwrite)
    : dir_fd_(dir_fd), name_(std::move(name)), overwrite_(overwrite), disk_(pool), hashing_(pool) {}

void IncomingFile::create(std::uint64_t size, Done done) {
  auto outcome = std::make_shared<Outcome>();
  disk_.post(
      [this, size, outcome] {
        using Kind = Outcome::Kind;
        try {
          if (OutputFile::free_bytes(dir_fd_) < size) {
            *outcome = {Kind::NoSpace, "not enough free space"};
            return;
          }
          file_.emplace(OutputFile::create(dir_fd_, name_, overwrite_));
          file_->preallocate(size);
        } catch (const FileExistsError& e) {
          *outcome = {Kind::Exists, e.what()};
          file_.reset();
        } catch (const std::exception& e) {
          *outcome = {Kind::Failed, e.what()};
          file_.reset();  // removes a temporary that could not be preallocated
        }
      },
      [outcome, done = std::move(done)] { done(*outcome); });
}

void IncomingFile::store(std::uint32_t slot, std::uint64_t offset,
                         std::span<const std::uint8_t> bytes, StoreDone done) {
  const std::uint64_t sequence = next_sequence_++;
  stores_.push_back({sequence,
                     {slot, static_cast<std::uint32_t>(bytes.size()), {}},
                     false,
                     false,
                     std::move(done)});
  // Each job finds its entry by sequence number: entries leave only from the front, in
  // order, once both of their jobs are done, or all at once on discard().
  auto entry = [this, sequence]() -> PendingStore* {
    if (stores_.empty() || sequence < stores_.front().sequence) return nullptr;
    const auto index = static_cast<std::size_t>(sequence - stores_.front().sequence);
    return index < stores_.size() ? &stores_[index] : nullptr;
  };
  auto hash_error = std::make_shared<std::string>();
  hashing_.post(
      [this, bytes, hash_error] {
        try {
          hash_.update(bytes);
        } catch (const std::exception& e) {
          *hash_error = e.what();
        }
      },
      [this, entry, hash_error] {
        PendingStore* p = entry();
        if (p == nullptr) return;  // discarded meanwhile
        p->hashed = true;
        if (!hash_error->empty() && p->stored.outcome.ok())
          p->stored.outcome = {Outcome::Kind::Failed, *hash_error};
        finish_stores();
      });
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
      [this, entry, write_error] {
        PendingStore* p = entry();
        if (p == nullptr) return;  // discarded meanwhile
        p->written = true;
        if (!write_error->empty() && p->stored.outcome.ok())
          p->stored.outcome = {Outcome::Kind::Failed, *write_error};
        finish_stores();
      });
}

void IncomingFile::finish_stores() {
  while (!stores_.empty() && stores_.front().hashed && stores_.front().written) {
    PendingStore p = std::move(stores_.front());
    stores_.pop_front();
    if (p.stored.outcome.ok()) bytes_stored_ += p.stored.length;
    p.done(p.stored);
  }
}

Digest IncomingFile::finish_hash() {
  if (!stores_.empty()) throw std::logic_error("finish_hash while chunks are being stored");
  return hash_.finish();
}

void IncomingFile::commit(Done done) {
  auto outcome = std::make_shared<Outcome>();
  disk_.post(
      [this, outcome] {
        try {
          if (!file_) throw std::runtime_error("the file was not created");
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
  stores_.clear();  // their jobs were cancelled, or their results no longer matter
  disk_.post(
      [this] {
        if (file_) file_->discard();
      },
      [] {});
}

}  // namespace rdmax::receiver
