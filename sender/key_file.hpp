#pragma once
// Loading rdma-send's key file (one `ID KEY` line, issue 23).

#include <string>

#include "protocol/sender_keys.hpp"

namespace rdmax::sender {

// Throws std::runtime_error with a message naming the file (and line) on any problem: the
// checks of common/os/private_file.hpp ("key file PATH has mode 0644: ...; run `chmod 600
// PATH`"), then parse_key_file's ("PATH:LINE: what").
[[nodiscard]] proto::SenderKey load_key_file(const std::string& path);

}  // namespace rdmax::sender
