// rdmax-pipeline-bench: what the transfer pipeline costs per byte on this machine's own CPU
// (issue 25). The real sender (SessionConnection, --digest-at-end: each chunk hashed on the
// hashing threads as it is read) and the real receiver (Connection: slots, writes, its
// tree hashing, fsync, commit, partial checkpoints) run in two threads, each with its own
// loop and its own worker pool, linked by an in-memory Transport (loopback_transport.hpp:
// an RDMA WRITE is a memcpy, not charged to either side). Files live in a tmpfs directory,
// so the disk is out of the picture and what is measured is CPU.
//
// For each thread count it prints, per side, the wall-clock throughput and the CPU seconds
// per GiB, beside the floor measured in the same run on the same bytes: one pass of the
// digest (--digest: fs-verity or BLAKE3) on that many threads plus one memcpy. The ratio is what
// our code adds to the work that cannot be avoided; "cores per 100 Gb/s" is the CPU seconds per GiB
// times the GiB a 100 Gb/s link carries each second (11.64).

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <thread>

#include "common/fd.hpp"
#include "common/file_digest.hpp"
#include "common/work_pool.hpp"
#include "loopback_transport.hpp"
#include "protocol/secrets.hpp"
#include "receiver/connection.hpp"
#include "receiver/partial_store.hpp"
#include "sender/session_connection.hpp"

namespace rdmax::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGiBPer100Gbps = 100e9 / 8 / kGiB;

Seconds process_cpu() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return Seconds(s(usage.ru_utime) + s(usage.ru_stime));
}

// Waits until one of the fds is readable, or 50 ms (the drivers' timers are ticked then).
void wait_readable(int a, int b) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  (void)::poll(fds, 2, 50);
}

struct Cost {
  Seconds wall{0};
  Seconds cpu{0};
};

class BenchCm final : public sender::SenderCm {
 public:
  explicit BenchCm(Transport& t) : transport_(t) {}
  void resolve_route() override {}
  Transport& connect() override { return transport_; }

 private:
  Transport& transport_;
};

// The files of the tree, written once (random bytes, so nothing compresses or dedups).
std::vector<sender::PlannedEntry> make_tree(const fs::path& dir, std::uint64_t total,
                                            unsigned files) {
  fs::create_directories(dir);
  std::vector<sender::PlannedEntry> entries;
  std::mt19937_64 random(42);
  std::vector<std::uint64_t> block(1 << 17);
  for (unsigned i = 0; i < files; ++i) {
    const std::uint64_t size = total / files;
    const fs::path path = dir / ("f" + std::to_string(i) + ".bin");
    std::ofstream out(path, std::ios::binary);
    for (std::uint64_t left = size; left > 0;) {
      for (auto& word : block) word = random();
      const auto n = std::min<std::uint64_t>(left, block.size() * 8);
      out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
      left -= n;
    }
    sender::PlannedEntry e;
    e.local_path = path.string();
    e.remote_path = path.filename().string();
    e.size = size;
    e.mode = 0644;
    e.mtime_sec = 1'700'000'000;
    e.digest_known = false;  // hashed in flight: the pipeline of issue 25
    entries.push_back(e);
  }
  return entries;
}

