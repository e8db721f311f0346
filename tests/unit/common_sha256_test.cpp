#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/digest/sha256.hpp"
#include "common/os/fd.hpp"
#include "sender/input_file.hpp"

namespace rdmax {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Sha256, EmptyInput) {
  Sha256 hash;
  EXPECT_EQ(to_hex(hash.finish()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  Sha256 hash;
  hash.update(bytes_of("abc"));
  EXPECT_EQ(to_hex(hash.finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShotAndFinishResets) {
  const std::string text = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  Sha256 hash;
  for (char c : text)
    hash.update(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&c), 1));
  EXPECT_EQ(to_hex(hash.finish()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // finish() reset the context: the next digest covers only new input.
  hash.update(bytes_of("abc"));
  EXPECT_EQ(to_hex(hash.finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, ToHex) {
  const uint8_t bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  EXPECT_EQ(to_hex(bytes), "000fa0ff");
  EXPECT_EQ(to_hex({}), "");
}

class TempFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/rdmax-sha-XXXXXX";
    fd_ = Fd(::mkstemp(path));
    ASSERT_TRUE(fd_);
    ::unlink(path);
  }
  void write_all(const std::vector<uint8_t>& data) {
    ASSERT_EQ(::pwrite(fd_.get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  }
  Fd fd_;
};

TEST_F(TempFile, FileHashMatchesInMemoryHashAcrossReadBoundaries) {
  // Larger than the 4 MiB read size, and not a multiple of it.
  std::vector<uint8_t> data((9u << 20) + 123);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + (i >> 13));
  write_all(data);
  Sha256 expected;
  expected.update(data);

  std::vector<uint64_t> progress;
  const Digest digest =
      sha256_of_file(fd_.get(), data.size(), [&](uint64_t done) { progress.push_back(done); });
  EXPECT_EQ(digest, expected.finish());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), data.size());
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
}

TEST_F(TempFile, EmptyFileHashesAsEmpty) {
  EXPECT_EQ(to_hex(sha256_of_file(fd_.get(), 0)),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(TempFile, HashesOnlyTheRequestedPrefix) {
  write_all({'a', 'b', 'c', 'd', 'e'});
  EXPECT_EQ(to_hex(sha256_of_file(fd_.get(), 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(TempFile, FileShorterThanSizeThrows) {
  write_all({'a', 'b', 'c'});
  EXPECT_THROW(sha256_of_file(fd_.get(), 10), std::runtime_error);
}

// A TempFile that can also be mapped.
class MappedFile : public TempFile {
 protected:
  std::span<const uint8_t> map(size_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_.get(), 0);
    EXPECT_NE(p, MAP_FAILED);
    mapping_ = {static_cast<const uint8_t*>(p), size};
    return mapping_;
  }
  void TearDown() override {
    if (!mapping_.empty()) ::munmap(const_cast<uint8_t*>(mapping_.data()), mapping_.size());
  }
  std::span<const uint8_t> mapping_;
};

TEST_F(MappedFile, MappingHashEqualsFileHash) {
  std::vector<uint8_t> data((9u << 20) + 4097);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + (i >> 11));
  write_all(data);
  std::vector<uint64_t> progress;
  const Digest digest =
      sha256_of_mapping(map(data.size()), [&](uint64_t done) { progress.push_back(done); });
  EXPECT_EQ(digest, sha256_of_file(fd_.get(), data.size()));
  ASSERT_EQ(progress.size(), 3u);  // 4 MiB steps
  EXPECT_EQ(progress.back(), data.size());
  EXPECT_EQ(to_hex(sha256_of_mapping({})),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(InputFileMapping, TruncatedWhileMappedThrowsInsteadOfDyingOfSigbus) {
  char path[] = "/tmp/rdmax-map-XXXXXX";
  Fd fd(::mkstemp(path));
  ASSERT_TRUE(fd);
  const size_t size = 8u << 20;
  ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  InputFile file(path);  // the mapping rdma-send hashes (MAP_PRIVATE, read-only)
  ::unlink(path);
  const auto mapping = file.map();
  ASSERT_EQ(mapping.size(), size);
  ASSERT_EQ(::ftruncate(fd.get(), 4096), 0);  // the pages past 4 KiB are gone
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &before), 0);
  // Twice: the first fault must leave SIGBUS unblocked and the handler reusable.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)sha256_of_mapping(mapping);
      FAIL() << "hashing a truncated mapping succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
    }
  }
  // The handler is gone again: SIGBUS has its previous disposition (the default, or a
  // sanitizer's handler).
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  EXPECT_EQ(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
}

}  // namespace
}  // namespace rdmax
