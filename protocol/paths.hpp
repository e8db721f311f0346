#pragma once

// The rule for a relative path a sender may ask the receiver to create beneath its output
// directory (docs/PROTOCOL.md 7.5, issue 13). A path is '/'-separated components, each of
// which is a plain file name by check_file_name (protocol/names.hpp) that may hold control
// bytes but NUL (NameBytes::AnyButNul: a newline in a name is legal), so no component can
// climb out ("..") or name the directory itself ("."); a one-component path is just a file
// name. Nothing that passes can name anything outside the receiver's directory by itself;
// that no symbolic link on the way leads out is the receiver's walk's to ensure
// (receiver/output_tree.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/enum_names.hpp"
#include "protocol/names.hpp"
#include "protocol/wire.hpp"  // kMaxPathBytes, the wire's limit on Offer.path

namespace rdmax::proto {

// Bounds the work (and fds) a walk beneath the output directory may take per path.
inline constexpr std::size_t kMaxPathComponents = 256;

enum class PathError {
  Empty,           // no bytes at all
  TooLong,         // more than kMaxPathBytes bytes
  TooDeep,         // more than kMaxPathComponents components
  Absolute,        // starts with '/'
  EmptyComponent,  // "a//b" or a trailing '/'
  BadComponent,    // a component fails check_file_name (see PathProblem::component_error)
};

struct PathProblem {
  PathError error{};
  NameError component_error{};      // meaningful for BadComponent only
  std::size_t component_index = 0;  // 0-based: the component at fault, or the first one too deep
};

// nullopt if `path` is acceptable. Empty, TooLong and Absolute are checked first, then the
// components left to right, so the first offending component is the one reported.
[[nodiscard]] std::optional<PathProblem> check_relative_path(std::string_view path);

// The components of a path that passed check_relative_path, views into `path`.
[[nodiscard]] std::vector<std::string_view> path_components(std::string_view path);

// One line for people, e.g. "component 2 is \".\" or \"..\"" (1-based). It never quotes
// the path itself, which may hold control bytes: callers show it with escape_for_log.
[[nodiscard]] std::string describe(const PathProblem& problem);

}  // namespace rdmax::proto
