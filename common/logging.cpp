#include "common/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>

namespace rdmax {
namespace {

spdlog::level::level_enum level_for(int verbosity) {
  if (verbosity < 0) return spdlog::level::warn;
  if (verbosity == 0) return spdlog::level::info;
  if (verbosity == 1) return spdlog::level::debug;
  return spdlog::level::trace;
}

}  // namespace

void init_logging(int verbosity, const char* program) {
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(
      terminal ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>(program, std::move(sink));
  logger->set_pattern(terminal ? "%H:%M:%S.%e %^%-5l%$ %v" : "%l: %v");
  logger->set_level(level_for(verbosity));
  // Warnings and errors reach the terminal or journal even if the process dies next.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace rdmax
