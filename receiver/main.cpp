// rdma-recv: the receiver daemon. Validates its configuration up front (directory,
// secrets file), then serves senders until SIGINT or SIGTERM.

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/fd.hpp"
#include "common/logging.hpp"
#include "receiver/daemon.hpp"
#include "receiver/options.hpp"
#include "receiver/secrets_file.hpp"

using namespace rdmax;

namespace {
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  auto parsed = receiver::parse_receiver_options(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed)) return *rc;
  const auto& options = std::get<receiver::ReceiverOptions>(parsed);
  init_logging(options.verbosity, "rdma-recv");

  Fd dir(::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    spdlog::error("cannot open output directory {}: {}", options.dir, std::strerror(errno));
    return kExitUsage;
  }
  if (::faccessat(dir.get(), ".", W_OK, AT_EACCESS) != 0) {
    spdlog::error("output directory {} is not writable: {}", options.dir, std::strerror(errno));
    return kExitUsage;
  }
  std::optional<proto::SecretStore> secrets;
  if (options.secrets_file) {
    try {
      secrets = receiver::load_secrets_file(*options.secrets_file);
      spdlog::info("loaded {} id(s) from {}", secrets->size(), *options.secrets_file);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return kExitUsage;
    }
  }
  try {
    receiver::Daemon daemon(options, std::move(dir), std::move(secrets));
    return daemon.run();
  } catch (const SysError& e) {
    if (e.error() == EADDRINUSE)
      spdlog::error("port {} is already in use: stop the other listener or pick --port",
                    options.port);
    else if (e.error() == ENODEV || e.error() == EADDRNOTAVAIL)
      spdlog::error(
          "{}: no RDMA device serves that address (is an rxe or RDMA link up? see `rdma link`)",
          e.what());
    else
      spdlog::error("{}", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitFailure;
  }
}
