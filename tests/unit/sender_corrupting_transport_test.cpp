// rdma-send --inject-corruption as a decorator (sender/corrupting_transport.hpp): a chunk's
// WRITE goes on after the FileChunk that follows it was seen, with the byte flipped in our
// copy when the chunk covers it, and before that FileChunk, as RC orders them. The driver
// sessions (session_link_test.cpp, sender_driver_session_test.cpp) show what the receiver
// makes of it; this pins the decorator's own rules.
#include "sender/corrupting_transport.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "fake_transport.hpp"

namespace rdmax::test {
namespace {

using sender::CorruptingTransport;

struct CorruptingTransportTest : ::testing::Test {
  FakeTransport wire;
  sender::SenderSettings settings;
  CorruptingTransportTest() { settings.inject_corruption = 4096 + 7; }
};

TEST_F(CorruptingTransportTest, FlipsTheByteInTheChunkThatCoversIt) {
  CorruptingTransport corrupting(wire, settings);
  const auto staging = corrupting.allocate(2 * 4096);
  std::fill(staging.begin(), staging.end(), std::uint8_t{0x11});
  const Registration key = corrupting.register_memory(staging, Access::LocalRead);
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    const auto bytes = staging.subspan(slot * 4096, 4096);
    corrupting.write(key, bytes, 0x1000 + slot, 77);
    EXPECT_EQ(wire.writes.size(), slot) << "held until its FileChunk";
    corrupting.send(proto::FileChunk{3, slot, std::uint64_t{slot} * 4096, 4096, {}},
                    proto::kVersion2, slot + 1);
  }
  ASSERT_EQ(wire.writes.size(), 2u);
  ASSERT_EQ(wire.sent.size(), 2u);
  EXPECT_EQ(wire.writes[0].bytes, std::vector<std::uint8_t>(4096, 0x11));
  auto expected = std::vector<std::uint8_t>(4096, 0x11);
  expected[7] ^= 0xFF;
  EXPECT_EQ(wire.writes[1].bytes, expected);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(wire.writes[i].before, i) << "before its SEND";
}

// A WRITE that no FileChunk follows, and any other message, go on unchanged and in order.
TEST_F(CorruptingTransportTest, PassesOtherTrafficUnchangedInOrder) {
  CorruptingTransport corrupting(wire, settings);
  const auto staging = corrupting.allocate(8192);
  const Registration key = corrupting.register_memory(staging, Access::LocalRead);
  corrupting.write(key, staging, 0x1000, 77);
  corrupting.send(proto::Credit{0, 77}, proto::kVersion2, 9);
  ASSERT_EQ(wire.writes.size(), 1u);
  EXPECT_EQ(wire.writes[0].bytes, std::vector<std::uint8_t>(8192, 0));
  EXPECT_EQ(wire.writes[0].before, 0u);
  EXPECT_EQ(wire.sent.size(), 1u);
}

// The digest at the end hashes a chunk on a worker while its WRITE goes out: a flip then
// would race with that hash. Refused, as is a decorator with no offset.
TEST_F(CorruptingTransportTest, RefusesTheDigestAtTheEnd) {
  settings.digest_at_end = true;
  EXPECT_THROW(CorruptingTransport(wire, settings), std::logic_error);
  settings.digest_at_end = false;
  settings.inject_corruption.reset();
  EXPECT_THROW(CorruptingTransport(wire, settings), std::logic_error);
}

// Only our copy may be altered: a chunk from memory it did not allocate (a file's mapping)
// is refused, not written into.
TEST_F(CorruptingTransportTest, RefusesAChunkNotInItsCopy) {
  CorruptingTransport corrupting(wire, settings);
  std::vector<std::uint8_t> mapped(2 * 4096, 0x22);
  const Registration key = corrupting.register_memory(mapped, Access::LocalRead);
  corrupting.write(key, std::span(mapped).subspan(4096), 0x1000, 77);
  EXPECT_THROW(corrupting.send(proto::FileChunk{0, 0, 4096, 4096, {}}, proto::kVersion2, 1),
               std::logic_error);
  EXPECT_EQ(mapped[4096 + 7], 0x22);
}

}  // namespace
}  // namespace rdmax::test
