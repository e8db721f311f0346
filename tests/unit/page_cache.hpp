#pragma once
// Which pages of a file are in the page cache (mincore on a shared mapping of it): what
// tells a write that went through the cache from one that went to the device directly.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

namespace rdmax {

inline constexpr std::size_t kPage = 4096;

// Which of the file's pages are in the page cache.
inline std::vector<bool> cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const std::size_t pages = (static_cast<std::size_t>(size) + kPage - 1) / kPage;
  void* map = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_NE(map, MAP_FAILED);
  std::vector<unsigned char> residency(pages);
  EXPECT_EQ(::mincore(map, static_cast<std::size_t>(size), residency.data()), 0);
  ::munmap(map, static_cast<std::size_t>(size));
  ::close(fd);
  std::vector<bool> cached;
  for (unsigned char r : residency) cached.push_back((r & 1) != 0);
  return cached;
}

}  // namespace rdmax
