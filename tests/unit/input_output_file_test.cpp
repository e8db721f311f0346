#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/os/fd.hpp"
#include "receiver/output_file.hpp"
#include "sender/input_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace rdmax {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write_file(const std::string& name, const std::string& content) const {
    std::ofstream(path(name), std::ios::binary) << content;
  }

  std::string read_file(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
  }

  TempDir temp_{"rdmax-files"};
  const fs::path& dir_ = temp_.path();
};

// Every OutputFile test runs with O_TMPFILE (where available) and with the named
// temporary used on filesystems without it.
class OutputFileTest : public FilesTest,
                       public ::testing::WithParamInterface<OutputFile::TempMode> {
 protected:
  OutputFile create(const std::string& name, bool overwrite) {
    return OutputFile::create(temp_.fd(), name, overwrite, GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, OutputFileTest,
                         ::testing::Values(OutputFile::TempMode::kAuto,
                                           OutputFile::TempMode::kNamed),
                         [](const auto& test_param) {
                           return test_param.param == OutputFile::TempMode::kAuto ? "Auto"
                                                                                  : "Named";
                         });

TEST_F(FilesTest, InputFileRegular) {
  write_file("in", "hello world");
  InputFile in(path("in"));
  EXPECT_EQ(in.size(), 11u);
  EXPECT_GE(in.fd(), 0);
  const auto mapped = in.map();
  EXPECT_EQ(std::string(mapped.begin(), mapped.end()), "hello world");
  EXPECT_EQ(in.map().data(), mapped.data());  // mapped once

  InputFile moved(std::move(in));
  EXPECT_EQ(moved.size(), 11u);
  EXPECT_EQ(moved.map().data(), mapped.data());
}

TEST_F(FilesTest, InputFileEmptyMapsToEmptySpan) {
  write_file("empty", "");
  InputFile in(path("empty"));
  EXPECT_EQ(in.size(), 0u);
  EXPECT_TRUE(in.map().empty());
}

TEST_F(FilesTest, InputFileDirectoryIsRefusedClearly) {
  try {
    InputFile in(dir_.string());
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": is a directory");
  }
}

TEST_F(FilesTest, InputFileMissingThrowsSysErrorWithPath) {
  try {
    InputFile in(path("missing"));
    FAIL() << "expected an exception";
  } catch (const SysError& e) {
    EXPECT_EQ(e.error(), ENOENT);
    EXPECT_NE(std::string(e.what()).find(path("missing")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("(errno 2)"), std::string::npos);
  }
}

TEST_F(FilesTest, InputFileNonRegularIsRefused) {
  EXPECT_THROW(InputFile("/dev/null"), std::runtime_error);
  // A FIFO without a writer must be refused, not block in open().
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  try {
    InputFile in(path("fifo"));
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path("fifo") + ": not a regular file");
  }
}

TEST_P(OutputFileTest, CommitPublishesBytesAndLeavesNoTemporary) {
  {
    OutputFile out = create("data.bin", false);
    // The temporary is either nameless or hidden under a ".<name>.rdmax-*.part" name.
    const auto expected_entries =
        out.temp_name().empty() ? std::vector<std::string>{} : std::vector{out.temp_name()};
    EXPECT_EQ(entries(), expected_entries);
    if (GetParam() == OutputFile::TempMode::kNamed) {
      EXPECT_EQ(out.temp_name().rfind(".data.bin.rdmax-", 0), 0u) << out.temp_name();
    }
    out.preallocate(10);
    out.write_at(5, bytes_of("world"));
    out.write_at(0, bytes_of("hello"));
    EXPECT_FALSE(fs::exists(path("data.bin")));  // invisible until commit
    out.commit();
  }
  EXPECT_EQ(read_file("data.bin"), "helloworld");
  EXPECT_EQ(entries(), std::vector<std::string>{"data.bin"});
  struct stat st {};
  ASSERT_EQ(::stat(path("data.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~current_umask());
}

TEST_P(OutputFileTest, DestructorAndDiscardLeaveNothing) {
  {
    OutputFile out = create("a", false);
    out.write_at(0, bytes_of("partial"));
  }
  EXPECT_TRUE(entries().empty());
  OutputFile out = create("b", false);
  out.write_at(0, bytes_of("partial"));
  out.discard();
  out.discard();  // idempotent
  EXPECT_TRUE(entries().empty());
  EXPECT_THROW(out.commit(), std::logic_error);
}

TEST_P(OutputFileTest, MovedOutputFileDiscardsOnce) {
  {
    OutputFile a = create("m", false);
    OutputFile b = std::move(a);
    b.write_at(0, bytes_of("x"));
    b.commit();
  }
  EXPECT_EQ(read_file("m"), "x");
}

TEST_P(OutputFileTest, FinalMetadataGivesTheSendersModeAndTime) {
  {
    OutputFile out = create("meta", false);
    out.write_at(0, bytes_of("data"));
    const struct timespec atime[2] = {{1000000000, 5}, {0, UTIME_OMIT}};
    ASSERT_EQ(::futimens(out.fd(), atime), 0);
    out.set_final_metadata(0640, {1234567890, 987654321});
    OutputFile moved = std::move(out);  // the metadata moves with the file
    moved.commit();
  }
  struct stat st {};  // before reading the file, which may update its access time
  ASSERT_EQ(::stat(path("meta").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u & ~current_umask());
  EXPECT_EQ(st.st_mtim.tv_sec, 1234567890);
  EXPECT_EQ(st.st_mtim.tv_nsec, 987654321);
  EXPECT_EQ(st.st_atim.tv_sec, 1000000000);  // left alone
  EXPECT_EQ(st.st_atim.tv_nsec, 5);
  EXPECT_EQ(read_file("meta"), "data");
}

TEST_P(OutputFileTest, FinalMetadataNeverSetsSetIdBits) {
  OutputFile out = create("setid", false);
  out.set_final_metadata(S_IFREG | 07755, {1, 0});
  out.commit();
  struct stat st {};
  ASSERT_EQ(::stat(path("setid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01755u & ~current_umask());
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_P(OutputFileTest, FinalMetadataIsMaskedByTheUmask) {
  const mode_t saved = ::umask(027);
  OutputFile out = create("masked", false);
  out.set_final_metadata(0777, {1, 0});
  out.commit();
  ::umask(saved);
  struct stat st {};
  ASSERT_EQ(::stat(path("masked").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST_P(OutputFileTest, WithoutFinalMetadataTheFileKeepsItsWriteTime) {
  const auto start = fs::file_time_type::clock::now();
  OutputFile out = create("plain", false);
  out.write_at(0, bytes_of("x"));
  out.commit();
  // Coarse filesystem timestamps may round down by up to a tick.
  EXPECT_GE(fs::last_write_time(path("plain")), start - std::chrono::seconds(1));
}

TEST_P(OutputFileTest, ExistingFileWithoutOverwriteThrows) {
  write_file("exists", "old");
  EXPECT_THROW(create("exists", false), FileExistsError);
  EXPECT_EQ(read_file("exists"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"exists"});
}

TEST_P(OutputFileTest, FileCreatedDuringTransferIsNotOverwritten) {
  OutputFile out = create("race", false);
  out.write_at(0, bytes_of("new"));
  write_file("race", "theirs");
  EXPECT_THROW(out.commit(), FileExistsError);
  out.discard();
  EXPECT_EQ(read_file("race"), "theirs");
  EXPECT_EQ(entries(), std::vector<std::string>{"race"});
}

TEST_P(OutputFileTest, OverwriteReplaces) {
  write_file("exists", "old contents");
  OutputFile out = create("exists", true);
  out.write_at(0, bytes_of("new"));
  out.commit();
  EXPECT_EQ(read_file("exists"), "new");
  EXPECT_EQ(entries(), std::vector<std::string>{"exists"});
}

TEST_P(OutputFileTest, SymlinkCountsAsExistingAndIsNeverFollowed) {
  write_file("target", "target contents");
  ASSERT_EQ(::symlink(path("target").c_str(), path("link").c_str()), 0);
  ASSERT_EQ(::symlink(path("nowhere").c_str(), path("dangling").c_str()), 0);
  EXPECT_THROW(create("link", false), FileExistsError);
  EXPECT_THROW(create("dangling", false), FileExistsError);

  OutputFile out = create("link", true);
  out.write_at(0, bytes_of("replaced"));
  out.commit();
  EXPECT_EQ(read_file("target"), "target contents");  // not written through the link
  EXPECT_FALSE(fs::is_symlink(path("link")));
  EXPECT_EQ(read_file("link"), "replaced");
  EXPECT_FALSE(fs::exists(path("nowhere")));
}

TEST_P(OutputFileTest, OverwritingADirectoryIsRefused) {
  fs::create_directory(path("sub"));
  EXPECT_THROW(create("sub", true), std::runtime_error);
}

TEST_P(OutputFileTest, InvalidNamesAreRejected) {
  for (const char* name : {"", ".", "..", "a/b", "/abs"}) {
    EXPECT_THROW(create(name, false), std::invalid_argument) << name;
  }
}

TEST_P(OutputFileTest, OutputFileKeepsItsOwnDirectoryFd) {
  {
    Fd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    OutputFile out = OutputFile::create(dir.get(), "own", false, GetParam());
    dir.reset();
    out.write_at(0, bytes_of("ok"));
    out.commit();
  }
  EXPECT_EQ(read_file("own"), "ok");
}

// A partial file kept in another directory is renamed into place on commit; discard leaves
// it for its owner (receiver/partial_store.hpp decides whether it is kept).
TEST_F(FilesTest, AdoptedTemporaryMovesOnCommitAndStaysOnDiscard) {
  ASSERT_EQ(::mkdirat(temp_.fd(), "area", 0700), 0);
  const Fd area(::openat(temp_.fd(), "area", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(area);
  auto make = [&](const char* name, const std::string& content) {
    Fd f(::openat(area.get(), name, O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    EXPECT_TRUE(f);
    EXPECT_EQ(::pwrite(f.get(), content.data(), content.size(), 0),
              static_cast<ssize_t>(content.size()));
    return f;
  };
  {
    OutputFile kept =
        OutputFile::adopt(make("a.data", "kept"), area.get(), "a.data", temp_.fd(), "a.bin", false);
    kept.discard();
  }
  EXPECT_EQ(read_file("area/a.data"), "kept");
  EXPECT_FALSE(fs::exists(dir_ / "a.bin"));

  OutputFile moved =
      OutputFile::adopt(make("b.data", "moved"), area.get(), "b.data", temp_.fd(), "b.bin", false);
  moved.commit();
  EXPECT_EQ(read_file("b.bin"), "moved");
  EXPECT_FALSE(fs::exists(dir_ / "area" / "b.data"));

  // Without overwrite an existing name is refused, up front and at commit.
  EXPECT_THROW(
      OutputFile::adopt(make("c.data", "c"), area.get(), "c.data", temp_.fd(), "b.bin", false),
      FileExistsError);
  OutputFile late =
      OutputFile::adopt(make("d.data", "late"), area.get(), "d.data", temp_.fd(), "d.bin", false);
  write_file("d.bin", "first");
  EXPECT_THROW(late.commit(), FileExistsError);
  EXPECT_EQ(read_file("d.bin"), "first");
  EXPECT_EQ(read_file("area/d.data"), "late");
  OutputFile replacing =
      OutputFile::adopt(make("e.data", "second"), area.get(), "e.data", temp_.fd(), "d.bin", true);
  replacing.commit();
  EXPECT_EQ(read_file("d.bin"), "second");
}

TEST_F(FilesTest, FreeBytes) {
  EXPECT_GT(OutputFile::free_bytes(temp_.fd()), 0u);
}

TEST(OutputFilePreallocate, SkippedOnTmpfsWhereItWouldOnlyZeroPages) {
  struct statfs fs {};
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs";
  TempDir dir("rdmax-prealloc", "/dev/shm");
  {
    OutputFile out = OutputFile::create(dir.fd(), "f", false);
    out.preallocate(8u << 20);
    out.write_at(0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("x"), 1));
    out.commit();
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1);        // fallocate (mode 0) would have made it 8 MiB
  EXPECT_LE(st.st_blocks, 8 * 8);  // one page written, not 8 MiB of zeroed pages
}

}  // namespace
}  // namespace rdmax
