// A fetch server's walk of what a fetcher names (issue 52): what is served, under which names,
// and that nothing outside the export is, whatever the names or the disk hold.

#include "sender/export_tree.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/os/beneath.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax::sender {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> arrival_names(const std::vector<SourceEntry>& entries) {
  std::vector<std::string> paths;
  for (const SourceEntry& e : entries) paths.push_back(e.remote_path);
  return paths;
}
std::vector<std::string> export_paths(const std::vector<SourceEntry>& entries) {
  std::vector<std::string> paths;
  for (const SourceEntry& e : entries) paths.push_back(e.local_path);
  return paths;
}

void put_export_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class ExportTreeTest : public ::testing::Test {
 protected:
  // outside/secret.txt; export/
  //   data/a.bin (3 bytes)   data/sub/b.bin (empty)   data/empty/
  //   top.txt (5 bytes)      fifo   escape -> ../outside   data/link.txt -> ../top.txt
  void SetUp() override {
    put_export_file(outside_.path() / "secret.txt", "secret");
    const fs::path root = export_.path();
    fs::create_directories(root / "data" / "sub");
    fs::create_directories(root / "data" / "empty");
    put_export_file(root / "data" / "a.bin", "abc");
    put_export_file(root / "data" / "sub" / "b.bin", "");
    put_export_file(root / "top.txt", "hello");
    ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
    fs::create_directory_symlink(outside_.path(), root / "escape");
    fs::create_symlink("../top.txt", root / "data" / "link.txt");
  }

  SourceTree walk(const std::vector<std::string>& wanted, bool recursive = true) {
    std::vector<WantedPath> paths;
    for (const std::string& path : wanted) paths.push_back({path, recursive});
    return walk_export(export_.fd(), paths);
  }
  // The walk refuses `wanted` with a message holding `text`.
  void expect_refused(const std::vector<std::string>& wanted, const std::string& text,
                      bool recursive = true) {
    try {
      (void)walk(wanted, recursive);
      ADD_FAILURE() << "expected a SourceError holding: " << text;
    } catch (const SourceError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }

  TempDir outside_{"rdmax-outside"};
  TempDir export_{"rdmax-export"};
};

TEST_F(ExportTreeTest, AFileArrivesAsItsNameAndIsReadBeneathTheExport) {
  const SourceTree tree = walk({"data/a.bin"}, false);
  ASSERT_EQ(tree.files.size(), 1U);
  EXPECT_EQ(tree.files[0].remote_path, "a.bin");
  EXPECT_EQ(tree.files[0].local_path, "data/a.bin");
  EXPECT_EQ(tree.files[0].size, 3U);
  EXPECT_EQ(tree.total_bytes, 3U);
  EXPECT_TRUE(tree.directories.empty());
}

TEST_F(ExportTreeTest, ADirectoryArrivesAsItsNameWithItsTreeAndSkipsLinks) {
  const SourceTree tree = walk({"data/"});
  EXPECT_EQ(arrival_names(tree.files), (std::vector<std::string>{"data/a.bin", "data/sub/b.bin"}));
  EXPECT_EQ(export_paths(tree.files), (std::vector<std::string>{"data/a.bin", "data/sub/b.bin"}));
  EXPECT_EQ(arrival_names(tree.directories),
            (std::vector<std::string>{"data/empty", "data/sub", "data"}));
  ASSERT_EQ(tree.skipped.size(), 1U);
  EXPECT_EQ(tree.skipped[0].local_path, "data/link.txt");
  EXPECT_EQ(tree.skipped[0].reason, "symbolic link");
}

TEST_F(ExportTreeTest, ANestedDirectoryArrivesAsItsLastComponent) {
  const SourceTree tree = walk({"data/sub"});
  EXPECT_EQ(arrival_names(tree.files), (std::vector<std::string>{"sub/b.bin"}));
  EXPECT_EQ(export_paths(tree.files), (std::vector<std::string>{"data/sub/b.bin"}));
}

TEST_F(ExportTreeTest, TheWholeExportArrivesAsItsEntriesWithoutWhatLeavesIt) {
  const SourceTree tree = walk({"."});
  EXPECT_EQ(arrival_names(tree.files),
            (std::vector<std::string>{"data/a.bin", "data/sub/b.bin", "top.txt"}));
  EXPECT_EQ(export_paths(tree.files), arrival_names(tree.files));
  EXPECT_EQ(arrival_names(tree.directories),
            (std::vector<std::string>{"data/empty", "data/sub", "data"}));
  std::vector<std::string> skipped;
  for (const Skipped& s : tree.skipped) skipped.push_back(s.local_path + ": " + s.reason);
  EXPECT_EQ(skipped,
            (std::vector<std::string>{"data/link.txt: symbolic link", "escape: symbolic link",
                                      "fifo: special file (fifo/socket/device)"}));
}

TEST_F(ExportTreeTest, NamesThatLeaveTheExportAreRefused) {
  expect_refused({"../" + export_.path().filename().string() + "/top.txt"},
                 "not a name within the export");
  expect_refused({"data/../top.txt"}, "not a name within the export");
  expect_refused({(outside_.path() / "secret.txt").string()}, "not a name within the export");
  expect_refused({"./top.txt"}, "not a name within the export");
  expect_refused({"data//a.bin"}, "not a name within the export");
  expect_refused({""}, "not a name within the export");
}

TEST_F(ExportTreeTest, SymbolicLinksAreNeverFollowedAtAnyComponent) {
  expect_refused({"escape/secret.txt"}, "a symbolic link is on the way");
  expect_refused({"escape"}, "a symbolic link; links are not served");
  expect_refused({"data/link.txt"}, "a symbolic link; links are not served");
}

TEST_F(ExportTreeTest, WhatIsNotAFileOrADirectoryIsRefused) {
  expect_refused({"fifo"}, "not a regular file or a directory");
  expect_refused({"top.txt/x"}, "something other than a directory is on the way");
}

TEST_F(ExportTreeTest, MissingPathsDirectoriesWithoutRecursionAndTwoForOneNameAreRefused) {
  expect_refused({"data/none.bin"}, "no such file or directory in the export");
  expect_refused({"nothing/a.bin"}, "no such file or directory in the export");
  expect_refused({"data"}, "fetch directories with -r", false);
  expect_refused({"."}, "fetch it with -r", false);
  expect_refused({".", "top.txt"}, "name it alone");
  // Both arrive as b.bin (told before the second is found missing at the top).
  expect_refused({"data/sub/b.bin", "b.bin"}, "would both arrive as 'b.bin'");
  fs::create_directories(export_.path() / "other");
  put_export_file(export_.path() / "other" / "a.bin", "x");
  expect_refused({"data/a.bin", "other/a.bin"}, "would both arrive as");
}

TEST_F(ExportTreeTest, AFileThatCannotBeReadIsTheFetchersErrorAtOnce) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  fs::permissions(export_.path() / "top.txt", fs::perms::none);
  expect_refused({"top.txt"}, "cannot read: Permission denied");
}

