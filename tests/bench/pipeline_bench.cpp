// rdmax-pipeline-bench: what the transfer pipeline costs per byte on this machine's own CPU
// (issue 25). The real sender (Connection, --digest-at-end: each chunk hashed on the
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
//
// Then the serial stages of the connection (each event loop, each kind of ordered work
// queue: what one thread does one job at a time), each with its CPU seconds per GiB, the
// lanes of it that run at once (a loop is one; the receiver writes as many chunks at once as
// its window has slots, of one file or several) and the cap that implies; and the CPU
// ceiling of this machine's cores (cores / both sides' CPU s/GiB, as the two sides share
// them here) with the share of it reached. --emulate-cores N replaces each worker job's
// work by a wait as long as it took in the measured runs, on N emulated cores
// (work_emulation.hpp: stand-ins given to the drivers for their read, hash and write), so
// that two cores show the curve of N.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "common/digest/file_digest.hpp"
#include "common/metrics/metrics_server.hpp"
#include "common/os/fd.hpp"
#include "common/work/work_pool.hpp"
#include "loopback_transport.hpp"
#include "protocol/secrets.hpp"
#include "receiver/connection.hpp"
#include "receiver/partial_store.hpp"
#include "sender/connection.hpp"
#include "work_emulation.hpp"

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

// The process's peak resident set (VmHWM), and its reset (Linux 4.0 and later): both sides'
// memory during one transfer, the sender reading with pread and the receiver writing into
// tmpfs, neither mapping the files.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;  // kB
  return 0;
}

// Waits until one of the fds is readable, or 50 ms (the drivers' timers are ticked then).
void wait_readable(int a, int b) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  (void)::poll(fds, 2, 50);
}

struct Cost {
  Seconds wall{0};
  Seconds cpu{0};   // the whole side: its loop and its workers
  Seconds loop{0};  // its event loop's thread alone (the sender's without the WRITEs' copies)
  std::vector<WorkPool::StageCost> stages;  // its workers' jobs, by stage
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
  double peak_rss_mib = 0;  // the process's, during the transfer
  unsigned scrapes = 0;     // --scrape: the receiver's metrics scraped whole
};

struct Setup {
  bool direct_io = false;
  proto::DigestAlgorithm algorithm = proto::DigestAlgorithm::FsVeritySha256;
  std::uint32_t slots = receiver::ReceiverOptions{}.slots;  // the receiver's --slots
  // A sender key both sides hold, and everything after the proofs sealed (PROTOCOL.md 7.11).
  bool seal = false;
  // rdma-recv --metrics served on the loopback and scraped this often during the transfer, as a
  // Prometheus server would (0: no server).
  std::chrono::milliseconds scrape{0};
  // --grant-us: what one revoke-and-grant cycle of a slot's key costs the thread that does it.
  std::chrono::nanoseconds grant_cycle{0};
  // --emulate-cores: the workers' jobs are these cores' waits (work_emulation.hpp), the
  // WRITEs are not copied. None: everything runs for real.
  EmulatedCores* emulated = nullptr;
};

// GET /metrics from 127.0.0.1:port, as a scraper does: true when the answer came whole.
bool scrape_once(std::uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
  if (::write(fd.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size()))
    return false;
  std::string answer;
  char buffer[8192];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
    answer.append(buffer, static_cast<std::size_t>(n));
  return answer.find("rdmax_received_bytes_total") != std::string::npos;
}

// While it lives: the receiver's metrics served (common/metrics/metrics_server.hpp) and scraped
// every `every` from a thread of its own; scrapes() counts the answers that came whole.
class Scraping {
 public:
  Scraping(const receiver::ReceiverMetrics& metrics, std::chrono::milliseconds every)
      : server_(MetricsAddress{"127.0.0.1", 0}, [&metrics] { return metrics.render(); }) {
    server_.start();
    thread_ = std::thread([this, every] {
      for (auto next = Clock::now(); !stop_; next += every) {
        if (scrape_once(server_.port())) ++scrapes_;
        std::this_thread::sleep_until(next + every);
      }
    });
  }
  ~Scraping() {
    stop_ = true;
    thread_.join();
  }
  unsigned scrapes() const { return scrapes_; }

