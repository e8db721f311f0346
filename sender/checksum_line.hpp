#pragma once
// The line a checksum tool prints for a file, so that a user can check what rdmax reports
// against the tool, or feed rdmax's lines to `sha256sum -c`.

#include <string>

#include "common/digest/sha256.hpp"

namespace rdmax {

enum class ChecksumFormat {
  // `fsverity digest --hash-alg=sha256 --block-size=4096 PATH`: "sha256:<hex> <path>",
  // the path written as it is (fsverity-utils does not escape it).
  FsVerity,
  // `sha256sum PATH`: "<hex>  <path>". As in coreutils (9.0 and later), a path holding a
  // backslash, newline or carriage return is written with those as \\, \n and \r, and the
  // line then starts with a backslash.
  Sha256,
  // `b3sum PATH` (1.x): "<hex>  <path>". A path holding a backslash or newline is written
  // with those as \\ and \n, and the line then starts with a backslash (carriage returns
  // stay as they are); a path that is not UTF-8 has each invalid sequence replaced by
  // U+FFFD, as Rust's lossy conversion does.
  B3sum,
};

// The line without its trailing newline.
std::string checksum_line(ChecksumFormat format, const Digest& digest, const std::string& path);

}  // namespace rdmax
