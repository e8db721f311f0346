// The user-facing messages: each names its cause and a remedy a user can act on.
#include "common/cli/error_hints.hpp"
#include "protocol/refusals.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include "common/rdma/devices.hpp"
#include "text_contains.hpp"

namespace rdmax {
namespace {

using rdmax::test::contains;

TEST(ErrorHints, RejectedWithoutListenerSaysToStartRdmaRecv) {
  const std::string m = connect_failure_message(RDMA_CM_EVENT_REJECTED, 8, "192.0.2.1", 18515, {});
  EXPECT_TRUE(contains(m, "192.0.2.1 port 18515")) << m;
  EXPECT_TRUE(contains(m, "no rdma-recv listens")) << m;
  EXPECT_TRUE(contains(m, "--port")) << m;
}

TEST(ErrorHints, RejectedByTheListenerIsNotCalledNoListener) {
  const std::string m = connect_failure_message(RDMA_CM_EVENT_REJECTED, 28, "h", 1, {});
  EXPECT_FALSE(contains(m, "no rdma-recv")) << m;
  EXPECT_TRUE(contains(m, "refused")) << m;
}

// The receiver's words in the REJ (PROTOCOL.md 4.1) replace the guess between "too many
// connections" and "shutting down": a refused address is told so.
TEST(ErrorHints, TheReceiversWordsSayWhyItRefused) {
  const std::string said = "this address may not connect (rdma-recv --allow/--deny)";
  const std::string m = connect_failure_message(RDMA_CM_EVENT_REJECTED, 28, "h", 1, said);
  EXPECT_EQ(m, "cannot connect to h port 1: the receiver refused the connection: " + said);
  EXPECT_TRUE(contains(connect_failure_message(RDMA_CM_EVENT_REJECTED, 8, "h", 1, said),
                       "no rdma-recv listens"))
      << "only a consumer's reject carries the receiver's words";
}

TEST(CmRejectText, RoundTripsAndIgnoresWhatIsNotOurs) {
  const std::string wire = proto::encode_cm_reject("too many connections; try again later");
  EXPECT_EQ(wire.size(), proto::kCmRejectTextBytes);
  EXPECT_EQ(wire.rfind("rdmax: too many connections", 0), 0u);
  EXPECT_EQ(proto::decode_cm_reject(wire.data(), wire.size()),
            "too many connections; try again later");
  // A REJ's private data is 148 bytes, zero-padded.
  std::string rej(148, '\0');
  rej.replace(0, wire.size(), wire);
  EXPECT_EQ(proto::decode_cm_reject(rej.data(), rej.size()),
            "too many connections; try again later");
  EXPECT_EQ(proto::decode_cm_reject(nullptr, 0), "");
  EXPECT_EQ(proto::decode_cm_reject(rej.data(), 20), "") << "no NUL within the data";
  const std::string other("someone else\0", 13);
  EXPECT_EQ(proto::decode_cm_reject(other.data(), other.size()), "");
  const std::string escape("rdmax: \x1b[2J\0", 12);
  EXPECT_EQ(proto::decode_cm_reject(escape.data(), escape.size()), "") << "not printable";
  // Too long, or with control bytes: cut to fit, each control byte a '?'.
  const std::string cut = proto::encode_cm_reject(std::string(200, 'x') + "\n");
  EXPECT_EQ(proto::decode_cm_reject(cut.data(), cut.size()),
            std::string(proto::kCmRejectTextBytes - 1 - 7, 'x'));
  const std::string ctl = proto::encode_cm_reject("a\nb");
  EXPECT_EQ(proto::decode_cm_reject(ctl.data(), ctl.size()), "a?b");
}

TEST(ErrorHints, LoopbackAndMissingDeviceAreExplained) {
  EXPECT_TRUE(
      contains(connect_failure_message(RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, "127.0.0.1", 18515, {}),
               "loopback"));
  // rdma_cm may get past the address and fail at the route instead; ::1 is loopback too.
  const std::string route =
      connect_failure_message(RDMA_CM_EVENT_ROUTE_ERROR, -ENODEV, "::1", 18515, {});
  EXPECT_TRUE(contains(route, "RDMA does not work over loopback")) << route;
  EXPECT_TRUE(contains(route, "rdma link")) << route;
  const std::string m =
      connect_failure_message(RDMA_CM_EVENT_ADDR_ERROR, -EADDRNOTAVAIL, "192.0.2.9", 18515, {});
  EXPECT_TRUE(contains(m, "no local RDMA device")) << m;
  EXPECT_TRUE(contains(m, "ip route get 192.0.2.9")) << m;
  EXPECT_TRUE(
      contains(connect_failure_message(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, "h", 1, {}), "4791"));
}

TEST(ErrorHints, SetupErrnosHaveRemedies) {
  EXPECT_TRUE(contains(rdma_setup_hint(ENODEV), "--list-devices"));
  EXPECT_TRUE(contains(rdma_setup_hint(EADDRNOTAVAIL), "127.0.0.1"));
  EXPECT_TRUE(rdma_setup_hint(EINTR).empty());
}

TEST(ErrorHints, StorageFailureMentionsAFullDisk) {
  const std::string m = outcome_message(proto::SenderOutcome::ReceiverFailed);
  EXPECT_TRUE(contains(m, "the receiver could not store the file (for example its disk is full)"))
      << m;
}

TEST(ErrorHints, FileAndDirectoryHints) {
  EXPECT_TRUE(contains(input_file_hint(EACCES), "readable"));
  EXPECT_TRUE(contains(input_file_hint(EISDIR), "-r (--recursive)"));
  EXPECT_TRUE(contains(output_dir_hint(ENOENT), "mkdir"));
  EXPECT_TRUE(contains(output_dir_hint(EACCES), "write access"));
}

TEST(Devices, NoDeviceMessageGivesTheSoftRoceRemedy) {
  const std::string m = no_rdma_device_message();
  EXPECT_TRUE(contains(m, "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0")) << m;
}

TEST(Devices, UnknownDeviceIsNamedAndHasNoAddresses) {
  EXPECT_FALSE(rdma_device_exists("rdmax-no-such-device"));
  EXPECT_TRUE(contains(unknown_device_message("rdmax-no-such-device"), "'rdmax-no-such-device'"));
  EXPECT_TRUE(device_netdevs("rdmax-no-such-device").empty());
  EXPECT_FALSE(first_ipv4_address("rdmax-no-such-device").has_value());
  EXPECT_FALSE(device_serves_address("rdmax-no-such-device", "192.0.2.1"));
  EXPECT_TRUE(device_serves_address("rdmax-no-such-device", "0.0.0.0"));
  EXPECT_TRUE(device_serves_address("rdmax-no-such-device", "[::]"));
}

TEST(Devices, LoopbackHasItsAddress) {
  const auto v4 = netdev_addresses("lo", AF_INET);
  if (v4.empty()) GTEST_SKIP() << "no IPv4 on lo here";
  EXPECT_EQ(v4.front(), "127.0.0.1");
}

TEST(Devices, RequireDeviceWithoutWishAcceptsAnything) {
  EXPECT_NO_THROW(require_device(nullptr, std::nullopt));
}

}  // namespace
}  // namespace rdmax
