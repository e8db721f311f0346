// The receiver's slot worker (receiver/slot_worker.hpp) and the eventfd it signals: chunks
// stored in order, hashed like one pass, a failed write reported and final, and
// destruction while busy that joins and leaves only whole chunks behind.
#include "receiver/slot_worker.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/event_fd.hpp"
#include "common/fd.hpp"
#include "common/output_file.hpp"
#include "common/sha256.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax::receiver {
namespace {

using Result = SlotWorker::Result;

constexpr std::size_t kSlotSize = 64 * 1024;
constexpr int kWaitMs = 10000;  // a bound for a broken worker, never a pause

TEST(EventFd, CountsSignalsUntilRead) {
  EventFd event;
  EXPECT_EQ(event.read_count(), 0U);
  event.signal();
  event.signal();
  pollfd p{event.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  EXPECT_EQ(event.read_count(), 2U);
  EXPECT_EQ(event.read_count(), 0U);
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

class SlotWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { file_.emplace(OutputFile::create(dir_.fd(), "out.bin", false)); }
  void TearDown() override {
    worker_.reset();  // joined before the file and the window go, as in Connection
    file_.reset();
  }

  // A window of `slots` slots, each filled with a pattern that names its round and slot.
  void make_window(std::size_t slots) {
    window_ = AlignedBuffer(slots * kSlotSize);
    slots_ = slots;
  }
  std::span<const std::uint8_t> fill(std::uint32_t slot, std::size_t round, std::size_t length) {
    std::uint8_t* base = window_.data() + slot * kSlotSize;
    for (std::size_t i = 0; i < length; ++i)
      base[i] = static_cast<std::uint8_t>(i * 31 + slot * 7 + round * 13);
    return {base, length};
  }

  // Waits (poll on the eventfd, bounded) until `count` results have been taken.
  std::vector<Result> take(std::size_t count) {
    std::vector<Result> results;
    while (results.size() < count) {
      pollfd p{done_.fd(), POLLIN, 0};
      if (::poll(&p, 1, kWaitMs) != 1) {
        ADD_FAILURE() << "no result within " << kWaitMs << " ms";
        break;
      }
      (void)done_.read_count();
      while (auto r = worker_->take_finished()) results.push_back(std::move(*r));
    }
    return results;
  }

  std::vector<std::uint8_t> read_back(std::uint64_t offset, std::size_t length) const {
    std::vector<std::uint8_t> bytes(length);
    const ssize_t n = ::pread(file_->fd(), bytes.data(), length, static_cast<off_t>(offset));
    bytes.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    return bytes;
  }

  TempDir dir_{"rdmax-worker"};  // outlives the file
  std::optional<OutputFile> file_;
  AlignedBuffer window_;
  std::size_t slots_ = 0;
  EventFd done_;
  std::optional<SlotWorker> worker_;
};

TEST_F(SlotWorkerTest, StoresChunksInOrderAndHashesThemAsOnePass) {
  constexpr std::uint32_t kSlots = 4;
  constexpr std::size_t kRounds = 3;
  make_window(kSlots);
  worker_.emplace(*file_, done_, kSlots);
  Sha256 expected;
  std::vector<std::uint8_t> content;
  std::uint64_t offset = 0;
  for (std::size_t round = 0; round < kRounds; ++round) {
    // Slots are reused only after their result is taken, as the receiver does.
    for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
      const std::size_t length = round + 1 == kRounds && slot + 1 == kSlots ? 1000 : kSlotSize;
      auto bytes = fill(slot, round, length);
      expected.update(bytes);
      content.insert(content.end(), bytes.begin(), bytes.end());
      worker_->submit({slot, offset, bytes});
      offset += length;
    }
    EXPECT_EQ(worker_->outstanding(), kSlots);
    const auto results = take(kSlots);
    ASSERT_EQ(results.size(), kSlots);
    for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
      EXPECT_TRUE(results[slot].stored) << results[slot].error;
      EXPECT_EQ(results[slot].chunk.slot, slot) << "results out of submission order";
    }
    EXPECT_EQ(worker_->outstanding(), 0U);
  }
  EXPECT_FALSE(worker_->take_finished());
  EXPECT_EQ(worker_->finish_hash(), expected.finish());
  EXPECT_EQ(read_back(0, content.size() + 1), content);
}

TEST_F(SlotWorkerTest, RefusesMoreChunksThanSlotsAndAnEarlyHash) {
  make_window(2);
  worker_.emplace(*file_, done_, 2);
  worker_->submit({0, 0, fill(0, 0, kSlotSize)});
  worker_->submit({1, kSlotSize, fill(1, 0, kSlotSize)});
  EXPECT_THROW(worker_->submit({0, 2 * kSlotSize, fill(0, 1, kSlotSize)}), std::logic_error);
  EXPECT_THROW((void)worker_->finish_hash(), std::logic_error);
  EXPECT_EQ(take(2).size(), 2U);
  EXPECT_NO_THROW((void)worker_->finish_hash());
}

// RLIMIT_FSIZE makes a write past the limit fail with EFBIG, as ENOSPC would on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t old_handler_{};
};

TEST_F(SlotWorkerTest, FailedWriteIsReportedAndNothingAfterItIsStored) {
  make_window(3);
  worker_.emplace(*file_, done_, 3);
  FileSizeLimit limit(kSlotSize);
  worker_->submit({0, 0, fill(0, 0, kSlotSize)});
  worker_->submit({1, 4 * kSlotSize, fill(1, 0, kSlotSize)});  // past the limit
  worker_->submit({2, kSlotSize / 2, fill(2, 0, 100)});        // would fit, must not be stored
  const auto results = take(2);
  ASSERT_EQ(results.size(), 2U);
  EXPECT_TRUE(results[0].stored);
  EXPECT_FALSE(results[1].stored);
  EXPECT_NE(results[1].error.find(std::strerror(EFBIG)), std::string::npos) << results[1].error;
  // The writer stopped at the failure: the third chunk never completes. (The eventfd's
  // count would not tell: take() may have read a signal late.)
  EXPECT_FALSE(worker_->take_finished()) << "a third chunk was stored after the failure";
  worker_.reset();  // joined: whatever it would have done is done
  const auto slot0 = fill(0, 0, kSlotSize);
  EXPECT_EQ(read_back(0, 2 * kSlotSize), std::vector<std::uint8_t>(slot0.begin(), slot0.end()));
}

TEST_F(SlotWorkerTest, DestroyedWhileBusyItJoinsAndLeavesOnlyWholeChunksInOrder) {
  constexpr std::uint32_t kSlots = 16;
  make_window(kSlots);
  worker_.emplace(*file_, done_, kSlots);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot)
    worker_->submit({slot, slot * kSlotSize, fill(slot, 0, kSlotSize)});
  worker_.reset();  // at once: some chunks are likely still queued
  // A prefix of the chunks is stored, each one whole; the rest were dropped untouched.
  const auto stored = read_back(0, kSlots * kSlotSize);
  ASSERT_EQ(stored.size() % kSlotSize, 0U) << "a chunk was cut short";
  for (std::size_t slot = 0; slot < stored.size() / kSlotSize; ++slot) {
    const auto want = fill(static_cast<std::uint32_t>(slot), 0, kSlotSize);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), stored.begin() + slot * kSlotSize))
        << "slot " << slot;
  }
  // Signalled only for chunks both hashed and written: the writer may have been ahead.
  EXPECT_LE(done_.read_count(), stored.size() / kSlotSize);
}

}  // namespace
}  // namespace rdmax::receiver
