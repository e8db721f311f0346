#pragma once
// The rule for a path a sender may ask the receiver to create in a session (docs/PROTOCOL.md
// 7.5): relative, '/'-separated, every component a file name by check_file_name
// (protocol/names.hpp; so no "." or ".." and no '\\'), no empty component, at most
// kMaxPathBytes bytes and kMaxPathComponents components. Nothing that passes can name
// anything outside the receiver's directory by itself; that no symbolic link on the way
// leads out is the receiver's walk's to ensure (receiver/output_tree.hpp).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/names.hpp"
#include "protocol/wire.hpp"

namespace rdmax::proto {

inline constexpr std::size_t kMaxPathComponents = 256;

enum class PathError {
  Empty,
  TooLong,         // more than kMaxPathBytes bytes
  TooDeep,         // more than kMaxPathComponents components
  Absolute,        // starts with '/'
  EmptyComponent,  // "a//b", or a trailing '/'
  BadComponent,    // a component breaks the file-name rule
};

struct PathProblem {
  PathError error = PathError::Empty;
  NameError component_error = NameError::Empty;  // for BadComponent
  std::size_t component = 0;                     // index of the offending component
};

[[nodiscard]] const char* to_string(PathError error);
// For humans: "component 2: DotOrDotDot".
[[nodiscard]] std::string describe(const PathProblem& problem);

[[nodiscard]] std::optional<PathProblem> check_relative_path(std::string_view path);

// The components of a path (for a checked one: each a valid file name).
[[nodiscard]] std::vector<std::string_view> path_components(std::string_view path);

}  // namespace rdmax::proto
