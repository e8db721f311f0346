#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <regex>
#include <sstream>
#include <string>

#include "common/cli/logging.hpp"
#include "common/error.hpp"
#include "common/os/aligned_buffer.hpp"
#include "common/os/epoll.hpp"
#include "common/os/fd.hpp"
#include "common/os/signal_fd.hpp"
#include "common/os/timer_fd.hpp"
#include "common/rdma/devices.hpp"
#include "common/rdma/memory_region.hpp"
#include "text_contains.hpp"

namespace rdmax {
namespace {

using namespace std::chrono_literals;

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

TEST(SysError, MessageCarriesCallAndErrno) {
  const SysError e("ibv_reg_mr", ENOMEM);
  EXPECT_STREQ(e.what(), "ibv_reg_mr: Cannot allocate memory (errno 12)");
  EXPECT_EQ(e.call(), "ibv_reg_mr");
  EXPECT_EQ(e.error(), ENOMEM);
  const SysError with_hint("ibv_reg_mr", ENOMEM, "raise the limit");
  EXPECT_STREQ(with_hint.what(), "ibv_reg_mr: Cannot allocate memory (errno 12); raise the limit");
}

TEST(SysError, ThrowSysUsesErrno) {
  errno = EBADF;
  try {
    throw_sys("close");
  } catch (const SysError& e) {
    EXPECT_EQ(e.error(), EBADF);
    EXPECT_EQ(e.call(), "close");
    return;
  }
  FAIL();
}

TEST(MemlockHint, OnlyWhenTheRequestExceedsTheLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  EXPECT_EQ(memlock_hint(0), "");
  if (limit.rlim_cur == RLIM_INFINITY) {
    EXPECT_EQ(memlock_hint(SIZE_MAX), "");
    return;
  }
  const std::string hint = memlock_hint(static_cast<size_t>(limit.rlim_cur) + 1);
  EXPECT_NE(hint.find("RLIMIT_MEMLOCK) is " + std::to_string(limit.rlim_cur) + " bytes"),
            std::string::npos)
      << hint;
  EXPECT_NE(hint.find("ulimit -l unlimited"), std::string::npos);
  EXPECT_NE(hint.find("LimitMEMLOCK=infinity"), std::string::npos);
  EXPECT_EQ(memlock_hint(static_cast<size_t>(limit.rlim_cur)), "");
}

TEST(Fd, ClosesOnDestructionAndMoves) {
  int raw = -1;
  {
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    raw = fd.get();
    Fd moved(std::move(fd));
    EXPECT_FALSE(fd);  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_EQ(moved.get(), raw);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, ReleaseAndReset) {
  Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.release();
  EXPECT_FALSE(fd);
  EXPECT_TRUE(is_open(raw));
  fd.reset(raw);
  fd.reset(raw);  // resetting to the owned fd must not close it
  EXPECT_TRUE(is_open(raw));
  fd.reset();
  EXPECT_FALSE(is_open(raw));
}

TEST(TimerFd, Periodic) {
  TimerFd timer;
  EXPECT_EQ(timer.read_expirations(), 0u);  // non-blocking, not armed yet
  EXPECT_THROW(timer.arm_periodic(0ms), std::invalid_argument);
  timer.arm_periodic(1ms);
  Epoll epoll;
  epoll.add(timer.fd(), EPOLLIN, 1);
  std::array<epoll_event, 1> events{};
  uint64_t total = 0;
  while (total < 3) {
    ASSERT_EQ(epoll.wait(events, 2000), 1);
    total += timer.read_expirations();
  }
}

TEST(Epoll, AddWaitRemove) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK), 0);
  Fd reader(pipe_fds[0]), writer(pipe_fds[1]);
  Epoll epoll;
  std::array<epoll_event, 4> events{};

  epoll.add(reader.get(), EPOLLIN, 7);
  EXPECT_EQ(epoll.wait(events, 0), 0);
  ASSERT_EQ(::write(writer.get(), "x", 1), 1);
  ASSERT_EQ(epoll.wait(events, 1000), 1);
  // A copy: epoll_event is packed on x86-64, and EXPECT_EQ would bind a reference to a
  // misaligned field (UBSan under clang says so).
  const std::uint64_t tag = events[0].data.u64;
  EXPECT_EQ(tag, 7u);
  EXPECT_TRUE(events[0].events & EPOLLIN);

  epoll.remove(reader.get());
  EXPECT_EQ(epoll.wait(events, 0), 0);
  epoll.remove(reader.get());  // already removed: ignored
  EXPECT_THROW(epoll.add(-1, EPOLLIN, 0), SysError);
}

TEST(SignalFd, DeliversBlockedSignalAndRestoresMask) {
  sigset_t before;
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, nullptr, &before), 0);
  ASSERT_FALSE(sigismember(&before, SIGUSR1));
  {
    SignalFd signals({SIGUSR1});
    EXPECT_EQ(signals.read_signal(), std::nullopt);
    ASSERT_EQ(::raise(SIGUSR1), 0);  // blocked, so it waits on the fd instead of killing us
    EXPECT_EQ(signals.read_signal(), SIGUSR1);
    EXPECT_EQ(signals.read_signal(), std::nullopt);

    SignalFd moved(std::move(signals));
    sigset_t during;
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, nullptr, &during), 0);
    EXPECT_TRUE(sigismember(&during, SIGUSR1));
  }
  sigset_t after;
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, nullptr, &after), 0);
  EXPECT_FALSE(sigismember(&after, SIGUSR1));
}

