#include "common/os/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/os/fd.hpp"
#include "protocol/secure_wipe.hpp"

namespace rdmax {
namespace {

std::runtime_error file_error(const std::string& failed, std::string_view what,
                              const std::string& path, int err) {
  return std::runtime_error(failed + " " + std::string(what) + " " + path + ": " +
                            std::strerror(err));
}

// The file holds credentials: one that anyone but its owner can read (or change) gives them
// away. Checked on the opened descriptor, so what is checked is what is read.
void check_permissions(int fd, const std::string& path, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw file_error("cannot stat", what, path, errno);
  const std::string named = std::string(what) + " " + path;
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(named + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw std::runtime_error(named + " has mode " + mode +
                             ": group and others must have no access to it; run `chmod 600 " +
                             path + "`");
  }
}

std::string read_all(int fd, const std::string& path, std::string_view what) {
  std::string contents;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      proto::secure_wipe(contents.data(), contents.size());
      proto::secure_wipe(buffer, sizeof buffer);
      throw file_error("cannot read", what, path, err);
    }
    if (n == 0) break;
    if (contents.size() + static_cast<std::size_t>(n) > contents.capacity()) {
      // Grow by hand so no copy of the credentials is left behind in a freed block.
      std::string bigger;
      bigger.reserve(2 * (contents.size() + static_cast<std::size_t>(n)));
      bigger.assign(contents);
      proto::secure_wipe(contents.data(), contents.size());
      contents.swap(bigger);
    }
    contents.append(buffer, static_cast<std::size_t>(n));
  }
  proto::secure_wipe(buffer, sizeof buffer);
  return contents;
}

}  // namespace

std::string read_private_file(const std::string& path, std::string_view what) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) throw file_error("cannot read", what, path, errno);
  check_permissions(fd.get(), path, what);
  return read_all(fd.get(), path, what);
}

}  // namespace rdmax
