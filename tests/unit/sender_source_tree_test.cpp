// The sender's walk of its PATHs: what is offered, under which names, in which order, and
// what is skipped or refused.

#include "sender/source_tree.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tests/unit/temp_dir.hpp"

namespace rdmax::sender {
namespace {

namespace fs = std::filesystem;
using Kind = SourceEntry::Kind;

std::vector<std::string> remote_paths(const std::vector<SourceEntry>& entries) {
  std::vector<std::string> paths;
  for (const SourceEntry& e : entries) paths.push_back(e.remote_path);
  return paths;
}

// Runs the walk, expecting a SourceError whose message holds `text`.
void expect_source_error(const std::function<void()>& walk, const std::string& text) {
  try {
    walk();
    ADD_FAILURE() << "expected a SourceError holding: " << text;
  } catch (const SourceError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// Restores the working directory a test changes.
class CwdGuard {
 public:
  explicit CwdGuard(const fs::path& to) : saved_(fs::current_path()) { fs::current_path(to); }
  ~CwdGuard() { fs::current_path(saved_); }
  CwdGuard(const CwdGuard&) = delete;
  CwdGuard& operator=(const CwdGuard&) = delete;

 private:
  fs::path saved_;
};

class SourceTreeTest : public ::testing::Test {
 protected:
  // top/
  //   a.txt (5 bytes)   dir with space/{deeper/x (empty), Ünïcödé.bin (3 bytes)}
  //   empty/            empty file (0 bytes)
  //   fifo              link-to-dir -> dir with space      link-to-file -> a.txt
  void SetUp() override {
    fs::create_directories(at("top/dir with space/deeper"));
    fs::create_directories(at("top/empty"));
    write(at("top/a.txt"), "hello");
    write(at("top/dir with space/Ünïcödé.bin"), "abc");
    write(at("top/dir with space/deeper/x"), "");
    write(at("top/empty file"), "");
    ASSERT_EQ(::mkfifo(at("top/fifo").c_str(), 0600), 0);
    fs::create_directory_symlink("dir with space", at("top/link-to-dir"));
    fs::create_symlink("a.txt", at("top/link-to-file"));
    ::chmod(at("top/a.txt").c_str(), 0640);
    ::chmod(at("top/empty").c_str(), 0750);
  }

  std::string at(const std::string& relative) const { return (temp_.path() / relative).string(); }

  static void write(const std::string& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
  }

  TempDir temp_{"rdmax-source"};
};

TEST_F(SourceTreeTest, WalksADirectoryLikeCpR) {
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  // Pre-order, names sorted bytewise ("deeper" < "Ü..." since 'd' < 0xC3).
  EXPECT_EQ(remote_paths(tree.files),
            (std::vector<std::string>{"top/a.txt", "top/dir with space/deeper/x",
                                      "top/dir with space/Ünïcödé.bin", "top/empty file"}));
  EXPECT_EQ(tree.files[1].local_path, at("top/dir with space/deeper/x"));
  EXPECT_EQ(remote_paths(tree.directories),
            (std::vector<std::string>{"top/dir with space/deeper", "top/dir with space",
                                      "top/empty", "top"}));
  EXPECT_EQ(tree.directories.back().local_path, at("top"));
  EXPECT_EQ(tree.total_bytes, 8u);
  for (const SourceEntry& e : tree.files) EXPECT_EQ(e.kind, Kind::File) << e.remote_path;
  for (const SourceEntry& e : tree.directories) EXPECT_EQ(e.kind, Kind::Directory);
}

TEST_F(SourceTreeTest, SymlinksAndSpecialFilesAreSkippedNotFollowed) {
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  ASSERT_EQ(tree.skipped.size(), 3u);
  EXPECT_EQ(tree.skipped[0].local_path, at("top/fifo"));
  EXPECT_EQ(tree.skipped[0].reason, "special file (fifo/socket/device)");
  EXPECT_EQ(tree.skipped[1].local_path, at("top/link-to-dir"));
  EXPECT_EQ(tree.skipped[1].reason, "symbolic link");
  EXPECT_EQ(tree.skipped[2].local_path, at("top/link-to-file"));
  EXPECT_EQ(tree.skipped[2].reason, "symbolic link");
}

TEST_F(SourceTreeTest, SizesModesAndTimesMatchLstat) {
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1234567890, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, at("top/empty").c_str(), times, 0), 0);
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  auto all = tree.files;
  all.insert(all.end(), tree.directories.begin(), tree.directories.end());
  for (const SourceEntry& e : all) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.local_path.c_str(), &st), 0) << e.local_path;
    EXPECT_EQ(e.size, e.kind == Kind::File ? static_cast<std::uint64_t>(st.st_size) : 0u);
    EXPECT_EQ(e.mode, st.st_mode & 07777) << e.local_path;
    EXPECT_EQ(e.mtime.tv_sec, st.st_mtim.tv_sec) << e.local_path;
    EXPECT_EQ(e.mtime.tv_nsec, st.st_mtim.tv_nsec) << e.local_path;
  }
  EXPECT_EQ(tree.files[0].mode, 0640u);
  EXPECT_EQ(tree.directories[2].mode, 0750u);
  EXPECT_EQ(tree.directories[2].mtime.tv_nsec, 123456789);
}

