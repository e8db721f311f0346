// The fs-verity digest (common/digest/merkle.hpp, common/digest/file_digest.hpp) against the
// reference tool, `fsverity digest` (Debian package fsverity, installed by
// scripts/install-deps.sh).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/digest/file_digest.hpp"
#include "common/digest/merkle.hpp"
#include "common/os/fd.hpp"
#include "sender/input_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax {
namespace {

using merkle::kBlockSize;
using merkle::kGroupBytes;

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

void write_file(const std::string& path, const std::vector<std::uint8_t>& data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  // fwrite's buffer must not be null, even for 0 bytes (an empty vector's data() may be).
  if (!data.empty()) {
    ASSERT_EQ(std::fwrite(data.data(), 1, data.size(), f), data.size());
  }
  ASSERT_EQ(std::fclose(f), 0);
}

// What `fsverity digest --hash-alg=sha256 --block-size=4096 PATH` prints, digest only.
std::string reference_digest(const std::string& path) {
  const std::string command =
      "fsverity digest --hash-alg=sha256 --block-size=4096 '" + path + "' 2>&1";
  std::FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char line[512] = {};
  const bool got = std::fgets(line, sizeof line, p) != nullptr;
  const int status = ::pclose(p);
  if (!got || status != 0)
    return "`fsverity digest` failed (install the fsverity package): " + std::string(line);
  std::string text(line);
  const std::string prefix = "sha256:";
  if (text.rfind(prefix, 0) != 0) return "unexpected output: " + text;
  return text.substr(prefix.size(), 64);
}

// Sizes at every edge of the tree: empty, one byte, around one block, around one group
// (one level-1 block), and past 128 groups, where a third level appears.
const std::vector<std::size_t> kSizes = {
    0,
    1,
    kBlockSize - 1,
    kBlockSize,
    kBlockSize + 1,
    2 * kBlockSize,
    100000,
    kGroupBytes - 1,
    kGroupBytes,
    kGroupBytes + 1,
    kGroupBytes + kBlockSize,
    3 * kGroupBytes + 12345,
    8 * kGroupBytes,  // one segment of the parallel pass
    8 * kGroupBytes + 1,
    kGroupBytes* merkle::kHashesPerBlock - kBlockSize,
    kGroupBytes* merkle::kHashesPerBlock,
    kGroupBytes* merkle::kHashesPerBlock + 5,
};

class FsVerityDigest : public ::testing::Test {
 protected:
  TempDir dir_{"rdmax-merkle"};
  std::string file(const std::string& name) const { return (dir_.path() / name).string(); }
};

// One test per size: the three largest (64 MiB, hashed seven times each) took most of the
// sanitizers' unit-test time in one test, which no sharding could spread.
class FsVerityDigestOfSize : public FsVerityDigest,
                             public ::testing::WithParamInterface<std::size_t> {};

TEST_P(FsVerityDigestOfSize, EqualsTheReferenceTool) {
  const std::size_t size = kSizes[GetParam()];
  const auto data = random_bytes(size, static_cast<std::uint32_t>(GetParam() + 1));
  const std::string path = file("f" + std::to_string(size));
  write_file(path, data);
  const std::string expected = reference_digest(path);
  ASSERT_EQ(expected.size(), 64u) << expected;
  EXPECT_EQ(to_hex(merkle::digest_of(data)), expected);
  InputFile input(path);
  for (unsigned threads : {1u, 2u, 3u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    EXPECT_EQ(to_hex(fsverity_digest_of_file(input.fd(), size, threads)), expected);
    EXPECT_EQ(to_hex(fsverity_digest_of_mapping(input.map(), threads)), expected);
  }
}

std::string size_name(const ::testing::TestParamInfo<std::size_t>& p) {
  return "bytes_" + std::to_string(kSizes[p.param]);
}
INSTANTIATE_TEST_SUITE_P(EverySize, FsVerityDigestOfSize,
                         ::testing::Range<std::size_t>(0, kSizes.size()), size_name);

TEST_F(FsVerityDigest, AnEmptyFileHasTheWellKnownDigest) {
  EXPECT_EQ(to_hex(merkle::digest_of({})),
            "3d248ca542a24fc62d1c43b916eae5016878e2533c88238480b26128a1f1af95");
}

// The receiver's way: chunks of any block-aligned size, hashed in any order (on the worker
// pool), folded in file order.
TEST(MerkleChunks, ChunksHashedInRandomOrderFoldToTheWholeFileDigest) {
  std::mt19937 rng(7);
  for (std::size_t chunk : {kBlockSize, 16 * kBlockSize, kGroupBytes, 2 * kGroupBytes + kBlockSize,
                            std::size_t{1} << 20}) {
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, 3 * kGroupBytes + 777, std::size_t{5} << 20}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", size " + std::to_string(size));
      const auto data = random_bytes(size, static_cast<std::uint32_t>(size + chunk));
      const std::size_t count = (size + chunk - 1) / chunk;
      std::vector<std::size_t> order(count);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::vector<merkle::Node>> nodes(count);
      merkle::BlockHasher hasher;
      for (std::size_t i : order) {
        const std::size_t offset = i * chunk;
        hasher.nodes(
            offset,
            std::span<const std::uint8_t>(data).subspan(offset, std::min(chunk, size - offset)),
            nodes[i]);
      }
      merkle::TreeFolder folder;
      for (const auto& n : nodes) folder.add(n);
      EXPECT_EQ(merkle::file_digest(size, folder.root()), merkle::digest_of(data));
    }
  }
}

