// --files-from (sender/file_list.hpp): how a list is split into names, where each name is
// read and arrives, and what the list's entries become on a real directory.

#include "sender/file_list.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/temp_dir.hpp"

namespace rdmax::sender {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

std::vector<std::string> names_of(std::string_view text, bool nul) {
  std::vector<std::string> names;
  for (const auto& n : split_file_list(text, nul)) names.push_back(n.name);
  return names;
}

using Names = std::vector<std::string>;

TEST(FileListSplit, NulSeparatedKeepsEveryOtherByte) {
  const std::string list = "a b\0new\nline\0\xc3\xbc\0 lead\0trail \0with\r\0"s;
  EXPECT_EQ(names_of(list, true),
            (Names{"a b", "new\nline", "\xc3\xbc", " lead", "trail ", "with\r"}));
}

TEST(FileListSplit, NewlineSeparatedDropsOneCarriageReturn) {
  EXPECT_EQ(names_of("a\nb c\r\nd\r\r\n", false), (Names{"a", "b c", "d\r"}));
}

TEST(FileListSplit, EmptyRecordsAndATrailingSeparatorAreSkipped) {
  EXPECT_EQ(names_of("\n\na\n\n\nb\n", false), (Names{"a", "b"}));
  EXPECT_EQ(names_of("a\nb", false), (Names{"a", "b"}));  // no final newline
  EXPECT_EQ(names_of("\0\0a\0\0b\0"s, true), (Names{"a", "b"}));
  EXPECT_EQ(names_of("\r\n", false), Names{});
  EXPECT_EQ(names_of("", true), Names{});
}

TEST(FileListSplit, RecordsAreCountedFromOneBlankOnesIncluded) {
  const auto names = split_file_list("\nfirst\n\nsecond\n", false);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].record, 2u);
  EXPECT_EQ(names[1].record, 4u);
}

TEST(FileListSplit, NewlineModeSplitsANameANulListWouldKeep) {
  EXPECT_EQ(names_of("new\nline\0"s, false), (Names{"new", "line\0"s}));
}

ListedPath mapped(std::string_view name, std::string_view base) {
  auto where = map_listed_name(name, base);
  if (const auto* error = std::get_if<std::string>(&where)) {
    ADD_FAILURE() << name << ": " << *error;
    return {};
  }
  return std::get<ListedPath>(where);
}

std::string refused(std::string_view name, std::string_view base) {
  auto where = map_listed_name(name, base);
  if (std::holds_alternative<ListedPath>(where)) {
    ADD_FAILURE() << name << " was accepted";
    return {};
  }
  return std::get<std::string>(where);
}

TEST(FileListMap, RelativeNamesArriveAsTheyAreListedLessDotsAndDoubleSlashes) {
  EXPECT_EQ(mapped("a/b", "/data").remote, "a/b");
  EXPECT_EQ(mapped("a/b", "/data").local, "/data/a/b");
  EXPECT_EQ(mapped("./a//b/", "/data").remote, "a/b");  // find . -print0
  EXPECT_EQ(mapped("a b/\xc3\xbc", "/data").remote, "a b/\xc3\xbc");
  EXPECT_EQ(mapped("x", "/").local, "/x");
}

TEST(FileListMap, TheBaseItselfMapsToNothing) {
  EXPECT_EQ(mapped(".", "/data").remote, "");
  EXPECT_EQ(mapped("./", "/data").remote, "");
  EXPECT_EQ(mapped("/data", "/data").remote, "");
}

TEST(FileListMap, AbsoluteNamesMustLieBeneathTheBase) {
  EXPECT_EQ(mapped("/data/run/a", "/data").remote, "run/a");
  EXPECT_EQ(mapped("/data/run/a", "/data").local, "/data/run/a");
  EXPECT_EQ(mapped("//data/./run", "/data").remote, "run");
  EXPECT_EQ(mapped("/etc/passwd", "/").remote, "etc/passwd");
  EXPECT_NE(refused("/etc/passwd", "/data").find("not beneath --base '/data'"), std::string::npos);
  EXPECT_NE(refused("/database/x", "/data").find("not beneath"), std::string::npos);
  EXPECT_NE(refused("/dat", "/data").find("not beneath"), std::string::npos);
}

