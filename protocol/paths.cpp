#include "protocol/paths.hpp"

namespace rdmax::proto {

const char* to_string(PathError error) {
  switch (error) {
    case PathError::Empty:
      return "Empty";
    case PathError::TooLong:
      return "TooLong";
    case PathError::TooDeep:
      return "TooDeep";
    case PathError::Absolute:
      return "Absolute";
    case PathError::EmptyComponent:
      return "EmptyComponent";
    case PathError::BadComponent:
      return "BadComponent";
  }
  return "?";
}

std::string describe(const PathProblem& p) {
  std::string text = std::string("path: ") + to_string(p.error);
  if (p.error == PathError::BadComponent || p.error == PathError::EmptyComponent)
    text += " (component " + std::to_string(p.component + 1) + ")";
  if (p.error == PathError::BadComponent) text += std::string(": ") + to_string(p.component_error);
  return text;
}

std::vector<std::string_view> path_components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

std::optional<PathProblem> check_relative_path(std::string_view path) {
  if (path.empty()) return PathProblem{PathError::Empty};
  if (path.size() > kMaxPathBytes) return PathProblem{PathError::TooLong};
  if (path.front() == '/') return PathProblem{PathError::Absolute};
  const auto parts = path_components(path);
  if (parts.size() > kMaxPathComponents) return PathProblem{PathError::TooDeep};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) return PathProblem{PathError::EmptyComponent, NameError::Empty, i};
    if (auto error = check_file_name(parts[i]))
      return PathProblem{PathError::BadComponent, *error, i};
  }
  return std::nullopt;
}

}  // namespace rdmax::proto