// One pass of the digest over the bytes (already in memory) on `threads`, plus one copy of them:
// a memcpy (the floor of issue 25), or a write(2) into a new file in `dir` (what storing a
// file costs in the kernel at the least: page-cache pages found, filled and listed). CPU
// seconds of the whole process (nothing else runs meanwhile).
struct Floor {
  Seconds with_memcpy{0};
  Seconds with_write{0};
};
Floor floor_of(const std::vector<sender::PlannedEntry>& entries, unsigned threads,
               const fs::path& dir, proto::DigestAlgorithm algorithm) {
  Floor floor;
  fs::create_directories(dir);
  for (const auto& e : entries) {
    const Fd fd(::open(e.local_path.c_str(), O_RDONLY | O_CLOEXEC));
    void* map = ::mmap(nullptr, e.size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
    if (map == MAP_FAILED) throw std::runtime_error("mmap " + e.local_path);
    std::vector<std::uint8_t> copy(e.size);
    const std::span<const std::uint8_t> bytes(static_cast<const std::uint8_t*>(map), e.size);
    auto cpu = process_cpu();
    (void)tree_digest_of_mapping(algorithm, bytes, threads);
    const Seconds hashing = process_cpu() - cpu;
    cpu = process_cpu();
    std::memcpy(copy.data(), bytes.data(), bytes.size());
    floor.with_memcpy += hashing + (process_cpu() - cpu);
    const fs::path target = dir / "floor.bin";
    const Fd out(::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    cpu = process_cpu();
    for (std::uint64_t at = 0; at < e.size;) {
      const auto n =
          ::pwrite(out.get(), bytes.data() + at, std::min<std::uint64_t>(e.size - at, 1 << 20),
                   static_cast<off_t>(at));
      if (n <= 0) throw std::runtime_error("write " + target.string());
      at += static_cast<std::uint64_t>(n);
    }
    floor.with_write += hashing + (process_cpu() - cpu);
    fs::remove(target);
    ::munmap(map, e.size);
  }
  return floor;
}

struct PipelineCost {
  Cost sender, receiver;
  Seconds wire{0};  // the RDMA WRITEs' copies (a NIC's work): charged to neither side
  std::uint32_t good = 0;
};

PipelineCost run_pipeline(const std::vector<sender::PlannedEntry>& entries, const fs::path& out,
                          unsigned threads, bool direct_io, proto::DigestAlgorithm algorithm) {
  fs::remove_all(out);
  fs::create_directories(out);
  LoopbackLink link;
  PipelineCost result;
  const auto start = Clock::now();

  std::thread receiving([&] {
    const Seconds cpu0(thread_cpu());
    WorkPool pool(threads);
    receiver::ReceiverOptions options;  // rdma-recv's defaults
    options.workers = threads;
    options.direct_io = direct_io;
    const Fd dir(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto secrets = std::get<proto::SecretStore>(proto::SecretStore::parse("bench s3cret\n"));
    receiver::PartialStore partials(dir.get(), {});
    receiver::ReceiverContext context{options, dir.get(), &secrets, pool, 0};
    context.partials = &partials;
    {
      receiver::Connection connection(link.receiver(), "bench", context, "192.0.2.9");
      connection.on_established();
      while (!connection.closed() || !connection.idle()) {
        wait_readable(link.receiver().wake_fd(), pool.ready_fd());
        pool.run_completions();
        if (!connection.closed()) connection.poll();
        if (!connection.closed() && link.sender().disconnected()) connection.on_disconnected();
        if (!connection.closed()) connection.tick(receiver::Connection::Clock::now());
      }
    }
    result.receiver.cpu = Seconds(thread_cpu()) - cpu0 + Seconds(pool.cpu_time());
    result.receiver.wall = Clock::now() - start;
  });

  {
    const Seconds cpu0(thread_cpu());
    WorkPool pool(threads);
    sender::SenderSettings settings;
    settings.id = "bench";
    settings.version = proto::kVersion2;
    settings.digest_at_end = true;
    settings.pool = &pool;
    sender::SessionPlan plan{algorithm, entries, std::vector<sender::EntryResult>(entries.size())};
    std::vector<std::uint32_t> all(entries.size());
    std::iota(all.begin(), all.end(), 0u);
    BenchCm cm(link.sender());
    {
      sender::SessionConnection driver(settings, plan, all, cm, "bench");
      driver.start();
      driver.on_address_resolved();
      driver.on_route_resolved();
      driver.on_established();
      while (!driver.finished()) {
        wait_readable(link.sender().wake_fd(), pool.ready_fd());
        pool.run_completions();
        driver.poll();
        if (!driver.finished() && link.receiver().disconnected()) driver.on_disconnected();
        if (!driver.finished()) driver.tick(sender::SessionConnection::Clock::now());
      }
      if (driver.outcome() != proto::SenderOutcome::Success)
        std::cerr << "the transfer failed: outcome " << static_cast<int>(driver.outcome()) << "\n";
    }
    result.wire = Seconds(link.sender().copy_cpu());
    result.sender.cpu = Seconds(thread_cpu()) - cpu0 + Seconds(pool.cpu_time()) - result.wire;
    result.sender.wall = Clock::now() - start;
    for (const auto& r : plan.results) result.good += r.status == sender::EntryResult::Status::Good;
  }
  receiving.join();
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace rdmax::bench

int main(int argc, char** argv) {
  using namespace rdmax::bench;
  CLI::App app{
      "rdmax-pipeline-bench: the transfer pipeline's CPU cost per GiB, per side, "
      "against its floor (one pass of the digest plus one memcpy), over an in-memory "
      "transport"};
  std::string dir = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::uint64_t mib = 1024;
  unsigned files = 16, runs = 3;
  std::vector<unsigned> thread_counts{1, std::max(1u, std::thread::hardware_concurrency())};
  std::string out_dir;
  bool direct_io = false;
  std::string digest = "fsverity";
  app.add_option("--dir", dir, "a directory on tmpfs for the files (default /dev/shm)");
  app.add_option("--out", out_dir,
                 "where the receiver writes (default: beside the files); for --direct-io, a "
                 "directory on a disk");
  app.add_flag("--direct-io", direct_io,
               "the receiver writes with O_DIRECT (rdma-recv --direct-io)");
  app.add_option("--digest", digest, "the digest both sides compute, as rdma-send --digest")
      ->check(CLI::IsMember({"fsverity", "blake3"}));
  app.add_option("--mib", mib, "MiB in the tree")->check(CLI::Range(16, 1 << 20));
  app.add_option("--files", files, "files in the tree")->check(CLI::Range(1, 4096));
  app.add_option("--runs", runs, "runs of each; the medians are printed")->check(CLI::Range(1, 99));
  app.add_option("--threads", thread_counts, "hashing/worker threads per side, each in turn");
  CLI11_PARSE(app, argc, argv);
  const auto algorithm = digest == "blake3" ? rdmax::proto::DigestAlgorithm::Blake3
                                            : rdmax::proto::DigestAlgorithm::FsVeritySha256;
  spdlog::set_level(spdlog::level::warn);  // the drivers log each file at info

  const std::string tag = "rdmax-pipeline-bench." + std::to_string(::getpid());
  const fs::path root = fs::path(dir) / tag;
  const fs::path out = out_dir.empty() ? root / "dst" : fs::path(out_dir) / tag;
  int status = 0;
  try {
    const auto entries = make_tree(root / "src", mib << 20, files);
    const double gib = static_cast<double>((mib << 20) / files * files) / kGiB;
    std::cout << "# rdmax-pipeline-bench: " << files << " files, " << mib << " MiB, in " << dir
              << ", received into " << out.parent_path().string()
              << (direct_io ? " with --direct-io" : "") << ", digest " << digest << ", " << runs
              << " runs (medians)\n\n"
              << "| threads | side | GiB/s | CPU s/GiB | floor: hash + memcpy | ratio | "
                 "floor of the side: hash + its copy | ratio | cores per 100 Gb/s |\n"
                 "|---|---|---|---|---|---|---|---|---|\n";
    // Once unmeasured: the first pages a machine hands out can cost far more than the
    // ones it recycles (a virtual machine's memory is backed on first touch), and every
    // measured run should pay the same.
    (void)run_pipeline(entries, out, thread_counts.back(), direct_io, algorithm);
    for (unsigned threads : thread_counts) {
      std::vector<double> send_cpu, recv_cpu, send_wall, recv_wall, floor_cpu, write_floor, wire;
      for (unsigned run = 0; run < runs; ++run) {
        const Floor floor = floor_of(entries, threads, root / "floor", algorithm);
        floor_cpu.push_back(floor.with_memcpy.count() / gib);
        write_floor.push_back(floor.with_write.count() / gib);
        const auto cost = run_pipeline(entries, out, threads, direct_io, algorithm);
        if (cost.good != entries.size()) {
          std::cerr << "FAIL: " << cost.good << " of " << entries.size() << " files verified\n";
          status = 1;
        }
        send_cpu.push_back(cost.sender.cpu.count() / gib);
        recv_cpu.push_back(cost.receiver.cpu.count() / gib);
        send_wall.push_back(gib / cost.sender.wall.count());
        recv_wall.push_back(gib / cost.receiver.wall.count());
        wire.push_back(cost.wire.count() / gib);
      }
      const double floor = median(floor_cpu);
      auto row = [&](const char* side, double rate, double cpu, double against) {
        std::printf("| %u | %s | %.2f | %.3f | %.3f | %.2fx | %.3f | %.2fx | %.1f |\n", threads,
                    side, rate, cpu, floor, cpu / floor, against, cpu / against,
                    cpu * kGiBPer100Gbps);
      };
      row("sender", median(send_wall), median(send_cpu), floor);
      row("receiver", median(recv_wall), median(recv_cpu), median(write_floor));
      std::printf(
          "| %u | the WRITEs' copies (a NIC's work, charged to neither) | | %.3f | | | | "
          "| |\n",
          threads, median(wire));
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    status = 2;
  }
  std::error_code ignored;
  fs::remove_all(root, ignored);
  fs::remove_all(out, ignored);
  return status;
}
