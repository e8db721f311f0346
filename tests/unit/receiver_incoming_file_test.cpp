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
#include <mutex>

#include "common/digest/merkle.hpp"
#include "incoming_file_rig.hpp"

namespace rdmax::test {
namespace {

using receiver::IncomingFile;
using Kind = IncomingFile::Outcome::Kind;

struct IncomingFileTest : ::testing::Test, IncomingFileRig {
  IncomingFileTest() : IncomingFileRig("rdmax-incoming", 2) {}
};

TEST_F(IncomingFileTest, StoresChunksInOrderAndCommitsTheVerifiedFile) {
  bytes = random_bytes(5 * 4096 + 11);
  auto f = open("out.bin", kWholeFileSha256);
  ASSERT_TRUE(succeeded(create(*f)));
  ASSERT_TRUE(store(*f, range(0)));
  EXPECT_EQ(reported, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f->bytes_stored(), bytes.size());
  EXPECT_EQ(f->finish_hash(), sha256_of(bytes));
  // Nothing under the final name before the commit.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out.bin"));
  EXPECT_TRUE(succeeded(commit(*f)));
  EXPECT_TRUE(f->committed());
  EXPECT_EQ(read_file(dir.path() / "out.bin"), std::string(bytes.begin(), bytes.end()));
  EXPECT_TRUE(f->idle());
}

// The work given (receiver/store_work.hpp) is the work done: each chunk goes to the write
// given, not to the file, and the file is hashed by the hashers the hashing given makes; a
// write given that throws fails its chunk as a write of the file would.
TEST_F(IncomingFileTest, TheStoreWorkGivenWritesAndHashesEachChunk) {
  bytes = random_bytes(3 * 4096, 21);
  struct Written {
    std::uint64_t offset;
    std::vector<std::uint8_t> bytes;
  };
  std::mutex mutex;  // the lanes' jobs write at once
  std::vector<Written> written;
  unsigned hashers = 0;
  receiver::StoreWork work;
  work.write = [&](OutputFile&, std::uint64_t offset, std::span<const std::uint8_t> data) {
    if (offset == 2 * 4096) throw std::runtime_error("no room on the emulated disk");
    std::lock_guard lock(mutex);
    written.push_back({offset, {data.begin(), data.end()}});
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

struct IncomingFileTree : ::testing::Test, IncomingFileRig {
  IncomingFileTree() : IncomingFileRig("rdmax-incoming-tree", 4) {}
};

// The fs-verity digest: chunks hashed on every pool thread, finishing in whatever order the
// threads take, folded in file order. Chunk sizes cover single blocks, whole 128-block groups
// and groups split across chunks; the result must equal the digest of the whole file.
TEST_F(IncomingFileTree, ChunksHashedOnEveryThreadFoldToTheFileDigest) {
  bytes = random_bytes((std::size_t{5} << 20) + 1234);
  for (std::size_t size : {std::size_t{4096}, std::size_t{64} << 10, std::size_t{512} << 10,
                           std::size_t{1} << 20, std::size_t{3} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(size));
    chunk = size;
    auto f = open("tree-" + std::to_string(size), kFsVerity);
    ASSERT_TRUE(succeeded(create(*f)));
    ASSERT_TRUE(store(*f, range(0)));
    // Each chunk's result comes once (in whatever order the threads finish: the nodes, not
    // the results, are folded in file order).
    std::sort(reported.begin(), reported.end());
    ASSERT_EQ(std::adjacent_find(reported.begin(), reported.end()), reported.end());
    EXPECT_EQ(f->finish_hash(), merkle::digest_of(bytes));
    f->discard();
    ASSERT_TRUE(until_idle(*f));
  }
}

TEST_F(IncomingFileTree, AChunkOffTheBlockGridFailsItsStore) {
  auto f = open("odd", kFsVerity);
  ASSERT_TRUE(succeeded(create(*f, 10000)));
  bytes = random_bytes(100);
  const auto stored = store_at(*f, 0, 100, bytes);
  ASSERT_TRUE(stored);
  EXPECT_FALSE(stored->outcome.ok());
  EXPECT_EQ(f->finish_hash(), Digest{});  // a gap in the tree: no digest
  f->discard();
  ASSERT_TRUE(until_idle(*f));
}

TEST_F(IncomingFileTest, ExistingNameIsReportedAsExists) {
  std::ofstream(dir.path() / "taken") << "x";
  EXPECT_EQ(create(*open("taken", kWholeFileSha256), 10).kind, Kind::Exists);
  EXPECT_EQ(read_file(dir.path() / "taken"), "x");
}

TEST_F(IncomingFileTest, TooLargeForTheFreeSpaceIsNoSpace) {
  EXPECT_EQ(create(*open("huge", kWholeFileSha256), std::uint64_t{1} << 62).kind, Kind::NoSpace);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST_F(IncomingFileTest, DiscardRemovesTheTemporary) {
  bytes = random_bytes(4096);
  auto f = open("gone.bin", kWholeFileSha256);
  ASSERT_TRUE(succeeded(create(*f)));
  post(*f, range(0));
  f->discard();
  ASSERT_TRUE(until_idle(*f));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  EXPECT_TRUE(reported.empty());  // a discarded store reports nothing
}

TEST_F(IncomingFileTest, FailedWriteIsReportedWithItsReason) {
  // A file-size limit makes the write past it fail (EFBIG) as a full disk would.
  auto f = open("limited.bin", kWholeFileSha256);
  ASSERT_TRUE(succeeded(create(*f, 0)));
  bytes = random_bytes(4096);
  std::optional<IncomingFile::Stored> result;
  {
    FileSizeLimit limit(8192);
    result = store_at(*f, 3, 65536, bytes);
  }
  ASSERT_TRUE(result);
  EXPECT_EQ(result->slot, 3u);
  EXPECT_EQ(result->outcome.kind, Kind::Failed);
  EXPECT_NE(result->outcome.error.find("large"), std::string::npos) << result->outcome.error;
  EXPECT_EQ(f->bytes_stored(), 0u);
  f->discard();
  ASSERT_TRUE(until_idle(*f));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Resume (docs/PROTOCOL.md 7.6): a transfer interrupted after some chunks keeps them, with
// their tree nodes, in the partial area; the next IncomingFile for the same path, size and
// digest starts after them, and the whole file's digest still comes out right.
struct IncomingFileResumeTest : ::testing::Test, IncomingFileRig {
  static constexpr std::uint32_t kChunk = 64 << 10;
  IncomingFileResumeTest()
      : IncomingFileRig("rdmax-incoming-resume", 3, random_bytes((std::size_t{1} << 20) + 5000, 11),
                        kChunk) {}
  Digest digest = merkle::digest_of(bytes);

  std::unique_ptr<IncomingFile> open(const std::string& name, bool may_have = true) {
    return IncomingFileRig::open(name, kFsVerity, 1, resume(digest, may_have));
  }
  // An attempt that took the file's partial and stored its first five chunks, still going.
  void hold_five_chunks(IncomingFile& f) {
    ASSERT_TRUE(succeeded(create(f)));
    ASSERT_TRUE(store(f, range(0, 5)));
  }
};

TEST_F(IncomingFileResumeTest, KeptChunksAreResumedAndTheDigestCoversEveryByte) {
  {
    auto f = open("big.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    EXPECT_EQ(f->resumed_from(), 0u);
    ASSERT_TRUE(store(*f, range(0, 7)));
    f->keep();
    ASSERT_TRUE(until_idle(*f));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "big.bin"));  // never under its name
  auto f = open("big.bin");
  ASSERT_TRUE(succeeded(create(*f)));
  EXPECT_EQ(f->resumed_from(), 7u * kChunk);
  EXPECT_EQ(f->bytes_stored(), 7u * kChunk);
  ASSERT_TRUE(store(*f, range(7)));
  EXPECT_EQ(f->finish_hash(), digest);
  ASSERT_TRUE(succeeded(commit(*f)));
  EXPECT_EQ(read_file(dir.path() / "big.bin"), std::string(bytes.begin(), bytes.end()));
  ASSERT_TRUE(until_idle(*f));
  EXPECT_EQ(partials.bytes(), 0u);  // the partial left with the commit

  // The same file offered again: it is there, nothing to receive.
  EXPECT_EQ(create(*open("big.bin")).kind, Kind::Have);
  // ...but not for a sender that does not understand Have: Exists, as before.
  EXPECT_EQ(create(*open("big.bin", false)).kind, Kind::Exists);
}

TEST_F(IncomingFileResumeTest, DiscardKeepsNothingAndAnotherDigestStartsFromZero) {
  {
    auto f = open("d.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    ASSERT_TRUE(store(*f, range(0, 3)));
    f->discard();  // a bad verdict
    ASSERT_TRUE(until_idle(*f));
  }
  EXPECT_EQ(partials.bytes(), 0u);
  {
    auto f = open("d.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    EXPECT_EQ(f->resumed_from(), 0u);
    ASSERT_TRUE(store(*f, range(0, 3)));
    f->keep();
    ASSERT_TRUE(until_idle(*f));
  }
  digest[0] ^= 1;  // another file under the same path
  auto f = open("d.bin");
  ASSERT_TRUE(succeeded(create(*f)));
  EXPECT_EQ(f->resumed_from(), 0u);
  f->discard();
  ASSERT_TRUE(until_idle(*f));
}

// A file whose data is known bad (a verdict other than Good, a write that failed, a file its
// sender abandoned) is worth no resume: an interruption after it keeps nothing of it.
TEST_F(IncomingFileResumeTest, AFileThatKeepsNothingIsDiscardedWhenKept) {
  {
    auto f = open("bad.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    ASSERT_TRUE(store(*f, range(0, 3)));
    f->keep_nothing();
    f->keep();  // the session interrupted
    ASSERT_TRUE(until_idle(*f));
  }
  EXPECT_EQ(partials.bytes(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a bad file left something behind";
  auto f = open("bad.bin");
  ASSERT_TRUE(succeeded(create(*f)));
  EXPECT_EQ(f->resumed_from(), 0u);
  f->discard();
  ASSERT_TRUE(until_idle(*f));
}

// A sender's next attempt can come while its interrupted connection still holds the file's
// partial (its lanes not yet idle): that attempt takes the file whole, and once it is
// committed the partial is of a completed transfer. It goes when the old connection lets go,
// instead of waiting a day for the expiry (the soak's seed 6, docs/RELIABILITY.md).
TEST_F(IncomingFileResumeTest, APartialHeldWhileTheFileIsTakenWholeGoesWithTheCommit) {
  auto interrupted = open("race.bin");
  ASSERT_NO_FATAL_FAILURE(hold_five_chunks(*interrupted));
  {
    auto f = open("race.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    EXPECT_EQ(f->resumed_from(), 0u);  // the partial is held: taken whole
    ASSERT_TRUE(store(*f, range(0)));
    EXPECT_EQ(f->finish_hash(), digest);
    ASSERT_TRUE(succeeded(commit(*f)));
    ASSERT_TRUE(until_idle(*f));
  }
  EXPECT_GT(partials.bytes(), 0u);  // still held by the interrupted transfer
  interrupted->keep();              // whose connection ends only now
  ASSERT_TRUE(until_idle(*interrupted));
  interrupted.reset();
  EXPECT_EQ(partials.bytes(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / ".rdmax-partial"));
  EXPECT_EQ(read_file(dir.path() / "race.bin"), std::string(bytes.begin(), bytes.end()));
}

// Only a commit does that: a second attempt that is itself interrupted leaves the first
// attempt's partial for the third.
TEST_F(IncomingFileResumeTest, APartialHeldWhileAnotherAttemptFailsIsKept) {
  auto interrupted = open("twice.bin");
  ASSERT_NO_FATAL_FAILURE(hold_five_chunks(*interrupted));
  {
    auto f = open("twice.bin");
    ASSERT_TRUE(succeeded(create(*f)));
    ASSERT_TRUE(store(*f, range(0, 2)));
    f->keep();
    ASSERT_TRUE(until_idle(*f));
  }
  interrupted->keep();
  ASSERT_TRUE(until_idle(*interrupted));
  interrupted.reset();
  auto f = open("twice.bin");
  ASSERT_TRUE(succeeded(create(*f)));
  EXPECT_EQ(f->resumed_from(), 5u * kChunk);
  f->discard();
  ASSERT_TRUE(until_idle(*f));
}

// A refusal keeps nothing (rdma-recv(1)): the partial made for the offer goes with it.
TEST_F(IncomingFileResumeTest, ARefusedFileLeavesNoPartialBehind) {
  auto f = open("huge.bin");
  EXPECT_EQ(create(*f, std::uint64_t{1} << 62).kind, Kind::NoSpace);
  ASSERT_TRUE(until_idle(*f));
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
