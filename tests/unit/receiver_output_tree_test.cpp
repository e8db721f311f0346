// The receiver's walk beneath its output directory: creation, reuse, and refusal of
// symbolic links and non-directories at every component, with nothing written outside.

#include "receiver/output_tree.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/error.hpp"
#include "receiver/output_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax::receiver {
namespace {

namespace fs = std::filesystem;

class OutputTreeTest : public ::testing::Test {
 protected:
  fs::path at(const std::string& relative) const { return root_.path() / relative; }

  struct stat lstat_of(const fs::path& path) const {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  // The fd refers to the directory at `path` (same device and inode).
  void expect_same_directory(const Fd& fd, const fs::path& path) const {
    struct stat by_fd {};
    ASSERT_EQ(::fstat(fd.get(), &by_fd), 0);
    const struct stat by_path = lstat_of(path);
    EXPECT_TRUE(S_ISDIR(by_fd.st_mode));
    EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
    EXPECT_EQ(by_fd.st_ino, by_path.st_ino) << path;
  }

  // Runs `call`, expecting a SysError with `err` whose message holds `text`.
  static void expect_sys_error(const std::function<void()>& call, int err,
                               const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "expected a SysError (errno " << err << ")";
    } catch (const SysError& e) {
      EXPECT_EQ(e.error(), err) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }

  bool outside_is_empty() const { return fs::is_empty(outside_.path()); }

  TempDir root_{"rdmax-tree"};
  TempDir outside_{"rdmax-outside"};
};

TEST_F(OutputTreeTest, OneComponentPathGivesTheRootItself) {
  const Fd fd = open_parent_beneath(root_.fd(), "file.bin", false);
  EXPECT_NE(fd.get(), root_.fd());
  expect_same_directory(fd, root_.path());
}

TEST(OutputTreeNames, TheNameInTheParentIsTheLastComponent) {
  EXPECT_EQ(name_in_parent("file.bin"), "file.bin");
  EXPECT_EQ(name_in_parent("a/b/file.bin"), "file.bin");
}

TEST_F(OutputTreeTest, CreatesMissingParentsPrivately) {
  const Fd fd = open_parent_beneath(root_.fd(), "a/b/c/file.bin", true);
  expect_same_directory(fd, at("a/b/c"));
  for (const char* dir : {"a", "a/b", "a/b/c"}) {
    EXPECT_EQ(lstat_of(at(dir)).st_mode & 07777, 0700u) << dir;
  }
  EXPECT_FALSE(fs::exists(at("a/b/c/file.bin")));
  // The fd is good for what the output file does with it.
  EXPECT_EQ(::fsync(fd.get()), 0);
}

TEST_F(OutputTreeTest, ReusesExistingDirectoriesAsTheyAre) {
  fs::create_directories(at("a/b"));
  ::chmod(at("a").c_str(), 0751);
  std::ofstream(at("a/b/kept")) << "x";
  const Fd fd = open_parent_beneath(root_.fd(), "a/b/new/file", true);
  expect_same_directory(fd, at("a/b/new"));
  EXPECT_EQ(lstat_of(at("a")).st_mode & 07777, 0751u);
  EXPECT_TRUE(fs::exists(at("a/b/kept")));
  expect_same_directory(open_parent_beneath(root_.fd(), "a/b/new/file", false), at("a/b/new"));
}

TEST_F(OutputTreeTest, MissingDirectoryWithoutCreateIsENOENTAndCreatesNothing) {
  fs::create_directories(at("a"));
  expect_sys_error([&] { (void)open_parent_beneath(root_.fd(), "a/b/c/f", false); }, ENOENT,
                   "openat a/b:");
  EXPECT_FALSE(fs::exists(at("a/b")));
}

TEST_F(OutputTreeTest, SymlinkAtAnIntermediateComponentIsRefusedAndNothingIsCreatedOutside) {
  fs::create_directories(at("a"));
  fs::create_directory_symlink(outside_.path(), at("a/link"));
  for (bool create : {true, false}) {
    expect_sys_error([&] { (void)open_parent_beneath(root_.fd(), "a/link/sub/f", create); }, ELOOP,
                     "openat a/link:");
  }
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "a/link/sub"); }, ELOOP, "a/link:");
  expect_sys_error([&] { set_directory_attributes(root_.fd(), "a/link/sub", 0777, {}); }, ELOOP,
                   "a/link:");
  EXPECT_TRUE(outside_is_empty());
}

