#pragma once
// Two ways for the owner of a receive slot to grant and revoke the remote key through
// which its peer may RDMA WRITE into the slot (docs/PROTOCOL.md 5.4):
//
//   Reregistration  what rdma-recv does today: revoking deregisters the slot's memory
//                   region, granting registers it again (a new MR, a new rkey).
//   WindowKeys      memory is registered once, without remote access of its own (one
//                   region for the whole window, or one per slot); a type-2 memory window
//                   per slot carries the remote key. Revoking posts LOCAL_INV of the
//                   window's rkey on the owner's QP, granting posts BIND_MW with
//                   ibv_inc_rkey(old rkey); each waits for its completion.
//
// Both start revoked; grant() must come first. Both throw on failure (SysError for a
// refused call, std::runtime_error for a completion in error).

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "common/rdma/memory_region.hpp"
#include "loopback_pair.hpp"

namespace rdmax::bench {

class SlotKeys {
 public:
  virtual ~SlotKeys() = default;
  // Gives the slot a key no grant before the previous one had; valid until revoke().
  virtual void grant() = 0;
  // The current key stops working; done when this returns.
  virtual void revoke() = 0;
  virtual std::uint32_t rkey() const = 0;
  // A key the method keeps for the whole window that must grant no remote access (the
  // window's own MR for WindowKeys), to check that it really does not.
  virtual std::optional<std::uint32_t> standing_rkey() const { return std::nullopt; }
  // The address a WRITE into the slot names (both methods use virtual addresses).
  std::uint64_t remote_addr() const { return reinterpret_cast<std::uintptr_t>(slot_.data()); }

 protected:
  explicit SlotKeys(std::span<std::uint8_t> slot) : slot_(slot) {}
  std::span<std::uint8_t> slot_;
};

class Reregistration final : public SlotKeys {
 public:
  Reregistration(LoopbackPair& pair, std::span<std::uint8_t> slot);
  void grant() override;
  void revoke() override;
  std::uint32_t rkey() const override { return region_->rkey(); }

 private:
  ibv_pd* pd_;
  std::optional<MemoryRegion> region_;
};

// Owns an ibv_mw. Destroy it before its protection domain.
class MemoryWindow {
 public:
  MemoryWindow(ibv_pd* pd, ibv_mw_type type);
  MemoryWindow(MemoryWindow&& other) noexcept : mw_(std::exchange(other.mw_, nullptr)) {}
  MemoryWindow& operator=(MemoryWindow&&) = delete;
  MemoryWindow(const MemoryWindow&) = delete;
  MemoryWindow& operator=(const MemoryWindow&) = delete;
  ~MemoryWindow();

  ibv_mw* get() const noexcept { return mw_; }

 private:
  ibv_mw* mw_ = nullptr;
};

class WindowKeys final : public SlotKeys {
 public:
  // `region` is registered once (LOCAL_WRITE | MW_BIND: no remote access of its own);
  // `slot` lies inside it. Bind and invalidate are posted on the owner's QP, which is also
  // the only QP through which a type-2 window's key can be used.
  WindowKeys(LoopbackPair& pair, std::span<std::uint8_t> region, std::span<std::uint8_t> slot);
  void grant() override;
  void revoke() override;
  // The key of the latest bind: with type 2 the bind request chooses it.
  std::uint32_t rkey() const override { return mw_.get()->rkey; }
  std::optional<std::uint32_t> standing_rkey() const override { return region_mr_.rkey(); }

 private:
  // Posts `wr` signaled on the owner's QP and waits for its completion, which must succeed.
  void run_local(ibv_send_wr& wr, const char* what);

  LoopbackPair& pair_;
  MemoryRegion region_mr_;
  MemoryWindow mw_;
};

// "IBV_WC_REM_ACCESS_ERR"-style names for the statuses this benchmark meets.
std::string wc_status_name(ibv_wc_status status);

}  // namespace rdmax::bench
