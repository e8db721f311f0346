#include "sender/source_tree.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <string_view>

#include "common/cli/error_hints.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"
#include "sender/tree_walker.hpp"

namespace rdmax::sender {
namespace {

// Names from the disk may hold control bytes: a message quotes them escaped.
// A PATH given on the command line cannot be read: the cause, and what to do about it.
SourceError unreadable(std::string_view path, int err) {
  const std::string hint = input_file_hint(err);
  return SourceError("cannot read " + proto::quoted_for_log(path) + ": " + error_text(err) +
                     (hint.empty() ? "" : "; " + hint));
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The name a top-level PATH arrives as, like `cp -r`: its last component, or for "." and
// "..", which name no entry of their own, the last component of the canonical path.
std::string arrival_name(const std::string& path) {
  std::string name = base_name(path);
  if (name == "." || name == "..") {
    const std::unique_ptr<char, decltype(&::free)> canonical(::realpath(path.c_str(), nullptr),
                                                             &::free);
    if (!canonical) throw unreadable(path, errno);
    name = base_name(canonical.get());
  }
  if (name.empty()) {  // "/", or "." in it
    throw SourceError("cannot send " + proto::quoted_for_log(path) +
                      ": the root directory has no name to arrive as; name what is in it");
  }
  return name;
}

// --name is the one name the file arrives as, in the receiver's directory: a plain file
// name by the protocol's rule, as a one-file transfer's Hello carries it (rdma-send(1)).
void check_rename(const std::string& rename) {
  if (rename.find('/') != std::string::npos) {
    throw SourceError("--name " + proto::quoted_for_log(rename) +
                      " holds a '/': it is one file name, and the file arrives under it in the "
                      "receiver's directory (to send a tree, send its directory with -r)");
  }
  if (const auto problem = proto::check_file_name(rename, proto::NameBytes::Printable)) {
    throw SourceError("--name " + proto::quoted_for_log(rename) + " " + proto::describe(*problem) +
                      ": give a plain file name");
  }
}

// A file named on the command line that cannot be opened is a usage error now, before any
// device or connection work, rather than a failed entry after the connection is up.
void check_readable(const std::string& local, const std::string& given) {
  const Fd probe(::open(local.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!probe) throw unreadable(given, errno);
}

}  // namespace

SourceTree walk_sources(const std::vector<std::string>& paths, bool recursive,
                        const std::optional<std::string>& rename) {
  if (rename && paths.size() != 1) throw SourceError("--name needs exactly one PATH");
  if (rename) check_rename(*rename);
  SourceTree tree;
  TreeWalker walker(tree);
  std::map<std::string, std::string> local_by_remote;  // to refuse two PATHs for one name
  for (const std::string& given : paths) {
    const std::string local = without_trailing_slashes(given);
    struct stat st {};
    if (::lstat(local.c_str(), &st) != 0) {
      throw unreadable(given, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      tree.skipped.push_back(Skipped{local, "symbolic link"});
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      tree.skipped.push_back(Skipped{local, "special file (fifo/socket/device)"});
      continue;
    }
    if (S_ISDIR(st.st_mode) && !recursive) {
      throw SourceError(proto::quoted_for_log(given) +
                        " is a directory; use -r (--recursive) to send directories");
    }
    if (S_ISDIR(st.st_mode) && rename) {
      throw SourceError("--name renames a file; " + proto::quoted_for_log(given) +
                        " is a directory");
    }
    std::string remote = rename ? *rename : arrival_name(local);
    // A base name holds no '/', and --name was checked above.
    if (const auto problem = proto::check_relative_path(remote)) {
      throw SourceError("cannot send " + proto::quoted_for_log(given) + " as " +
                        proto::quoted_for_log(remote) + ": " + proto::describe(*problem) +
                        "; give it another name with --name");
    }
    if (const auto [it, added] = local_by_remote.emplace(remote, given); !added) {
      throw SourceError(proto::quoted_for_log(it->second) + " and " + proto::quoted_for_log(given) +
                        " would both arrive as " + proto::quoted_for_log(remote));
    }
    if (S_ISREG(st.st_mode)) {
      check_readable(local, given);
      walker.add_file(local, std::move(remote), st);
      continue;
    }
    Fd dir(::open(local.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) throw unreadable(given, errno);
    walker.add_directory(std::move(dir), local, remote);
  }
  sort_directories_deepest_first(tree);
  return tree;
}

void sort_largest_first(std::vector<SourceEntry>& files) {
  std::stable_sort(files.begin(), files.end(),
                   [](const SourceEntry& a, const SourceEntry& b) { return a.size > b.size; });
}

}  // namespace rdmax::sender
