#include "receiver/resume_progress.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>

#include "common/digest/file_digest.hpp"
#include "common/error.hpp"
#include "protocol/names.hpp"
#include "protocol/sizes.hpp"

namespace rdmax::receiver {

namespace {
// How often the stored prefix is made durable in a partial: an fdatasync of the data and of
// the nodes a second costs little against the transfer, and bounds what a crash loses.
constexpr std::chrono::seconds kCheckpointInterval{1};
}  // namespace

std::optional<OutputFile> ResumeProgress::open(int parent_fd, const std::string& name,
                                               std::uint64_t size, bool overwrite) {
  struct stat st {};
  if (!overwrite && ::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    return std::nullopt;  // OutputFile::create reports Exists; the partial stays as it is
  auto handle = [&]() -> std::optional<PartialStore::Handle> {
    try {
      return partials_.open({path_, size, digest_, algorithm_}, align_, match_, limit_);
    } catch (const std::exception& e) {
      spdlog::warn("no partial file for '{}' (it cannot be resumed if interrupted): {}",
                   proto::escape_for_log(path_), e.what());
      return std::nullopt;
    }
  }();
  if (!handle) return std::nullopt;  // another transfer of the same path holds it
  Fd data(::fcntl(handle->fd(), F_DUPFD_CLOEXEC, 0));
  if (!data) throw SysError("fcntl(F_DUPFD_CLOEXEC) on a partial file", errno);
  OutputFile file = OutputFile::adopt(std::move(data), handle->area_fd(), handle->data_name(),
                                      parent_fd, name, overwrite);
  prefix_nodes_ = handle->prefix_nodes();
  resumed_from_ = handle->durable_bytes();
  // A prefix of the whole file (the interruption came while it was committed) is cut back
  // to the last chunk: a Resume leaves the sender at least one chunk (PROTOCOL.md 7.6).
  if (resumed_from_ >= size) {
    const std::uint64_t last_chunk = (size - 1) / align_ * align_;
    resumed_from_ = merkle::cut_nodes(prefix_nodes_, last_chunk, align_, node_bytes_of(algorithm_));
  }
  partial_.emplace(std::move(*handle));
  opened_ = true;
  return file;
}

void ResumeProgress::let_go() {
  if (!partial_) return;
  PartialStore::Handle handle = std::move(*partial_);
  partial_.reset();
  opened_ = false;
  if (handle.durable_bytes() > 0) return;
  try {
    partials_.remove(std::move(handle));
  } catch (const std::exception& e) {
    spdlog::warn("cannot remove the empty partial file of '{}': {}", proto::escape_for_log(path_),
                 e.what());
  }
}

std::vector<merkle::Node> ResumeProgress::start() {
  node_end_ = resumed_from_;
  active_ = resumed_from_ > 0 || opened_;
  last_checkpoint_ = std::chrono::steady_clock::now();
  return std::exchange(prefix_nodes_, {});
}

void ResumeProgress::stored(std::uint64_t offset, std::uint32_t length,
                            const std::vector<merkle::Node>& nodes) {
  if (!active_) return;
  const std::uint64_t end = offset + length;
  for (const merkle::Node& node : nodes) {
    node_end_ = std::min(node_end_ + node_bytes_of(algorithm_)(node), end);
    undurable_.emplace_back(node_end_, node);
  }
}

void ResumeProgress::checkpoint_if_due() {
  if (!active_ || checkpointing_ || undurable_.empty()) return;
  if (std::chrono::steady_clock::now() - last_checkpoint_ < kCheckpointInterval) return;
  checkpointing_ = true;
  auto nodes = std::make_shared<std::vector<std::pair<std::uint64_t, merkle::Node>>>(undurable_);
  const std::uint64_t bytes = node_end_;
  auto ok = std::make_shared<bool>(false);
  disk_.post([this, nodes, bytes, ok] { *ok = checkpoint(*nodes, bytes); },
             [this, bytes, ok] {
               checkpointing_ = false;
               last_checkpoint_ = std::chrono::steady_clock::now();
               if (!*ok) {
                 active_ = false;  // no more checkpoints: the partial is void
                 return;
               }
               std::erase_if(undurable_, [&](const auto& n) { return n.first <= bytes; });
             });
}

// On the disk queue. The nodes the partial does not hold yet are appended; the partial's
// own count decides, so a checkpoint queued behind another never repeats a node.
bool ResumeProgress::checkpoint(const std::vector<std::pair<std::uint64_t, merkle::Node>>& nodes,
                                std::uint64_t bytes) {
  if (!partial_ || broken_) return false;
  try {
    const std::uint64_t durable = partial_->durable_bytes();
    if (bytes <= durable) return true;
    std::vector<merkle::Node> fresh;
    for (const auto& [end, node] : nodes)
      if (end > durable) fresh.push_back(node);
    partial_->checkpoint(bytes, fresh);
    // Tests watch for it (tests/e2e/faults.sh: the receiver is killed at a durable point).
    spdlog::debug("partial '{}': {} bytes durable", proto::escape_for_log(path_), bytes);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("the partial file of '{}' cannot be kept up to date ({}); it will not be resumed",
                 proto::escape_for_log(path_), e.what());
    broken_ = true;
    return false;
  }
}

void ResumeProgress::committed() {
  if (!partial_) return;
  partial_->forget_committed();
  partial_.reset();
}

void ResumeProgress::remove() {
  if (partial_) partials_.remove(std::move(*partial_));
  partial_.reset();
}

void ResumeProgress::keep_now(const Undurable& undurable) {
  if (!partial_) return;
  if (partial_->superseded()) {
    spdlog::info("'{}' was received whole meanwhile: its partial file goes",
                 proto::escape_for_log(path_));
    partials_.remove(std::move(*partial_));
  } else if (checkpoint(undurable.nodes, undurable.bytes)) {
    spdlog::info("kept {} of '{}' to resume from", proto::format_size(undurable.bytes),
                 proto::escape_for_log(path_));
  } else {
    partials_.remove(std::move(*partial_));
  }
  partial_.reset();
}

}  // namespace rdmax::receiver