TEST_F(ExportTreeTest, ANameWithControlBytesIsQuotedEscapedInTheMessage) {
  expect_refused({"bad\x1b[2Jname"}, "\\x1b");
}

// A fetcher's --files-from (keep_path): each path arrives under its whole path, each
// directory above it alone (its mode and time), a listed directory alone, each once.
TEST_F(ExportTreeTest, AListedPathArrivesWholeWithTheDirectoriesAboveItAlone) {
  const auto kept = [](std::string path) { return WantedPath{std::move(path), false, true}; };
  const SourceTree tree =
      walk_export(export_.fd(), {kept("data/sub/b.bin"), kept("data/empty"), kept("top.txt/"),
                                 kept("data/sub/b.bin"), kept("data/sub"), kept("data/a.bin")});
  EXPECT_EQ(arrival_names(tree.files),
            (std::vector<std::string>{"data/sub/b.bin", "top.txt", "data/a.bin"}));
  EXPECT_EQ(export_paths(tree.files), arrival_names(tree.files));
  // Deepest first, each once: data/sub above b.bin and listed; data above three.
  EXPECT_EQ(arrival_names(tree.directories),
            (std::vector<std::string>{"data/sub", "data/empty", "data"}));
  EXPECT_EQ(tree.total_bytes, 5U + 3U);
}

TEST_F(ExportTreeTest, AListedPathKeepsTheRulesAndMeetsNoPlainName) {
  const auto kept = [](std::string path) { return WantedPath{std::move(path), false, true}; };
  const auto refused = [&](const std::vector<WantedPath>& wanted, const std::string& text) {
    try {
      (void)walk_export(export_.fd(), wanted);
      ADD_FAILURE() << "expected a SourceError holding: " << text;
    } catch (const SourceError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused({kept("escape/secret.txt")}, "a symbolic link is on the way");
  refused({kept("data/link.txt")}, "a symbolic link; links are not served");
  refused({kept("data/../top.txt")}, "not a name within the export");
  refused({kept("fifo")}, "not a regular file or a directory");
  refused({kept(".")}, "no path to keep");
  refused({WantedPath{"data", true, true}}, "keep_path and recursive");
  // "data/x" kept writes into data/, which a plain "sub" does not touch, but a plain "data"
  // or one arriving as "data" would.
  EXPECT_NO_THROW((void)walk_export(export_.fd(), {kept("data/a.bin"), {"data/sub", true}}));
  refused({kept("data/a.bin"), {"data", true}}, "would both arrive in 'data'");
  refused({{"data", true}, kept("data/a.bin")}, "would both arrive in 'data'");
}

// With a key's subdirectory, nothing above it is told: its directories are not offered.
TEST_F(ExportTreeTest, AKeptPathsDirectoriesAboveAKeysSubdirectoryAreNotOffered) {
  const SourceTree tree =
      walk_export(export_.fd(), {WantedPath{"data/sub/b.bin", false, true}}, "data/sub");
  EXPECT_EQ(arrival_names(tree.files), (std::vector<std::string>{"data/sub/b.bin"}));
  EXPECT_EQ(arrival_names(tree.directories), (std::vector<std::string>{"data/sub"}));
}

// What the server opens when it sends a file: beneath the export, no link followed.
TEST_F(ExportTreeTest, FilesAreOpenedBeneathTheExportOnly) {
  const Fd fd = open_file_beneath(export_.fd(), "data/a.bin", O_RDONLY);
  char bytes[4] = {};
  EXPECT_EQ(::read(fd.get(), bytes, sizeof bytes), 3);
  EXPECT_STREQ(bytes, "abc");
  // A link at any component, the last one too; a name that climbs or stays in place; and
  // what is not a regular file, which never holds the open (a fifo without a writer).
  for (const auto& [path, error] :
       std::vector<std::pair<std::string, int>>{{"escape/secret.txt", ELOOP},
                                                {"data/link.txt", ELOOP},
                                                {"data/../top.txt", EINVAL},
                                                {"./top.txt", EINVAL},
                                                {"data//a.bin", EINVAL},
                                                {"fifo", EINVAL},
                                                {"data", EINVAL}}) {
    try {
      (void)open_file_beneath(export_.fd(), path, O_RDONLY);
      ADD_FAILURE() << path << " was opened";
    } catch (const SysError& e) {
      EXPECT_EQ(e.error(), error) << path;
    }
  }
}

}  // namespace
}  // namespace rdmax::sender
