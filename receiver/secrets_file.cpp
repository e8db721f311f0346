#include "receiver/secrets_file.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <variant>

#include "common/fd.hpp"
#include "protocol/secure_wipe.hpp"

namespace rdmax::receiver {

namespace {

std::runtime_error file_error(const std::string& what, const std::string& path, int err) {
  return std::runtime_error(what + " secrets file " + path + ": " + std::strerror(err));
}

// The ids in the file are bearer credentials and the secrets are what they unlock: a file
// that anyone but its owner can read (or change) gives them away. Checked on the opened
// descriptor, so what is checked is what is read.
void check_permissions(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw file_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error("secrets file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw std::runtime_error("secrets file " + path + " has mode " + mode +
                             ": group and others must have no access to it; run `chmod 600 " +
                             path + "`");
  }
}

std::string read_all(int fd, const std::string& path) {
  std::string contents;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      proto::secure_wipe(contents.data(), contents.size());
      proto::secure_wipe(buffer, sizeof buffer);
      throw file_error("cannot read", path, err);
    }
    if (n == 0) break;
    if (contents.size() + static_cast<std::size_t>(n) > contents.capacity()) {
      // Grow by hand so no copy of the secrets is left behind in a freed block.
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

proto::SecretStore load_secrets_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) throw file_error("cannot read", path, errno);
  check_permissions(fd.get(), path);
  std::string contents = read_all(fd.get(), path);
  auto parsed = proto::SecretStore::parse(contents);
  // The file's text held every secret; it does not outlive the parse.
  proto::secure_wipe(contents.data(), contents.size());
  if (auto* err = std::get_if<proto::SecretsParseError>(&parsed))
    throw std::runtime_error(path + ":" + std::to_string(err->line) + ": " + err->what);
  auto& store = std::get<proto::SecretStore>(parsed);
  // Valid, as a way to deny everyone, but more likely a mistake (the wrong file, or every
  // line commented out): say so instead of quietly denying every id.
  if (store.size() == 0) {
    spdlog::warn("secrets file {} lists no ids: every id will be denied", path);
  }
  return std::move(store);
}

}  // namespace rdmax::receiver
