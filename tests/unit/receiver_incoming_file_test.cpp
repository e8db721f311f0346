// The receiver's disk side on the real worker pool: create, store (hash + write, results in
// order), commit, discard, and what a failing write reports.

#include "receiver/incoming_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"

namespace rdmax::test {
namespace {

using receiver::IncomingFile;
using Kind = IncomingFile::Outcome::Kind;

struct IncomingFileTest : ::testing::Test {
  TempDir dir{"rdmax-incoming"};
  receiver::SpaceReservations space;
  WorkPool pool{2};

  IncomingFile::Outcome create(IncomingFile& f, std::uint64_t size) {
    std::optional<IncomingFile::Outcome> result;
    f.create(size, space, [&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    return result.value_or(IncomingFile::Outcome{Kind::Failed, "no result"});
  }
};

TEST_F(IncomingFileTest, StoresChunksInOrderAndCommitsTheVerifiedFile) {
  const auto bytes = random_bytes(5 * 4096 + 11);
  IncomingFile f(pool, dir.fd(), "out.bin", false, proto::DigestAlgorithm::WholeFileSha256);
  ASSERT_TRUE(create(f, bytes.size()).ok());
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < 6; ++i) {
    const std::size_t offset = std::size_t{i} * 4096;
    const std::size_t length = std::min<std::size_t>(4096, bytes.size() - offset);
    f.store(i, offset, std::span(bytes).subspan(offset, length),
            [&](const IncomingFile::Stored& s) {
              EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
              order.push_back(s.slot);
            });
  }
  ASSERT_TRUE(run_pool_until(pool, [&] { return order.size() == 6; }));
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.bytes_stored(), bytes.size());
  EXPECT_EQ(f.finish_hash(), sha256_of(bytes));
  // Nothing under the final name before the commit.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out.bin"));
  std::optional<IncomingFile::Outcome> committed;
  f.commit([&](const IncomingFile::Outcome& o) { committed = o; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return committed.has_value(); }));
  EXPECT_TRUE(committed->ok()) << committed->error;
  EXPECT_TRUE(f.committed());
  EXPECT_EQ(read_file(dir.path() / "out.bin"), std::string(bytes.begin(), bytes.end()));
  EXPECT_TRUE(f.idle());
}

// The work given (receiver/store_work.hpp) is the work done: each chunk goes to the write
// given, not to the file, and the file is hashed by the hashers the hashing given makes; a
// write given that throws fails its chunk as a write of the file would.
TEST_F(IncomingFileTest, TheStoreWorkGivenWritesAndHashesEachChunk) {
  const auto bytes = random_bytes(3 * 4096, 21);
  struct Written {
    std::uint64_t offset;
    std::vector<std::uint8_t> bytes;
  };
  std::mutex mutex;  // the lanes' jobs write at once
  std::vector<Written> written;
  unsigned hashers = 0;
  receiver::StoreWork work;
  work.write = [&](OutputFile&, std::uint64_t offset, std::span<const std::uint8_t> chunk) {
    if (offset == 2 * 4096) throw std::runtime_error("no room on the emulated disk");
    std::lock_guard lock(mutex);
    written.push_back({offset, {chunk.begin(), chunk.end()}});
  };
  work.hashing.make_hasher = [&](WorkPool& p, proto::DigestAlgorithm algorithm,
                                 std::uint64_t size) {
    ++hashers;
    return FileHasher::make(p, algorithm, size);
  };
  IncomingFile f(pool, dir.fd(), "given.bin", false, proto::DigestAlgorithm::WholeFileSha256, work);
  f.set_write_lanes(3);
  ASSERT_TRUE(create(f, bytes.size()).ok());
  EXPECT_EQ(hashers, 1u);
  std::map<std::uint32_t, IncomingFile::Outcome> stored;  // by slot
  for (std::uint32_t i = 0; i < 2; ++i) {
    f.store(i, std::uint64_t{i} * 4096, std::span(bytes).subspan(i * 4096, 4096),
            [&](const IncomingFile::Stored& s) { stored[s.slot] = s.outcome; });
  }
  ASSERT_TRUE(run_pool_until(pool, [&] { return stored.size() == 2; }));
  EXPECT_TRUE(stored[0].ok() && stored[1].ok());
  EXPECT_EQ(f.finish_hash(), sha256_of(std::span(bytes).first(2 * 4096)));
  std::sort(written.begin(), written.end(),
            [](const Written& a, const Written& b) { return a.offset < b.offset; });
  ASSERT_EQ(written.size(), 2u);
  for (std::uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(written[i].offset, i * 4096u);
    EXPECT_TRUE(
        std::equal(written[i].bytes.begin(), written[i].bytes.end(), bytes.begin() + i * 4096));
  }
  f.store(2, 2 * 4096, std::span(bytes).subspan(2 * 4096),
          [&](const IncomingFile::Stored& s) { stored[s.slot] = s.outcome; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return stored.size() == 3; }));
  EXPECT_EQ(stored[2].kind, Kind::Failed);
  EXPECT_EQ(stored[2].error, "no room on the emulated disk");
  f.discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f.idle(); }));
}