TEST_F(OutputTreeTest, SymlinkAsTheLastDirectoryIsRefusedEvenToADirectory) {
  fs::create_directory_symlink(outside_.path(), at("d"));
  const mode_t outside_mode = lstat_of(outside_.path()).st_mode;
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "d"); }, ELOOP, "openat d:");
  expect_sys_error([&] { (void)open_parent_beneath(root_.fd(), "d/f", true); }, ELOOP, "d:");
  expect_sys_error([&] { set_directory_attributes(root_.fd(), "d", 0777, {}); }, ELOOP, "d:");
  EXPECT_EQ(lstat_of(outside_.path()).st_mode, outside_mode);
  EXPECT_TRUE(outside_is_empty());
}

TEST_F(OutputTreeTest, DanglingSymlinkIsNotCreatedThrough) {
  fs::create_symlink(outside_.path() / "made", at("d"));
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "d"); }, ELOOP, "d:");
  expect_sys_error([&] { (void)open_parent_beneath(root_.fd(), "d/x/f", true); }, ELOOP, "d:");
  EXPECT_TRUE(outside_is_empty());
}

TEST_F(OutputTreeTest, PathThroughAFileIsENOTDIR) {
  fs::create_directories(at("a"));
  std::ofstream(at("a/file")) << "data";
  expect_sys_error([&] { (void)open_parent_beneath(root_.fd(), "a/file/x/y", true); }, ENOTDIR,
                   "openat a/file:");
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "a/file"); }, ENOTDIR, "a/file:");
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "fifo"); }, ENOTDIR, "fifo:");
  EXPECT_TRUE(fs::is_regular_file(at("a/file")));
}

TEST_F(OutputTreeTest, NamesInMessagesAreEscaped) {
  fs::create_directory_symlink(outside_.path(), at("esc\x1b[2J"));
  expect_sys_error([&] { make_directory_beneath(root_.fd(), "esc\x1b[2J/x"); }, ELOOP,
                   "openat esc\\x1b[2J:");
}

TEST_F(OutputTreeTest, MakeDirectoryCreatesOrAcceptsADirectory) {
  make_directory_beneath(root_.fd(), "a/b/c");
  EXPECT_TRUE(fs::is_directory(at("a/b/c")));
  EXPECT_EQ(lstat_of(at("a/b/c")).st_mode & 07777, 0700u);
  ::chmod(at("a/b/c").c_str(), 0755);
  make_directory_beneath(root_.fd(), "a/b/c");  // exists: left as it is
  EXPECT_EQ(lstat_of(at("a/b/c")).st_mode & 07777, 0755u);
}

TEST_F(OutputTreeTest, AttributesAreAppliedAndAccessTimeLeftAlone) {
  make_directory_beneath(root_.fd(), "a/b");
  const struct timespec atime[2] = {{1000000000, 5}, {0, UTIME_OMIT}};
  ASSERT_EQ(::utimensat(AT_FDCWD, at("a/b").c_str(), atime, 0), 0);
  set_directory_attributes(root_.fd(), "a/b", 0750, {1234567890, 123456789});
  const struct stat st = lstat_of(at("a/b"));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1234567890);
  EXPECT_EQ(st.st_mtim.tv_nsec, 123456789);
  EXPECT_EQ(st.st_atim.tv_sec, 1000000000);
  EXPECT_EQ(st.st_atim.tv_nsec, 5);
}

TEST_F(OutputTreeTest, SetIdBitsAreDroppedAndTheStickyBitKept) {
  make_directory_beneath(root_.fd(), "shared");
  set_directory_attributes(root_.fd(), "shared", 07775, {1, 0});
  EXPECT_EQ(lstat_of(at("shared")).st_mode & 07777, 01775u & ~current_umask());
  // Bits above the permission bits (a file type from the sender's st_mode) are ignored.
  set_directory_attributes(root_.fd(), "shared", S_IFREG | 0700, {1, 0});
  EXPECT_TRUE(S_ISDIR(lstat_of(at("shared")).st_mode));
  EXPECT_EQ(lstat_of(at("shared")).st_mode & 07777, 0700u);
}

// The receiver's umask limits a directory's mode as it does a file's (docs/PROTOCOL.md 7.5).
TEST_F(OutputTreeTest, TheUmaskLimitsTheSendersMode) {
  make_directory_beneath(root_.fd(), "private");
  const mode_t saved = ::umask(077);
  set_directory_attributes(root_.fd(), "private", 0755, {1, 0});
  ::umask(saved);
  EXPECT_EQ(lstat_of(at("private")).st_mode & 07777, 0700u);
}

TEST_F(OutputTreeTest, IntermediateDirectoriesNeedOnlySearchPermission) {
  make_directory_beneath(root_.fd(), "x/y");
  ::chmod(at("x").c_str(), 0300);  // write and search, no read
  make_directory_beneath(root_.fd(), "x/y/z");
  EXPECT_TRUE(fs::is_directory(at("x/y/z")));
  ::chmod(at("x").c_str(), 0700);  // so the TempDir can remove it
}

}  // namespace
}  // namespace rdmax::receiver