 private:
  MetricsServer server_;
  std::atomic<bool> stop_{false};
  std::atomic<unsigned> scrapes_{0};
  std::thread thread_;
};

constexpr const char* kBenchKeyHex =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

PipelineCost run_pipeline(const std::vector<sender::PlannedEntry>& entries, const fs::path& out,
                          unsigned threads, const Setup& setup) {
  const bool direct_io = setup.direct_io;
  const auto algorithm = setup.algorithm;
  fs::remove_all(out);
  fs::create_directories(out);
  LoopbackLink link;
  if (setup.emulated != nullptr) link.sender().skip_copies();
  link.receiver().charge_registrations(setup.grant_cycle / 2, setup.emulated);
  reset_peak_rss();
  PipelineCost result;
  const auto start = Clock::now();

  std::thread receiving([&] {
    const Seconds cpu0(thread_cpu());
    WorkPool pool(threads);
    receiver::ReceiverOptions options;  // rdma-recv's defaults
    options.workers = threads;
    options.direct_io = direct_io;
    options.slots = setup.slots;
    const Fd dir(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto secrets = std::get<proto::SecretStore>(proto::SecretStore::parse("bench s3cret\n"));
    receiver::PartialStore partials(dir.get(), {});
    receiver::ReceiverMetrics metrics;
    receiver::ReceiverContext context{options, dir.get(), &secrets, pool, metrics, 0};
    auto keys = std::get<proto::SenderKeyStore>(
        proto::SenderKeyStore::parse(std::string("bench ") + kBenchKeyHex + "\n"));
    if (setup.seal) context.sender_keys = &keys;
    // Emulated, a chunk's tree nodes are none: no partial can be kept of them.
    if (setup.emulated != nullptr)
      context.work = setup.emulated->store_work();
    else
      context.partials = &partials;
    std::optional<Scraping> scraping;
    if (setup.scrape.count() > 0) scraping.emplace(metrics, setup.scrape);
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
    result.receiver.loop = Seconds(thread_cpu()) - cpu0;
    result.receiver.cpu = result.receiver.loop + Seconds(pool.cpu_time());
    result.receiver.stages = pool.stage_costs();
    result.receiver.wall = Clock::now() - start;
    if (scraping) result.scrapes = scraping->scrapes();
  });

  {
    const Seconds cpu0(thread_cpu());
    WorkPool pool(threads);
    sender::SenderSettings settings;
    settings.id = "bench";
    settings.version = proto::kVersion2;
    settings.digest_at_end = true;
    settings.pool = &pool;
    if (setup.emulated != nullptr) {
      settings.read = setup.emulated->read();
      settings.hashing = setup.emulated->hashing();
    }
    proto::SenderKey key;
    if (setup.seal) {
      key.id = "bench";
      for (int i = 0; i < 32; ++i) key.key.push_back(static_cast<char>(i));  // kBenchKeyHex
      settings.key = &key;
      settings.seal = true;
    }
    sender::TransferPlan plan{algorithm, entries, std::vector<sender::EntryResult>(entries.size())};
    std::vector<std::uint32_t> all(entries.size());
    std::iota(all.begin(), all.end(), 0u);
    BenchCm cm(link.sender());
    {
      sender::Connection driver(settings, plan, all, cm, "bench");
      driver.start();
      driver.on_setup(proto::SetupEvent::AddressResolved);
      driver.on_setup(proto::SetupEvent::RouteResolved);
      driver.on_established();
      while (!driver.finished()) {
        wait_readable(link.sender().wake_fd(), pool.ready_fd());
        pool.run_completions();
        driver.poll();
        if (!driver.finished() && link.receiver().disconnected()) driver.on_disconnected();
        if (!driver.finished()) driver.tick(sender::Connection::Clock::now());
      }
      if (driver.outcome() != proto::SenderOutcome::Success)
        std::cerr << "the transfer failed: outcome " << static_cast<int>(driver.outcome()) << "\n";
    }
    result.wire = Seconds(link.sender().copy_cpu());
    result.sender.loop = Seconds(thread_cpu()) - cpu0 - result.wire;
    result.sender.cpu = result.sender.loop + Seconds(pool.cpu_time());
    result.sender.stages = pool.stage_costs();
    result.sender.wall = Clock::now() - start;
    for (const auto& r : plan.results) result.good += r.status == sender::EntryResult::Status::Good;
  }
  receiving.join();
  result.peak_rss_mib = peak_rss_mib();
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A stage's CPU seconds per GiB in one run (0 when it did not run).
double stage_cpu(const Cost& side, std::string_view stage, double gib) {
  for (const auto& c : side.stages)
    if (c.stage == stage) return Seconds(c.cpu).count() / gib;
  return 0;
}

constexpr std::string_view kReads = "sender: a slot's reads";
constexpr std::string_view kDisk = "receiver: a file's disk work";
constexpr std::string_view kWrites = "receiver: a file's chunk writes";
constexpr std::string_view kIntake = "receiver: a slot's keys and openings";
constexpr std::string_view kTree = "hashing: a file's tree";

// The serial stages of the runs (medians): each loop thread and each kind of ordered queue,
// with the lanes of it that run at once and the cap that implies.
void print_serial_stages(const std::vector<PipelineCost>& runs, double gib, unsigned threads,
                         unsigned files, unsigned window_slots, const std::string& title) {
  std::printf(
      "\n%s\n\n(Lanes: how many of the stage the connection lets run at once; the worker "
      "threads and the cores bound them further, which is the ceiling below.)\n\n"
      "| side | serial stage | lanes at once | CPU s/GiB | per lane | cap GiB/s |\n"
      "|---|---|---|---|---|---|\n",
      title.c_str());
  auto row = [&](const char* side, std::string_view stage, unsigned lanes, auto cpu_of) {
    std::vector<double> cpu;
    for (const auto& run : runs) cpu.push_back(cpu_of(run));
    const double per_lane = median(cpu) / lanes;
    if (median(cpu) == 0) return;
    std::printf("| %s | %.*s | %u | %.3f | %.3f | %.1f |\n", side, static_cast<int>(stage.size()),
                stage.data(), lanes, median(cpu), per_lane, 1 / per_lane);
  };
  const unsigned file_lanes =
      static_cast<unsigned>(std::min<std::size_t>(files, proto::kInterleavedFiles));
  row("sender", "event loop", 1,
      [&](const PipelineCost& r) { return r.sender.loop.count() / gib; });
  row("receiver", "event loop", 1,
      [&](const PipelineCost& r) { return r.receiver.loop.count() / gib; });
  // One queue per slot, a chunk in each at a time: as many lanes as slots were used.
  std::size_t slots = 0;
  for (const auto& c : runs.back().sender.stages)
    if (c.stage == kReads) slots = c.queues;
  row("sender", kReads, static_cast<unsigned>(std::max<std::size_t>(slots, 1)),
      [&](const PipelineCost& r) { return stage_cpu(r.sender, kReads, gib); });
  // A file's own steps (create, checkpoints, commit) in order, one queue per file.
  row("receiver", kDisk, file_lanes,
      [&](const PipelineCost& r) { return stage_cpu(r.receiver, kDisk, gib); });
  // Each slot's key revoked and granted (--grant-us) on a queue per slot.
  row("receiver", kIntake, window_slots,
      [&](const PipelineCost& r) { return stage_cpu(r.receiver, kIntake, gib); });
  // Its chunks on a lane per slot: as many at once as the window holds, one file or many.
  row("receiver", kWrites, window_slots,
      [&](const PipelineCost& r) { return stage_cpu(r.receiver, kWrites, gib); });
  row("sender", kTree, threads,
      [&](const PipelineCost& r) { return stage_cpu(r.sender, kTree, gib); });
  row("receiver", kTree, threads,
      [&](const PipelineCost& r) { return stage_cpu(r.receiver, kTree, gib); });
}

// The CPU ceiling of `cores` (both sides share them here) and the share of it reached.
void print_ceiling(unsigned cores, double send_cpu, double recv_cpu, double rate,
                   const char* what) {
  const double ceiling = cores / (send_cpu + recv_cpu);
  std::printf("| %s | %u | %.3f + %.3f | %.2f | %.2f | %.0f%% |\n", what, cores, send_cpu, recv_cpu,
              ceiling, rate, 100 * rate / ceiling);
}

}  // namespace
}  // namespace rdmax::bench