// The fs-verity digest: chunks hashed on every pool thread, finishing in whatever order the
// threads take, folded in file order. Chunk sizes cover single blocks, whole 128-block groups
// and groups split across chunks; the result must equal the digest of the whole file.
TEST(IncomingFileTree, ChunksHashedOnEveryThreadFoldToTheFileDigest) {
  TempDir dir{"rdmax-incoming-tree"};
  receiver::SpaceReservations space;
  WorkPool pool{4};
  for (std::size_t chunk : {std::size_t{4096}, std::size_t{64} << 10, std::size_t{512} << 10,
                            std::size_t{1} << 20, std::size_t{3} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const auto bytes = random_bytes((std::size_t{5} << 20) + 1234);
    const std::string name = "tree-" + std::to_string(chunk);
    IncomingFile f(pool, dir.fd(), name, false, proto::DigestAlgorithm::FsVeritySha256);
    std::optional<IncomingFile::Outcome> created;
    f.create(bytes.size(), space, [&](const IncomingFile::Outcome& o) { created = o; });
    ASSERT_TRUE(run_pool_until(pool, [&] { return created.has_value(); }));
    ASSERT_TRUE(created->ok()) << created->error;
    std::vector<std::uint32_t> order;
    std::uint32_t chunks = 0;
    for (std::size_t offset = 0; offset < bytes.size(); offset += chunk, ++chunks) {
      const std::size_t length = std::min(chunk, bytes.size() - offset);
      f.store(chunks, offset, std::span(bytes).subspan(offset, length),
              [&](const IncomingFile::Stored& s) {
                EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                order.push_back(s.slot);
              });
    }
    ASSERT_TRUE(run_pool_until(pool, [&] { return order.size() == chunks; }));
    // Each chunk's result comes once (in whatever order the threads finish: the nodes, not
    // the results, are folded in file order).
    std::sort(order.begin(), order.end());
    ASSERT_EQ(std::adjacent_find(order.begin(), order.end()), order.end());
    EXPECT_EQ(f.finish_hash(), merkle::digest_of(bytes));
    f.discard();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f.idle(); }));
  }
}

TEST(IncomingFileTree, AChunkOffTheBlockGridFailsItsStore) {
  TempDir dir{"rdmax-incoming-tree"};
  receiver::SpaceReservations space;
  WorkPool pool{2};
  IncomingFile f(pool, dir.fd(), "odd", false, proto::DigestAlgorithm::FsVeritySha256);
  std::optional<IncomingFile::Outcome> created;
  f.create(10000, space, [&](const IncomingFile::Outcome& o) { created = o; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return created.has_value(); }));
  const auto bytes = random_bytes(100);
  std::optional<IncomingFile::Stored> stored;
  f.store(0, 100, bytes, [&](const IncomingFile::Stored& s) { stored = s; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return stored.has_value(); }));
  EXPECT_FALSE(stored->outcome.ok());
  EXPECT_EQ(f.finish_hash(), Digest{});  // a gap in the tree: no digest
  f.discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f.idle(); }));
}