TEST(AlignedBuffer, PageAlignedZeroedAndMovable) {
  AlignedBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);

  AlignedBuffer buffer(10000);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), 10000u);
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(buffer.data()) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)),
      0u);
  EXPECT_EQ(buffer.data()[9999], 0);
  buffer.data()[9999] = 1;
  AlignedBuffer moved(std::move(buffer));
  EXPECT_EQ(moved.data()[9999], 1);
  EXPECT_EQ(moved.span().size(), 10000u);
}

using rdmax::test::contains;

// The documented "nothing here" answers, which --list-devices and -d rely on to print the
// Soft-RoCE advice (common_error_hints_test.cpp has the per-device queries).
TEST(Devices, WithoutADeviceEveryListingIsEmpty) {
  if (any_rdma_device()) {
    GTEST_SKIP() << "an RDMA device is present; Devices.WithADeviceTheListingsAgree covers it";
  }
  EXPECT_TRUE(list_rdma_ports().empty());
  EXPECT_TRUE(rdma_device_names().empty());
  EXPECT_FALSE(rdma_device_exists("rxe0"));
  std::ostringstream listing;
  EXPECT_FALSE(print_rdma_devices(listing));  // --list-devices then prints the advice instead
  EXPECT_EQ(listing.str(), "");
  EXPECT_EQ(unknown_device_message("mlx5_0"),
            "no RDMA device 'mlx5_0': " + no_rdma_device_message());
}

TEST(Devices, WithADeviceTheListingsAgree) {
  const auto names = rdma_device_names();
  if (names.empty()) {
    GTEST_SKIP() << "no RDMA device here (ibv_get_device_list lists none): only a device or "
                    "Soft-RoCE (modprobe rdma_rxe) can show a real listing";
  }
  EXPECT_TRUE(any_rdma_device());
  for (const auto& name : names) EXPECT_TRUE(rdma_device_exists(name)) << name;
  EXPECT_FALSE(rdma_device_exists("rdmax-no-such-device"));
  const std::string unknown = unknown_device_message("rdmax-no-such-device");
  EXPECT_TRUE(contains(unknown, "devices here: " + names.front())) << unknown;

  const auto ports = list_rdma_ports();
  std::ostringstream listing;
  EXPECT_EQ(print_rdma_devices(listing), !ports.empty());
  for (const auto& port : ports) {
    EXPECT_NE(std::find(names.begin(), names.end(), port.device), names.end()) << port.device;
    EXPECT_GE(port.port, 1);
    EXPECT_FALSE(port.state.empty());
    EXPECT_TRUE(port.link_layer == "Ethernet" || port.link_layer == "InfiniBand")
        << port.link_layer;
    EXPECT_TRUE(contains(listing.str(), port.device + " port " + std::to_string(port.port) + ": "))
        << listing.str();
  }
}

// Runs `body` with stderr (fd 2) sent to a temporary file and returns what it wrote there.
std::string capture_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  std::FILE* file = std::tmpfile();
  if (file == nullptr) {
    ADD_FAILURE() << "tmpfile: " << std::strerror(errno);
    return {};
  }
  const Fd saved(::dup(STDERR_FILENO));
  if (!saved || ::dup2(::fileno(file), STDERR_FILENO) < 0) {
    ADD_FAILURE() << "cannot redirect stderr: " << std::strerror(errno);
    std::fclose(file);
    return {};
  }
  body();
  std::fflush(stderr);
  ::dup2(saved.get(), STDERR_FILENO);
  std::string text;
  std::rewind(file);
  char buffer[512];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

// Off a terminal and outside systemd, lines read "<level>: message"; each init replaces the
// logger, so the verbosity of the latest call decides what is shown.
TEST(Logging, VerbosityPicksTheLevelAndInitCanBeRepeated) {
  const std::string out = capture_stderr([] {
    init_logging(0, "test");
    spdlog::debug("hidden at 0");
    spdlog::info("info at 0");
    init_logging(-1, "test");
    spdlog::info("hidden at -1");
    spdlog::warn("warn at -1");
    spdlog::error("error at -1");
    init_logging(1, "test");
    spdlog::trace("hidden at 1");
    spdlog::debug("debug at 1");
    init_logging(2, "traced");
    spdlog::trace("trace at 2");
  });
  const std::string untimed =
      "info: info at 0\nwarning: warn at -1\nerror: error at -1\n"
      "debug: debug at 1\n";
  ASSERT_EQ(out.substr(0, untimed.size()), untimed) << out;
  // At verbosity 2 every line carries a time stamp: "HH:MM:SS.mmm trace: ...".
  const std::string timed = out.substr(untimed.size());
  EXPECT_TRUE(std::regex_match(timed, std::regex(R"(\d\d:\d\d:\d\d\.\d{3} trace: trace at 2\n)")))
      << timed;
  EXPECT_EQ(spdlog::default_logger()->name(), "traced");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::trace);
  EXPECT_EQ(spdlog::default_logger()->flush_level(), spdlog::level::warn);
  init_logging(-1, "test");  // the other tests' output stays quiet
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
}

}  // namespace
}  // namespace rdmax