int main(int argc, char** argv) {
  using namespace rdmax::bench;
  CLI::App app{
      "rdmax-pipeline-bench: the transfer pipeline's CPU cost per GiB, per side, "
      "against its floor (one pass of the digest plus one memcpy), over an in-memory "
      "transport; its serial stages; its CPU ceiling"};
  std::string dir = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::uint64_t mib = 1024;
  unsigned files = 16, runs = 3;
  std::vector<unsigned> thread_counts{1, std::max(1u, std::thread::hardware_concurrency())};
  std::vector<unsigned> emulated_cores;
  std::string out_dir;
  bool direct_io = false;
  std::string digest = "fsverity";
  std::uint32_t slots = rdmax::receiver::ReceiverOptions{}.slots;
  app.add_option("--slots", slots, "the receiver's slots per connection (rdma-recv --slots)")
      ->check(CLI::Range(1, 64));
  app.add_option("--dir", dir, "a directory on tmpfs for the files (default /dev/shm)");
  app.add_option("--out", out_dir,
                 "where the receiver writes (default: beside the files); for --direct-io, a "
                 "directory on a disk");
  app.add_flag("--direct-io", direct_io,
               "the receiver writes with O_DIRECT where the file system allows it (rdma-recv's "
               "default; without it, as rdma-recv --no-direct-io)");
  app.add_option("--digest", digest, "the digest both sides compute, as rdma-send --digest")
      ->check(CLI::IsMember({"fsverity", "blake3"}));
  app.add_option("--mib", mib, "MiB in the tree")->check(CLI::Range(16, 1 << 20));
  app.add_option("--files", files, "files in the tree")->check(CLI::Range(1, 4096));
  app.add_option("--runs", runs, "runs of each; the medians are printed")->check(CLI::Range(1, 99));
  app.add_option("--threads", thread_counts, "hashing/worker threads per side, each in turn");
  bool seal = false;
  app.add_flag("--seal", seal,
               "also run each transfer with a sender key and sealing (PROTOCOL.md 7.11), "
               "alternately with the clear one, and print what sealing adds per side");
  app.add_option("--emulate-cores", emulated_cores,
                 "after the measured runs, for each N: the workers' jobs replaced by waits as "
                 "long as they took (measured at the last --threads), on N emulated cores, N "
                 "threads per side")
      ->check(CLI::Range(1, 1024));
  unsigned scrape_ms = 0;
  app.add_option("--scrape", scrape_ms,
                 "also run each transfer with the receiver's --metrics served and scraped every "
                 "MS milliseconds, alternately with the unscraped one, and print the change in "
                 "rate and CPU")
      ->option_text("MS")
      ->check(CLI::Range(1, 60000));
  // rdma_rxe under qemu (Linux 6.1): ibv_dereg_mr + ibv_reg_mr of a 1 MiB slot, 6-9 us
  // (scripts/lib/bench-revoke.sh). A NIC pins pages and writes its translation table: ~30.
  double grant_us = 7;
  app.add_option("--grant-us", grant_us,
                 "the CPU microseconds one revoke-and-grant cycle of a slot's key costs the "
                 "thread that does it (charged on the receiver's side to each deregistration "
                 "and registration, half each; default: what rdma_rxe measured)")
      ->check(CLI::Range(0.0, 10000.0));
  CLI11_PARSE(app, argc, argv);
  const auto algorithm = digest == "blake3" ? rdmax::proto::DigestAlgorithm::Blake3
                                            : rdmax::proto::DigestAlgorithm::FsVeritySha256;
  spdlog::set_level(spdlog::level::warn);  // the drivers log each file at info
  Setup setup{direct_io, algorithm, slots, false};
  setup.grant_cycle = std::chrono::nanoseconds(std::llround(grant_us * 1000));
  Setup sealed_setup = setup;
  sealed_setup.seal = true;
  Setup scraped_setup = setup;
  scraped_setup.scrape = std::chrono::milliseconds(scrape_ms);
  struct ScrapedFigures {
    unsigned threads;
    double rate, scraped_rate, recv_cpu, scraped_recv_cpu, scrapes;
  };
  std::vector<ScrapedFigures> scraped;
  // Per thread count: the medians of the sealed runs' CPU s/GiB, sender and receiver, and
  // of the clear runs they alternated with.
  struct SealedFigures {
    unsigned threads;
    double clear_send, clear_recv, sealed_send, sealed_recv, sealed_rate, clear_rate;
  };
  std::vector<SealedFigures> sealing;

  const std::string tag = "rdmax-pipeline-bench." + std::to_string(::getpid());
  const fs::path root = fs::path(dir) / tag;
  const fs::path out = out_dir.empty() ? root / "dst" : fs::path(out_dir) / tag;
  int status = 0;
  try {
    const auto entries = make_tree(root / "src", mib << 20, files);
    const double gib = static_cast<double>((mib << 20) / files * files) / kGiB;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::cout << "# rdmax-pipeline-bench: " << files << " files, " << mib << " MiB, in " << dir
              << ", received into " << out.parent_path().string()
              << (direct_io ? " with --direct-io" : "") << ", digest " << digest
              << ", a key's revoke and grant " << grant_us << " us, " << runs << " runs (medians), "
              << cores << " cores, " << slots << " slots\n\n"
              << "| threads | side | GiB/s | CPU s/GiB | floor: hash + memcpy | ratio | "
                 "floor of the side: hash + its copy | ratio | cores per 100 Gb/s |\n"
                 "|---|---|---|---|---|---|---|---|---|\n";
    // Once unmeasured: the first pages a machine hands out can cost far more than the
    // ones it recycles (a virtual machine's memory is backed on first touch), and every
    // measured run should pay the same.
    (void)run_pipeline(entries, out, thread_counts.back(), setup);
    auto check = [&](const PipelineCost& cost) {
      if (cost.good != entries.size()) {
        std::cerr << "FAIL: " << cost.good << " of " << entries.size() << " files verified\n";
        status = 1;
      }
    };
    std::vector<PipelineCost> last;                  // the runs of the last thread count
    std::vector<std::pair<unsigned, double>> rates;  // per thread count: GiB/s
    double send_cpu_last = 0, recv_cpu_last = 0;
    for (unsigned threads : thread_counts) {
      last.clear();
      std::vector<double> send_cpu, recv_cpu, send_wall, recv_wall, floor_cpu, write_floor, wire;
      std::vector<double> sealed_send, sealed_recv, sealed_wall;
      std::vector<double> scraped_wall, scraped_recv, scrape_counts;
      for (unsigned run = 0; run < runs; ++run) {
        const Floor floor = floor_of(entries, threads, root / "floor", algorithm);
        floor_cpu.push_back(floor.with_memcpy.count() / gib);
        write_floor.push_back(floor.with_write.count() / gib);
        // Scraped: first on every other run, so that neither side of the comparison always
        // runs right after the floor's or the other's memory use.
        auto run_scraped = [&] {
          const auto watched = run_pipeline(entries, out, threads, scraped_setup);
          check(watched);
          scraped_wall.push_back(gib / watched.receiver.wall.count());
          scraped_recv.push_back(watched.receiver.cpu.count() / gib);
          scrape_counts.push_back(watched.scrapes);
          if (watched.scrapes == 0) {
            std::cerr << "FAIL: the receiver's metrics were never scraped during a transfer\n";
            status = 1;
          }
        };
        if (scrape_ms > 0 && run % 2 == 1) run_scraped();
        const auto cost = run_pipeline(entries, out, threads, setup);
        check(cost);
        send_cpu.push_back(cost.sender.cpu.count() / gib);
        recv_cpu.push_back(cost.receiver.cpu.count() / gib);
        send_wall.push_back(gib / cost.sender.wall.count());
        recv_wall.push_back(gib / cost.receiver.wall.count());
        wire.push_back(cost.wire.count() / gib);
        last.push_back(cost);
        if (seal) {
          const auto sealed = run_pipeline(entries, out, threads, sealed_setup);
          check(sealed);
          sealed_send.push_back(sealed.sender.cpu.count() / gib);
          sealed_recv.push_back(sealed.receiver.cpu.count() / gib);
          sealed_wall.push_back(gib / sealed.receiver.wall.count());
        }
        if (scrape_ms > 0 && run % 2 == 0) run_scraped();
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
      rates.emplace_back(threads, median(recv_wall));
      if (seal)
        sealing.push_back({threads, median(send_cpu), median(recv_cpu), median(sealed_send),
                           median(sealed_recv), median(sealed_wall), median(recv_wall)});
      if (scrape_ms > 0)
        scraped.push_back({threads, median(recv_wall), median(scraped_wall), median(recv_cpu),
                           median(scraped_recv), median(scrape_counts)});
      send_cpu_last = median(send_cpu);
      recv_cpu_last = median(recv_cpu);
    }
    if (seal) {
      std::printf(
          "\n## Sealing (PROTOCOL.md 7.11): the same transfers with a sender key, sealed, run "
          "alternately with the clear ones (medians)\n\n"
          "| threads | side | clear CPU s/GiB | sealed CPU s/GiB | added CPU s/GiB | ratio | "
          "clear GiB/s | sealed GiB/s |\n|---|---|---|---|---|---|---|---|\n");
      for (const auto& f : sealing) {
        std::printf("| %u | sender | %.3f | %.3f | %+.3f | %.2fx | %.2f | %.2f |\n", f.threads,
                    f.clear_send, f.sealed_send, f.sealed_send - f.clear_send,
                    f.sealed_send / f.clear_send, f.clear_rate, f.sealed_rate);
        std::printf("| %u | receiver | %.3f | %.3f | %+.3f | %.2fx | | |\n", f.threads,
                    f.clear_recv, f.sealed_recv, f.sealed_recv - f.clear_recv,
                    f.sealed_recv / f.clear_recv);
      }
    }
    if (scrape_ms > 0) {
      std::printf(
          "\n## Scraped (rdma-recv --metrics): the same transfers with the receiver's metrics "
          "served and scraped every %u ms, run alternately with the unscraped ones, each first "
          "every other run (medians)\n\n"
          "| threads | GiB/s | GiB/s scraped | change | receiver CPU s/GiB | scraped | change "
          "| scrapes per run |\n|---|---|---|---|---|---|---|---|\n",
          scrape_ms);
      for (const auto& f : scraped)
        std::printf("| %u | %.3f | %.3f | %+.1f%% | %.3f | %.3f | %+.3f | %.0f |\n", f.threads,
                    f.rate, f.scraped_rate, 100 * (f.scraped_rate / f.rate - 1), f.recv_cpu,
                    f.scraped_recv_cpu, f.scraped_recv_cpu - f.recv_cpu, f.scrapes);
    }
    const unsigned threads = thread_counts.back();
    print_serial_stages(last, gib, threads, files, slots,
                        "## Serial stages at " + std::to_string(threads) + " threads");
    std::printf(
        "\n## CPU ceiling (cores / both sides' CPU s/GiB at %u threads)\n\n"
        "| run | cores | CPU s/GiB: sender + receiver | ceiling GiB/s | reached GiB/s | share |\n"
        "|---|---|---|---|---|---|\n",
        threads);
    for (const auto& [t, rate] : rates) {
      const std::string what = "measured, " + std::to_string(t) + " threads";
      print_ceiling(cores, send_cpu_last, recv_cpu_last, rate, what.c_str());
    }
    std::vector<double> rss;
    for (const auto& r : last) rss.push_back(r.peak_rss_mib);
    std::printf(
        "\nPeak RSS of the process during a transfer (both sides; the files are read with "
        "pread and written into %s; a file written on several lanes is mapped, its pages let "
        "go every 64 MiB): %.0f MiB for %.0f MiB sent\n",
        out.parent_path().c_str(), median(rss), gib * 1024);
    if (!emulated_cores.empty()) {
      // The costs of the jobs replaced, per byte, from the last measured runs.
      std::vector<double> hash, read, write, loops;
      for (const auto& r : last) {
        loops.push_back((r.sender.loop + r.receiver.loop).count() / gib);
        hash.push_back((stage_cpu(r.sender, kTree, gib) + stage_cpu(r.receiver, kTree, gib)) / 2);
        read.push_back(stage_cpu(r.sender, kReads, gib));
        write.push_back(stage_cpu(r.receiver, kWrites, gib));
      }
      const Costs costs{median(hash) / kGiB, median(read) / kGiB, median(write) / kGiB};
      std::printf(
          "\nEmulated (each job a wait of its measured length: hashing %.3f, a read %.3f, a "
          "write %.3f CPU s/GiB; the WRITEs not copied; the loops real, on this machine's cores, "
          "so that of N cores the jobs get N less what the loops would use at the ceiling, "
          "rounded):\n\n"
          "| run | cores | CPU s/GiB: sender + receiver | ceiling GiB/s | reached GiB/s | share "
          "|\n|---|---|---|---|---|---|\n",
          median(hash), median(read), median(write));
      std::vector<std::vector<PipelineCost>> emulated_runs;
      for (unsigned n : emulated_cores) {
        const double ceiling = n / (send_cpu_last + recv_cpu_last);
        const auto loop_cores = static_cast<unsigned>(std::lround(median(loops) * ceiling));
        EmulatedCores emulated(n > loop_cores ? n - loop_cores : 1, costs);
        Setup emulated_setup = setup;
        emulated_setup.emulated = &emulated;
        std::vector<double> rate;
        emulated_runs.emplace_back();
        for (unsigned run = 0; run < runs; ++run) {
          const auto cost = run_pipeline(entries, out, n, emulated_setup);
          check(cost);
          rate.push_back(gib / cost.receiver.wall.count());
          emulated_runs.back().push_back(cost);
        }
        const std::string what = "emulated, " + std::to_string(n) + " threads";
        print_ceiling(n, send_cpu_last, recv_cpu_last, median(rate), what.c_str());
      }
      // The loops run for real under emulation: their cost at N threads.
      for (std::size_t i = 0; i < emulated_cores.size(); ++i) {
        std::printf(
            "\nEmulated at %u cores: the event loops (real)\n\n| side | CPU s/GiB | cap GiB/s "
            "|\n|---|---|---|\n",
            emulated_cores[i]);
        std::vector<double> s_loop, r_loop;
        for (const auto& r : emulated_runs[i]) {
          s_loop.push_back(r.sender.loop.count() / gib);
          r_loop.push_back(r.receiver.loop.count() / gib);
        }
        std::printf("| sender | %.3f | %.1f |\n| receiver | %.3f | %.1f |\n", median(s_loop),
                    1 / median(s_loop), median(r_loop), 1 / median(r_loop));
      }
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
