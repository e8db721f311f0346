#include "common/crypto/seal.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

namespace rdmax {
namespace {

struct FreeContext {
  void operator()(EVP_CIPHER_CTX* context) const noexcept { EVP_CIPHER_CTX_free(context); }
};
using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, FreeContext>;

// A context keyed for AES-256-GCM with the nonce of `counter`, the associated data taken.
CipherContext gcm_context(bool encrypt, const proto::SealKey& key, std::uint64_t counter,
                          std::span<const std::uint8_t> aad) {
  CipherContext context(EVP_CIPHER_CTX_new());
  const proto::SealNonce nonce = proto::seal_nonce(counter);
  int ignored = 0;
  // The default IV length of GCM in EVP is 12 bytes, the nonce's.
  if (!context ||
      EVP_CipherInit_ex(context.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce.data(),
                        encrypt ? 1 : 0) != 1 ||
      (!aad.empty() && EVP_CipherUpdate(context.get(), nullptr, &ignored, aad.data(),
                                        static_cast<int>(aad.size())) != 1))
    throw std::runtime_error("AES-256-GCM set-up failed (OpenSSL)");
  return context;
}

// EVP takes lengths as int: a chunk is at most a slot (far below 2 GiB), but go in steps.
void crypt(EVP_CIPHER_CTX* context, std::span<const std::uint8_t> in, std::span<std::uint8_t> out) {
  if (in.size() != out.size()) throw std::invalid_argument("AES-256-GCM: lengths differ");
  constexpr std::size_t kStep = std::size_t{1} << 30;
  for (std::size_t at = 0; at < in.size(); at += kStep) {
    const int length = static_cast<int>(std::min(kStep, in.size() - at));
    int written = 0;
    if (EVP_CipherUpdate(context, out.data() + at, &written, in.data() + at, length) != 1 ||
        written != length)
      throw std::runtime_error("AES-256-GCM failed (OpenSSL)");
  }
}

// HMAC-SHA256(key, data) written straight into `out`: the PRK and the keys of HKDF never
// pass through a plain array that nobody wipes.
void hmac_into(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data,
               proto::SealKey& out) {
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
           out.data(), &length) == nullptr ||
      length != out.size())
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
}

}  // namespace

proto::SealKey hkdf_sha256(std::span<const std::uint8_t> salt, std::span<const std::uint8_t> ikm,
                           std::span<const std::uint8_t> info) {
  proto::SealKey prk;
  hmac_into(salt, ikm, prk);
  std::vector<std::uint8_t> block(info.begin(), info.end());
  block.push_back(0x01);  // T(1) of HKDF-Expand: one block is the whole 32-byte key
  proto::SealKey key;
  hmac_into(std::span<const std::uint8_t>(prk.data(), prk.size()), block, key);
  return key;  // prk wipes itself here
}

proto::SealKey derive_seal_key(std::string_view key, const proto::Digest& transcript,
                               proto::SealPurpose purpose) {
  const std::string_view label = proto::seal_label(purpose);
  return hkdf_sha256(transcript,
                     std::span(reinterpret_cast<const std::uint8_t*>(key.data()), key.size()),
                     std::span(reinterpret_cast<const std::uint8_t*>(label.data()), label.size()));
}

SealKeys derive_seal_keys(std::string_view key, const proto::Digest& transcript) {
  using P = proto::SealPurpose;
  return {derive_seal_key(key, transcript, P::MessagesToReceiver),
          derive_seal_key(key, transcript, P::MessagesToSender),
          derive_seal_key(key, transcript, P::ChunksToReceiver)};
}

proto::SealTag seal_in_place(const proto::SealKey& key, std::uint64_t counter,
                             std::span<const std::uint8_t> aad, std::span<std::uint8_t> data) {
  return seal_into(key, counter, aad, data, data);
}

proto::SealTag seal_into(const proto::SealKey& key, std::uint64_t counter,
                         std::span<const std::uint8_t> aad, std::span<const std::uint8_t> plain,
                         std::span<std::uint8_t> out) {
  CipherContext context = gcm_context(true, key, counter, aad);
  crypt(context.get(), plain, out);
  proto::SealTag tag{};
  int ignored = 0;
  if (EVP_EncryptFinal_ex(context.get(), nullptr, &ignored) != 1 ||
      EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag.size()),
                          tag.data()) != 1)
    throw std::runtime_error("AES-256-GCM tag failed (OpenSSL)");
  return tag;
}

bool open_in_place(const proto::SealKey& key, std::uint64_t counter,
                   std::span<const std::uint8_t> aad, std::span<std::uint8_t> data,
                   const proto::SealTag& tag) {
  CipherContext context = gcm_context(false, key, counter, aad);
  crypt(context.get(), data, data);
  proto::SealTag expected = tag;
  int ignored = 0;
  if (EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(expected.size()),
                          expected.data()) != 1)
    throw std::runtime_error("AES-256-GCM tag failed (OpenSSL)");
  // The tag comparison is OpenSSL's, in constant time.
  return EVP_DecryptFinal_ex(context.get(), nullptr, &ignored) == 1;
}

proto::Sealed MessageSeal::seal(const proto::Message& message) {
  std::vector<std::uint8_t> bytes = proto::encode(message, proto::kVersion2);
  if (bytes.empty() || std::holds_alternative<proto::Sealed>(message) ||
      proto::kHeaderSize + 2 + bytes.size() + proto::kSealTagBytes > proto::kMaxMessageSize)
    throw std::invalid_argument(std::string("cannot seal a ") +
                                proto::to_string(proto::type_of(message)));
  const auto header = proto::sealed_header(bytes.size() + proto::kSealTagBytes);
  const proto::SealTag tag = seal_in_place(send_, sent_++, header, bytes);
  proto::Sealed sealed;
  sealed.box.reserve(bytes.size() + tag.size());
  sealed.box.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  sealed.box.append(reinterpret_cast<const char*>(tag.data()), tag.size());
  return sealed;
}

std::variant<proto::Message, proto::DecodeFailure> MessageSeal::open(const proto::Sealed& sealed) {
  using proto::DecodeError;
  if (sealed.box.size() < proto::kSealedMinBox)
    return proto::DecodeFailure{DecodeError::LengthMismatch, "Sealed.box shorter than 32 bytes"};
  const std::size_t length = sealed.box.size() - proto::kSealTagBytes;
  std::vector<std::uint8_t> bytes(sealed.box.begin(), sealed.box.begin() + length);
  proto::SealTag tag{};
  std::copy(sealed.box.begin() + length, sealed.box.end(), tag.begin());
  if (!open_in_place(receive_, received_, proto::sealed_header(sealed.box.size()), bytes, tag))
    return proto::DecodeFailure{DecodeError::BadField,
                                "a sealed message that does not open (altered, replayed, "
                                "reordered or injected)"};
  ++received_;
  auto decoded = proto::decode(bytes);
  if (const auto* inner = std::get_if<proto::Message>(&decoded)) {
    if (proto::peek_version(bytes) != proto::kVersion2)
      return proto::DecodeFailure{DecodeError::BadVersion, "a sealed message not of version 2"};
    if (std::holds_alternative<proto::Sealed>(*inner))
      return proto::DecodeFailure{DecodeError::BadType, "a Sealed inside a Sealed"};
  }
  return decoded;
}

}  // namespace rdmax
