// The partial area (receiver/partial_store.hpp): what survives a checkpoint, what a reopen
// checks, and what expiry removes.

#include "receiver/partial_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"

namespace rdmax::test {
namespace {

using receiver::PartialStore;
namespace fs = std::filesystem;

constexpr std::uint32_t kAlign = 64 << 10;

struct PartialStoreTest : ::testing::Test {
  TempDir dir{"rdmax-partials"};
  std::vector<std::uint8_t> bytes = random_bytes((std::size_t{2} << 20) + 777, 5);
  PartialStore::Key key{"d/file.bin", bytes.size(), merkle::digest_of(bytes)};
  PartialStore store{dir.fd(), {}};

  // Writes and checkpoints [from, to) in one step (as the receiver does once a second).
  static void store_range(PartialStore::Handle& h, const std::vector<std::uint8_t>& data,
                          std::uint64_t from, std::uint64_t to) {
    ASSERT_EQ(::pwrite(h.fd(), data.data() + from, to - from, static_cast<off_t>(from)),
              static_cast<ssize_t>(to - from));
    std::vector<merkle::Node> nodes;
    merkle::BlockHasher().nodes(from, std::span(data).subspan(from, to - from), nodes);
    h.checkpoint(to, nodes);
  }
  fs::path area() const { return dir.path() / ".rdmax-partial"; }
  fs::path data_file() const {
    for (const auto& e : fs::directory_iterator(area()))
      if (e.path().extension() == ".data") return e.path();
    return {};
  }
};

TEST_F(PartialStoreTest, ACheckpointedPrefixIsReopenedVerified) {
  {
    auto h = store.open(key, kAlign);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->durable_bytes(), 0u);
    store_range(*h, bytes, 0, 5 * kAlign);
    store_range(*h, bytes, 5 * kAlign, 9 * kAlign);
  }
  EXPECT_EQ(fs::status(area()).permissions() & fs::perms::all, fs::perms::owner_all);
  // Named by a hash: the path appears nowhere in the area.
  for (const auto& e : fs::directory_iterator(area()))
    EXPECT_EQ(e.path().filename().string().find("file"), std::string::npos);
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 9u * kAlign);
  merkle::TreeFolder folder;
  folder.add(h->prefix_nodes());
  std::vector<merkle::Node> rest;
  merkle::BlockHasher().nodes(9 * kAlign, std::span(bytes).subspan(9 * kAlign), rest);
  folder.add(rest);
  EXPECT_EQ(merkle::file_digest(bytes.size(), folder.root()), key.digest);
  // Held: a second open of the same path gets nothing, nor does a third (the second's
  // refusal once released the first one's hold).
  EXPECT_FALSE(store.open(key, kAlign));
  EXPECT_FALSE(store.open(key, kAlign));
}

TEST_F(PartialStoreTest, AnAlteredBlockCutsThePrefixBeforeIt) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 12 * kAlign);
  }
  // Stored as one chunk: a level-1 node for [0, 512 KiB), then a node per block. The damage
  // is in a block of its own.
  const std::uint64_t altered = 9 * kAlign + 5000;
  {
    const Fd f(::open(data_file().c_str(), O_WRONLY | O_CLOEXEC));
    const char x = static_cast<char>(bytes[altered] ^ 1);
    ASSERT_EQ(::pwrite(f.get(), &x, 1, static_cast<off_t>(altered)), 1);
  }
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 9u * kAlign);  // the slot that holds the damage goes
  EXPECT_EQ(fs::file_size(data_file()), 9u * kAlign);
  h.reset();
  // Damage under the level-1 node costs its whole group (128 blocks): here, everything.
  {
    const Fd f(::open(data_file().c_str(), O_WRONLY | O_CLOEXEC));
    const char x = static_cast<char>(bytes[100] ^ 1);
    ASSERT_EQ(::pwrite(f.get(), &x, 1, 100), 1);
  }
  auto again = store.open(key, kAlign);
  EXPECT_EQ(again->durable_bytes(), 0u);
}

TEST_F(PartialStoreTest, AnotherDigestOrSizeStartsFromZero) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 4 * kAlign);
  }
  PartialStore::Key other = key;
  other.digest[0] ^= 1;
  {
    auto h = store.open(other, kAlign);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->durable_bytes(), 0u);
  }
  auto h = store.open(key, kAlign);  // the first one is gone too
  EXPECT_EQ(h->durable_bytes(), 0u);
}

