#pragma once
// Reading a file of credentials (the receiver's secrets and senders files, the sender's key
// file): it must be a regular file only its owner can read or change, and no copy of its
// bytes is left behind in memory this code frees.

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "protocol/secrets.hpp"  // SecretsParseError
#include "protocol/secure_wipe.hpp"

namespace rdmax {

// The whole of the file at path. Throws std::runtime_error if it cannot be opened or read,
// is not a regular file, or has any group or other permission bit (with the `chmod 600
// PATH` that fixes it). `what` names the file in every message, e.g. "secrets file":
// "cannot read secrets file PATH: No such file or directory". The caller wipes the text
// (proto::secure_wipe) when done with it.
[[nodiscard]] std::string read_private_file(const std::string& path, std::string_view what);

// read_private_file, then `parse` (text -> std::variant<T, proto::SecretsParseError>) on the
// text, which is wiped before this returns or throws. Returns the T; throws
// std::runtime_error "PATH:LINE: what" for a parse error.
template <typename Parse>
[[nodiscard]] auto load_private_file(const std::string& path, std::string_view what,
                                     Parse&& parse) {
  using Parsed = std::invoke_result_t<Parse, std::string_view>;
  using Loaded = std::variant_alternative_t<0, Parsed>;
  struct WipedText {
    std::string text;
    ~WipedText() { proto::secure_wipe(text.data(), text.size()); }
  };
  Parsed parsed = [&] {
    const WipedText file{read_private_file(path, what)};
    return std::forward<Parse>(parse)(std::string_view(file.text));
  }();
  if (const auto* error = std::get_if<proto::SecretsParseError>(&parsed)) {
    throw std::runtime_error(path + ":" + std::to_string(error->line) + ": " + error->what);
  }
  return Loaded(std::move(std::get<Loaded>(parsed)));
}

}  // namespace rdmax