TEST_F(IncomingFileTest, ExistingNameIsReportedAsExists) {
  std::ofstream(dir.path() / "taken") << "x";
  IncomingFile f(pool, dir.fd(), "taken", false, proto::DigestAlgorithm::WholeFileSha256);
  EXPECT_EQ(create(f, 10).kind, Kind::Exists);
  EXPECT_EQ(read_file(dir.path() / "taken"), "x");
}

TEST_F(IncomingFileTest, TooLargeForTheFreeSpaceIsNoSpace) {
  IncomingFile f(pool, dir.fd(), "huge", false, proto::DigestAlgorithm::WholeFileSha256);
  EXPECT_EQ(create(f, std::uint64_t{1} << 62).kind, Kind::NoSpace);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST_F(IncomingFileTest, DiscardRemovesTheTemporary) {
  IncomingFile f(pool, dir.fd(), "gone.bin", false, proto::DigestAlgorithm::WholeFileSha256);
  ASSERT_TRUE(create(f, 4096).ok());
  const auto bytes = random_bytes(4096);
  bool stored = false;
  f.store(0, 0, bytes, [&](const IncomingFile::Stored&) { stored = true; });
  f.discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f.idle(); }));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  EXPECT_FALSE(stored);  // a discarded store reports nothing
}

TEST_F(IncomingFileTest, FailedWriteIsReportedWithItsReason) {
  // A file-size limit makes the write past it fail (EFBIG) as a full disk would.
  IncomingFile f(pool, dir.fd(), "limited.bin", false, proto::DigestAlgorithm::WholeFileSha256);
  ASSERT_TRUE(create(f, 0).ok());
  const auto bytes = random_bytes(4096);
  std::optional<IncomingFile::Stored> result;
  bool done = false;
  {
    FileSizeLimit limit(8192);
    f.store(3, 65536, bytes, [&](const IncomingFile::Stored& s) { result = s; });
    done = run_pool_until(pool, [&] { return result.has_value(); });
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(result->slot, 3u);
  EXPECT_EQ(result->outcome.kind, Kind::Failed);
  EXPECT_NE(result->outcome.error.find("large"), std::string::npos) << result->outcome.error;
  EXPECT_EQ(f.bytes_stored(), 0u);
  f.discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f.idle(); }));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Resume (docs/PROTOCOL.md 7.6): a transfer interrupted after some chunks keeps them, with
// their tree nodes, in the partial area; the next IncomingFile for the same path, size and
// digest starts after them, and the whole file's digest still comes out right.
struct IncomingFileResumeTest : ::testing::Test {
  TempDir dir{"rdmax-incoming-resume"};
  receiver::SpaceReservations space;
  WorkPool pool{3};
  receiver::PartialStore partials{dir.fd(), {}};
  static constexpr std::uint32_t kChunk = 64 << 10;
  std::vector<std::uint8_t> bytes = random_bytes((std::size_t{1} << 20) + 5000, 11);
  Digest digest = merkle::digest_of(bytes);