// PROTOCOL.md 7.10: a partial kept in a session of one digest algorithm is never continued in
// a session of the other. peek() finds nothing (no Holds of it: the flagged offer is taken
// from 0), nor does open() (no Resume: taken from 0), and the transfer that then takes the
// path replaces it: a later session of the first algorithm finds nothing either.
TEST_F(PartialStoreTest, APartialOfTheOtherAlgorithmIsNotContinuedAndIsReplaced) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 4 * kAlign);
  }
  PartialStore::Key blake3 = key;
  blake3.algorithm = proto::DigestAlgorithm::Blake3;
  EXPECT_FALSE(store.peek(blake3, kAlign, bytes.size()));
  ASSERT_TRUE(store.peek(key, kAlign, bytes.size()));  // still there for its own algorithm
  {
    auto h = store.open(blake3, kAlign, PartialStore::Match::AnyDigest);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->durable_bytes(), 0u);
    EXPECT_EQ(fs::file_size(data_file()), 0u);
  }
  EXPECT_FALSE(store.peek(key, kAlign, bytes.size()));
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 0u);
}

// peek() says what a flagged offer would be told (PROTOCOL.md 7.9, Holds) and touches nothing:
// no area made, no partial of another size cut or removed, none held by a transfer read.
TEST_F(PartialStoreTest, PeekTellsWhatIsKeptAndChangesNothing) {
  EXPECT_FALSE(store.peek(key, kAlign, key.size - 1));
  EXPECT_FALSE(fs::exists(area())) << "looking made the area";
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 5 * kAlign);
    EXPECT_FALSE(store.peek(key, kAlign, key.size - 1)) << "held by a transfer";
  }
  auto listing = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(area()))
      files[e.path().filename().string()] = read_file(e.path());
    return files;
  };
  const auto before = listing();
  PartialStore::Key any_digest = key;
  any_digest.digest = {};
  const auto held = store.peek(any_digest, kAlign, key.size - 1);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->bytes, 5u * kAlign);
  EXPECT_EQ(held->digest, merkle::digest_of(std::span(bytes).first(5 * kAlign)));
  // Cut to the limit, aligned.
  EXPECT_EQ(store.peek(key, kAlign, 3 * kAlign + 1)->bytes, 3u * kAlign);
  PartialStore::Key other_size = key;
  other_size.size += 1;
  EXPECT_FALSE(store.peek(other_size, kAlign, other_size.size - 1));
  EXPECT_FALSE(store.peek({"d/other.bin", key.size, {}}, kAlign, key.size - 1));
  EXPECT_EQ(listing(), before) << "peek changed the area";
  EXPECT_EQ(store.open(key, kAlign)->durable_bytes(), 5u * kAlign);
}

// What this process's read(2)s have returned so far (rchar): how much of a partial was read.
std::uint64_t bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string name;
  std::uint64_t value = 0;
  while (io >> name >> value)
    if (name == "rchar:") return value;
  ADD_FAILURE() << "no rchar in /proc/self/io";
  return 0;
}

// A Holds then a Continue (PROTOCOL.md 7.9): the open takes the peek's check of the prefix,
// not reading and hashing it a second time before the first new byte (issue 53's soak: big
// partials interrupted every few seconds never moved). An open without a peek before it,
// or after the files changed, checks for itself.
TEST_F(PartialStoreTest, AnOpenAfterAPeekTakesItsCheck) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 24 * kAlign);
  }
  // A check of files changed in the clock's last ticks is not remembered (settled()).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(store.peek(key, kAlign, key.size - 1)->bytes, 24u * kAlign);
  std::uint64_t before = bytes_read();
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 24u * kAlign);
  EXPECT_LT(bytes_read() - before, 64u << 10) << "the prefix was read again";
  h.reset();
  before = bytes_read();
  auto again = store.open(key, kAlign);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->durable_bytes(), 24u * kAlign);
  EXPECT_GE(bytes_read() - before, 24u * kAlign) << "an open without a peek checked nothing";
}

TEST_F(PartialStoreTest, ABlockAlteredAfterThePeekIsStillFound) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 12 * kAlign);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(store.peek(key, kAlign, key.size - 1)->bytes, 12u * kAlign);
  {
    const Fd f(::open(data_file().c_str(), O_WRONLY | O_CLOEXEC));
    const std::uint64_t altered = 9 * kAlign + 5000;
    const char x = static_cast<char>(bytes[altered] ^ 1);
    ASSERT_EQ(::pwrite(f.get(), &x, 1, static_cast<off_t>(altered)), 1);
  }
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 9u * kAlign) << "the peek's check was taken for altered data";
}

