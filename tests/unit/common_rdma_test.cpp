#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "common/rdma/cm_id.hpp"
#include "common/rdma/event_channel.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;

// The CM needs the rdma_ucm module (/dev/infiniband/rdma_cm); without it these skip loudly.
std::optional<EventChannel> open_channel_or_skip() {
  try {
    return EventChannel();
  } catch (const SysError&) {
    return std::nullopt;
  }
}

TEST(SockaddrToString, FormatsIpv4AndIpv6) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(18515);
  in.sin_addr.s_addr = htonl(0x7f000001);
  EXPECT_EQ(sockaddr_to_string(reinterpret_cast<sockaddr*>(&in)), "127.0.0.1:18515");
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(1);
  in6.sin6_addr = in6addr_loopback;
  EXPECT_EQ(sockaddr_to_string(reinterpret_cast<sockaddr*>(&in6)), "[::1]:1");
  sockaddr other{};
  EXPECT_EQ(sockaddr_to_string(&other), "");
  EXPECT_EQ(sockaddr_to_string(nullptr), "");
}

// Either outcome is checked: a usable fd, or the SysError the "no RDMA CM" diagnostics rely
// on, naming the call and an errno (ENOENT or ENODEV when rdma_ucm is not loaded).
TEST(HostAndPort, BracketsIpv6LiteralsOnly) {
  EXPECT_EQ(host_and_port("192.0.2.1", 18515), "192.0.2.1:18515");
  EXPECT_EQ(host_and_port("recv.example.org", 1), "recv.example.org:1");
  EXPECT_EQ(host_and_port("fd00::1", 18515), "[fd00::1]:18515");
  EXPECT_EQ(host_and_port("[fd00::1]", 18515), "[fd00::1]:18515");
  EXPECT_EQ(host_and_port("fe80::1%eth0", 7), "[fe80::1%eth0]:7");
}

TEST(EventChannel, OpensOrFailsNamingTheCall) {
  try {
    EventChannel channel;
    EXPECT_NE(channel.get(), nullptr);
    EXPECT_GE(channel.fd(), 0);
    channel.set_nonblocking();
    EXPECT_NE(::fcntl(channel.fd(), F_GETFL) & O_NONBLOCK, 0);
  } catch (const SysError& e) {
    EXPECT_EQ(e.call(), "rdma_create_event_channel");
    EXPECT_NE(e.error(), 0);
    const std::string prefix =
        "rdma_create_event_channel: " + std::string(std::strerror(e.error()));
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0U) << e.what();
    if (::access("/dev/infiniband/rdma_cm", F_OK) != 0) {
      EXPECT_TRUE(e.error() == ENOENT || e.error() == ENODEV) << e.what();
    }
  }
}

TEST(EventChannel, NonBlockingGetReturnsNothingWhenIdle) {
  auto channel = open_channel_or_skip();
  if (!channel) GTEST_SKIP() << "no RDMA CM (rdma_ucm not loaded / no /dev/infiniband)";
  channel->set_nonblocking();
  EXPECT_FALSE(channel->try_get().has_value());
}

TEST(CmId, ListensOnEphemeralPort) {
  auto channel = open_channel_or_skip();
  if (!channel) GTEST_SKIP() << "no RDMA CM (rdma_ucm not loaded / no /dev/infiniband)";
  CmId id(*channel);
  id.bind_and_listen(nullptr, 0, 4);
  EXPECT_NE(id.local_port(), 0);
}

TEST(CmId, UnresolvableHostThrowsClearly) {
  auto channel = open_channel_or_skip();
  if (!channel) GTEST_SKIP() << "no RDMA CM (rdma_ucm not loaded / no /dev/infiniband)";
  CmId id(*channel);
  try {
    id.resolve_addr("no-such-host.invalid", 1, 100ms);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot resolve host no-such-host.invalid"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace rdmax
