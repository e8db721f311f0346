#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

// OpenSSL's EVP_MD_CTX, kept out of this header so users do not include OpenSSL.
struct evp_md_ctx_st;

namespace rdmax {

using Digest = std::array<uint8_t, 32>;

// Incremental SHA-256 over OpenSSL EVP (which picks the SHA-NI/AVX code paths).
class Sha256 {
 public:
  Sha256();

  void update(std::span<const uint8_t> data);
  void update(std::span<const std::byte> data);

  // Returns the digest of everything fed so far and resets for reuse.
  Digest finish();
  // The OpenSSL context, for a guarded read of a mapping (common/os/mapping_guard.hpp).
  evp_md_ctx_st* context() const { return ctx_.get(); }

 private:
  struct CtxDeleter {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, CtxDeleter> ctx_;
};

// Lower-case hex.
std::string to_hex(std::span<const uint8_t> bytes);

// Hashes the first `size` bytes of `fd` with large sequential preads (independent of the
// file offset). `progress`, if set, is called with the bytes hashed so far after each read.
// Throws if the file is shorter than `size` (it shrank while being read).
Digest sha256_of_file(int fd, uint64_t size,
                      const std::function<void(uint64_t done)>& progress = {});

// Hashes a read-only file mapping in place: no copy through a buffer, which under
// emulation (and on slow memory) is a sixth of the pass. A file truncated while it is
// hashed makes the lost pages raise SIGBUS; that is caught for the duration of the call
// and reported as an exception ("the file shrank while it was being hashed") instead of
// killing the process. `progress` as above, every 4 MiB.
Digest sha256_of_mapping(std::span<const uint8_t> mapping,
                         const std::function<void(uint64_t done)>& progress = {});

}  // namespace rdmax
