#include "receiver/secrets_file.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/unit/temp_dir.hpp"

namespace rdmax {
namespace {

using receiver::load_secrets_file;

std::string write_file(const TempDir& dir, const std::string& text, mode_t mode = 0600) {
  const std::string path = (dir.path() / "secrets").string();
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

// The message load_secrets_file throws, or "" if it loaded.
std::string load_error(const std::string& path) {
  try {
    (void)load_secrets_file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// Collects what is logged through the default logger while alive.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%l: %v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", std::move(sink)));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::string text() const { return stream_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

TEST(SecretsFile, LoadsAPrivateFileQuietly) {
  TempDir dir("secrets-file");
  const std::string path = write_file(dir, "# ids\nalice one\nbob two\n");
  CapturedLog log;
  const auto store = load_secrets_file(path);
  EXPECT_EQ(store.size(), 2U);
  EXPECT_EQ(store.lookup("bob"), "two");
  EXPECT_EQ(log.text(), "");
}

TEST(SecretsFile, AFileWithNoIdsLoadsWithAWarning) {
  TempDir dir("secrets-file");
  const std::string path = write_file(dir, "# alice one\n\n");
  CapturedLog log;
  const auto store = load_secrets_file(path);
  EXPECT_EQ(store.size(), 0U);
  EXPECT_EQ(store.lookup("alice"), std::nullopt);
  EXPECT_EQ(log.text(),
            "warning: secrets file " + path + " lists no ids: every id will be denied\n");
}

TEST(SecretsFile, ParseErrorsNameTheFileAndLineButNotTheSecret) {
  TempDir dir("secrets-file");
  const std::string path = write_file(dir, "alice one\nbob Secret-Words here\n");
  const std::string error = load_error(path);
  EXPECT_EQ(error.rfind(path + ":2: more than two fields", 0), 0U) << error;
  EXPECT_EQ(error.find("Secret-Words"), std::string::npos) << error;
}

TEST(SecretsFile, RefusesAFileOthersCanRead) {
  TempDir dir("secrets-file");
  const std::string path = write_file(dir, "alice one\n", 0640);
  EXPECT_EQ(load_error(path), "secrets file " + path +
                                  " has mode 0640: group and others must have no access to it; "
                                  "run `chmod 600 " +
                                  path + "`");
}

TEST(SecretsFile, RefusesWhatIsNotARegularFile) {
  TempDir dir("secrets-file");
  EXPECT_EQ(load_error(dir.path().string()),
            "secrets file " + dir.path().string() + " is not a regular file");
  const std::string missing = (dir.path() / "missing").string();
  EXPECT_EQ(load_error(missing),
            "cannot read secrets file " + missing + ": No such file or directory");
}

}  // namespace
}  // namespace rdmax
