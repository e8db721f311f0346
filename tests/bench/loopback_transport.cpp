#include "loopback_transport.hpp"

#include <time.h>

#include <cstring>
#include <stdexcept>

#include "protocol/wire.hpp"
#include "work_emulation.hpp"

namespace rdmax::bench {

std::chrono::nanoseconds thread_cpu() {
  timespec used{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
  return std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
}

LoopbackLink::LoopbackLink() {
  ends_[0] = std::make_unique<End>(*this, 0);
  ends_[1] = std::make_unique<End>(*this, 1);
}

LoopbackLink::~LoopbackLink() = default;

void LoopbackLink::End::push(Item item) {
  inbox_.push_back(std::move(item));
  wake_.signal();
}

bool LoopbackLink::End::disconnected() const {
  std::lock_guard lock(link_.mutex_);
  return disconnected_;
}

void LoopbackLink::End::send(const proto::Message& message, std::uint16_t version,
                             std::uint64_t tag) {
  auto bytes = proto::encode(message, version);
  if (bytes.empty()) throw std::logic_error("a message that does not encode");
  std::lock_guard lock(link_.mutex_);
  if (disconnected_ || peer().disconnected_) throw TransportError("the link is disconnected");
  peer().push({Item::Kind::Message, std::move(bytes), 0, {}});
  push({Item::Kind::Completion, {}, tag, {}});
  ++completions_due_;
}

std::uint32_t LoopbackLink::End::sends_in_flight() const {
  std::lock_guard lock(link_.mutex_);
  return completions_due_;
}

void LoopbackLink::End::write(const Registration& source, std::span<const std::uint8_t> local,
                              std::uint64_t remote_addr, std::uint32_t rkey) {
  std::lock_guard lock(link_.mutex_);
  auto own = regions_.find(source.handle);
  if (own == regions_.end() || own->second.access != Access::LocalRead ||
      local.data() < own->second.memory.data() ||
      local.data() + local.size() > own->second.memory.data() + own->second.memory.size())
    throw std::logic_error("a WRITE from memory that is not registered for it");
  for (auto& [handle, region] : peer().regions_) {
    if (region.rkey != rkey || region.access != Access::RemoteWrite) continue;
    const auto base = reinterpret_cast<std::uintptr_t>(region.memory.data());
    if (remote_addr < base || remote_addr + local.size() > base + region.memory.size()) break;
    if (skip_copies_) return;
    const auto start = thread_cpu();
    std::memcpy(region.memory.data() + (remote_addr - base), local.data(), local.size());
    copy_cpu_ += thread_cpu() - start;
    return;
  }
  push({Item::Kind::Failure, {}, 0, "completion error: remote access error"});
}

// What a NIC's driver spends pinning pages and programming its translation table, on the
// calling thread's CPU, outside the link's mutex (the other end does not wait for it).
void LoopbackLink::End::charge_registration() const {
  if (registration_cost_.count() == 0) return;
  if (emulated_ != nullptr) return emulated_->spend(registration_cost_);
  const auto until = thread_cpu() + registration_cost_;
  while (thread_cpu() < until) {
  }
}

Registration LoopbackLink::End::register_memory(std::span<std::uint8_t> memory, Access access) {
  charge_registration();
  std::lock_guard lock(link_.mutex_);
  const std::uint32_t handle = next_handle_++;
  // Keys as a NIC makes them: a new one for each registration, never reused.
  const Registration keys{handle, 0x10000u * static_cast<std::uint32_t>(index_ + 1) + handle,
                          0x80000000u + 0x1000000u * static_cast<std::uint32_t>(index_) + handle};
  regions_[handle] = {memory, access, keys.rkey};
  return keys;
}

void LoopbackLink::End::deregister(const Registration& registration) {
  charge_registration();
  std::lock_guard lock(link_.mutex_);
  regions_.erase(registration.handle);
}

std::span<std::uint8_t> LoopbackLink::End::allocate(std::size_t bytes) {
  allocations_.emplace_back(bytes);
  return {allocations_.back().data(), bytes};
}

void LoopbackLink::End::poll(TransportSink& sink) {
  (void)wake_.read_count();
  std::deque<Item> items;
  {
    std::lock_guard lock(link_.mutex_);
    items.swap(inbox_);
  }
  for (Item& item : items) {
    switch (item.kind) {
      case Item::Kind::Message: {
        Inbound in;
        in.version = proto::peek_version(item.bytes).value_or(0);
        in.decoded = proto::decode(item.bytes);
        sink.on_received(std::move(in));
        break;
      }
      case Item::Kind::Completion: {
        {
          std::lock_guard lock(link_.mutex_);
          --completions_due_;
        }
        sink.on_send_completed(item.tag);
        break;
      }
      case Item::Kind::Failure:
        sink.on_transport_failed(item.why);
        break;
    }
  }
}

void LoopbackLink::End::disconnect() noexcept {
  std::lock_guard lock(link_.mutex_);
  disconnected_ = true;
  peer().wake_.signal();
}

}  // namespace rdmax::bench
