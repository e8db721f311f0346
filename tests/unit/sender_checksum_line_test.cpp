// The checksum lines (sender/checksum_line.hpp) against what the tools print. The expected
// strings were taken from sha256sum (GNU coreutils 9.1) and fsverity digest (fsverity-utils
// 1.5); the last test runs the tools themselves when they are installed.
#include "sender/checksum_line.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/os/fd.hpp"
#include "temp_dir.hpp"

extern char** environ;

namespace rdmax {
namespace {

Digest from_hex(const std::string& hex) {
  Digest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) {
    digest[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return digest;
}

// Of an empty file, and of the one-byte file "x".
const std::string kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kEmptyFsVerity =
    "3d248ca542a24fc62d1c43b916eae5016878e2533c88238480b26128a1f1af95";
const std::string kXSha256 = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
const std::string kXFsVerity = "dbbdfa9d606f7adeaa7f16dcfb0d49161c4cfb82d9d51cfb5cb43fa3dacb9e5b";
const std::string kXBlake3 = "3ae7d805f6789a6402acb70ad4096a85a56bf6804eaf25c0493ac697548d30b5";

TEST(ChecksumLineTest, Sha256sumOrdinaryNames) {
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, from_hex(kEmptySha256), "empty"),
            kEmptySha256 + "  empty");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, from_hex(kXSha256), "/data/dir/file.bin"),
            kXSha256 + "  /data/dir/file.bin");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, from_hex(kXSha256), "a b"), kXSha256 + "  a b");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, from_hex(kXSha256), "tab\there"),
            kXSha256 + "  tab\there");  // a tab is not escaped
}

TEST(ChecksumLineTest, Sha256sumEscapesBackslashNewlineAndCarriageReturn) {
  const Digest x = from_hex(kXSha256);
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, x, "new\nline"),
            "\\" + kXSha256 + "  new\\nline");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, x, "back\\slash"),
            "\\" + kXSha256 + "  back\\\\slash");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, x, "cr\rret"), "\\" + kXSha256 + "  cr\\rret");
  EXPECT_EQ(checksum_line(ChecksumFormat::Sha256, x, "mix\\\n\r z"),
            "\\" + kXSha256 + "  mix\\\\\\n\\r z");
}

TEST(ChecksumLineTest, FsVerityWritesNamesAsTheyAre) {
  EXPECT_EQ(checksum_line(ChecksumFormat::FsVerity, from_hex(kEmptyFsVerity), "empty"),
            "sha256:" + kEmptyFsVerity + " empty");
  const Digest x = from_hex(kXFsVerity);
  EXPECT_EQ(checksum_line(ChecksumFormat::FsVerity, x, "a b"), "sha256:" + kXFsVerity + " a b");
  EXPECT_EQ(checksum_line(ChecksumFormat::FsVerity, x, "new\nline"),
            "sha256:" + kXFsVerity + " new\nline");
  EXPECT_EQ(checksum_line(ChecksumFormat::FsVerity, x, "back\\slash"),
            "sha256:" + kXFsVerity + " back\\slash");
  EXPECT_EQ(checksum_line(ChecksumFormat::FsVerity, x, "cr\rret"),
            "sha256:" + kXFsVerity + " cr\rret");
}

// The standard output of `argv`, or nullopt if it could not be run or failed.
std::optional<std::string> output_of(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return std::nullopt;
  write_end.reset();
  std::string output;
  char buffer[4096];
  for (ssize_t got; (got = ::read(read_end.get(), buffer, sizeof buffer)) > 0;) {
    output.append(buffer, static_cast<std::size_t>(got));
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::nullopt;
  }
  return output;
}

TEST(ChecksumLineTest, MatchesTheToolsWhenInstalled) {
  TempDir dir("checksum-line");
  const Digest x_sha256 = from_hex(kXSha256);
  const Digest x_fsverity = from_hex(kXFsVerity);
  int checked = 0;
  for (const std::string name : {"plain", "a b", "new\nline", "back\\slash", "cr\rret"}) {
    const std::string path = (dir.path() / name).string();
    std::ofstream(path, std::ios::binary) << "x";
    if (auto line = output_of({"sha256sum", path})) {
      EXPECT_EQ(*line, checksum_line(ChecksumFormat::Sha256, x_sha256, path) + "\n");
      ++checked;
    }
    if (auto line =
            output_of({"fsverity", "digest", "--hash-alg=sha256", "--block-size=4096", path})) {
      EXPECT_EQ(*line, checksum_line(ChecksumFormat::FsVerity, x_fsverity, path) + "\n");
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "neither sha256sum nor fsverity could be run";
}

// b3sum escapes a backslash and a newline but not a carriage return, and writes U+FFFD for
// each maximal invalid part of a name that is not UTF-8 (Rust's lossy conversion): a lone
// continuation byte, a lead byte cut short, an overlong form, a surrogate, a code point
// beyond U+10FFFF, and valid UTF-8 beside them.
TEST(ChecksumLineTest, MatchesB3sumWhenInstalled) {
  TempDir dir("checksum-line-b3");
  const Digest x_blake3 = from_hex(kXBlake3);
  int checked = 0;
  for (const std::string name :
       {"plain", "a b", "new\nline", "back\\slash", "cr\rret",
        "lone\x80"
        "cont",
        "cut\xe2\x82", "cut\xe2\x82x", "over\xc0\xafl", "over\xe0\x80\xafl", "sur\xed\xa0\x80r",
        "big\xf4\x90\x80\x80", "\xf0\x9f\x98\x80ok\xff\xfe", "\xc3\xbc\xe6\x97\xa5"}) {
    const std::string path = (dir.path() / name).string();
    std::ofstream(path, std::ios::binary) << "x";
    if (auto line = output_of({"b3sum", path})) {
      EXPECT_EQ(*line, checksum_line(ChecksumFormat::B3sum, x_blake3, path) + "\n") << name;
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "b3sum could not be run";
}

}  // namespace
}  // namespace rdmax
