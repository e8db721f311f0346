#include "receiver/sender_keys_file.hpp"

#include <spdlog/spdlog.h>

#include "common/os/private_file.hpp"

namespace rdmax::receiver {

proto::SenderKeyStore load_sender_keys_file(const std::string& path) {
  auto store = load_private_file(path, "senders file", proto::SenderKeyStore::parse);
  // Valid, but more likely the wrong file or every line commented out: say so rather than
  // quietly turning every sender key away.
  if (store.size() == 0) {
    spdlog::warn("senders file {} lists no ids: no sender key will be accepted", path);
  }
  return store;
}

}  // namespace rdmax::receiver
