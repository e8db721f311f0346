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
#include <memory>
#include <random>
#include <thread>

#include "common/digest/blake3_tree.hpp"
#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"
#include "receiver/incoming_file.hpp"
#include "receiver/mapped_writes.hpp"
#include "receiver/output_file.hpp"

namespace rdmax::test {
namespace {

using receiver::IncomingFile;

std::string contents(const std::filesystem::path& path) {
  return read_file(path);
}

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
  EXPECT_EQ(contents(dir.path() / "m"), std::string(bytes.begin(), bytes.end()));
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
  EXPECT_EQ(contents(dir.path() / "lanes.bin"), std::string(bytes.begin(), bytes.end()));
}

struct IncomingLanesTest : ::testing::Test {
  TempDir dir{"rdmax-incoming-lanes"};
  receiver::SpaceReservations space;
  WorkPool pool{4};
  static constexpr std::size_t kChunk = 64 << 10;
  std::vector<std::uint8_t> bytes = random_bytes((std::size_t{6} << 20) + 4321, 3);

  std::unique_ptr<IncomingFile> created(const std::string& name, proto::DigestAlgorithm algorithm,
                                        std::uint32_t lanes) {
    auto f = std::make_unique<IncomingFile>(pool, dir.fd(), name, false, algorithm);
    f->set_write_lanes(lanes);
    std::optional<IncomingFile::Outcome> result;
    f->create(bytes.size(), space, [&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    EXPECT_TRUE(result && result->ok());
    return f;
  }
  // Posts every chunk, each on the lane of slot (chunk % slots), as a full window would.
  std::size_t store_all(IncomingFile& f, std::uint32_t slots, std::vector<std::uint32_t>* order) {
    std::size_t posted = 0;
    for (std::size_t at = 0; at < bytes.size(); at += kChunk, ++posted) {
      const auto slot = static_cast<std::uint32_t>(posted % slots);
      f.store(slot, at, std::span(bytes).subspan(at, std::min(kChunk, bytes.size() - at)),
              [order, at](const IncomingFile::Stored& s) {
                EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                if (order != nullptr) order->push_back(static_cast<std::uint32_t>(at / kChunk));
              });
    }
    return posted;
  }
};

TEST_F(IncomingLanesTest, AFileOnSixteenLanesVerifiesAndCommitsWhole) {
  for (auto algorithm : {proto::DigestAlgorithm::FsVeritySha256, proto::DigestAlgorithm::Blake3}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    const std::string name = "one-" + std::to_string(static_cast<int>(algorithm));
    auto f = created(name, algorithm, 16);
    std::vector<std::uint32_t> order;
    const std::size_t chunks = store_all(*f, 16, &order);
    ASSERT_TRUE(run_pool_until(pool, [&] { return order.size() == chunks; }));
    std::sort(order.begin(), order.end());  // each chunk's result once, in whatever order
    EXPECT_EQ(std::adjacent_find(order.begin(), order.end()), order.end());
    EXPECT_EQ(f->bytes_stored(), bytes.size());
    const Digest expected = algorithm == proto::DigestAlgorithm::Blake3 ? blake3::digest_of(bytes)
                                                                        : merkle::digest_of(bytes);
    EXPECT_EQ(f->finish_hash(), expected);
    std::optional<IncomingFile::Outcome> committed;
    f->commit([&](const IncomingFile::Outcome& o) { committed = o; });
    ASSERT_TRUE(run_pool_until(pool, [&] { return committed.has_value(); }));
    ASSERT_TRUE(committed->ok()) << committed->error;
    EXPECT_EQ(contents(dir.path() / name), std::string(bytes.begin(), bytes.end()));
    EXPECT_TRUE(f->idle());
  }
}

// Chunks in any order (as the connections of a striped file deliver them): each result comes
// back once its own chunk is stored, the stored prefix grows only without a hole, and the
// digest is the whole file's.
TEST_F(IncomingLanesTest, ChunksInAnyOrderMakeTheWholeFilesDigest) {
  for (auto algorithm : {proto::DigestAlgorithm::FsVeritySha256, proto::DigestAlgorithm::Blake3}) {
    SCOPED_TRACE(static_cast<int>(algorithm));
    const std::string name = "any-" + std::to_string(static_cast<int>(algorithm));
    auto f = created(name, algorithm, 8);
    const std::size_t chunks = (bytes.size() + kChunk - 1) / kChunk;
    std::vector<std::size_t> order(chunks);
    for (std::size_t i = 0; i < chunks; ++i) order[i] = i;
    std::mt19937 shuffle(static_cast<unsigned>(algorithm) + 7);
    std::shuffle(order.begin(), order.end(), shuffle);
    // The first chunk last: until then nothing is stored from the start.
    std::iter_swap(std::find(order.begin(), order.end(), 0), order.end() - 1);
    std::size_t done = 0;
    for (std::size_t i = 0; i + 1 < chunks; ++i) {
      const std::size_t at = order[i] * kChunk;
      f->store(static_cast<std::uint32_t>(i % 8), at,
               std::span(bytes).subspan(at, std::min(kChunk, bytes.size() - at)),
               [&](const IncomingFile::Stored& s) {
                 EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                 ++done;
               });
    }
    ASSERT_TRUE(run_pool_until(pool, [&] { return done == chunks - 1; }));
    EXPECT_EQ(f->bytes_stored(), 0u);  // every chunk but the first: a hole at the start
    EXPECT_THROW(f->finish_hash(), std::logic_error);
    f->store(0, 0, std::span(bytes).first(kChunk), [&](const IncomingFile::Stored& s) {
      EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
      ++done;
    });
    ASSERT_TRUE(run_pool_until(pool, [&] { return done == chunks; }));
    EXPECT_EQ(f->bytes_stored(), bytes.size());
    const Digest expected = algorithm == proto::DigestAlgorithm::Blake3 ? blake3::digest_of(bytes)
                                                                        : merkle::digest_of(bytes);
    EXPECT_EQ(f->finish_hash(), expected);
    std::optional<IncomingFile::Outcome> committed;
    f->commit([&](const IncomingFile::Outcome& o) { committed = o; });
    ASSERT_TRUE(run_pool_until(pool, [&] { return committed.has_value(); }));
    ASSERT_TRUE(committed->ok()) << committed->error;
    EXPECT_EQ(contents(dir.path() / name), std::string(bytes.begin(), bytes.end()));
  }
}

// Kept with a hole: the partial holds the prefix before it, not the chunks past it.
TEST_F(IncomingLanesTest, KeptWithAHoleResumesFromTheHole) {
  receiver::PartialStore partials{dir.fd(), {}};
  const Digest digest = blake3::digest_of(bytes);
  auto open = [&] {
    auto f = std::make_unique<IncomingFile>(pool, dir.fd(), "hole.bin", false,
                                            proto::DigestAlgorithm::Blake3);
    f->set_resume({&partials, digest, static_cast<std::uint32_t>(kChunk), true});
    f->set_write_lanes(4);
    std::optional<IncomingFile::Outcome> result;
    f->create(bytes.size(), space, [&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    EXPECT_TRUE(result && result->ok());
    return f;
  };
  {
    auto f = open();
    std::size_t done = 0;
    // Chunks 0-2 and 4-9: chunk 3 never comes (its connection was lost).
    for (std::size_t i : {0, 1, 2, 4, 5, 6, 7, 8, 9})
      f->store(static_cast<std::uint32_t>(i % 4), i * kChunk,
               std::span(bytes).subspan(i * kChunk, kChunk), [&](const IncomingFile::Stored& s) {
                 EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                 ++done;
               });
    ASSERT_TRUE(run_pool_until(pool, [&] { return done == 9; }));
    EXPECT_EQ(f->bytes_stored(), 3 * kChunk);
    f->keep();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  }
  auto f = open();
  EXPECT_EQ(f->resumed_from(), 3 * kChunk);
  std::size_t posted = 0, done = 0;
  for (std::uint64_t at = f->resumed_from(); at < bytes.size(); at += kChunk, ++posted)
    f->store(static_cast<std::uint32_t>(posted % 4), at,
             std::span(bytes).subspan(at, std::min<std::size_t>(kChunk, bytes.size() - at)),
             [&](const IncomingFile::Stored& s) {
               EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
               ++done;
             });
  ASSERT_TRUE(run_pool_until(pool, [&] { return done == posted; }));
  EXPECT_EQ(f->finish_hash(), digest);
  f->discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
}

// Discarded with writes running on every lane: the temporary goes once they are done (the
// sanitizers see a write into an unmapped or closed file if it went sooner).
TEST_F(IncomingLanesTest, DiscardedWhileItsLanesWriteLeavesNothing) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto f = created("gone-" + std::to_string(attempt), proto::DigestAlgorithm::Blake3, 16);
    store_all(*f, 16, nullptr);
    // Let some writes start, then discard with the rest queued or running.
    pool.run_completions();
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
    f->discard();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
    f.reset();
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  }
}

// Kept (the connection cut) while its lanes write: what was stored is durable in the
// partial, and the next attempt starts after it and ends with the whole file's digest.
TEST_F(IncomingLanesTest, KeptWhileItsLanesWriteResumesAfterWhatWasStored) {
  receiver::PartialStore partials{dir.fd(), {}};
  const Digest digest = merkle::digest_of(bytes);
  auto open = [&] {
    auto f = std::make_unique<IncomingFile>(pool, dir.fd(), "kept.bin", false,
                                            proto::DigestAlgorithm::FsVeritySha256);
    f->set_resume({&partials, digest, static_cast<std::uint32_t>(kChunk), true});
    f->set_write_lanes(8);
    std::optional<IncomingFile::Outcome> result;
    f->create(bytes.size(), space, [&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    EXPECT_TRUE(result && result->ok());
    return f;
  };
  std::size_t stored = 0;
  {
    auto f = open();
    store_all(*f, 8, nullptr);
    // Cut once some chunks are stored, with the others queued or being written.
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->bytes_stored() >= 7 * kChunk; }));
    stored = f->bytes_stored();
    f->keep();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "kept.bin"));
  auto f = open();
  // A loaded machine may store every chunk before the cut: a partial of the whole file is
  // cut back to its last chunk, which a Resume always leaves the sender (PROTOCOL.md 7.6).
  const std::uint64_t last_chunk = (bytes.size() - 1) / kChunk * kChunk;
  ASSERT_GE(f->resumed_from(), std::min<std::uint64_t>(stored, last_chunk));
  ASSERT_EQ(f->resumed_from() % kChunk, 0u);
  std::size_t posted = 0, done = 0;
  for (std::uint64_t at = f->resumed_from(); at < bytes.size(); at += kChunk, ++posted)
    f->store(static_cast<std::uint32_t>(posted % 8), at,
             std::span(bytes).subspan(at, std::min<std::size_t>(kChunk, bytes.size() - at)),
             [&](const IncomingFile::Stored& s) {
               EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
               ++done;
             });
  ASSERT_TRUE(run_pool_until(pool, [&] { return done == posted; }));
  EXPECT_EQ(f->finish_hash(), digest);
  std::optional<IncomingFile::Outcome> committed;
  f->commit([&](const IncomingFile::Outcome& o) { committed = o; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return committed.has_value(); }));
  ASSERT_TRUE(committed->ok()) << committed->error;
  EXPECT_EQ(contents(dir.path() / "kept.bin"), std::string(bytes.begin(), bytes.end()));
}

}  // namespace
}  // namespace rdmax::test
