#include "sender/export_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <set>

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

// What `path` (within the export, by check_relative_path's rule) names, opened beneath
// `export_fd` without following a link at any component: the same file the fstatat saw,
// still of its kind, so that what cannot be read is the fetcher's error before anything is
// sent. O_NONBLOCK: a fifo swapped in since the fstatat does not hold the open.
struct Looked {
  Fd opened;
  struct stat st {};
};
Looked look_up(int export_fd, const std::string& given, const std::string& path) {
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
  const int flags = S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
  Looked looked{Fd(::openat(parent.get(), name.c_str(), flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC)),
                {}};
  if (!looked.opened) throw not_served(given, errno);
  if (::fstat(looked.opened.get(), &looked.st) != 0) throw not_served(given, errno);
  if (looked.st.st_dev != st.st_dev || looked.st.st_ino != st.st_ino ||
      (looked.st.st_mode ^ st.st_mode) & S_IFMT)
    throw cannot_serve(given, "replaced while it was looked at; ask again");
  return looked;
}

// Whether `path` is `from` or beneath it (empty `from`: everything is).
bool at_or_beneath(const std::string& path, const std::string& from) {
  return from.empty() || path == from || path.starts_with(from + "/");
}

// The name a wanted path arrives under, or (kept) the first component of the path it arrives
// under: two wants with one such name would write into each other.
std::string arrival_top(const WantedPath& w, const std::string& path) {
  return w.keep_path ? path.substr(0, path.find('/')) : name_in_parent(path);
}

}  // namespace

SourceTree walk_export(int export_fd, const std::vector<WantedPath>& wanted,
                       const std::string& offered_from) {
  SourceTree tree;
  TreeWalker walker(tree);
  // Checked before any walk: a path's form, and two wants for one name.
  std::map<std::string, const WantedPath*> wanted_by_arrival;
  for (const WantedPath& w : wanted) {
    const std::string path = without_trailing_slashes(w.path);
    if (path == ".") {
      if (wanted.size() > 1)
        throw SourceError("\".\" is the whole export: name it alone, or name what is in it");
      if (w.keep_path) throw cannot_serve(w.path, "the export itself has no path to keep");
      if (!w.recursive)
        throw cannot_serve(w.path,
                           "the whole export is a directory; fetch it with -r (--recursive)");
      continue;
    }
    if (const auto problem = proto::check_relative_path(path))
      throw cannot_serve(w.path, "not a name within the export: " + proto::describe(*problem));
    if (w.keep_path && w.recursive)
      throw cannot_serve(w.path, "a listed path comes without its tree (keep_path and recursive)");
    const auto [it, added] = wanted_by_arrival.emplace(arrival_top(w, path), &w);
    // Kept paths share their first components (a list's "a/x" and "a/y"); a plain want's name
    // is its own.
    if (!added && !(w.keep_path && it->second->keep_path)) {
      throw SourceError(proto::quoted_for_log(it->second->path) + " and " +
                        proto::quoted_for_log(w.path) +
                        (w.keep_path || it->second->keep_path ? " would both arrive in "
                                                              : " would both arrive as ") +
                        proto::quoted_for_log(it->first));
    }
  }
  std::set<std::string> kept;  // kept paths and the directories above them, offered once
  for (const WantedPath& w : wanted) {
    const std::string& given = w.path;
    const std::string path = without_trailing_slashes(given);
    if (path == ".") {
      Fd root(::openat(export_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!root) throw not_served(given, errno);
      walker.add_children(std::move(root), "");
      continue;
    }
    if (w.keep_path && kept.contains(path)) continue;  // listed twice, or above one listed
    Looked looked = look_up(export_fd, given, path);
    if (S_ISDIR(looked.st.st_mode) && !w.recursive && !w.keep_path)
      throw cannot_serve(given, "a directory; fetch directories with -r (--recursive)");
    if (w.keep_path) {
      // The directories above it, each alone, once (what is not a directory there has
      // refused the look-up above).
      for (std::size_t slash = path.find('/'); slash != std::string::npos;
           slash = path.find('/', slash + 1)) {
        const std::string above = path.substr(0, slash);
        if (!kept.insert(above).second || !at_or_beneath(above, offered_from)) continue;
        const Looked dir = look_up(export_fd, given, above);
        walker.add_directory_alone(above, above, dir.st);
      }
      kept.insert(path);
    }
    const std::string remote = w.keep_path ? path : name_in_parent(path);
    if (S_ISREG(looked.st.st_mode))
      walker.add_file(path, remote, looked.st);
    else if (w.keep_path)
      walker.add_directory_alone(path, remote, looked.st);
    else
      walker.add_directory(std::move(looked.opened), path, remote);
  }
  sort_directories_deepest_first(tree);
  return tree;
}

}  // namespace rdmax::sender
