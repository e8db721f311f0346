#include "common/cli/file_list_text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/cli/error_hints.hpp"
#include "common/os/fd.hpp"
#include "protocol/names.hpp"

namespace rdmax {

std::vector<ListedName> split_file_list(std::string_view text, bool nul_separated) {
  const char separator = nul_separated ? '\0' : '\n';
  std::vector<ListedName> names;
  std::size_t record = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    std::string_view name = text.substr(start, end - start);
    ++record;
    if (!nul_separated && name.ends_with('\r')) name.remove_suffix(1);
    if (!name.empty()) names.push_back({std::string(name), record});
    start = end + 1;
  }
  return names;
}

std::string read_file_list(const std::string& file) {
  const bool from_stdin = file == "-";
  const Fd opened(from_stdin ? -1 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!from_stdin && !opened) {
    throw FileListError("--files-from " + proto::quoted_for_log(file) + ": " +
                        cannot_read_text(errno));
  }
  const int fd = from_stdin ? STDIN_FILENO : opened.get();
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw FileListError(
          "--files-from " +
          std::string(from_stdin ? "- (standard input)" : proto::quoted_for_log(file)) + ": " +
          cannot_read_text(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace rdmax
