#include "receiver/fetch_list.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "protocol/names.hpp"
#include "protocol/wire.hpp"

namespace rdmax::receiver {
namespace {

FileListError listed_error(const ListedName& listed, const std::string& why) {
  return FileListError("--files-from, entry " + std::to_string(listed.record) + " " +
                       proto::quoted_for_log(listed.name) + " " + why);
}

}  // namespace

std::vector<std::string> fetch_list_paths(const std::vector<ListedName>& names) {
  std::vector<std::string> paths;
  std::uint64_t bytes = 0;
  for (const ListedName& listed : names) {
    if (listed.name.starts_with('/'))
      throw listed_error(listed, "is absolute: a listed name is a path within the server's export");
    std::string path;
    std::size_t start = 0;
    while (start <= listed.name.size()) {
      const std::size_t slash = std::min(listed.name.find('/', start), listed.name.size());
      const std::string_view part = std::string_view(listed.name).substr(start, slash - start);
      start = slash + 1;
      if (part.empty() || part == ".") continue;
      if (part == "..")
        throw listed_error(listed,
                           "holds a \"..\" component: a listed name lies within the export, "
                           "without going up");
      if (!path.empty()) path += '/';
      path += part;
    }
    if (path.empty()) continue;  // the export itself
    if (path.size() > proto::kMaxPathBytes)
      throw listed_error(listed, "is longer than " + std::to_string(proto::kMaxPathBytes) +
                                     " bytes, the longest path a fetch may name");
    bytes += path.size();
    paths.push_back(std::move(path));
    if (paths.size() > proto::kMaxWants || bytes > proto::kMaxWantBytes)
      throw FileListError("--files-from: more than " + std::to_string(proto::kMaxWants) +
                          " names, or " + std::to_string(proto::kMaxWantBytes >> 20) +
                          " MiB of them: more than one fetch may ask for (split the list, or "
                          "fetch directories with -r)");
  }
  if (paths.empty())
    throw FileListError(
        "--files-from: the list names nothing to fetch (only the export itself, "
        "or no name at all)");
  return paths;
}

}  // namespace rdmax::receiver
