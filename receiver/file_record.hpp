#pragma once
// What the receiver remembers of a file it committed: the digest, by algorithm, together
// with the size and modification time the file had then, in the extended attribute
// `user.rdmax.digest`. A later offer of the same path, size and digest is answered from it
// (Have, docs/PROTOCOL.md 7.6) while the file still has that size and time; otherwise the
// file is hashed again. Where the file system keeps no user attributes (tmpfs before Linux
// 6.6) nothing is recorded and the file is always hashed.

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/wire.hpp"

namespace rdmax::receiver {

struct FileRecord {
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  proto::Digest digest{};
  std::uint64_t size = 0;
  std::int64_t mtime_sec = 0;
  std::uint32_t mtime_nsec = 0;
  bool operator==(const FileRecord&) const = default;
};

// The record of the open file, if it has a well-formed one.
[[nodiscard]] std::optional<FileRecord> read_record(int fd);
// Records it; false where the file system keeps no user attributes (or refuses them).
bool write_record(int fd, const FileRecord& record);
// Whether the record still describes the file: the same size and modification time.
[[nodiscard]] bool record_matches(const FileRecord& record, const struct stat& st);
// The digest of the first `size` bytes of the open file, by `algorithm` (one thread).
[[nodiscard]] proto::Digest digest_of_file(int fd, std::uint64_t size,
                                           proto::DigestAlgorithm algorithm);
// The digest by `algorithm` of `name` under `parent_fd` if it is a regular file of `size`
// bytes: by its record while that is current, else by hashing it (and recording what was
// found, for the next time, if the file did not change meanwhile). None for a missing file,
// a link, anything but a regular file, or another size.
[[nodiscard]] std::optional<proto::Digest> current_digest(int parent_fd, const std::string& name,
                                                          std::uint64_t size,
                                                          proto::DigestAlgorithm algorithm);
// Whether `name` under `parent_fd` is a regular file of `size` bytes whose digest by
// `algorithm` is `digest`: by its record while that is current, else by hashing it (and
// recording what was found, for the next time, if the file did not change meanwhile). A
// missing file, a link or anything but a regular file is not identical.
[[nodiscard]] bool is_identical_file(int parent_fd, const std::string& name, std::uint64_t size,
                                     proto::DigestAlgorithm algorithm, const proto::Digest& digest);

}  // namespace rdmax::receiver
