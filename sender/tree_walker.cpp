#include "sender/tree_walker.hpp"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string_view>
#include <system_error>
#include <vector>

#include "protocol/names.hpp"
#include "protocol/paths.hpp"

namespace rdmax::sender {
namespace {

using Kind = SourceEntry::Kind;

SourceEntry entry_of(Kind kind, std::string local, std::string remote, const struct stat& st) {
  return SourceEntry{kind,
                     std::move(local),
                     std::move(remote),
                     kind == Kind::File ? static_cast<std::uint64_t>(st.st_size) : 0,
                     st.st_mode & 07777,
                     st.st_mtim};
}

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};
using DirStream = std::unique_ptr<DIR, DirCloser>;

// `a/b`, where an empty `a` is the top (a whole export's entries arrive as their own names).
std::string joined(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "/" + b;
}

}  // namespace

std::string error_text(int err) {
  return std::system_category().message(err);
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void TreeWalker::add_file(std::string local, std::string remote, const struct stat& st) {
  tree_.total_bytes += static_cast<std::uint64_t>(st.st_size);
  tree_.files.push_back(entry_of(Kind::File, std::move(local), std::move(remote), st));
}

void TreeWalker::add_directory(Fd dir, const std::string& local, const std::string& remote) {
  struct stat st {};
  if (add_entries(std::move(dir), local, remote, st))
    tree_.directories.push_back(entry_of(Kind::Directory, local, remote, st));
}

void TreeWalker::add_directory_alone(std::string local, std::string remote, const struct stat& st) {
  tree_.directories.push_back(entry_of(Kind::Directory, std::move(local), std::move(remote), st));
}

void TreeWalker::add_children(Fd dir, const std::string& local) {
  struct stat st {};
  (void)add_entries(std::move(dir), local, "", st);
}

bool TreeWalker::add_entries(Fd dir, const std::string& local, const std::string& remote,
                             struct stat& st) {
  const std::string shown = local.empty() ? "." : local;
  if (::fstat(dir.get(), &st) != 0) {
    skip(shown, "unreadable: " + error_text(errno));
    return false;
  }
  DirStream stream(::fdopendir(dir.get()));
  if (!stream) {
    skip(shown, "unreadable: " + error_text(errno));
    return false;
  }
  (void)dir.release();  // the stream owns it now

  std::vector<std::string> names;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(stream.get());
    if (entry == nullptr) break;
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) {
    skip(shown, "unreadable: " + error_text(errno));
    return false;
  }
  std::sort(names.begin(), names.end());  // char_traits compare: bytewise, unsigned

  for (const std::string& name : names)
    add_child(::dirfd(stream.get()), name, joined(local, name), joined(remote, name));
  return true;
}

void TreeWalker::skip(std::string local, std::string reason) {
  tree_.skipped.push_back(Skipped{std::move(local), std::move(reason)});
}

void TreeWalker::add_child(int parent_fd, const std::string& name, std::string local,
                           std::string remote) {
  // Also what bounds the recursion: a path too deep or too long is not descended into.
  if (const auto problem = proto::check_relative_path(remote)) {
    return skip(std::move(local), "name cannot be sent: " + proto::describe(*problem));
  }
  struct stat st {};
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return skip(std::move(local), "unreadable: " + error_text(errno));
  }
  if (S_ISREG(st.st_mode)) return add_file(std::move(local), std::move(remote), st);
  if (S_ISLNK(st.st_mode)) return skip(std::move(local), "symbolic link");
  if (!S_ISDIR(st.st_mode)) return skip(std::move(local), "special file (fifo/socket/device)");
  // O_NOFOLLOW: the directory may have been replaced by a symbolic link since fstatat.
  Fd dir(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return skip(std::move(local), "unreadable: " + error_text(errno));
  add_directory(std::move(dir), local, remote);
}

void sort_directories_deepest_first(SourceTree& tree) {
  // Children come before parents already; deepest first over the whole list also orders
  // directories of separate branches and separate PATHs.
  std::stable_sort(tree.directories.begin(), tree.directories.end(),
                   [](const SourceEntry& a, const SourceEntry& b) {
                     return std::count(a.remote_path.begin(), a.remote_path.end(), '/') >
                            std::count(b.remote_path.begin(), b.remote_path.end(), '/');
                   });
}

}  // namespace rdmax::sender
