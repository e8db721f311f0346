#include "sender/source_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"

namespace rdmax::sender {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

SourceEntry entry_of(SourceEntry::Kind kind, std::string local, std::string remote,
                     const struct stat& st) {
  SourceEntry e;
  e.kind = kind;
  e.local_path = std::move(local);
  e.remote_path = std::move(remote);
  e.size = kind == SourceEntry::Kind::File ? static_cast<std::uint64_t>(st.st_size) : 0;
  e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  e.mtime = st.st_mtim;
  return e;
}

// What a PATH arrives as: its last component, ignoring trailing slashes; "." and ".."
// are named after the directory they stand for.
std::string base_name_of(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  std::string base = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
  if (base == "." || base == ".." || base.empty()) {
    char* real = ::realpath(p.c_str(), nullptr);
    if (real == nullptr) return {};
    const std::string r = real;
    std::free(real);
    base = r.substr(r.rfind('/') + 1);  // "" for "/"
  }
  return base;
}

class Walker {
 public:
  explicit Walker(SourceTree& tree) : tree_(tree) {}

  // The directory open as `dir_fd`, known as `local` here and `remote` at the receiver.
  void walk(int dir_fd, const std::string& local, const std::string& remote) {
    DIR* stream = ::fdopendir(dir_fd);
    if (stream == nullptr) {
      ::close(dir_fd);
      return skip(local, "unreadable: " + errno_text(errno));
    }
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* d = ::readdir(stream)) {
      const std::string name = d->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    const int read_error = errno;
    std::sort(names.begin(), names.end());
    for (const auto& name : names)
      visit(::dirfd(stream), local + "/" + name, remote + "/" + name, name);
    ::closedir(stream);
    if (read_error != 0) skip(local, "unreadable (partly): " + errno_text(read_error));
  }

  void visit(int parent_fd, const std::string& local, const std::string& remote,
             const std::string& name) {
    struct stat st {};
    if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return skip(local, "unreadable: " + errno_text(errno));
    if (auto problem = proto::check_relative_path(remote))
      return skip(local, "name cannot be sent: " + proto::describe(*problem));
    if (S_ISLNK(st.st_mode)) return skip(local, "symbolic link");
    if (S_ISREG(st.st_mode)) return add_file(entry_of(SourceEntry::Kind::File, local, remote, st));
    if (!S_ISDIR(st.st_mode)) return skip(local, "special file");
    const int fd =
        ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return skip(local, "unreadable: " + errno_text(errno));
    const SourceEntry dir = entry_of(SourceEntry::Kind::Directory, local, remote, st);
    walk(fd, local, remote);
    tree_.directories.push_back(dir);  // after its children: deepest first
  }

  void add_file(SourceEntry e) {
    tree_.total_bytes += e.size;
    tree_.files.push_back(std::move(e));
  }
  void skip(const std::string& local, std::string reason) {
    tree_.skipped.push_back({local, std::move(reason)});
  }

 private:
  SourceTree& tree_;
};

}  // namespace

SourceTree walk_sources(const std::vector<std::string>& paths, bool recursive,
                        const std::optional<std::string>& rename) {
  if (rename && paths.size() != 1)
    throw SourceError("--name renames a single FILE; " + std::to_string(paths.size()) +
                      " PATHs were given");
  SourceTree tree;
  Walker walker(tree);
  std::set<std::string> names;
  for (const auto& path : paths) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
      throw SourceError("cannot read " + path + ": " + errno_text(errno));
    if (S_ISDIR(st.st_mode) && !recursive)
      throw SourceError(path + " is a directory; use -r (--recursive) to send directories");
    if (S_ISDIR(st.st_mode) && rename)
      throw SourceError("--name renames a file, and " + path + " is a directory");
    const std::string remote = rename ? *rename : base_name_of(path);
    if (remote.empty()) throw SourceError("cannot send " + path + ": it has no name to arrive as");
    if (auto error = proto::check_file_name(remote))
      throw SourceError("cannot send " + path + ": its name breaks the receiver's rule (" +
                        proto::to_string(*error) + ")");
    if (!names.insert(remote).second)
      throw SourceError("two PATHs would arrive as '" + proto::escape_for_log(remote) +
                        "'; send them separately or rename one with --name");
    if (S_ISLNK(st.st_mode)) {
      walker.skip(path, "symbolic link");
    } else if (S_ISREG(st.st_mode)) {
      walker.add_file(entry_of(SourceEntry::Kind::File, path, remote, st));
    } else if (S_ISDIR(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) throw SourceError("cannot read " + path + ": " + errno_text(errno));
      const SourceEntry dir = entry_of(SourceEntry::Kind::Directory, path, remote, st);
      std::string local = path;
      while (local.size() > 1 && local.back() == '/') local.pop_back();
      walker.walk(fd, local, remote);
      tree.directories.push_back(dir);
    } else {
      walker.skip(path, "special file");
    }
  }
  return tree;
}

}  // namespace rdmax::sender
