// The receiver's file hashing (common/digest/file_hasher.hpp) on the real worker pool: either
// strategy gives the file's digest whatever order the pool finishes the chunks in, as long
// as the owner folds them in file order; a gap voids an fs-verity digest.

#include "common/digest/blake3_tree.hpp"
#include "common/digest/file_hasher.hpp"

#include <gtest/gtest.h>

#include <map>

#include "common/digest/merkle.hpp"
#include "driver_harness.hpp"

namespace rdmax::test {
namespace {

using rdmax::FileHasher;
constexpr std::size_t kChunk = 3 * 4096;

// Hashes `bytes` chunk by chunk, folding each chunk's nodes in file order as the owner does
// when its chunks are stored, and returns the digest.
Digest hash_in_chunks(proto::DigestAlgorithm algorithm, const std::vector<std::uint8_t>& bytes,
                      std::optional<std::size_t> lost_chunk = std::nullopt) {
  WorkPool pool{2};
  auto hasher = FileHasher::make(pool, algorithm, bytes.size());
  std::map<std::size_t, std::vector<merkle::Node>> done;  // by chunk, as they come back
  std::size_t chunks = 0;
  for (std::size_t offset = 0; offset < bytes.size(); offset += kChunk, ++chunks) {
    const auto chunk = std::span(bytes).subspan(offset, std::min(kChunk, bytes.size() - offset));
    hasher->hash(offset, chunk,
                 [&done, i = chunks](std::vector<merkle::Node> nodes, const std::string& error) {
                   EXPECT_EQ(error, "");
                   done[i] = std::move(nodes);
                 });
  }
  EXPECT_TRUE(run_pool_until(pool, [&] { return done.size() == chunks && hasher->idle(); }));
  for (std::size_t i = 0; i < chunks; ++i) {
    if (lost_chunk == i)
      hasher->gap();
    else
      hasher->fold(done[i]);
  }
  return hasher->finish(bytes.size());
}

TEST(FileHasher, Sha256IsTheWholeFilesDigest) {
  const auto bytes = random_bytes(10 * kChunk + 123, 5);
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::WholeFileSha256, bytes), sha256_of(bytes));
}

TEST(FileHasher, FsVerityIsTheTreesDigestWhateverOrderTheChunksAreHashedIn) {
  const auto bytes = random_bytes(40 * kChunk + 4096 + 7, 6);
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::FsVeritySha256, bytes),
            merkle::digest_of(bytes));
}

TEST(FileHasher, AGapVoidsTheFsVerityDigest) {
  const auto bytes = random_bytes(4 * kChunk, 7);
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::FsVeritySha256, bytes, 1), Digest{});
}

TEST(FileHasher, Blake3IsTheTreesDigestWhateverOrderTheChunksAreHashedIn) {
  // A file of one chunk (hashed whole, as the root), of a chunk and a byte, and of many
  // chunks of 12 KiB (not a power of two: each chunk is several BLAKE3 subtrees).
  for (std::size_t size : {kChunk, kChunk + 1, 40 * kChunk + 4096 + 7}) {
    const auto bytes = random_bytes(size, 8);
    EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::Blake3, bytes), blake3::digest_of(bytes))
        << size << " bytes";
  }
}

TEST(FileHasher, AGapVoidsTheBlake3Digest) {
  const auto bytes = random_bytes(4 * kChunk, 7);
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::Blake3, bytes, 1), Digest{});
}

TEST(FileHasher, AnEmptyFileHasTheEmptyDigest) {
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::Blake3, {}), blake3::digest_of({}));
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::FsVeritySha256, {}), merkle::digest_of({}));
  EXPECT_EQ(hash_in_chunks(proto::DigestAlgorithm::WholeFileSha256, {}), sha256_of({}));
}

}  // namespace
}  // namespace rdmax::test
