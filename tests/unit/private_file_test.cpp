#include "common/os/private_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <ios>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/crypto/key_files.hpp"
#include "protocol/secure_wipe.hpp"
#include "tests/unit/driver_harness.hpp"  // LogCapture
#include "tests/unit/temp_dir.hpp"

namespace rdmax {
namespace {

constexpr std::string_view kHex =
    "6f1c0e9a55d2b3c47e8a1f0d9b2c6e4a7f3d1b8c5e9a0f2d4c6b8e1a3f5d7c9b";

std::string write_file(const TempDir& dir, const std::string& text, mode_t mode = 0600) {
  const std::string path = (dir.path() / "credentials").string();
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

// The message `load` throws, or "" if it returned.
template <typename Load>
std::string error_of(Load load) {
  try {
    load();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string read_error(const std::string& path, std::string_view what) {
  return error_of([&] {
    std::string text = read_private_file(path, what);
    proto::secure_wipe(text.data(), text.size());
  });
}

TEST(PrivateFile, ReadsAnOwnerOnlyFileWhole) {
  TempDir dir("private-file");
  // Several read()s' worth, with every byte value, NUL included.
  std::string text;
  for (int i = 0; i < 10000; ++i) text += static_cast<char>(i % 256);
  for (mode_t mode : {0600, 0400, 0700}) {
    const std::string path = write_file(dir, text, mode);
    EXPECT_EQ(read_private_file(path, "key file"), text) << std::oct << mode;
  }
  EXPECT_EQ(read_private_file(write_file(dir, ""), "key file"), "");
}

TEST(PrivateFile, RefusesAFileOthersCanReadWithTheChmodThatFixesIt) {
  TempDir dir("private-file");
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0610}) {
    const std::string path = write_file(dir, "alice x\n", mode);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_EQ(read_error(path, "senders file"),
              "senders file " + path + " has mode " + octal +
                  ": group and others must have no access to it; run `chmod 600 " + path + "`");
  }
}

TEST(PrivateFile, RefusesADirectory) {
  TempDir dir("private-file");
  const std::string path = dir.path().string();
  ASSERT_EQ(::chmod(path.c_str(), 0700), 0);
  EXPECT_EQ(read_error(path, "key file"), "key file " + path + " is not a regular file");
}

TEST(PrivateFile, AMissingFileNamesWhatItIs) {
  TempDir dir("private-file");
  const std::string path = (dir.path() / "missing").string();
  EXPECT_EQ(read_error(path, "key file"),
            "cannot read key file " + path + ": No such file or directory");
}

TEST(PrivateFile, ParseErrorsNameTheFileAndLine) {
  TempDir dir("private-file");
  const std::string path = write_file(dir, "# c\nalice " + std::string(kHex) + " a b\n");
  const std::string error = error_of([&] { (void)load_key_store(path, "senders file"); });
  EXPECT_EQ(error.rfind(path + ":2: more than three fields", 0), 0U) << error;
  EXPECT_EQ(error.find(kHex.substr(0, 8)), std::string::npos) << error;
}

TEST(SenderKeysFile, LoadsQuietlyOrWarnsWhenEmpty) {
  TempDir dir("private-file");
  const std::string path =
      write_file(dir, "alice " + std::string(kHex) + "\nbob " + std::string(kHex) + " b\n");
  {
    test::LogCapture log;
    const auto store = load_key_store(path, "senders file");
    EXPECT_EQ(store.size(), 2U);
    ASSERT_NE(store.find("bob"), nullptr);
    EXPECT_EQ(store.find("bob")->subdir, "b");
    EXPECT_EQ(log.since(0), "");
  }
  const std::string empty = write_file(dir, "# alice 00\n");
  test::LogCapture log;
  EXPECT_EQ(load_key_store(empty, "senders file").size(), 0U);
  EXPECT_EQ(log.since(0),
            "warning: senders file " + empty + " lists no ids: no key will be accepted\n");
}

TEST(SenderKeysFile, RefusesAFileOthersCanRead) {
  TempDir dir("private-file");
  const std::string path = write_file(dir, "alice " + std::string(kHex) + "\n", 0644);
  EXPECT_EQ(error_of([&] { (void)load_key_store(path, "senders file"); }),
            "senders file " + path +
                " has mode 0644: group and others must have no access to it; run `chmod 600 " +
                path + "`");
}

TEST(LoadKeyFile, LoadsTheOneKey) {
  TempDir dir("private-file");
  const std::string path = write_file(dir, "# mine\nalice " + std::string(kHex) + "\n");
  const auto key = load_key_file(path);
  EXPECT_EQ(key.id, "alice");
  EXPECT_EQ(key.key.size(), 32U);
  EXPECT_EQ(key.key.front(), '\x6f');
  EXPECT_EQ(key.key.back(), '\x9b');
}

TEST(LoadKeyFile, ErrorsNameTheKeyFile) {
  TempDir dir("private-file");
  const std::string path = write_file(dir, "# nothing\n");
  EXPECT_EQ(error_of([&] { (void)load_key_file(path); }),
            path +
                ":1: no \"ID KEY\" line: the file is empty or holds only blank and comment "
                "lines");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(error_of([&] { (void)load_key_file(path); }),
            "key file " + path +
                " has mode 0640: group and others must have no access to it; run `chmod 600 " +
                path + "`");
  const std::string missing = (dir.path() / "missing").string();
  EXPECT_EQ(error_of([&] { (void)load_key_file(missing); }),
            "cannot read key file " + missing + ": No such file or directory");
}

}  // namespace
}  // namespace rdmax
