// BLAKE3 as a tree (common/digest/blake3_tree.hpp): whatever ranges a file is cut into, hashed in
// whatever order, the folded nodes give BLAKE3's own hash of the file (its one-thread
// hasher, checked against the published test vectors). tests/checksum_test.sh compares
// `rdma-send --checksum --digest blake3` with Debian's b3sum.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/digest/blake3_tree.hpp"

namespace rdmax {
namespace blake3_tree_test {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

std::string hex(const Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// The hash of `data` cut at `cuts` (offsets inside it, multiples of 1024, increasing), each
// range hashed apart and the ranges' nodes folded in file order.
Digest by_ranges(const std::vector<std::uint8_t>& data, std::vector<std::size_t> cuts) {
  cuts.push_back(data.size());
  std::vector<std::vector<merkle::Node>> per_range(cuts.size());
  // Hashed last range first: a range's nodes depend on nothing but its bytes and offset.
  std::size_t start = 0;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t cut : cuts) {
    ranges.emplace_back(start, cut);
    start = cut;
  }
  for (std::size_t i = ranges.size(); i-- > 0;) {
    const auto [from, to] = ranges[i];
    blake3::nodes(from, std::span(data).subspan(from, to - from), to == data.size(), per_range[i]);
  }
  blake3::Folder folder;
  for (const auto& nodes : per_range) folder.add(nodes);
  return folder.finish(data.size());
}

TEST(Blake3Tree, TheOneThreadHasherGivesThePublishedVectors) {
  EXPECT_EQ(hex(blake3::digest_of({})),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
  const std::string abc = "abc";
  EXPECT_EQ(hex(blake3::digest_of(
                std::span(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size()))),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85");
}

TEST(Blake3Tree, AnyCutIntoRangesGivesTheHashOfTheWholeFile) {
  const std::size_t sizes[] = {0,
                               1,
                               63,
                               64,
                               65,
                               1023,
                               1024,
                               1025,
                               2047,
                               2048,
                               2049,
                               3 * 1024,
                               4095,
                               4096,
                               4097,
                               5 * 1024 + 1,
                               65536,
                               65537,
                               (1 << 20) - 1,
                               1 << 20,
                               (1 << 20) + 1,
                               3 * (1 << 20) + 5000,
                               (1 << 22) + 1024};
  std::uint32_t seed = 1;
  for (std::size_t size : sizes) {
    const auto data = random_bytes(size, seed++);
    const Digest want = blake3::digest_of(data);
    SCOPED_TRACE("size " + std::to_string(size));
    EXPECT_EQ(hex(by_ranges(data, {})), hex(want)) << "one range";
    // Every 4096 bytes (the receiver's smallest slot), every 1 MiB, at 1 MiB + 4096
    // multiples (slots that are not a power of two), and at random chunk boundaries.
    for (std::size_t step : {std::size_t{4096}, std::size_t{1} << 20, (std::size_t{1} << 20) + 4096,
                             std::size_t{3} << 20}) {
      std::vector<std::size_t> cuts;
      for (std::size_t at = step; at < size; at += step) cuts.push_back(at);
      EXPECT_EQ(hex(by_ranges(data, cuts)), hex(want)) << "every " << step;
    }
    std::mt19937 rng(seed);
    std::vector<std::size_t> cuts;
    for (std::size_t at = 1024 * (1 + rng() % 300); at < size; at += 1024 * (1 + rng() % 300))
      cuts.push_back(at);
    EXPECT_EQ(hex(by_ranges(data, cuts)), hex(want)) << "random cuts";
  }
}

// A kept partial's prefix (docs/PROTOCOL.md 7.9): nodes of ranges inside a longer file,
// folded up to any whole number of them, give the hash of those bytes taken as a file; each
// node is also what run_node() computes from its bytes alone.
TEST(Blake3Tree, APrefixOfNodesFoldsIntoThePrefixsOwnHash) {
  const auto data = random_bytes((std::size_t{5} << 20) + 777, 31);
  for (std::size_t slot : {std::size_t{4096}, std::size_t{1} << 20, std::size_t{3} << 20}) {
    std::vector<merkle::Node> nodes;
    std::size_t prefix = 0;
    while (prefix + slot < data.size()) {
      blake3::nodes(prefix, std::span(data).subspan(prefix, slot), false, nodes);
      prefix += slot;
      EXPECT_EQ(hex(blake3::Folder::of(nodes).finish(prefix)),
                hex(blake3::digest_of(std::span(data).first(prefix))))
          << "slot " << slot << ", prefix " << prefix;
    }
    std::uint64_t at = 0;
    for (const auto& node : nodes) {
      const auto length = static_cast<std::size_t>(blake3::node_bytes(node));
      const auto again = blake3::run_node(at, std::span(data).subspan(at, length));
      EXPECT_EQ(again.level, node.level);
      EXPECT_EQ(again.hash, node.hash);
      at += length;
    }
  }
  EXPECT_THROW(blake3::run_node(1024, std::span(data).first(2048)), std::invalid_argument);
  EXPECT_THROW(blake3::run_node(0, std::span(data).first(3072)), std::invalid_argument);
}

TEST(Blake3Tree, RangesMustStartAndEndOnChunks) {
  const auto data = random_bytes(8192, 9);
  std::vector<merkle::Node> out;
  EXPECT_THROW(blake3::nodes(512, std::span(data).subspan(0, 1024), false, out),
               std::invalid_argument);
  EXPECT_THROW(blake3::nodes(1024, std::span(data).subspan(0, 1000), false, out),
               std::invalid_argument);
  EXPECT_NO_THROW(blake3::nodes(1024, std::span(data).subspan(0, 1000), true, out));
}

TEST(Blake3Tree, AFoldWithARangeMissingIsAnErrorNotADigest) {
  const auto data = random_bytes(3 * 4096 + 10, 11);
  std::vector<merkle::Node> first, last;
  blake3::nodes(0, std::span(data).subspan(0, 4096), false, first);
  blake3::nodes(8192, std::span(data).subspan(8192), true, last);
  blake3::Folder folder;
  folder.add(first);
  EXPECT_THROW(folder.finish(data.size()), std::logic_error);  // the file's end missing
  // A node off its alignment (the middle range missing): the level-2 node at chunk 8 comes
  // where 4 chunks are covered, which is fine, but the total is then short.
  folder.add(last);
  EXPECT_THROW(folder.finish(data.size()), std::logic_error);
}

}  // namespace blake3_tree_test
}  // namespace rdmax
