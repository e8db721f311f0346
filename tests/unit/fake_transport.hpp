#pragma once
// An in-memory Transport for driving the real connection drivers message by message (the
// way eRPC's protocol tests drive its credit handling). It records what the driver posts
// (messages, WRITEs, registrations), and delivers on the driver's next poll() what the
// test queued: messages from the peer, send completions, transport failures.
//
// Registrations model the keys: each registration gets fresh keys, a deregistered key is
// dead, and write_remote() (the peer's RDMA WRITE into our window) fails with a dead or
// foreign key, as the hardware would (IBV_WC_REM_ACCESS_ERR at the writer).

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/connection/transport.hpp"
#include "common/os/aligned_buffer.hpp"
#include "protocol/wire.hpp"

namespace rdmax::test {

class FakeTransport final : public Transport {
 public:
  struct Sent {
    proto::Message message;
    std::uint16_t version;
    std::uint64_t tag;
  };
  struct Written {
    std::uint32_t lkey;
    std::vector<std::uint8_t> bytes;
    std::uint64_t remote_addr;
    std::uint32_t rkey;
    std::size_t before = 0;  // the SEND it goes before (RC orders them): sent[before]
  };
  struct Region {
    std::span<std::uint8_t> memory;
    Access access;
    Registration keys;
    bool live = true;
  };

  // What the driver did.
  std::vector<Sent> sent;  // every message, in order
  std::vector<Written> writes;
  // By handle. Registered and deregistered on workers too (Transport): under the lock while
  // a job may run; read directly only once the driver is idle.
  std::map<std::uint32_t, Region> regions;
  mutable std::mutex regions_mutex;
  bool disconnected = false;
  bool shut = false;

  // Knobs.
  std::uint32_t send_capacity = 128;   // SENDs in flight before send() throws TransportError
  int fail_registration_after = -1;    // register_memory throws after this many (-1: never)
  int fail_deregistration_after = -1;  // deregister throws after this many (-1: never)
  int fail_send_after = -1;            // send throws SysError-like after this many
  // Like fail_send_after, but only that one send fails (a post refused once); later sends
  // go through, so the driver's answer to the failure (an Error) can be seen.
  int fail_one_send_after = -1;
  // The next poll() throws before it delivers anything, as the real one does when
  // ibv_poll_cq fails or a receive buffer cannot be posted again.
  bool fail_next_poll = false;

  // What the peer does; delivered at the next poll(), in order.
  void deliver(const proto::Message& message, std::uint16_t version = proto::kVersion1) {
    auto bytes = proto::encode(message, version);
    if (bytes.empty()) throw std::logic_error("test message does not encode");
    deliver_bytes(bytes);
  }
  void deliver_bytes(std::span<const std::uint8_t> bytes) {
    Inbound in;
    in.version = proto::peek_version(bytes).value_or(0);
    in.decoded = proto::decode(bytes);
    queue_.push_back({Queued::Kind::Message, std::move(in), 0, {}});
  }
  // Completes the oldest `count` SENDs in flight (all of them by default).
  void complete_sends(std::size_t count = SIZE_MAX) {
    while (count-- > 0 && !in_flight_.empty()) {
      queue_.push_back({Queued::Kind::Completion, {}, in_flight_.front(), {}});
      in_flight_.pop_front();
    }
  }
  void fail(std::string why) { queue_.push_back({Queued::Kind::Failure, {}, 0, std::move(why)}); }
  // The peer's RDMA WRITE: false when the key is dead, foreign or the range outside it.
  bool write_remote(std::uint64_t addr, std::uint32_t rkey, std::span<const std::uint8_t> bytes) {
    std::lock_guard lock(regions_mutex);
    for (auto& [handle, r] : regions) {
      if (!r.live || r.keys.rkey != rkey || r.access != Access::RemoteWrite) continue;
      const auto base = reinterpret_cast<std::uintptr_t>(r.memory.data());
      if (addr < base || addr + bytes.size() > base + r.memory.size()) return false;
      std::memcpy(r.memory.data() + (addr - base), bytes.data(), bytes.size());
      return true;
    }
    return false;
  }
  // The key this side last Credited for `slot` of its window (0: none yet).
  std::uint32_t latest_rkey(std::uint32_t slot) const {
    std::uint32_t key = 0;
    for (const auto& c : sent_of<proto::Credit>())
      if (c.slot == slot) key = c.rkey;
    return key;
  }
  // The peer's WRITE of `bytes` into `slot` of the window this side Accepted, with the key
  // last Credited for it.
  bool write_slot(std::uint32_t slot, std::span<const std::uint8_t> bytes) {
    const auto a = sent_of<proto::Accept>().at(0);
    return write_remote(a.region_addr + std::uint64_t{slot} * a.slot_size, latest_rkey(slot),
                        bytes);
  }
  bool pending() const { return !queue_.empty(); }
  std::size_t live_regions() const {
    std::lock_guard lock(regions_mutex);
    std::size_t n = 0;
    for (const auto& [h, r] : regions) n += r.live ? 1 : 0;
    return n;
  }
  // Messages of type T sent so far.
  template <typename T>
  std::vector<T> sent_of() const {
    std::vector<T> out;
    for (const auto& s : sent)
      if (const auto* m = std::get_if<T>(&s.message)) out.push_back(*m);
    return out;
  }

