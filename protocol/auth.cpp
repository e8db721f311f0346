#include "protocol/auth.hpp"

#include <algorithm>

namespace rdmax::proto {

std::string_view proof_label(ProofRole role) {
  return role == ProofRole::Sender ? "rdmax sender proof v2" : "rdmax receiver proof v2";
}

HelloExtension sender_key_extension(const Nonce& nonce, std::string_view id) {
  std::string value(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  value.append(id);
  return {kExtensionSenderKey, std::move(value)};
}

std::optional<SenderKeyClaim> sender_key_claim(std::span<const HelloExtension> extensions) {
  for (const auto& e : extensions) {
    if (e.type != kExtensionSenderKey || e.value.size() <= kNonceBytes) continue;
    SenderKeyClaim claim;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(e.value.data()), kNonceBytes,
                claim.nonce.begin());
    claim.id = e.value.substr(kNonceBytes);
    return claim;
  }
  return std::nullopt;
}

std::vector<std::uint8_t> auth_transcript(const Message& claiming, const Challenge& challenge) {
  std::vector<std::uint8_t> bytes = encode(claiming, kVersion2);
  const std::vector<std::uint8_t> second = encode(challenge, kVersion2);
  bytes.insert(bytes.end(), second.begin(), second.end());
  return bytes;
}

}  // namespace rdmax::proto
