#include "common/checksum_line.hpp"

namespace rdmax {
namespace {

// coreutils' escaping for sha256sum: only these three characters, so that one line stays
// one line and the backslash stays unambiguous.
std::string escaped_for_sha256sum(const std::string& path, bool& escaped) {
  std::string text;
  text.reserve(path.size());
  escaped = false;
  for (char c : path) {
    switch (c) {
      case '\\':
        text += "\\\\";
        break;
      case '\n':
        text += "\\n";
        break;
      case '\r':
        text += "\\r";
        break;
      default:
        text += c;
        continue;
    }
    escaped = true;
  }
  return text;
}

}  // namespace

std::string checksum_line(ChecksumFormat format, const Digest& digest, const std::string& path) {
  switch (format) {
    case ChecksumFormat::FsVerity:
      return "sha256:" + to_hex(digest) + ' ' + path;
    case ChecksumFormat::Sha256: {
      bool escaped = false;
      std::string name = escaped_for_sha256sum(path, escaped);
      return (escaped ? "\\" : "") + to_hex(digest) + "  " + name;
    }
  }
  return {};
}

}  // namespace rdmax
