// hash_file (sender/hashing_pass.hpp) with the digest at the end (HashingSettings::compute
// off): a file the digest cache does not know is left unread and unknown, to be hashed as it
// is sent; an empty one is known at once (no read needed), so that it is offered with its
// digest and a receiver holding it can answer Have.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/digest/merkle.hpp"
#include "sender/hashing_pass.hpp"
#include "sender/input_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax::sender {
namespace {

std::string make_file(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

HashingSettings at_the_end() {
  HashingSettings s;
  s.compute = false;
  return s;
}

TEST(HashingPass, WithTheDigestAtTheEndAFileIsLeftUnknown) {
  TempDir dir("rdmax-hashing");
  InputFile file(make_file(dir, "data", std::string(10000, 'x')));
  const HashingPass pass = hash_file(file, at_the_end());
  EXPECT_FALSE(pass.known);
  EXPECT_FALSE(pass.from_cache);
  EXPECT_EQ(pass.digest.value, Digest{});
}

TEST(HashingPass, AnEmptyFilesDigestIsKnownWithoutReading) {
  TempDir dir("rdmax-hashing");
  InputFile file(make_file(dir, "empty", ""));
  const HashingPass pass = hash_file(file, at_the_end());
  EXPECT_TRUE(pass.known);
  EXPECT_EQ(pass.digest.value, merkle::digest_of({}));
}

TEST(HashingPass, DigestsFirstAFileIsHashed) {
  TempDir dir("rdmax-hashing");
  const std::string bytes(10000, 'y');
  InputFile file(make_file(dir, "data", bytes));
  const HashingPass pass = hash_file(file, HashingSettings{});
  EXPECT_TRUE(pass.known);
  EXPECT_EQ(pass.digest.value,
            merkle::digest_of({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
}

}  // namespace
}  // namespace rdmax::sender
