#pragma once
// What the wire format's tests share: the decode error of some bytes, and a message's round
// trip through version 2.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "protocol/wire.hpp"

namespace rdmax::test::wire {

using Bytes = std::vector<std::uint8_t>;

inline std::optional<proto::DecodeError> decode_error(const Bytes& bytes) {
  auto result = proto::decode(bytes);
  if (const auto* failure = std::get_if<proto::DecodeFailure>(&result)) return failure->error;
  return std::nullopt;
}

inline proto::Message round_trip(const proto::Message& m) {
  auto back = proto::decode(proto::encode(m, proto::kVersion2));
  EXPECT_TRUE(std::holds_alternative<proto::Message>(back));
  return std::holds_alternative<proto::Message>(back) ? std::get<proto::Message>(back)
                                                      : proto::Message{proto::Bye{}};
}

}  // namespace rdmax::test::wire
