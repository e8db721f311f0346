#include "sender/export_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>

#include "common/error.hpp"
#include "common/os/beneath.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "sender/tree_walker.hpp"

namespace rdmax::sender {
namespace {

SourceError cannot_serve(const std::string& given, const std::string& why) {
  return SourceError(proto::quoted_for_log(given) + ": " + why);
}

// What a failed look-up of `given` tells the fetcher.
SourceError not_served(const std::string& given, int err) {
  if (err == ENOENT) return cannot_serve(given, "no such file or directory in the export");
  if (err == ELOOP)
    return cannot_serve(given, "a symbolic link is on the way; links are not served");
  if (err == ENOTDIR) return cannot_serve(given, "something other than a directory is on the way");
  return cannot_serve(given, "cannot read: " + error_text(err));
}

}  // namespace

SourceTree walk_export(int export_fd, const std::vector<WantedPath>& wanted) {
  SourceTree tree;
  TreeWalker walker(tree);
  std::map<std::string, std::string> wanted_by_arrival;  // to refuse two paths for one name
  for (const auto& [given, recursive] : wanted) {
    const std::string path = without_trailing_slashes(given);
    if (path == ".") {
      if (wanted.size() > 1)
        throw SourceError("\".\" is the whole export: name it alone, or name what is in it");
      if (!recursive)
        throw cannot_serve(given,
                           "the whole export is a directory; fetch it with -r (--recursive)");
      Fd root(::openat(export_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!root) throw not_served(given, errno);
      walker.add_children(std::move(root), "");
      continue;
    }
    if (const auto problem = proto::check_relative_path(path))
      throw cannot_serve(given, "not a name within the export: " + proto::describe(*problem));
    Fd parent;
    try {
      parent = open_parent_beneath(export_fd, path, false);
    } catch (const SysError& e) {
      throw not_served(given, e.error());
    }
    const std::string name = name_in_parent(path);
    struct stat st {};
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      throw not_served(given, errno);
    if (S_ISLNK(st.st_mode)) throw cannot_serve(given, "a symbolic link; links are not served");
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      throw cannot_serve(given, "not a regular file or a directory");
    if (S_ISDIR(st.st_mode) && !recursive)
      throw cannot_serve(given, "a directory; fetch directories with -r (--recursive)");
    if (const auto [it, added] = wanted_by_arrival.emplace(name, given); !added) {
      throw SourceError(proto::quoted_for_log(it->second) + " and " + proto::quoted_for_log(given) +
                        " would both arrive as " + proto::quoted_for_log(name));
    }
    // Opened now, so that what cannot be read is the fetcher's error before anything is sent;
    // O_NONBLOCK: a fifo swapped in since the fstatat does not hold the open. What is listed is
    // what was opened: the same file, still of its kind.
    const int flags = S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
    Fd opened(::openat(parent.get(), name.c_str(), flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
    if (!opened) throw not_served(given, errno);
    struct stat now {};
    if (::fstat(opened.get(), &now) != 0) throw not_served(given, errno);
    if (now.st_dev != st.st_dev || now.st_ino != st.st_ino || (now.st_mode ^ st.st_mode) & S_IFMT)
      throw cannot_serve(given, "replaced while it was looked at; ask again");
    if (S_ISREG(now.st_mode))
      walker.add_file(path, name, now);
    else
      walker.add_directory(std::move(opened), path, name);
  }
  sort_directories_deepest_first(tree);
  return tree;
}

}  // namespace rdmax::sender