TEST(MerkleChunks, WholeGroupsBecomeOneLevelOneNode) {
  const auto data = random_bytes(2 * kGroupBytes + kBlockSize + 10, 3);
  merkle::BlockHasher hasher;
  std::vector<merkle::Node> nodes;
  hasher.nodes(0, data, nodes);
  ASSERT_EQ(nodes.size(), 4u);  // two groups, then two blocks
  EXPECT_EQ(nodes[0].level, 1);
  EXPECT_EQ(nodes[1].level, 1);
  EXPECT_EQ(nodes[2].level, 0);
  EXPECT_EQ(nodes[3].level, 0);
  // Not group-aligned: blocks only.
  nodes.clear();
  hasher.nodes(kBlockSize, std::span<const std::uint8_t>(data).subspan(0, kGroupBytes), nodes);
  EXPECT_EQ(nodes.size(), kGroupBytes / kBlockSize);
  EXPECT_TRUE(std::all_of(nodes.begin(), nodes.end(), [](const auto& n) { return n.level == 0; }));
}

TEST(MerkleChunks, MisalignedUseIsRefused) {
  merkle::BlockHasher hasher;
  std::vector<merkle::Node> nodes;
  const std::vector<std::uint8_t> data(kBlockSize);
  EXPECT_THROW(hasher.nodes(100, data, nodes), std::invalid_argument);
  merkle::TreeFolder folder;
  folder.add(merkle::Node{0, {}});
  EXPECT_THROW(folder.add(merkle::Node{1, {}}), std::logic_error);
}

TEST_F(FsVerityDigest, ProgressReachesTheSizeInOrder) {
  const auto data = random_bytes(20 * kGroupBytes + 5, 9);
  write_file(file("p"), data);
  InputFile input(file("p"));
  std::vector<std::uint64_t> seen;
  (void)fsverity_digest_of_mapping(input.map(), 2,
                                   [&](std::uint64_t done) { seen.push_back(done); });
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), data.size());
}

TEST_F(FsVerityDigest, AFileThatShrinksIsAnErrorNotACrash) {
  const std::string path = file("shrinks");
  write_file(path, random_bytes(40 * kGroupBytes, 11));
  InputFile input(path);
  const auto mapping = input.map();
  EXPECT_THROW((void)fsverity_digest_of_file(input.fd(), mapping.size() + 1, 2),
               std::runtime_error);
  ASSERT_EQ(::truncate(path.c_str(), 4096), 0);  // the mapped pages past 4 KiB are gone
  for (unsigned threads : {1u, 2u}) {
    try {
      (void)fsverity_digest_of_mapping(mapping, threads);
      FAIL() << "hashing a truncated mapping succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)fsverity_digest_of_file(input.fd(), mapping.size(), 2), std::runtime_error);
}

// A prefix cut for a resume: at most `limit`, at a multiple of `align`, never inside a node.
TEST(CutNodes, EndsOnAlignedNodeBoundaries) {
  using merkle::Node;
  const Node block{0, {}}, group{1, {}};
  std::vector<Node> nodes(200, block);  // 200 blocks
  EXPECT_EQ(merkle::cut_nodes(nodes, 150 * 4096 + 100, 16 * 4096), 144u * 4096);
  EXPECT_EQ(nodes.size(), 144u);
  // A level-1 node (128 blocks) that the aligned cut would split goes whole.
  nodes = {group, group, block, block};
  EXPECT_EQ(merkle::cut_nodes(nodes, 2 * merkle::kGroupBytes + 2 * 4096, 256 * 4096),
            2 * merkle::kGroupBytes);  // 256 blocks: the two groups
  nodes = {group, group, block, block};
  EXPECT_EQ(merkle::cut_nodes(nodes, 2 * merkle::kGroupBytes + 2 * 4096, 96 * 4096), 0u);
  nodes = {group, block, block, group};  // not file-shaped, but cut by the same rule
  EXPECT_EQ(merkle::cut_nodes(nodes, merkle::kGroupBytes + 4096, 4096), merkle::kGroupBytes + 4096);
  EXPECT_EQ(nodes.size(), 2u);
  nodes = {group, group};
  EXPECT_EQ(merkle::cut_nodes(nodes, 3 * merkle::kGroupBytes / 2, 3 * merkle::kGroupBytes / 2), 0u);
  EXPECT_TRUE(nodes.empty());
}

TEST(FsVerityDigestThreads, ZeroThreadsIsRefused) {
  EXPECT_THROW((void)fsverity_digest_of_file(-1, 10, 0), std::invalid_argument);
}

}  // namespace
}  // namespace rdmax
