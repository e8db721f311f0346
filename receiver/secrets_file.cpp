#include "receiver/secrets_file.hpp"

#include <spdlog/spdlog.h>

#include "common/os/private_file.hpp"

namespace rdmax::receiver {

proto::SecretStore load_secrets_file(const std::string& path) {
  auto store = load_private_file(path, "secrets file", proto::SecretStore::parse);
  // Valid, as a way to deny everyone, but more likely a mistake (the wrong file, or every
  // line commented out): say so instead of quietly denying every id.
  if (store.size() == 0) {
    spdlog::warn("secrets file {} lists no ids: every id will be denied", path);
  }
  return store;
}

}  // namespace rdmax::receiver
