#pragma once
// Loading the receiver's secrets file (`ID SECRET` lines) into a SecretStore.

#include <string>

#include "protocol/secrets.hpp"

namespace rdmax::receiver {

// Throws std::runtime_error with a message naming the file (and line) on any problem.
[[nodiscard]] proto::SecretStore load_secrets_file(const std::string& path);

}  // namespace rdmax::receiver
