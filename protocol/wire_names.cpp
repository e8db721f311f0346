// The names of the wire format's codes, for logs and diagnostics (protocol/wire.hpp).

#include "protocol/wire.hpp"

namespace rdmax::proto {

const char* to_string(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::WholeFileSha256:
      return "sha256";
    case DigestAlgorithm::FsVeritySha256:
      return "fsverity-sha256";
    case DigestAlgorithm::Blake3:
      return "blake3";
  }
  return "unknown";
}

const char* to_string(EntryKind kind) {
  switch (kind) {
    case EntryKind::File:
      return "file";
    case EntryKind::Directory:
      return "directory";
  }
  return "unknown";
}

}  // namespace rdmax::proto
