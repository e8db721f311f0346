// rdma-recv --direct-io (OutputFile::use_direct_io): aligned pieces go to the device with
// O_DIRECT, bypassing the page cache, the unaligned rest through it; the file committed holds
// exactly the bytes written. Whether a page went through the cache is read back with mincore
// on a mapping of the file: a direct write leaves none of its pages cached, a buffered one
// leaves them all.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "receiver/output_file.hpp"
#include "tests/unit/page_cache.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax {
namespace {

struct FreeDeleter {
  void operator()(std::uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::uint8_t[], FreeDeleter>;

AlignedBytes aligned_pattern(std::size_t size, std::uint8_t seed) {
  // aligned_alloc wants a multiple of the alignment: the pattern fills what is asked for.
  const std::size_t whole_pages = (size + kPage - 1) / kPage * kPage;
  AlignedBytes bytes(static_cast<std::uint8_t*>(std::aligned_alloc(kPage, whole_pages)));
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 31 + seed);
  return bytes;
}

bool on_tmpfs(int dir_fd) {
  struct statfs fs {};
  return ::fstatfs(dir_fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

TEST(OutputFileDirectIo, AlignedPiecesBypassTheCacheAndTheTailGoesThroughIt) {
  TempDir dir("rdmax-direct", "/var/tmp");  // a disk's file system, as a receiver's should be
  auto out = OutputFile::create(dir.fd(), "direct.bin", false);
  if (!out.use_direct_io()) GTEST_SKIP() << dir.path() << ": this file system has no direct I/O";
  ASSERT_TRUE(out.direct_io());
  // Two slots of 64 KiB written out of order, then a last chunk of 2 pages and 100 bytes.
  constexpr std::size_t kSlot = 64 * 1024, kLast = 2 * kPage + 100;
  const auto first = aligned_pattern(kSlot, 1), second = aligned_pattern(kSlot, 2);
  const auto last = aligned_pattern(kLast, 3);
  out.write_at(kSlot, {second.get(), kSlot});
  out.write_at(0, {first.get(), kSlot});
  out.write_at(2 * kSlot, {last.get(), kLast});
  out.commit();

  const std::string path = (dir.path() / "direct.bin").string();
  const auto cached = cached_pages(path);
  ASSERT_EQ(cached.size(), 2 * kSlot / kPage + 3);
  for (std::size_t page = 0; page < 2 * kSlot / kPage + 2; ++page)
    EXPECT_FALSE(cached[page]) << "page " << page << " of an aligned piece went through the cache";
  EXPECT_TRUE(cached.back()) << "the unaligned tail should go through the cache";

  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> got{std::istreambuf_iterator<char>(in), {}};
  std::vector<std::uint8_t> want(first.get(), first.get() + kSlot);
  want.insert(want.end(), second.get(), second.get() + kSlot);
  want.insert(want.end(), last.get(), last.get() + kLast);
  EXPECT_EQ(got, want);
}

// A file offset off the file system's alignment (never 1: a block device's is 512 at least)
// goes through the cache; the aligned piece before it does not.
TEST(OutputFileDirectIo, AMisalignedOffsetGoesThroughTheCache) {
  TempDir dir("rdmax-direct", "/var/tmp");
  auto out = OutputFile::create(dir.fd(), "mixed.bin", false);
  if (!out.use_direct_io()) GTEST_SKIP() << dir.path() << ": this file system has no direct I/O";
  const auto bytes = aligned_pattern(3 * kPage + 1, 7);
  out.write_at(kPage + 1, {bytes.get() + kPage + 1, 2 * kPage});  // offset off by one byte
  out.write_at(0, {bytes.get(), kPage + 1});                      // a whole block, then 1 byte
  out.commit();
  const auto cached = cached_pages((dir.path() / "mixed.bin").string());
  ASSERT_EQ(cached.size(), 4u);
  EXPECT_FALSE(cached[0]);
  EXPECT_TRUE(cached[1]);
  EXPECT_TRUE(cached[2]);
  EXPECT_TRUE(cached[3]);
  std::ifstream in(dir.path() / "mixed.bin", std::ios::binary);
  const std::vector<std::uint8_t> got{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(got, std::vector<std::uint8_t>(bytes.get(), bytes.get() + 3 * kPage + 1));
}

TEST(OutputFileDirectIo, TmpfsKeepsWritingThroughTheCache) {
  TempDir dir("rdmax-direct", "/dev/shm");
  if (!on_tmpfs(dir.fd())) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  auto out = OutputFile::create(dir.fd(), "shm.bin", false);
  EXPECT_FALSE(out.use_direct_io());
  EXPECT_FALSE(out.direct_io());
  const auto bytes = aligned_pattern(kPage, 9);
  out.write_at(0, {bytes.get(), kPage});
  out.commit();
  std::ifstream in(dir.path() / "shm.bin", std::ios::binary);
  const std::vector<std::uint8_t> got{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(got, std::vector<std::uint8_t>(bytes.get(), bytes.get() + kPage));
}

}  // namespace
}  // namespace rdmax