  std::unique_ptr<IncomingFile> open(const std::string& name, bool may_have = true) {
    auto f = std::make_unique<IncomingFile>(pool, dir.fd(), name, false,
                                            proto::DigestAlgorithm::FsVeritySha256);
    f->set_resume({&partials, digest, kChunk, may_have});
    return f;
  }
  IncomingFile::Outcome create(IncomingFile& f) {
    std::optional<IncomingFile::Outcome> result;
    f.create(bytes.size(), space, [&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    return result.value_or(IncomingFile::Outcome{Kind::Failed, "no result"});
  }
  // Stores chunks [first, last) in order.
  void store(IncomingFile& f, std::uint64_t first, std::uint64_t last) {
    std::uint64_t done = 0;
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t offset = i * kChunk;
      const std::size_t length = std::min<std::size_t>(kChunk, bytes.size() - offset);
      f.store(0, offset, std::span(bytes).subspan(offset, length),
              [&](const IncomingFile::Stored& s) {
                EXPECT_TRUE(s.outcome.ok()) << s.outcome.error;
                ++done;
              });
    }
    ASSERT_TRUE(run_pool_until(pool, [&] { return done == last - first; }));
  }
  IncomingFile::Outcome commit(IncomingFile& f) {
    std::optional<IncomingFile::Outcome> result;
    f.commit([&](const IncomingFile::Outcome& o) { result = o; });
    EXPECT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
    return result.value_or(IncomingFile::Outcome{Kind::Failed, "no result"});
  }
  std::uint64_t chunks() const { return (bytes.size() + kChunk - 1) / kChunk; }
};

TEST_F(IncomingFileResumeTest, KeptChunksAreResumedAndTheDigestCoversEveryByte) {
  {
    auto f = open("big.bin");
    ASSERT_TRUE(create(*f).ok());
    EXPECT_EQ(f->resumed_from(), 0u);
    store(*f, 0, 7);
    f->keep();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "big.bin"));  // never under its name
  auto f = open("big.bin");
  ASSERT_TRUE(create(*f).ok());
  EXPECT_EQ(f->resumed_from(), 7u * kChunk);
  EXPECT_EQ(f->bytes_stored(), 7u * kChunk);
  store(*f, 7, chunks());
  EXPECT_EQ(f->finish_hash(), digest);
  ASSERT_TRUE(commit(*f).ok());
  EXPECT_EQ(read_file(dir.path() / "big.bin"), std::string(bytes.begin(), bytes.end()));
  ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  EXPECT_EQ(partials.bytes(), 0u);  // the partial left with the commit

  // The same file offered again: it is there, nothing to receive.
  auto again = open("big.bin");
  EXPECT_EQ(create(*again).kind, Kind::Have);
  // ...but not for a sender that does not understand Have: Exists, as before.
  auto old = open("big.bin", false);
  EXPECT_EQ(create(*old).kind, Kind::Exists);
}

TEST_F(IncomingFileResumeTest, DiscardKeepsNothingAndAnotherDigestStartsFromZero) {
  {
    auto f = open("d.bin");
    ASSERT_TRUE(create(*f).ok());
    store(*f, 0, 3);
    f->discard();  // a bad verdict
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  }
  EXPECT_EQ(partials.bytes(), 0u);
  {
    auto f = open("d.bin");
    ASSERT_TRUE(create(*f).ok());
    EXPECT_EQ(f->resumed_from(), 0u);
    store(*f, 0, 3);
    f->keep();
    ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  }
  digest[0] ^= 1;  // another file under the same path
  auto f = open("d.bin");
  ASSERT_TRUE(create(*f).ok());
  EXPECT_EQ(f->resumed_from(), 0u);
  f->discard();
  ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
}

// A refusal keeps nothing (rdma-recv(1)): the partial made for the offer goes with it.
TEST_F(IncomingFileResumeTest, ARefusedFileLeavesNoPartialBehind) {
  auto f = open("huge.bin");
  std::optional<IncomingFile::Outcome> result;
  f->create(std::uint64_t{1} << 62, space, [&](const IncomingFile::Outcome& o) { result = o; });
  ASSERT_TRUE(run_pool_until(pool, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, Kind::NoSpace);
  ASSERT_TRUE(run_pool_until(pool, [&] { return f->idle(); }));
  EXPECT_EQ(partials.bytes(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a refusal left files behind";
  EXPECT_EQ(space.reserved(), 0u);
}

TEST_F(IncomingFileResumeTest, AFileInPlaceIsHashedWhenItHasNoRecord) {
  {
    std::ofstream out(dir.path() / "there.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_EQ(create(*open("there.bin")).kind, Kind::Have);
  digest[5] ^= 0x40;  // the same size, another content: Exists, as before
  EXPECT_EQ(create(*open("there.bin")).kind, Kind::Exists);
}

}  // namespace
}  // namespace rdmax::test
