#include "common/cli/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/cli/status_line.hpp"

namespace rdmax {
namespace {

spdlog::level::level_enum level_for(int verbosity) {
  if (verbosity < 0) return spdlog::level::warn;
  if (verbosity == 0) return spdlog::level::info;
  if (verbosity == 1) return spdlog::level::debug;
  return spdlog::level::trace;
}

// systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it connected to stdout and
// stderr; it only counts when stderr is still that stream (not redirected by a script).
bool stderr_is_journal() {
  const char* value = std::getenv("JOURNAL_STREAM");
  if (value == nullptr) return false;
  unsigned long long device = 0, inode = 0;
  if (std::sscanf(value, "%llu:%llu", &device, &inode) != 2) return false;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == device &&
         static_cast<unsigned long long>(st.st_ino) == inode;
}

// "%*": the sd-daemon(3) priority prefix ("<3>" for errors ... "<7>" for debug), which
// journald strips and stores as the entry's priority.
class SyslogPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char* prefix = "<6>";
    switch (msg.level) {
      case spdlog::level::critical:
        prefix = "<2>";
        break;
      case spdlog::level::err:
        prefix = "<3>";
        break;
      case spdlog::level::warn:
        prefix = "<4>";
        break;
      case spdlog::level::debug:
      case spdlog::level::trace:
        prefix = "<7>";
        break;
      default:
        break;
    }
    dest.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

// Log lines print above a progress bar instead of through it.
class StatusLineAwareSink : public spdlog::sinks::sink {
 public:
  explicit StatusLineAwareSink(std::shared_ptr<spdlog::sinks::sink> inner)
      : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    status_line::Pause pause;
    inner_->log(msg);
    inner_->flush();
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

}  // namespace

void init_logging(int verbosity, const char* program) {
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  auto sink =
      std::make_shared<StatusLineAwareSink>(std::make_shared<spdlog::sinks::stderr_color_sink_mt>(
          terminal ? spdlog::color_mode::automatic : spdlog::color_mode::never));
  auto logger = std::make_shared<spdlog::logger>(program, std::move(sink));
  if (terminal) {
    logger->set_pattern("%H:%M:%S.%e %^%-5l%$ %v");
  } else if (stderr_is_journal()) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%v");
    logger->set_formatter(std::move(formatter));
  } else if (verbosity >= 2) {
    // Tracing into a file is for finding where time goes: stamp every line.
    logger->set_pattern("%H:%M:%S.%e %l: %v");
  } else {
    logger->set_pattern("%l: %v");
  }
  logger->set_level(level_for(verbosity));
  // Warnings and errors reach the terminal or journal even if the process dies next.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace rdmax
