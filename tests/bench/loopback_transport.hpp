#pragma once
// Two ends of an in-memory reliable connection: what an RC queue pair gives the drivers,
// with no device, for the pipeline benchmark (pipeline_bench.cpp). send() encodes the
// message and the other end decodes it (the real codec, both ways); write() copies into
// the other end's registered memory (an RDMA WRITE as a memcpy), checked against its keys
// as a NIC would, and done before any later send can be seen (RC's ordering).
//
// Threads: each end belongs to one thread (its side's loop), which waits on wake_fd()
// and then polls. The ends meet under one mutex; a write copies under it, so the other
// end cannot deregister the memory in the middle of the copy.
//
// The copy is the NIC's work, not either program's: the time it takes on the writer's
// thread is counted apart (copy_cpu()) so that the benchmark can leave it out.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/connection/transport.hpp"
#include "common/os/aligned_buffer.hpp"
#include "common/os/event_fd.hpp"

namespace rdmax::bench {

class EmulatedCores;  // work_emulation.hpp

// CPU time the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID).
std::chrono::nanoseconds thread_cpu();

class LoopbackLink {
 public:
  class End;
  LoopbackLink();
  ~LoopbackLink();
  LoopbackLink(const LoopbackLink&) = delete;
  LoopbackLink& operator=(const LoopbackLink&) = delete;

  End& sender() { return *ends_[0]; }
  End& receiver() { return *ends_[1]; }

 private:
  friend class End;
  std::mutex mutex_;
  std::unique_ptr<End> ends_[2];
};

class LoopbackLink::End final : public Transport {
 public:
  End(LoopbackLink& link, int index) : link_(link), index_(index) {}

  int wake_fd() const { return wake_.fd(); }
  bool disconnected() const;  // this end called disconnect()
  std::chrono::nanoseconds copy_cpu() const { return copy_cpu_; }
  // The benchmark's emulation (work_emulation.hpp): a WRITE is checked but not copied (the
  // NIC's work, on no core).
  void skip_copies() { skip_copies_ = true; }
  // rdmax-pipeline-bench --grant-us: each register_memory() and each deregister() burns this
  // much of the calling thread's CPU, as a NIC's driver would (half a revoke-and-grant cycle);
  // with `emulated`, waits that long on one of its cores instead.
  void charge_registrations(std::chrono::nanoseconds each, EmulatedCores* emulated = nullptr) {
    registration_cost_ = each;
    emulated_ = emulated;
  }

  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override;
  std::uint32_t sends_in_flight() const override;
  void write(const Registration& source, std::span<const std::uint8_t> local,
             std::uint64_t remote_addr, std::uint32_t rkey) override;
  Registration register_memory(std::span<std::uint8_t> memory, Access access) override;
  void deregister(const Registration& registration) override;
  std::span<std::uint8_t> allocate(std::size_t bytes) override;
  void poll(TransportSink& sink) override;
  void disconnect() noexcept override;
  void shut_down() noexcept override {}

 private:
  struct Item {
    enum class Kind : std::uint8_t { Message, Completion, Failure } kind;
    std::vector<std::uint8_t> bytes;  // an encoded message
    std::uint64_t tag = 0;
    std::string why;
  };
  struct Region {
    std::span<std::uint8_t> memory;
    Access access;
    std::uint32_t rkey;
  };
  End& peer() { return *link_.ends_[1 - index_]; }
  void push(Item item);  // with the link's mutex held
  void charge_registration() const;

  LoopbackLink& link_;
  const int index_;
  EventFd wake_;
  // Guarded by the link's mutex:
  std::deque<Item> inbox_;
  std::map<std::uint32_t, Region> regions_;  // by handle
  std::uint32_t next_handle_ = 1;
  std::uint32_t completions_due_ = 0;
  bool disconnected_ = false;
  // This end's thread only:
  std::vector<AlignedBuffer> allocations_;
  std::chrono::nanoseconds copy_cpu_{0};
  bool skip_copies_ = false;
  std::chrono::nanoseconds registration_cost_{0};
  EmulatedCores* emulated_ = nullptr;
};

}  // namespace rdmax::bench
