// The sender's chunk reads (sender/chunk_reads.hpp): the chunks come back in the order they
// were planned however their reads finish, a read that fails comes back with its error in
// its turn, a chunk needing no read waits its turn, and stop() waits for a read that runs.
// A read that must finish last is held on a gate in the read function the class takes
// (the seam through which the benchmark's emulation gives its own); every wait is bounded.
#include "sender/chunk_reads.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "gate.hpp"
#include "temp_dir.hpp"

namespace rdmax::sender {
namespace chunk_reads_test {

using namespace std::chrono_literals;
constexpr auto kBound = 10s;

using test::Gate;

// A file of `size` bytes, byte i = i % 251, opened for reading.
std::shared_ptr<const InputFile> file_of(const TempDir& dir, std::size_t size) {
  const auto path = dir.path() / ("f" + std::to_string(size));
  std::ofstream out(path, std::ios::binary);
  for (std::size_t i = 0; i < size; ++i) out.put(static_cast<char>(i % 251));
  out.close();
  return std::make_shared<InputFile>(path.string());
}

ChunkReads::Planned planned(std::uint32_t slot, std::uint64_t offset, std::uint32_t length) {
  return {7, slot, offset, length, 0, 0};
}

// Runs the pool's completions until `done` holds; false after kBound.
bool run_until(WorkPool& pool, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    pollfd fd{pool.ready_fd(), POLLIN, 0};
    (void)::poll(&fd, 1, 10);
    pool.run_completions();
  }
  return true;
}

bool holds_file_bytes(std::span<const std::uint8_t> bytes, std::uint64_t offset) {
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != (offset + i) % 251) return false;
  return true;
}

struct Rig {
  TempDir dir{"rdmax-chunk-reads"};
  std::shared_ptr<const InputFile> file = file_of(dir, 3 * 4096);
  std::vector<std::uint8_t> staging = std::vector<std::uint8_t>(3 * 4096);
  std::span<std::uint8_t> slot(std::uint32_t i) { return {staging.data() + i * 4096, 4096}; }
  Gate first_read;  // the read at offset 0 waits for it
  std::atomic<int> reads_done{0};
  int ready_calls = 0;
  WorkPool pool{2};
  ChunkReads reads{&pool, 3, [this] { ++ready_calls; },
                   [this](int fd, std::span<std::uint8_t> into, std::uint64_t offset) {
                     if (offset == 0 && !first_read.wait()) throw std::runtime_error("gate");
                     read_fully(fd, into.data(), into.size(), offset);
                     ++reads_done;
                   }};
};

TEST(ChunkReads, ChunksComeBackInThePlannedOrderWhateverOrderTheirReadsFinish) {
  Rig r;
  r.reads.read(planned(0, 0, 4096), r.file, r.slot(0), {1, 2, 3});
  r.reads.read(planned(1, 4096, 4096), r.file, r.slot(1), {1, 2, 3});
  r.reads.read(planned(2, 8192, 100), r.file, r.slot(2), {1, 2, 3});
  // The two later reads finish while the first is held: nothing may go yet.
  ASSERT_TRUE(run_until(r.pool, [&] { return r.ready_calls == 2; }));
  EXPECT_EQ(r.reads_done.load(), 2);
  EXPECT_FALSE(r.reads.next().has_value());
  EXPECT_EQ(r.reads.pending(), 3u);
  r.first_read.open();
  ASSERT_TRUE(run_until(r.pool, [&] { return r.ready_calls == 3; }));
  for (std::uint64_t offset : {0u, 4096u, 8192u}) {
    auto chunk = r.reads.next();
    ASSERT_TRUE(chunk.has_value());
    EXPECT_EQ(chunk->planned.offset, offset);
    EXPECT_TRUE(chunk->error.empty()) << chunk->error;
    EXPECT_EQ(chunk->bytes.size(), offset == 8192 ? 100u : 4096u);
    EXPECT_TRUE(holds_file_bytes(chunk->bytes, offset));
    EXPECT_EQ(chunk->source.lkey, 2u);
  }
  EXPECT_FALSE(r.reads.next().has_value());
  EXPECT_EQ(r.reads.pending(), 0u);
}

TEST(ChunkReads, AReadPastTheEndComesBackWithItsErrorInItsTurn) {
  Rig r;
  r.first_read.open();
  r.reads.read(planned(0, 0, 4096), r.file, r.slot(0), {});
  r.reads.read(planned(1, 10000, 4096), r.file, r.slot(1), {});  // 1808 bytes past the end
  ASSERT_TRUE(run_until(r.pool, [&] { return r.ready_calls == 2; }));
  auto first = r.reads.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->error.empty());
  auto second = r.reads.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->error.find("shrank"), std::string::npos) << second->error;
  EXPECT_TRUE(second->bytes.empty());
}

TEST(ChunkReads, AChunkThatNeedsNoReadWaitsForTheReadsPlannedBeforeIt) {
  Rig r;
  r.reads.read(planned(0, 0, 4096), r.file, r.slot(0), {});
  const std::vector<std::uint8_t> mapped(4096, 0xab);
  r.reads.add_ready(planned(1, 4096, 4096), {9, 9, 9}, mapped);
  EXPECT_FALSE(r.reads.next().has_value());
  r.first_read.open();
  ASSERT_TRUE(run_until(r.pool, [&] { return r.ready_calls == 1; }));
  EXPECT_EQ(r.reads.next()->planned.offset, 0u);
  auto ready = r.reads.next();
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(ready->bytes.data(), mapped.data());
  EXPECT_EQ(ready->source.lkey, 9u);
}

TEST(ChunkReads, StopWaitsForTheReadRunningAndDropsEveryChunk) {
  Rig r;
  r.reads.read(planned(0, 0, 4096), r.file, r.slot(0), {});
  r.reads.read(planned(1, 4096, 4096), r.file, r.slot(1), {});
  ASSERT_TRUE(run_until(r.pool, [&] { return r.ready_calls == 1; }));  // the second is read
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    r.first_read.open();
  });
  r.reads.stop();  // returns only once the held read is over: it writes into our buffer
  EXPECT_EQ(r.reads_done.load(), 2);
  opener.join();
  EXPECT_EQ(r.reads.pending(), 0u);
  EXPECT_FALSE(r.reads.next().has_value());
  r.pool.run_completions();
  EXPECT_EQ(r.ready_calls, 1);  // the stopped read's completion says nothing
}

TEST(ChunkReads, WithoutAPoolTheReadHappensAtOnce) {
  TempDir dir{"rdmax-chunk-reads"};
  auto file = file_of(dir, 5000);
  std::vector<std::uint8_t> buffer(4096);
  ChunkReads reads(nullptr, 1, [] { FAIL() << "no completion without a pool"; });
  reads.read(planned(0, 4096, 904), file, buffer, {});
  auto chunk = reads.next();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->bytes.size(), 904u);
  EXPECT_TRUE(holds_file_bytes(chunk->bytes, 4096));
}

}  // namespace chunk_reads_test
}  // namespace rdmax::sender
