#pragma once
// Shared set-up for the driver tests: a real receiver Connection or sender
// SenderConnection over a FakeTransport, with a real worker pool and a temporary directory.

#include <poll.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/input_file.hpp"
#include "common/sha256.hpp"
#include "common/work_pool.hpp"
#include "fake_transport.hpp"
#include "protocol/secrets.hpp"
#include "receiver/connection.hpp"
#include "sender/sender_connection.hpp"
#include "temp_dir.hpp"

namespace rdmax::test {

using Clock = std::chrono::steady_clock;

inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

inline Digest sha256_of(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs the pool's completions until `done` holds (bounded: a bug fails, it does not hang).
inline bool run_pool_until(WorkPool& pool, const std::function<bool()>& done,
                           std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto give_up = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    pollfd fd{pool.ready_fd(), POLLIN, 0};
    ::poll(&fd, 1, 20);
    pool.run_completions();
  }
  return true;
}

// A receiver connection over a fake transport.
struct ReceiverHarness {
  TempDir dir{"rdmax-driver"};
  receiver::ReceiverOptions options = [] {
    receiver::ReceiverOptions o;
    o.slot_size = 4096;
    o.slots = 4;
    o.timeout = std::chrono::seconds(5);
    o.workers = 2;
    return o;
  }();
  proto::SecretStore secrets =
      std::get<proto::SecretStore>(proto::SecretStore::parse("alice s3cret\n"));
  WorkPool pool{2};
  receiver::ReceiverContext context{options, dir.fd(), &secrets, pool, 0};
  FakeTransport transport;
  std::optional<receiver::Connection> connection;

  void start() { connection.emplace(transport, "peer", context); }
  void poll() { connection->poll(); }
  // The peer sends `message`; the connection handles it.
  void send(const proto::Message& message, std::uint16_t version = proto::kVersion1) {
    transport.deliver(message, version);
    poll();
  }
  bool settle(const std::function<bool()>& done) {
    return run_pool_until(pool, [&] {
      poll();
      return done();
    });
  }
  proto::ReceiverState state() const { return connection->state(); }
};

}  // namespace rdmax::test