  // Transport.
  void send(const proto::Message& message, std::uint16_t version, std::uint64_t tag) override {
    if (shut) throw std::logic_error("send after shut_down");
    if (proto::encode(message, version).empty())
      throw std::logic_error("the driver posted a message that does not encode");
    if (fail_send_after == 0) throw std::runtime_error("ibv_post_send: injected failure");
    if (fail_send_after > 0) --fail_send_after;
    if (fail_one_send_after == 0) {
      fail_one_send_after = -1;
      throw std::runtime_error("ibv_post_send: injected one-off failure");
    }
    if (fail_one_send_after > 0) --fail_one_send_after;
    if (in_flight_.size() >= send_capacity) throw TransportError("send queue full (fake)");
    sent.push_back({message, version, tag});
    in_flight_.push_back(tag);
  }
  std::uint32_t sends_in_flight() const override {
    return static_cast<std::uint32_t>(in_flight_.size());
  }
  void write(const Registration& source, std::span<const std::uint8_t> local,
             std::uint64_t remote_addr, std::uint32_t rkey) override {
    std::lock_guard lock(regions_mutex);
    auto it = regions.find(source.handle);
    if (it == regions.end() || !it->second.live || it->second.keys.lkey != source.lkey)
      throw std::logic_error("WRITE from unregistered memory");
    const auto* begin = it->second.memory.data();
    if (local.data() < begin || local.data() + local.size() > begin + it->second.memory.size())
      throw std::logic_error("WRITE outside its registration");
    writes.push_back({source.lkey, {local.begin(), local.end()}, remote_addr, rkey, sent.size()});
  }
  Registration register_memory(std::span<std::uint8_t> memory, Access access) override {
    std::lock_guard lock(regions_mutex);
    if (fail_registration_after == 0) throw std::runtime_error("ibv_reg_mr: injected failure");
    if (fail_registration_after > 0) --fail_registration_after;
    const std::uint32_t handle = next_handle_++;
    Registration keys{handle, 0x1000 + handle, 0x8000 + handle};
    regions[handle] = Region{memory, access, keys, true};
    return keys;
  }
  void deregister(const Registration& registration) override {
    std::lock_guard lock(regions_mutex);
    // The device refuses, as ibv_dereg_mr can: the key stays live.
    if (fail_deregistration_after == 0) throw std::runtime_error("ibv_dereg_mr: injected failure");
    if (fail_deregistration_after > 0) --fail_deregistration_after;
    auto it = regions.find(registration.handle);
    if (it == regions.end() || !it->second.live) throw std::logic_error("deregistered twice");
    it->second.live = false;
  }
  std::span<std::uint8_t> allocate(std::size_t bytes) override {
    allocations_.emplace_back(bytes);  // page-aligned, as Transport promises
    return {allocations_.back().data(), bytes};
  }
  void poll(TransportSink& sink) override {
    if (fail_next_poll) {
      fail_next_poll = false;
      throw std::runtime_error("ibv_poll_cq: injected failure");
    }
    while (!queue_.empty()) {
      Queued next = std::move(queue_.front());
      queue_.pop_front();
      switch (next.kind) {
        case Queued::Kind::Message:
          sink.on_received(std::move(next.inbound));
          break;
        case Queued::Kind::Completion:
          sink.on_send_completed(next.tag);
          break;
        case Queued::Kind::Failure:
          sink.on_transport_failed(next.why);
          break;
      }
    }
  }
  void disconnect() noexcept override { disconnected = true; }
  void shut_down() noexcept override { shut = true; }

 private:
  struct Queued {
    enum class Kind { Message, Completion, Failure } kind;
    Inbound inbound;
    std::uint64_t tag;
    std::string why;
  };
  std::deque<Queued> queue_;
  std::deque<std::uint64_t> in_flight_;
  std::uint32_t next_handle_ = 1;
  std::deque<AlignedBuffer> allocations_;  // a deque: earlier allocations never move
};

}  // namespace rdmax::test
