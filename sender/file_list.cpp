#include "sender/file_list.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <unordered_set>

#include "common/cli/error_hints.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"
#include "protocol/paths.hpp"

namespace rdmax::sender {
namespace {

using Kind = SourceEntry::Kind;

// The components of `path` that name something: no empty ones (from "//" or a leading or
// trailing '/') and no ".".
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, slash - start);
    if (!part.empty() && part != ".") parts.push_back(part);
    start = slash + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string_view>& parts, std::size_t from) {
  std::string path;
  for (std::size_t i = from; i < parts.size(); ++i) {
    if (!path.empty()) path += '/';
    path += parts[i];
  }
  return path;
}

SourceEntry entry_of(Kind kind, const ListedPath& where, const struct stat& st) {
  SourceEntry e;
  e.kind = kind;
  e.local_path = where.local;
  e.remote_path = where.remote;
  e.size = kind == Kind::File ? static_cast<std::uint64_t>(st.st_size) : 0;
  e.mode = st.st_mode & 07777;
  e.mtime = st.st_mtim;
  return e;
}

std::string local_of(std::string_view base, std::string_view remote) {
  return base == "/" ? "/" + std::string(remote) : std::string(base) + "/" + std::string(remote);
}

// Builds the tree from the mapped names, one at a time.
class ListWalk {
 public:
  explicit ListWalk(std::string base) : base_(std::move(base)) {}

  void add(const ListedPath& where) {
    if (where.remote.empty() || !seen_.insert(where.remote).second) return;
    if (const auto problem = proto::check_relative_path(where.remote)) {
      return skip(where.local, "name cannot be sent: " + proto::describe(*problem));
    }
    add_parents(where.remote);
    struct stat st {};
    if (::lstat(where.local.c_str(), &st) != 0) return add_unreadable(where, errno);
    if (S_ISLNK(st.st_mode)) return skip(where.local, "symbolic link");
    if (S_ISDIR(st.st_mode)) return add_directory(entry_of(Kind::Directory, where, st));
    if (!S_ISREG(st.st_mode)) return skip(where.local, "special file (fifo/socket/device)");
    // Opened now, as a PATH is, so that an unreadable file is reported as such from the start.
    const Fd probe(::open(where.local.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!probe) return add_unreadable(where, errno);
    tree_.total_bytes += static_cast<std::uint64_t>(st.st_size);
    tree_.files.push_back(entry_of(Kind::File, where, st));
  }

  SourceTree finish() {
    for (auto& [path, entry] : directories_) tree_.directories.push_back(std::move(entry));
    // Deepest first: a directory's time is set after its children are made (as in a walk).
    std::stable_sort(tree_.directories.begin(), tree_.directories.end(),
                     [](const SourceEntry& a, const SourceEntry& b) {
                       return std::count(a.remote_path.begin(), a.remote_path.end(), '/') >
                              std::count(b.remote_path.begin(), b.remote_path.end(), '/');
                     });
    return std::move(tree_);
  }

 private:
  void skip(std::string local, std::string reason) {
    tree_.skipped.push_back(Skipped{std::move(local), std::move(reason)});
  }

  void add_unreadable(const ListedPath& where, int err) {
    SourceEntry e;
    e.local_path = where.local;
    e.remote_path = where.remote;
    e.unreadable = cannot_read_text(err);
    tree_.files.push_back(std::move(e));
  }

  void add_directory(SourceEntry entry) {
    const std::string key = entry.remote_path;
    directories_.emplace(key, std::move(entry));
  }

  // The directories between base and a listed name, with their own modes and times. One that
  // is not a directory here (a link, gone) is not offered: the receiver makes it, 0700.
  void add_parents(const std::string& remote) {
    for (std::size_t slash = remote.find('/'); slash != std::string::npos;
         slash = remote.find('/', slash + 1)) {
      const std::string parent = remote.substr(0, slash);
      if (!parents_.insert(parent).second) continue;
      const ListedPath where{local_of(base_, parent), parent};
      struct stat st {};
      if (::lstat(where.local.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        add_directory(entry_of(Kind::Directory, where, st));
    }
  }

  std::string base_;
  SourceTree tree_;
  std::unordered_set<std::string> seen_;     // listed remote paths
  std::unordered_set<std::string> parents_;  // directories looked at for add_parents
  std::map<std::string, SourceEntry> directories_;
};

}  // namespace

std::variant<ListedPath, std::string> map_listed_name(std::string_view name,
                                                      std::string_view base) {
  const std::vector<std::string_view> parts = components(name);
  if (std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    return std::string(
        "holds a \"..\" component: a listed name must lie beneath --base, "
        "without going up");
  }
  std::size_t from = 0;
  if (name.starts_with('/')) {
    const std::vector<std::string_view> base_parts = components(base);
    if (parts.size() < base_parts.size() ||
        !std::equal(base_parts.begin(), base_parts.end(), parts.begin())) {
      return "is not beneath --base " + proto::quoted_for_log(base) +
             ": an absolute name must lie beneath it (give --base the directory the list was "
             "made from)";
    }
    from = base_parts.size();
  }
  ListedPath where;
  where.remote = joined(parts, from);
  where.local = local_of(base, where.remote);
  return where;
}

std::string absolute_base(const std::string& base) {
  std::filesystem::path path(base.empty() ? "." : base);
  if (path.is_relative()) path = std::filesystem::current_path() / path;
  std::string normal = path.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

SourceTree walk_file_list(const std::vector<ListedName>& names, const std::string& base) {
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) {
    throw SourceError("--base " + proto::quoted_for_log(base) + ": " + cannot_read_text(errno));
  }
  if (!S_ISDIR(st.st_mode))
    throw SourceError("--base " + proto::quoted_for_log(base) + " is not a directory");
  // A list may name files by the real path of a base given through a symbolic link
  // (dwalk prints what it walked): beneath either is beneath.
  const std::unique_ptr<char, decltype(&::free)> real(::realpath(base.c_str(), nullptr), &::free);
  const std::string canonical = real ? real.get() : base;
  ListWalk walk(base);
  for (const ListedName& listed : names) {
    auto where = map_listed_name(listed.name, base);
    if (std::holds_alternative<std::string>(where) && canonical != base) {
      if (auto again = map_listed_name(listed.name, canonical);
          std::holds_alternative<ListedPath>(again)) {
        where = ListedPath{local_of(base, std::get<ListedPath>(again).remote),
                           std::get<ListedPath>(again).remote};
      }
    }
    if (const auto* error = std::get_if<std::string>(&where)) {
      throw SourceError("--files-from, entry " + std::to_string(listed.record) + " " +
                        proto::quoted_for_log(listed.name) + " " + *error);
    }
    walk.add(std::get<ListedPath>(where));
  }
  return walk.finish();
}

}  // namespace rdmax::sender
