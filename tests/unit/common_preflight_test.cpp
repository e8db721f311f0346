// --check: the line format, the memlock arithmetic and the remedies (no RDMA needed).
#include "common/cli/preflight.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace rdmax::preflight {
namespace {

TEST(Preflight, LineFormat) {
  EXPECT_EQ(format_check(pass("RDMA device: rxe0 port 1 ACTIVE")),
            "ok   RDMA device: rxe0 port 1 ACTIVE");
  EXPECT_EQ(format_check(failure("RDMA device: none found", "modprobe rdma_rxe")),
            "FAIL RDMA device: none found: modprobe rdma_rxe");
  EXPECT_EQ(format_check(failure("something", "")), "FAIL something");
}

TEST(Preflight, ReportCountsFailuresAndPrintsEachLine) {
  std::ostringstream out;
  Report report(out);
  report.add(pass("a"));
  EXPECT_TRUE(report.all_ok());
  report.add(failure("b", "fix b"));
  report.add(pass("c"));
  EXPECT_FALSE(report.all_ok());
  EXPECT_EQ(report.failed(), 1);
  EXPECT_EQ(out.str(), "ok   a\nFAIL b: fix b\nok   c\n");
}

TEST(Preflight, MemlockBelowTheWindowFailsWithTheRemedy) {
  const MemlockLimit limit{64u << 10, false};
  const Check c = memlock_check(limit, 8u << 20, "receive window");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.what.find("64.0 KiB"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("8.0 MiB"), std::string::npos) << c.what;
  EXPECT_NE(c.remedy.find("ulimit -l unlimited"), std::string::npos);
  EXPECT_NE(c.remedy.find("LimitMEMLOCK=infinity"), std::string::npos);
}

TEST(Preflight, MemlockAtOrAboveTheWindowPasses) {
  EXPECT_TRUE(memlock_check({8u << 20, false}, 8u << 20, "w").ok);
  EXPECT_TRUE(memlock_check({std::nullopt, false}, 1ull << 40, "w").ok);
  // CAP_IPC_LOCK: the limit does not apply, however low.
  const Check cap = memlock_check({4096, true}, 8u << 20, "w");
  EXPECT_TRUE(cap.ok);
  EXPECT_NE(cap.what.find("CAP_IPC_LOCK"), std::string::npos);
}

TEST(Preflight, MemlockFits) {
  EXPECT_EQ(memlock_fits({64u << 20, false}, 8u << 20), 8u);
  EXPECT_EQ(memlock_fits({(8u << 20) - 1, false}, 8u << 20), 0u);
  EXPECT_EQ(memlock_fits({std::nullopt, false}, 8u << 20), UINT64_MAX);
  EXPECT_EQ(memlock_fits({1, true}, 8u << 20), UINT64_MAX);
}

TEST(Preflight, Remedies) {
  EXPECT_NE(remedy_no_device().find("modprobe rdma_rxe"), std::string::npos);
  EXPECT_NE(remedy_no_device().find("rdma link add"), std::string::npos);
  EXPECT_NE(remedy_port_down({"eth1"}).find("ip link set eth1 up"), std::string::npos);
  EXPECT_NE(remedy_port_down({}).find("ip link set NETDEV up"), std::string::npos);
}

}  // namespace
}  // namespace rdmax::preflight
