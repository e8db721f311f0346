#include "common/crypto/key_files.hpp"

#include <spdlog/spdlog.h>

#include "common/os/private_file.hpp"

namespace rdmax {

proto::SenderKey load_key_file(const std::string& path) {
  return load_private_file(path, "key file", proto::parse_key_file);
}

proto::SenderKeyStore load_key_store(const std::string& path, const char* what) {
  auto store = load_private_file(path, what, proto::SenderKeyStore::parse);
  // Valid, but more likely the wrong file or every line commented out: say so rather than
  // quietly turning every key away.
  if (store.size() == 0) spdlog::warn("{} {} lists no ids: no key will be accepted", what, path);
  return store;
}

}  // namespace rdmax
