#include "sender/key_file.hpp"

#include "common/os/private_file.hpp"

namespace rdmax::sender {

proto::SenderKey load_key_file(const std::string& path) {
  return load_private_file(path, "key file", proto::parse_key_file);
}

}  // namespace rdmax::sender
