#include "receiver/secrets_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "protocol/secure_wipe.hpp"

namespace rdmax::receiver {

proto::SecretStore load_secrets_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read secrets file " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  std::string contents = text.str();
  auto parsed = proto::SecretStore::parse(contents);
  // The file's text held every secret; it does not outlive the parse.
  proto::secure_wipe(contents.data(), contents.size());
  if (auto* err = std::get_if<proto::SecretsParseError>(&parsed))
    throw std::runtime_error(path + ":" + std::to_string(err->line) + ": " + err->what);
  return std::move(std::get<proto::SecretStore>(parsed));
}

}  // namespace rdmax::receiver
