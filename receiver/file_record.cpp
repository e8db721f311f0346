#include "receiver/file_record.hpp"

#include <fcntl.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/digest/file_digest.hpp"
#include "common/digest/sha256.hpp"
#include "common/os/fd.hpp"
#include "protocol/wire_codec.hpp"

namespace rdmax::receiver {

namespace {
constexpr const char* kAttribute = "user.rdmax.digest";
constexpr std::uint8_t kRecordFormat = 1;
// format, algorithm, digest, size, mtime_sec, mtime_nsec (little-endian)
constexpr std::size_t kBytes = 1 + 1 + 32 + 8 + 8 + 4;

void put(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
}  // namespace

std::optional<FileRecord> read_record(int fd) {
  std::uint8_t raw[kBytes + 1];
  const ssize_t n = ::fgetxattr(fd, kAttribute, raw, sizeof raw);
  if (n != static_cast<ssize_t>(kBytes) || raw[0] != kRecordFormat) return std::nullopt;
  FileRecord r;
  r.algorithm = static_cast<proto::DigestAlgorithm>(raw[1]);
  if (!proto::codec::is_known_for_session(r.algorithm)) return std::nullopt;
  std::memcpy(r.digest.data(), raw + 2, 32);
  r.size = get(raw + 34, 8);
  r.mtime_sec = static_cast<std::int64_t>(get(raw + 42, 8));
  r.mtime_nsec = static_cast<std::uint32_t>(get(raw + 50, 4));
  return r;
}

bool write_record(int fd, const FileRecord& record) {
  std::vector<std::uint8_t> raw{kRecordFormat, static_cast<std::uint8_t>(record.algorithm)};
  raw.insert(raw.end(), record.digest.begin(), record.digest.end());
  put(raw, record.size, 8);
  put(raw, static_cast<std::uint64_t>(record.mtime_sec), 8);
  put(raw, record.mtime_nsec, 4);
  return ::fsetxattr(fd, kAttribute, raw.data(), raw.size(), 0) == 0;
}

bool record_matches(const FileRecord& record, const struct stat& st) {
  return record.size == static_cast<std::uint64_t>(st.st_size) &&
         record.mtime_sec == st.st_mtim.tv_sec &&
         record.mtime_nsec == static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
}

proto::Digest digest_of_file(int fd, std::uint64_t size, proto::DigestAlgorithm algorithm) {
  if (algorithm != proto::DigestAlgorithm::WholeFileSha256)
    return tree_digest_of_file(algorithm, fd, size, 1);
  return sha256_of_file(fd, size);
}

std::optional<proto::Digest> current_digest(int parent_fd, const std::string& name,
                                            std::uint64_t size, proto::DigestAlgorithm algorithm) {
  // O_NONBLOCK: a FIFO planted under the name must not block the open.
  const Fd fd(::openat(parent_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;  // missing, or a link: the create that follows says what it must
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) != size)
    return std::nullopt;
  const auto record = read_record(fd.get());
  if (record && record->algorithm == algorithm && record_matches(*record, st))
    return record->digest;
  const Digest digest = digest_of_file(fd.get(), size, algorithm);
  // Recorded only if the file did not change while it was read.
  struct stat after {};
  if (::fstat(fd.get(), &after) == 0 && after.st_size == st.st_size &&
      after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
    (void)write_record(fd.get(), FileRecord{algorithm, digest, size, st.st_mtim.tv_sec,
                                            static_cast<std::uint32_t>(st.st_mtim.tv_nsec)});
  return digest;
}

bool is_identical_file(int parent_fd, const std::string& name, std::uint64_t size,
                       proto::DigestAlgorithm algorithm, const proto::Digest& digest_offered) {
  const auto digest = current_digest(parent_fd, name, size, algorithm);
  return digest && *digest == digest_offered;
}

}  // namespace rdmax::receiver
