#pragma once
// How a directory tree becomes a SourceTree, shared by what the sender's command line names
// (sender/source_tree.hpp) and what a fetch server's export holds (sender/export_tree.hpp).
// Children are listed sorted bytewise and visited through fds opened with O_NOFOLLOW, so a
// directory swapped for a symbolic link during the walk is not followed; symbolic links,
// special files, names that cannot be sent and what cannot be read are listed in `skipped`.

#include <sys/stat.h>

#include <string>

#include "common/os/fd.hpp"
#include "sender/source_tree.hpp"

namespace rdmax::sender {

// The message of an errno, for the user.
std::string error_text(int err);
// The PATH without trailing slashes ("dir/" and "dir" are the same source); "/" stays.
std::string without_trailing_slashes(std::string path);

class TreeWalker {
 public:
  explicit TreeWalker(SourceTree& tree) : tree_(tree) {}

  void add_file(std::string local, std::string remote, const struct stat& st);
  // `dir` is open on the directory; its entries are added, then the directory itself (so a
  // directory follows its children), unless it cannot be listed.
  void add_directory(Fd dir, const std::string& local, const std::string& remote);
  // The directory alone, without its entries: a listed one, or one above a listed path (a
  // fetch's --files-from), for its mode and time.
  void add_directory_alone(std::string local, std::string remote, const struct stat& st);
  // Only its entries, each arriving as its own name (a fetch of a whole export).
  void add_children(Fd dir, const std::string& local);
  // The entry `name` of the directory `parent_fd`, whatever it is.
  void add_child(int parent_fd, const std::string& name, std::string local, std::string remote);

 private:
  void skip(std::string local, std::string reason);
  // Lists `dir` and adds each entry; false (and skipped) if it cannot be listed.
  bool add_entries(Fd dir, const std::string& local, const std::string& remote, struct stat& st);

  SourceTree& tree_;
};

// Deepest first: a directory's modification time is set after its children are created.
void sort_directories_deepest_first(SourceTree& tree);

}  // namespace rdmax::sender