TEST(FileListMap, DotDotIsRefusedWhereverItIs) {
  for (const char* name : {"..", "../x", "a/../b", "a/..", "/data/../etc/passwd"})
    EXPECT_NE(refused(name, "/data").find(".."), std::string::npos) << name;
}

TEST(FileListBase, IsMadeAbsoluteAndNormal) {
  EXPECT_EQ(absolute_base("/data/./run/"), "/data/run");
  EXPECT_EQ(absolute_base("/data//run/../x"), "/data/x");
  EXPECT_EQ(absolute_base("/"), "/");
  EXPECT_EQ(absolute_base("."), fs::current_path().lexically_normal().string());
}

class FileListWalk : public ::testing::Test {
 protected:
  // base/
  //   top/ (0750)  sp ace/ (0700)  x y (3 bytes)   \xc3\xbc.bin (2 bytes)
  //   empty/       link -> top     fifo
  void SetUp() override {
    base_ = dir_.path().string();
    fs::create_directories(dir_.path() / "top" / "sp ace");
    fs::create_directories(dir_.path() / "empty");
    write("top/sp ace/x y", "abc");
    write("top/\xc3\xbc.bin", "hi");
    ::chmod((dir_.path() / "top").c_str(), 0750);
    ::chmod((dir_.path() / "top/sp ace").c_str(), 0700);
    fs::create_directory_symlink("top", dir_.path() / "link");
    ASSERT_EQ(::mkfifo((dir_.path() / "fifo").c_str(), 0600), 0);
  }
  void write(const std::string& relative, const std::string& content) {
    std::ofstream(dir_.path() / relative) << content;
  }
  SourceTree walk(const std::string& list) {
    return walk_file_list(split_file_list(list, true), base_);
  }
  static std::vector<std::string> remote(const std::vector<SourceEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.remote_path);
    return out;
  }

  TempDir dir_{"rdmax-file-list"};
  std::string base_;
};

TEST_F(FileListWalk, ListedFilesArriveUnderTheirPathsWithTheirParents) {
  const SourceTree tree = walk("top/sp ace/x y\0top/\xc3\xbc.bin\0"s);
  EXPECT_EQ(remote(tree.files), (Names{"top/sp ace/x y", "top/\xc3\xbc.bin"}));
  EXPECT_EQ(tree.files[0].local_path, base_ + "/top/sp ace/x y");
  EXPECT_EQ(tree.files[0].size, 3u);
  EXPECT_EQ(tree.total_bytes, 5u);
  // The directories on the way, deepest first, with the source's modes.
  EXPECT_EQ(remote(tree.directories), (Names{"top/sp ace", "top"}));
  EXPECT_EQ(tree.directories[0].mode, 0700u);
  EXPECT_EQ(tree.directories[1].mode, 0750u);
  EXPECT_TRUE(tree.skipped.empty());
}

TEST_F(FileListWalk, AbsoluteNamesBeneathTheBaseAndNamesListedTwice) {
  const SourceTree tree = walk(base_ + "/top/\xc3\xbc.bin\0./top/\xc3\xbc.bin\0"s);
  EXPECT_EQ(remote(tree.files), (Names{"top/\xc3\xbc.bin"}));
}

TEST_F(FileListWalk, ADirectoryIsSentAsItselfNotItsContents) {
  const SourceTree tree = walk(".\0empty\0top\0"s);  // find . lists "." first
  EXPECT_TRUE(tree.files.empty());
  EXPECT_EQ(remote(tree.directories), (Names{"empty", "top"}));
}

TEST_F(FileListWalk, LinksAndSpecialFilesAreLeftOutAsInAWalk) {
  const SourceTree tree = walk("link\0fifo\0top/\xc3\xbc.bin\0"s);
  EXPECT_EQ(remote(tree.files), (Names{"top/\xc3\xbc.bin"}));
  ASSERT_EQ(tree.skipped.size(), 2u);
  EXPECT_EQ(tree.skipped[0].reason, "symbolic link");
  EXPECT_NE(tree.skipped[1].reason.find("special file"), std::string::npos);
}

