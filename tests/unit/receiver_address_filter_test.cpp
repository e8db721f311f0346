// rdma-recv --allow / --deny (receiver/address_filter.hpp): the rules as people write them,
// which peers they let in, and the once-a-minute log of refusals.

#include "common/rdma/address_filter.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <stdexcept>

namespace rdmax {
namespace {

using V = AddressFilter::Verdict;

std::vector<std::string> no_names(const std::string& name) {
  throw std::invalid_argument("no resolver in this test (asked for " + name + ")");
}

std::vector<IpPrefix> rules(std::string_view text) {
  return parse_prefixes(text, no_names);
}

sockaddr_in v4(const char* text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  EXPECT_EQ(::inet_pton(AF_INET, text, &a.sin_addr), 1) << text;
  return a;
}

sockaddr_in6 v6(const char* text) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  EXPECT_EQ(::inet_pton(AF_INET6, text, &a.sin6_addr), 1) << text;
  return a;
}

template <typename A>
V judge(const AddressFilter& f, const A& address) {
  return f.judge(reinterpret_cast<const sockaddr*>(&address));
}

std::string filter_error_of(std::string_view text) {
  try {
    (void)rules(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(AddressRules, PrefixesAddressesAndLists) {
  const auto r = rules("192.0.2.0/24, 10.1.2.3,2001:db8::/32,fd00::1");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].family, AF_INET);
  EXPECT_EQ(r[0].bits, 24u);
  EXPECT_EQ(r[0].text, "192.0.2.0/24");
  EXPECT_EQ(r[1].bits, 32u) << "an address alone is a whole prefix";
  EXPECT_EQ(r[2].family, AF_INET6);
  EXPECT_EQ(r[2].bits, 32u);
  EXPECT_EQ(r[3].bits, 128u);
  EXPECT_EQ(rules("0.0.0.0/0")[0].bits, 0u);
}

TEST(AddressRules, MistakesAreNamed) {
  EXPECT_EQ(filter_error_of("192.0.2.0/33"),
            "'192.0.2.0/33': a prefix length of 33 is longer than the address (32 bits)");
  EXPECT_EQ(filter_error_of("fd00::/129"),
            "'fd00::/129': a prefix length of 129 is longer than the address (128 bits)");
  EXPECT_EQ(filter_error_of("192.0.2.0/x"),
            "'192.0.2.0/x': the prefix length must be a number of bits");
  EXPECT_EQ(filter_error_of("192.0.2.0/"),
            "'192.0.2.0/': the prefix length must be a number of bits");
  EXPECT_EQ(filter_error_of("name/24"), "'name/24': a prefix length needs a numeric address");
  EXPECT_EQ(filter_error_of("10.0.0.1,,10.0.0.2"), "an empty item (two commas, or one at an end)");
  EXPECT_EQ(filter_error_of(""), "an empty item (two commas, or one at an end)");
  EXPECT_EQ(filter_error_of("10.0.0.1,"), "an empty item (two commas, or one at an end)");
  EXPECT_EQ(filter_error_of("nosuch.invalid"),
            "'nosuch.invalid': no resolver in this test (asked for nosuch.invalid)");
}

TEST(AddressRules, NamesAreResolvedOnceToEveryAddress) {
  int asked = 0;
  const auto r = parse_prefixes("storage-1", [&](const std::string& name) {
    ++asked;
    EXPECT_EQ(name, "storage-1");
    return std::vector<std::string>{"192.0.2.10", "fd00::10"};
  });
  EXPECT_EQ(asked, 1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].text, "storage-1 (192.0.2.10)");
  EXPECT_EQ(r[0].bits, 32u);
  EXPECT_EQ(r[1].family, AF_INET6);
  EXPECT_EQ(r[1].bits, 128u);
}

TEST(AddressRules, ANameWithoutAddressesIsAnError) {
  EXPECT_THROW(
      (void)parse_prefixes("x", [](const std::string&) { return std::vector<std::string>{}; }),
      std::invalid_argument);
}

TEST(AddressRules, LocalhostResolves) {
  const auto r = parse_prefixes("localhost", resolve_host);
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].text.find("localhost ("), std::string::npos);
}

TEST(AddressFilter, NoRulesLetsEveryoneIn) {
  const AddressFilter f;
  EXPECT_FALSE(f.active());
  EXPECT_EQ(judge(f, v4("203.0.113.9")), V::Allowed);
  EXPECT_EQ(f.describe(), "allowed from anywhere; denied from none");
}

