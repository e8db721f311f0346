#include "common/digest/sha256.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <stdexcept>

#include "common/error.hpp"
#include "common/os/aligned_buffer.hpp"
#include "common/os/mapping_guard.hpp"

namespace rdmax {
namespace {

// Large enough to amortise syscalls and keep readahead streaming, small enough to stay
// cache-friendly.
constexpr size_t kReadSize = 4 << 20;

[[noreturn]] void throw_openssl(const char* call) {
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  throw std::runtime_error(std::string(call) + ": " + text);
}

}  // namespace

void Sha256::CtxDeleter::operator()(evp_md_ctx_st* ctx) const noexcept {
  EVP_MD_CTX_free(ctx);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw_openssl("EVP_DigestInit_ex");
}

void Sha256::update(std::span<const uint8_t> data) {
  if (data.empty()) return;
  if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) {
    throw_openssl("EVP_DigestUpdate");
  }
}

void Sha256::update(std::span<const std::byte> data) {
  update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

Digest Sha256::finish() {
  Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length) != 1 || length != digest.size()) {
    throw_openssl("EVP_DigestFinal_ex");
  }
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw_openssl("EVP_DigestInit_ex");
  return digest;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 0xf]);
  }
  return text;
}

Digest sha256_of_file(int fd, uint64_t size, const std::function<void(uint64_t done)>& progress) {
  // Advisory only (doubles the readahead window); failure changes nothing but speed.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  AlignedBuffer buffer(
      static_cast<size_t>(std::min<uint64_t>(kReadSize, std::max<uint64_t>(size, 1))));
  Sha256 hash;
  uint64_t done = 0;
  while (done < size) {
    const auto want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - done));
    const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_sys("pread");
    }
    if (n == 0) {
      throw std::runtime_error("file shrank while hashing: expected " + std::to_string(size) +
                               " bytes, got " + std::to_string(done));
    }
    hash.update(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
    if (progress) progress(done);
  }
  return hash.finish();
}

Digest sha256_of_mapping(std::span<const uint8_t> mapping,
                         const std::function<void(uint64_t done)>& progress) {
  Sha256 hash;
  SigbusScope scope;
  struct Step {
    evp_md_ctx_st* ctx;
    std::span<const uint8_t> bytes;
    bool ok;
  };
  uint64_t done = 0;
  while (done < mapping.size()) {
    Step step{hash.context(),
              mapping.subspan(static_cast<size_t>(done), static_cast<size_t>(std::min<uint64_t>(
                                                             kReadSize, mapping.size() - done))),
              true};
    const bool read = read_mapping_guarded(
        step.bytes,
        [](void* context) {
          auto* s = static_cast<Step*>(context);
          s->ok = EVP_DigestUpdate(s->ctx, s->bytes.data(), s->bytes.size()) == 1;
        },
        &step);
    if (!read) {
      throw std::runtime_error("the file shrank while it was being hashed (" +
                               std::to_string(done) + " of " + std::to_string(mapping.size()) +
                               " bytes read)");
    }
    if (!step.ok) throw_openssl("EVP_DigestUpdate");
    done += step.bytes.size();
    if (progress) progress(done);
  }
  return hash.finish();
}

}  // namespace rdmax