TEST_F(PartialStoreTest, ATornCheckpointKeepsThePreviousOne) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 3 * kAlign);
    // The next checkpoint wrote its data and nodes, then the process died before the header.
    ASSERT_EQ(::pwrite(h->fd(), bytes.data() + 3 * kAlign, kAlign, 3 * kAlign),
              static_cast<ssize_t>(kAlign));
  }
  auto h = store.open(key, kAlign);
  EXPECT_EQ(h->durable_bytes(), 3u * kAlign);
}

TEST_F(PartialStoreTest, ACorruptHeaderStartsFromZero) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 3 * kAlign);
  }
  for (const auto& e : fs::directory_iterator(area())) {
    if (e.path().extension() != ".hdr") continue;
    const Fd f(::open(e.path().c_str(), O_WRONLY | O_CLOEXEC));
    const char x = 'Z';
    ASSERT_EQ(::pwrite(f.get(), &x, 1, 20), 1);
  }
  auto h = store.open(key, kAlign);
  EXPECT_EQ(h->durable_bytes(), 0u);
}

// PartialStore::committed: a partial held while its path is committed by another transfer
// goes when it is let go, however it was kept meanwhile; one not held is not touched.
TEST_F(PartialStoreTest, APartialHeldWhileItsPathIsCommittedGoesWhenLetGo) {
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 4 * kAlign);
    EXPECT_FALSE(store.open(key, kAlign, PartialStore::Match::Fresh));  // held
    store.committed(key.path);
    store_range(*h, bytes, 4 * kAlign, 6 * kAlign);  // its holder keeps it, not knowing
    EXPECT_GT(store.bytes(), 0u);
  }
  EXPECT_EQ(store.bytes(), 0u);
  EXPECT_FALSE(fs::exists(area()));
  // A commit of a path whose partial nobody holds changes nothing, now or later.
  store.committed(key.path);
  {
    auto h = store.open(key, kAlign);
    store_range(*h, bytes, 0, 4 * kAlign);
  }
  store.committed("d/other.bin");
  auto h = store.open(key, kAlign);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->durable_bytes(), 4u * kAlign);
}

TEST_F(PartialStoreTest, AnotherProcessHoldingItIsRespected) {
  { auto h = store.open(key, kAlign); }
  const Fd f(::open(data_file().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::flock(f.get(), LOCK_EX | LOCK_NB), 0);  // as another rdma-recv would
  EXPECT_FALSE(store.open(key, kAlign));
}

TEST_F(PartialStoreTest, ExpiryByAgeAndByTotalSizeOldestFirst) {
  PartialStore small{dir.fd(), {std::chrono::seconds(3600), 3 * kAlign}};
  for (const char* path : {"a", "b", "c"}) {
    auto h = small.open({path, bytes.size(), key.digest}, kAlign);
    store_range(*h, bytes, 0, 2 * kAlign);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // distinct header times
  }
  auto held = small.open({"c", bytes.size(), key.digest}, kAlign);
  ASSERT_TRUE(held);
  // 6 slots' worth against a cap of 3: "a" and "b" go (oldest first), "c" is in use.
  auto expired = small.expire(std::chrono::system_clock::now());
  EXPECT_EQ(expired.files, 2u);
  EXPECT_EQ(expired.bytes, 4u * kAlign);
  EXPECT_EQ(small.bytes(), 2u * kAlign);
  held.reset();
  // Past the ttl: the rest goes, and the empty area with it.
  expired = small.expire(std::chrono::system_clock::now() + std::chrono::hours(2));
  EXPECT_EQ(expired.files, 1u);
  EXPECT_FALSE(fs::exists(area()));
}

TEST_F(PartialStoreTest, ALinkPlantedAsTheAreaIsRefused) {
  fs::create_directory(dir.path() / "elsewhere");
  fs::create_directory_symlink(dir.path() / "elsewhere", area());
  EXPECT_THROW((void)store.open(key, kAlign), std::runtime_error);
  EXPECT_TRUE(fs::is_empty(dir.path() / "elsewhere"));
}

TEST_F(PartialStoreTest, RemovingTheLastPartialRemovesTheArea) {
  auto h = store.open(key, kAlign);
  store_range(*h, bytes, 0, kAlign);
  store.remove(std::move(*h));
  EXPECT_FALSE(fs::exists(area()));
}

}  // namespace
}  // namespace rdmax::test