TEST(AddressFilter, AllowIsAListOfWhoMay) {
  const AddressFilter f(rules("192.0.2.0/24,2001:db8:1::/48"), {});
  EXPECT_EQ(judge(f, v4("192.0.2.77")), V::Allowed);
  EXPECT_EQ(judge(f, v4("192.0.3.1")), V::NotAllowed);
  EXPECT_EQ(judge(f, v6("2001:db8:1:ffff::1")), V::Allowed);
  EXPECT_EQ(judge(f, v6("2001:db8:2::1")), V::NotAllowed);
  EXPECT_EQ(judge(f, v6("::ffff:192.0.2.5")), V::Allowed) << "IPv4-mapped is judged as IPv4";
  EXPECT_EQ(judge(f, v6("::ffff:198.51.100.5")), V::NotAllowed);
  EXPECT_EQ(f.judge(nullptr), V::NotAllowed);
  EXPECT_EQ(f.describe(), "allowed from 192.0.2.0/24, 2001:db8:1::/48; denied from none");
}

TEST(AddressFilter, PrefixesCutInsideAByte) {
  const AddressFilter f(rules("10.0.0.0/13"), {});
  EXPECT_EQ(judge(f, v4("10.7.255.255")), V::Allowed);
  EXPECT_EQ(judge(f, v4("10.8.0.0")), V::NotAllowed);
}

TEST(AddressFilter, DenyWinsOverAllow) {
  const AddressFilter f(rules("192.0.2.0/24"), rules("192.0.2.66"));
  EXPECT_EQ(judge(f, v4("192.0.2.66")), V::Denied);
  EXPECT_EQ(judge(f, v4("192.0.2.67")), V::Allowed);
  const AddressFilter deny_only({}, rules("198.51.100.0/24"));
  EXPECT_EQ(judge(deny_only, v4("198.51.100.1")), V::Denied);
  EXPECT_EQ(judge(deny_only, v4("203.0.113.1")), V::Allowed);
  EXPECT_EQ(judge(deny_only, v6("fd00::1")), V::Allowed);
  EXPECT_STREQ(to_string(V::Denied), "matches --deny");
  EXPECT_STREQ(to_string(V::NotAllowed), "not in --allow");
}

TEST(AddressFilter, AddressTextHasNoPort) {
  sockaddr_in a = v4("192.0.2.1");
  a.sin_port = htons(40000);
  EXPECT_EQ(address_text(reinterpret_cast<const sockaddr*>(&a)), "192.0.2.1");
  const sockaddr_in6 b = v6("fd00::1");
  EXPECT_EQ(address_text(reinterpret_cast<const sockaddr*>(&b)), "fd00::1");
  const sockaddr_in6 mapped = v6("::ffff:192.0.2.7");
  EXPECT_EQ(address_text(reinterpret_cast<const sockaddr*>(&mapped)), "192.0.2.7");
  EXPECT_EQ(address_text(nullptr), "?");
}

TEST(RefusalLog, OncePerAddressAndMinute) {
  RefusalLog log;
  const auto t0 = RefusalLog::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(log.note("192.0.2.9", t0), 0u);
  for (int i = 1; i <= 5; ++i)
    EXPECT_EQ(log.note("192.0.2.9", t0 + std::chrono::seconds(i)), std::nullopt);
  EXPECT_EQ(log.note("192.0.2.10", t0 + std::chrono::seconds(2)), 0u) << "another address";
  EXPECT_EQ(log.note("192.0.2.9", t0 + std::chrono::seconds(59)), std::nullopt);
  EXPECT_EQ(log.note("192.0.2.9", t0 + std::chrono::seconds(60)), 6u) << "the six unlogged";
  EXPECT_EQ(log.note("192.0.2.9", t0 + std::chrono::seconds(61)), std::nullopt);
}

TEST(RefusalLog, RemembersABoundedNumberOfAddresses) {
  RefusalLog log;
  const auto t0 = RefusalLog::Clock::time_point{} + std::chrono::hours(1);
  for (std::size_t i = 0; i < RefusalLog::kMaxAddresses + 10; ++i)
    EXPECT_EQ(log.note("a" + std::to_string(i), t0 + std::chrono::milliseconds(i)), 0u);
  // The first ones were forgotten to make room: they are logged again at once.
  EXPECT_EQ(log.note("a0", t0 + std::chrono::seconds(10)), 0u);
  // The most recent is still remembered.
  const std::string last = "a" + std::to_string(RefusalLog::kMaxAddresses + 9);
  EXPECT_EQ(log.note(last, t0 + std::chrono::seconds(10)), std::nullopt);
}

}  // namespace
}  // namespace rdmax
