#include "protocol/paths.hpp"

namespace rdmax::proto {
namespace {

// In a path '/' splits components, so a PathSeparator within one is a backslash.
std::string in_words(NameError error) {
  return error == NameError::PathSeparator ? "contains a backslash" : describe(error);
}

}  // namespace

std::optional<PathProblem> check_relative_path(std::string_view path) {
  if (path.empty()) return PathProblem{PathError::Empty, {}, 0};
  if (path.size() > kMaxPathBytes) return PathProblem{PathError::TooLong, {}, 0};
  if (path.front() == '/') return PathProblem{PathError::Absolute, {}, 0};

  std::size_t index = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    const std::string_view component = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    // Reported apart from check_file_name's Empty: "a//b" and "a/" are separator mistakes,
    // not an empty name the sender chose.
    if (component.empty()) return PathProblem{PathError::EmptyComponent, {}, index};
    if (const auto bad = check_file_name(component, NameBytes::AnyButNul)) {
      return PathProblem{PathError::BadComponent, *bad, index};
    }
    ++index;
    if (slash == std::string_view::npos) return std::nullopt;
    if (index == kMaxPathComponents) return PathProblem{PathError::TooDeep, {}, index};
    start = slash + 1;
  }
}

std::vector<std::string_view> path_components(std::string_view path) {
  std::vector<std::string_view> components;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) {
      components.push_back(path.substr(start));
      return components;
    }
    components.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
}

std::string describe(const PathProblem& problem) {
  const std::string component = "component " + std::to_string(problem.component_index + 1);
  switch (problem.error) {
    case PathError::Empty:
      return "the path is empty";
    case PathError::TooLong:
      return "the path is longer than " + std::to_string(kMaxPathBytes) + " bytes";
    case PathError::TooDeep:
      return "the path has more than " + std::to_string(kMaxPathComponents) + " components";
    case PathError::Absolute:
      return "the path is absolute (starts with '/')";
    case PathError::EmptyComponent:
      return component + " is empty (\"//\" or a trailing '/')";
    case PathError::BadComponent:
      return component + " " + in_words(problem.component_error);
  }
  return "unknown path problem";
}

}  // namespace rdmax::proto