// A newline is legal in a session's names (PROTOCOL.md 7.5); bytes that are not UTF-8 are
// not, and such an entry is left out with its reason while the others go.
TEST_F(FileListWalk, ANewlineNameGoesANameTheProtocolCannotCarryIsLeftOut) {
  write("new\nline", "x");
  write("latin\xe9", "x");
  const SourceTree tree = walk("new\nline\0latin\xe9\0top/\xc3\xbc.bin\0"s);
  EXPECT_EQ(remote(tree.files), (Names{"new\nline", "top/\xc3\xbc.bin"}));
  ASSERT_EQ(tree.skipped.size(), 1u);
  EXPECT_NE(tree.skipped[0].reason.find("name cannot be sent"), std::string::npos);
  EXPECT_NE(tree.skipped[0].reason.find("UTF-8"), std::string::npos) << tree.skipped[0].reason;
}

TEST_F(FileListWalk, AMissingOrUnreadableEntryIsMarkedAndTheOthersStay) {
  write("secret", "s");
  ::chmod((dir_.path() / "secret").c_str(), 0);
  const SourceTree tree = walk("gone/file\0secret\0top/\xc3\xbc.bin\0"s);
  ASSERT_EQ(remote(tree.files), (Names{"gone/file", "secret", "top/\xc3\xbc.bin"}));
  EXPECT_NE(tree.files[0].unreadable.find("No such file"), std::string::npos)
      << tree.files[0].unreadable;
  if (::geteuid() != 0) {  // root reads a file of mode 0 all the same
    EXPECT_NE(tree.files[1].unreadable.find("Permission denied"), std::string::npos)
        << tree.files[1].unreadable;
  }
  EXPECT_TRUE(tree.files[2].unreadable.empty());
  EXPECT_EQ(tree.total_bytes, (::geteuid() != 0 ? 2u : 3u));
  // "gone" is not a directory here: not offered (the receiver makes it if needed).
  EXPECT_EQ(remote(tree.directories), (Names{"top"}));
}

TEST_F(FileListWalk, ANameOutsideTheBaseIsAUsageErrorNamingItsRecord) {
  try {
    (void)walk("top/\xc3\xbc.bin\0/etc/passwd\0"s);
    ADD_FAILURE() << "expected a SourceError";
  } catch (const SourceError& e) {
    EXPECT_NE(std::string(e.what()).find("entry 2 '/etc/passwd' is not beneath"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)walk("top/../../x\0"s), SourceError);
}

TEST_F(FileListWalk, ABaseThatIsNotADirectoryIsAUsageError) {
  EXPECT_THROW((void)walk_file_list({}, base_ + "/top/\xc3\xbc.bin"), SourceError);
  EXPECT_THROW((void)walk_file_list({}, base_ + "/missing"), SourceError);
}

TEST_F(FileListWalk, AListNamingTheRealPathOfALinkedBaseIsBeneathIt) {
  const std::string linked = base_ + "/link";  // -> top
  const std::string real = fs::canonical(dir_.path() / "top").string();
  const SourceTree tree = walk_file_list(split_file_list(real + "/\xc3\xbc.bin\n", false), linked);
  EXPECT_EQ(remote(tree.files), (Names{"\xc3\xbc.bin"}));
  EXPECT_EQ(tree.files[0].local_path, linked + "/\xc3\xbc.bin");
}

TEST(FileListRead, AListThatCannotBeReadIsAUsageError) {
  try {
    (void)read_file_list("/nonexistent/list");
    ADD_FAILURE() << "expected a FileListError";
  } catch (const FileListError& e) {
    EXPECT_NE(std::string(e.what()).find("--files-from '/nonexistent/list': cannot read"),
              std::string::npos)
        << e.what();
  }
}

TEST(FileListRead, ReadsTheWholeFile) {
  TempDir dir("rdmax-file-list-read");
  const std::string content(200000, 'x');  // several reads
  std::ofstream(dir.path() / "list") << content << '\0' << "y";
  EXPECT_EQ(read_file_list((dir.path() / "list").string()).size(), content.size() + 2);
}

}  // namespace
}  // namespace rdmax::sender
