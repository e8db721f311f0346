#include "common/crypto/auth_proof.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "common/digest/sha256.hpp"

namespace rdmax {

proto::Digest hmac_sha256(std::string_view key, std::span<const std::uint8_t> data) {
  proto::Digest mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
           mac.data(), &length) == nullptr ||
      length != mac.size())
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  return mac;
}

proto::Digest transcript_hash(const proto::Message& claiming, const proto::Challenge& challenge) {
  Sha256 transcript;
  transcript.update(std::span<const std::uint8_t>(proto::auth_transcript(claiming, challenge)));
  return transcript.finish();
}

proto::Digest auth_proof(proto::ProofRole role, std::string_view key, const proto::Digest& hash) {
  const std::string_view label = proto::proof_label(role);
  std::vector<std::uint8_t> input(label.begin(), label.end());
  input.insert(input.end(), hash.begin(), hash.end());
  return hmac_sha256(key, input);
}

proto::Nonce fresh_nonce() {
  proto::Nonce nonce{};
  std::size_t filled = 0;
  while (filled < nonce.size()) {
    const ssize_t n = ::getrandom(nonce.data() + filled, nonce.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "getrandom");
    filled += static_cast<std::size_t>(n);
  }
  return nonce;
}

bool same_proof(const proto::Digest& expected, const proto::Digest& actual) {
  return CRYPTO_memcmp(expected.data(), actual.data(), expected.size()) == 0;
}

}  // namespace rdmax
