#pragma once
// A --files-from LIST as text (issue 24 for rdma-send, 52 for rdma-recv --from): the names it
// holds, one a line, or NUL-separated as `find -print0`, fpart or mpifileutils' dwalk write
// them. What the names mean is each program's: rdma-send's are beneath its --base
// (sender/file_list.hpp), a fetch's within the server's export (receiver/fetch_list.hpp).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rdmax {

struct ListedName {
  std::string name;
  std::size_t record = 0;  // 1-based: the line (or NUL-separated record) it came from
};

// The names of a list. `nul_separated` (-0): records end at NUL bytes, and a name may hold
// any other byte, newlines too. Else records end at '\n', and one '\r' before it is dropped
// (a list written on Windows; a name that ends in CR needs -0). Empty records (blank lines,
// a trailing separator, "\n\n") are skipped; nothing else is trimmed: spaces are part of the
// name.
[[nodiscard]] std::vector<ListedName> split_file_list(std::string_view text, bool nul_separated);

// The list cannot be read; the message is for the user as it stands.
class FileListError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole list: FILE, or standard input for "-". Throws FileListError when it cannot be
// read.
[[nodiscard]] std::string read_file_list(const std::string& file);

}  // namespace rdmax