TEST_F(SourceTreeTest, AFileArrivesAsItsBaseName) {
  const SourceTree tree = walk_sources({at("top/dir with space/Ünïcödé.bin")}, false, {});
  ASSERT_EQ(tree.files.size(), 1u);
  EXPECT_EQ(tree.files[0].remote_path, "Ünïcödé.bin");
  EXPECT_EQ(tree.files[0].size, 3u);
  EXPECT_TRUE(tree.directories.empty());
}

TEST_F(SourceTreeTest, EmptyDirectoryIsStillOffered) {
  const SourceTree tree = walk_sources({at("top/empty")}, true, std::nullopt);
  EXPECT_TRUE(tree.files.empty());
  EXPECT_EQ(remote_paths(tree.directories), std::vector<std::string>{"empty"});
  EXPECT_EQ(tree.total_bytes, 0u);
}

TEST_F(SourceTreeTest, DirectoriesOfSeveralPathsAreDeepestFirst) {
  const SourceTree tree =
      walk_sources({at("top/empty"), at("top/dir with space"), at("top/a.txt")}, true, {});
  EXPECT_EQ(remote_paths(tree.directories),
            (std::vector<std::string>{"dir with space/deeper", "empty", "dir with space"}));
  EXPECT_EQ(
      remote_paths(tree.files),
      (std::vector<std::string>{"dir with space/deeper/x", "dir with space/Ünïcödé.bin", "a.txt"}));
}

TEST_F(SourceTreeTest, TopLevelSymlinksAndFifosAreSkippedEvenWithATrailingSlash) {
  const SourceTree tree = walk_sources(
      {at("top/link-to-file"), at("top/link-to-dir") + "/", at("top/fifo")}, true, std::nullopt);
  EXPECT_TRUE(tree.files.empty());
  EXPECT_TRUE(tree.directories.empty());
  ASSERT_EQ(tree.skipped.size(), 3u);
  EXPECT_EQ(tree.skipped[0].reason, "symbolic link");
  EXPECT_EQ(tree.skipped[1].local_path, at("top/link-to-dir"));
  EXPECT_EQ(tree.skipped[1].reason, "symbolic link");
  EXPECT_EQ(tree.skipped[2].reason, "special file (fifo/socket/device)");
}

TEST_F(SourceTreeTest, DirectoryWithoutRecursiveIsAnErrorNamingTheOption) {
  expect_source_error([&] { (void)walk_sources({at("top")}, false, std::nullopt); },
                      "is a directory; use -r (--recursive) to send directories");
}

TEST_F(SourceTreeTest, MissingPathIsAnError) {
  expect_source_error(
      [&] {
        (void)walk_sources({at("top/a.txt"), at("nope")}, true, {});
      },
      "cannot read '" + at("nope") + "': No such file or directory");
}

TEST_F(SourceTreeTest, TwoPathsArrivingUnderOneNameAreAnError) {
  fs::create_directories(at("other"));
  write(at("other/a.txt"), "x");
  expect_source_error(
      [&] {
        (void)walk_sources({at("top/a.txt"), at("other/a.txt")}, true, {});
      },
      "would both arrive as 'a.txt'");
  // The same path twice, once with a trailing slash.
  expect_source_error(
      [&] {
        (void)walk_sources({at("top"), at("top") + "/"}, true, {});
      },
      "would both arrive as 'top'");
}

TEST_F(SourceTreeTest, RenameRules) {
  const SourceTree tree = walk_sources({at("top/a.txt")}, false, std::string("renamed.txt"));
  ASSERT_EQ(tree.files.size(), 1u);
  EXPECT_EQ(tree.files[0].remote_path, "renamed.txt");
  EXPECT_EQ(tree.files[0].local_path, at("top/a.txt"));

  expect_source_error(
      [&] {
        (void)walk_sources({at("top/a.txt"), at("top/empty file")}, false, "x");
      },
      "--name needs exactly one PATH");
  expect_source_error([&] { (void)walk_sources({at("top")}, true, std::string("x")); },
                      "--name renames a file; '" + at("top") + "' is a directory");
}

// --name is one plain file name by the protocol's rule (proto::check_file_name): the
// receiver would refuse anything else, so it is a usage error here, before any connection.
TEST_F(SourceTreeTest, RenameMustBeAPlainFileName) {
  const auto refused = [&](const std::string& name, const std::string& text) {
    expect_source_error([&] { (void)walk_sources({at("top/a.txt")}, false, name); }, text);
  };
  refused("sub/x", "--name 'sub/x' holds a '/': it is one file name");
  refused("../x", "--name '../x' holds a '/'");
  refused("a/", "--name 'a/' holds a '/'");
  refused("..", "--name '..' is \".\" or \"..\"");
  refused("", "--name '' is empty");
  refused(std::string(256, 'n'), "is longer than 255 bytes");
  refused("bad\x01name", "--name 'bad\\x01name' contains a control character");
  refused("back\\slash", "contains a '/' or a backslash");
  // The --name is checked even when the PATH is missing: either is a usage error.
  expect_source_error([&] { (void)walk_sources({at("nope")}, false, std::string("a/b")); },
                      "holds a '/'");
}

