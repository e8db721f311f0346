#pragma once
// Command-line checks both programs share, so that a usage error reads the same in both and
// like the tools' own errors (issue 22): "PROGRAM: --OPTION: what is wrong", then where to
// read more, and the usage exit status. CLI11's own texts ("Could not convert: --port =
// abc", "Check md5 value in {fsverity->,sha256->} OR {,} FAILED") never reach the user.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace rdmax::cli {

// A whole number from `lo` to `hi`, digits only (checked before CLI11 converts it).
inline CLI::Validator number_in(std::uint64_t lo, std::uint64_t hi, std::string what = "number") {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, what, range](std::string& text) -> std::string {
        std::uint64_t value = 0;
        bool ok = !text.empty() && text.size() <= 20;
        for (const char c : text) {
          if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
            ok = false;
            break;
          }
          value = value * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (ok && value >= lo && value <= hi) return {};
        return "'" + text + "' is not a " + what + " from " + range;
      },
      "", "number_in");
}

// One of `names` (case-insensitive; checked before a transform maps it).
inline CLI::Validator one_of(std::vector<std::string> names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [names, list](std::string& text) -> std::string {
        for (const auto& n : names)
          if (CLI::detail::to_lower(text) == n) return {};
        return "'" + text + "' is not one of " + list;
      },
      "", "one_of");
}

// What CLI11 says, in the tools' words where its own are cryptic.
inline std::string describe(const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::string text = e.what();
    const auto colon = text.find(": ");
    return "unexpected argument" + (colon == std::string::npos ? "" : text.substr(colon));
  }
  return e.what();
}

// Prints a parse error as the program's own and returns its status: --help and --version
// print what they print and give 0; anything else `usage_status`.
inline int usage_error(const CLI::App& app, const CLI::ParseError& e, std::string_view program,
                       int usage_status) {
  if (e.get_exit_code() == 0) return app.exit(e);
  std::cerr << program << ": " << describe(e) << "\nTry '" << program
            << " --help' for more information.\n";
  return usage_status;
}

}  // namespace rdmax::cli
