// Which addresses are loopback, where RDMA never works (issue 22).

#include "common/cli/loopback.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

namespace rdmax {
namespace {

TEST(Loopback, IPv4LoopbackIsAllOf127Slash8) {
  for (const char* host : {"127.0.0.1", "127.0.1.1", "127.1.2.3", "127.255.255.255"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"128.0.0.1", "10.0.0.1", "192.0.2.1", "0.0.0.0", "1.127.0.0"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

TEST(Loopback, IPv6LoopbackWithBracketsZoneAndMappedIPv4) {
  for (const char* host : {"::1", "[::1]", "0:0:0:0:0:0:0:1", "::1%lo", "[::1%lo]",
                           "::ffff:127.0.0.1", "[::ffff:127.9.9.9]"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"::", "[::]", "fd00::1", "::2", "::ffff:10.0.0.1", "fe80::1%eth0"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

TEST(Loopback, LocalhostNamesWithoutAResolver) {
  for (const char* host : {"localhost", "LOCALHOST", "localhost.", "ip6-loop.localhost"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"localhost.example.org", "notlocalhost", "recv.example.org", ""})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

TEST(Loopback, ResolvedAddresses) {
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  ASSERT_EQ(::inet_pton(AF_INET, "127.0.0.53", &v4.sin_addr), 1);
  EXPECT_TRUE(is_loopback_address(reinterpret_cast<sockaddr*>(&v4)));
  ASSERT_EQ(::inet_pton(AF_INET, "192.0.2.1", &v4.sin_addr), 1);
  EXPECT_FALSE(is_loopback_address(reinterpret_cast<sockaddr*>(&v4)));
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  EXPECT_TRUE(is_loopback_address(reinterpret_cast<sockaddr*>(&v6)));
  v6.sin6_addr = in6addr_any;
  EXPECT_FALSE(is_loopback_address(reinterpret_cast<sockaddr*>(&v6)));
  EXPECT_FALSE(is_loopback_address(nullptr));
}

// Literals decide without a resolver; "localhost" is loopback on any machine.
TEST(Loopback, ResolvesToLoopback) {
  EXPECT_TRUE(resolves_to_loopback("127.0.0.1"));
  EXPECT_TRUE(resolves_to_loopback("[::1]"));
  EXPECT_TRUE(resolves_to_loopback("localhost"));
  EXPECT_FALSE(resolves_to_loopback("192.0.2.1"));
  EXPECT_FALSE(resolves_to_loopback("fd00::1"));
  // .invalid never resolves (RFC 6761): not called loopback, the connection reports it.
  EXPECT_FALSE(resolves_to_loopback("no-such-host.invalid"));
}

TEST(Loopback, TheRemedyNamesTheToolsToFindAnAddress) {
  const std::string remedy = loopback_remedy();
  EXPECT_NE(remedy.find("rdma link"), std::string::npos);
  EXPECT_NE(remedy.find("ibv_devices"), std::string::npos);
  EXPECT_NE(remedy.find("netdev"), std::string::npos);
}

}  // namespace
}  // namespace rdmax