TEST_F(SourceTreeTest, UnreadableTopLevelFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  ::chmod(at("top/a.txt").c_str(), 0);
  expect_source_error([&] { (void)walk_sources({at("top/a.txt")}, false, std::nullopt); },
                      "cannot read '" + at("top/a.txt") + "': Permission denied");
  ::chmod(at("top/a.txt").c_str(), 0640);
}

TEST_F(SourceTreeTest, TrailingSlashesAndDotsArriveUnderTheDirectorysName) {
  EXPECT_EQ(walk_sources({at("top") + "//"}, true, {}).directories.back().remote_path, "top");
  const CwdGuard in_top(at("top"));
  const SourceTree dot = walk_sources({"."}, true, std::nullopt);
  EXPECT_EQ(dot.directories.back().remote_path, "top");
  EXPECT_EQ(dot.files[0].local_path, "./a.txt");
  EXPECT_EQ(dot.files[0].remote_path, "top/a.txt");
  const SourceTree dot_dot = walk_sources({"dir with space/deeper/.."}, true, std::nullopt);
  EXPECT_EQ(dot_dot.directories.back().remote_path, "dir with space");
  EXPECT_EQ(dot_dot.files[0].local_path, "dir with space/deeper/../deeper/x");
  EXPECT_EQ(dot_dot.files[0].remote_path, "dir with space/deeper/x");
}

TEST_F(SourceTreeTest, TheRootDirectoryCannotBeSent) {
  expect_source_error([&] { (void)walk_sources({"/"}, true, std::nullopt); },
                      "the root directory has no name to arrive as");
}

TEST_F(SourceTreeTest, UnsendableNamesAreSkippedInsideAndRefusedAtTheTop) {
  write(at("top/bad\x01name"), "x");
  write(at("top/bad\xff"), "x");
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  // The four good ones and the control byte (legal in a session's names, PROTOCOL.md 7.5).
  EXPECT_EQ(tree.files.size(), 5u);
  std::vector<std::string> reasons;
  for (const Skipped& s : tree.skipped) {
    if (s.local_path.find("/bad") != std::string::npos) reasons.push_back(s.reason);
  }
  EXPECT_EQ(reasons,
            (std::vector<std::string>{"name cannot be sent: component 2 is not valid UTF-8"}));
  expect_source_error([&] { (void)walk_sources({at("top/bad\xff")}, false, {}); },
                      "cannot send '" + at("top/bad\\xff") + "'");
}

TEST_F(SourceTreeTest, UnreadableDirectoryIsSkippedAndTheWalkGoesOn) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any directory";
  ::chmod(at("top/dir with space").c_str(), 0);
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  ::chmod(at("top/dir with space").c_str(), 0755);
  EXPECT_EQ(remote_paths(tree.files), (std::vector<std::string>{"top/a.txt", "top/empty file"}));
  ASSERT_FALSE(tree.skipped.empty());
  EXPECT_EQ(tree.skipped[0].local_path, at("top/dir with space"));
  EXPECT_EQ(tree.skipped[0].reason, "unreadable: Permission denied");
}

// The same as root, who reads any directory: a limit of two free descriptors lets the walk
// open "top" and "dir with space" but not "deeper" beneath them.
TEST_F(SourceTreeTest, DirectoryThatCannotBeOpenedIsSkippedAndTheWalkGoesOn) {
  const int first = ::dup(0);
  const int second = ::dup(0);
  ::close(first);
  ::close(second);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(std::max(first, second) + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  const SourceTree tree = walk_sources({at("top")}, true, std::nullopt);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);

  EXPECT_EQ(
      remote_paths(tree.files),
      (std::vector<std::string>{"top/a.txt", "top/dir with space/Ünïcödé.bin", "top/empty file"}));
  EXPECT_EQ(remote_paths(tree.directories),
            (std::vector<std::string>{"top/dir with space", "top/empty", "top"}));
  ASSERT_FALSE(tree.skipped.empty());
  EXPECT_EQ(tree.skipped[0].local_path, at("top/dir with space/deeper"));
  EXPECT_EQ(tree.skipped[0].reason, "unreadable: Too many open files");
}

TEST(SortLargestFirst, IsStableBySizeDescending) {
  std::vector<SourceEntry> files(5);
  const std::uint64_t sizes[] = {10, 30, 10, 20, 30};
  for (std::size_t i = 0; i < files.size(); ++i) {
    files[i].size = sizes[i];
    files[i].remote_path = std::to_string(i);
  }
  sort_largest_first(files);
  EXPECT_EQ(remote_paths(files), (std::vector<std::string>{"1", "4", "3", "0", "2"}));
}

}  // namespace
}  // namespace rdmax::sender
