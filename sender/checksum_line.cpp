#include "sender/checksum_line.hpp"

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

// Rust's String::from_utf8_lossy: each maximal prefix of a well-formed sequence that cannot
// be completed, and each byte that cannot start one, becomes U+FFFD (Unicode's "substitution
// of maximal subparts").
std::string utf8_lossy(const std::string& path) {
  static const std::string kReplacement = "\xef\xbf\xbd";
  std::string out;
  std::size_t i = 0;
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(path[at]); };
  while (i < path.size()) {
    const unsigned char lead = byte(i);
    std::size_t need = 0;
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range
    if (lead < 0x80) {
      out += path[i++];
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      need = 1;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      need = 2;
      if (lead == 0xe0) low = 0xa0;
      if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      need = 3;
      if (lead == 0xf0) low = 0x90;
      if (lead == 0xf4) high = 0x8f;
    } else {
      out += kReplacement;
      ++i;
      continue;
    }
    std::size_t good = 1;
    while (good <= need && i + good < path.size()) {
      const unsigned char c = byte(i + good);
      const bool fits = good == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xbf);
      if (!fits) break;
      ++good;
    }
    if (good == need + 1) {
      out.append(path, i, good);
    } else {
      out += kReplacement;
    }
    i += good;
  }
  return out;
}

std::string escaped_for_b3sum(const std::string& path, bool& escaped) {
  std::string text;
  escaped = false;
  for (char c : utf8_lossy(path)) {
    if (c == '\\') {
      text += "\\\\";
    } else if (c == '\n') {
      text += "\\n";
    } else {
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
    case ChecksumFormat::B3sum: {
      bool escaped = false;
      std::string name = escaped_for_b3sum(path, escaped);
      return (escaped ? "\\" : "") + to_hex(digest) + "  " + name;
    }
  }
  return {};
}

}  // namespace rdmax
