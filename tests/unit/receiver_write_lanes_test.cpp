// One file's chunks written on many lanes at once (receiver/mapped_writes.hpp,
// OutputFile::write_lanes, IncomingFile::set_write_lanes): the bytes land where they belong
// whichever writer takes the mapping, a chunk the mapping cannot take goes through pwrite
// instead of raising SIGBUS, and a file discarded or kept while its lanes write is closed
// only once they are done.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <thread>

#include "incoming_file_rig.hpp"
#include "receiver/mapped_writes.hpp"
#include "receiver/output_file.hpp"

namespace rdmax::test {
namespace {

TEST(MappedWrites, AChunkWhosePagesCannotBePopulatedIsLeftToPwrite) {
  TempDir dir{"rdmax-mapped"};
  const Fd fd(::openat(dir.fd(), "m", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd);
  ASSERT_EQ(::ftruncate(fd.get(), 1 << 20), 0);
  MappedWrites mapped(fd.get(), 1 << 20);
  ASSERT_TRUE(mapped.mapped());
  const auto bytes = random_bytes(8192);
  EXPECT_TRUE(mapped.write(4096, bytes));
  // Past the mapping: refused, nothing touched.
  EXPECT_FALSE(mapped.write((1 << 20) - 4096, bytes));
  // The file cut short under the mapping (as a full disk would refuse its pages): a plain
  // copy would die of SIGBUS here; write() says no and the caller uses pwrite.
  ASSERT_EQ(::ftruncate(fd.get(), 0), 0);
  EXPECT_FALSE(mapped.write(65536, bytes));
}

TEST(MappedWrites, BytesCopiedAcrossAReleaseStayInTheFile) {
  TempDir dir{"rdmax-mapped"};
  const Fd fd(::openat(dir.fd(), "m", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  const std::uint64_t size = MappedWrites::kReleaseBytes + (std::uint64_t{3} << 20);
  ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  const auto bytes = random_bytes(static_cast<std::size_t>(size), 5);
  {
    MappedWrites mapped(fd.get(), size);
    for (std::uint64_t at = 0; at < size; at += 1 << 20)
      ASSERT_TRUE(mapped.write(at, std::span(bytes).subspan(at, 1 << 20)));
  }
  EXPECT_EQ(read_file(dir.path() / "m"), std::string(bytes.begin(), bytes.end()));
}

// Writers on several threads at once, each chunk once, in no order: one through the page
// cache at a time, the rest through the mapping; the committed file holds every byte.
TEST(OutputFileLanes, ChunksWrittenFromManyThreadsAtOnceMakeTheFile) {
  TempDir dir{"rdmax-lanes"};
  const std::size_t chunk = 64 << 10;
  const auto bytes = random_bytes(200 * chunk + 777, 9);
  auto out = OutputFile::create(dir.fd(), "lanes.bin", false);
  EXPECT_TRUE(out.write_lanes(bytes.size()));
  const std::size_t chunks = (bytes.size() + chunk - 1) / chunk;
  std::vector<std::thread> writers;
  for (unsigned t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (std::size_t i = t; i < chunks; i += 4) {
        const std::size_t at = i * chunk;
        out.write_at(at, std::span(bytes).subspan(at, std::min(chunk, bytes.size() - at)));
      }
    });
  for (auto& w : writers) w.join();
  out.commit();
  EXPECT_EQ(read_file(dir.path() / "lanes.bin"), std::string(bytes.begin(), bytes.end()));
}

struct IncomingLanesTest : ::testing::Test, IncomingFileRig {
  IncomingLanesTest()
      : IncomingFileRig("rdmax-incoming-lanes", 4, random_bytes((std::size_t{6} << 20) + 4321, 3),
                        64 << 10) {}
};

TEST_F(IncomingLanesTest, AFileOnSixteenLanesVerifiesAndCommitsWhole) {
  for (auto algorithm : {kFsVerity, kBlake3}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    const std::string name = "one-" + std::to_string(static_cast<int>(algorithm));
    auto f = open(name, algorithm, 16);
    EXPECT_TRUE(succeeded(create(*f)));
    ASSERT_TRUE(store(*f, range(0), 16));
    std::sort(reported.begin(), reported.end());  // each chunk's result once, in whatever order
    EXPECT_EQ(std::adjacent_find(reported.begin(), reported.end()), reported.end());
    EXPECT_EQ(f->bytes_stored(), bytes.size());
    EXPECT_EQ(f->finish_hash(), tree_digest_of(algorithm, bytes));
    ASSERT_TRUE(succeeded(commit(*f)));
    EXPECT_EQ(read_file(dir.path() / name), std::string(bytes.begin(), bytes.end()));
    EXPECT_TRUE(f->idle());
  }
}

// Chunks in any order (as the connections of a striped file deliver them): each result comes
// back once its own chunk is stored, the stored prefix grows only without a hole, and the
// digest is the whole file's.
TEST_F(IncomingLanesTest, ChunksInAnyOrderMakeTheWholeFilesDigest) {
  for (auto algorithm : {kFsVerity, kBlake3}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    const std::string name = "any-" + std::to_string(static_cast<int>(algorithm));
    auto f = open(name, algorithm, 8);
    EXPECT_TRUE(succeeded(create(*f)));
    auto order = range(0);
    std::mt19937 shuffle(static_cast<unsigned>(algorithm) + 7);
    std::shuffle(order.begin(), order.end(), shuffle);
    // The first chunk last: until then nothing is stored from the start.
    std::iter_swap(std::find(order.begin(), order.end(), 0), order.end() - 1);
    order.pop_back();
    ASSERT_TRUE(store(*f, order, 8));
    EXPECT_EQ(f->bytes_stored(), 0u);  // every chunk but the first: a hole at the start
    EXPECT_THROW(f->finish_hash(), std::logic_error);
    ASSERT_TRUE(store(*f, {0}, 8));
    EXPECT_EQ(f->bytes_stored(), bytes.size());
    EXPECT_EQ(f->finish_hash(), tree_digest_of(algorithm, bytes));
    ASSERT_TRUE(succeeded(commit(*f)));
    EXPECT_EQ(read_file(dir.path() / name), std::string(bytes.begin(), bytes.end()));
  }
}

// Kept with a hole: the partial holds the prefix before it, not the chunks past it.
TEST_F(IncomingLanesTest, KeptWithAHoleResumesFromTheHole) {
  const Digest digest = blake3::digest_of(bytes);
  {
    auto f = open("hole.bin", kBlake3, 4, resume(digest));
    EXPECT_TRUE(succeeded(create(*f)));
    // Chunks 0-2 and 4-9: chunk 3 never comes (its connection was lost).
    ASSERT_TRUE(store(*f, {0, 1, 2, 4, 5, 6, 7, 8, 9}, 4));
    EXPECT_EQ(f->bytes_stored(), 3 * chunk);
    f->keep();
    ASSERT_TRUE(until_idle(*f));
  }
  auto f = open("hole.bin", kBlake3, 4, resume(digest));
  EXPECT_TRUE(succeeded(create(*f)));
  EXPECT_EQ(f->resumed_from(), 3 * chunk);
  ASSERT_TRUE(store(*f, range(f->resumed_from() / chunk), 4));
  EXPECT_EQ(f->finish_hash(), digest);
  f->discard();
  ASSERT_TRUE(until_idle(*f));
}

// Discarded with writes running on every lane: the temporary goes once they are done (the
// sanitizers see a write into an unmapped or closed file if it went sooner).
TEST_F(IncomingLanesTest, DiscardedWhileItsLanesWriteLeavesNothing) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto f = open("gone-" + std::to_string(attempt), kBlake3, 16);
    EXPECT_TRUE(succeeded(create(*f)));
    post(*f, range(0), 16);
    // Let some writes start, then discard with the rest queued or running.
    pool.run_completions();
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
    f->discard();
    ASSERT_TRUE(until_idle(*f));
    f.reset();
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  }
}

// Kept (the connection cut) while its lanes write: what was stored is durable in the
// partial, and the next attempt starts after it and ends with the whole file's digest.
TEST_F(IncomingLanesTest, KeptWhileItsLanesWriteResumesAfterWhatWasStored) {
  const Digest digest = merkle::digest_of(bytes);
  std::size_t stored = 0;
  {
    auto f = open("kept.bin", kFsVerity, 8, resume(digest));
    EXPECT_TRUE(succeeded(create(*f)));
    post(*f, range(0), 8);
    // Cut once some chunks are stored, with the others queued or being written.
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->bytes_stored() >= 7 * chunk; }));
    stored = f->bytes_stored();
    f->keep();
    ASSERT_TRUE(until_idle(*f));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "kept.bin"));
  auto f = open("kept.bin", kFsVerity, 8, resume(digest));
  EXPECT_TRUE(succeeded(create(*f)));
  // A loaded machine may store every chunk before the cut: a partial of the whole file is
  // cut back to its last chunk, which a Resume always leaves the sender (PROTOCOL.md 7.6).
  const std::uint64_t last_chunk = (bytes.size() - 1) / chunk * chunk;
  ASSERT_GE(f->resumed_from(), std::min<std::uint64_t>(stored, last_chunk));
  ASSERT_EQ(f->resumed_from() % chunk, 0u);
  ASSERT_TRUE(store(*f, range(f->resumed_from() / chunk), 8));
  EXPECT_EQ(f->finish_hash(), digest);
  ASSERT_TRUE(succeeded(commit(*f)));
  EXPECT_EQ(read_file(dir.path() / "kept.bin"), std::string(bytes.begin(), bytes.end()));
}

}  // namespace
}  // namespace rdmax::test
