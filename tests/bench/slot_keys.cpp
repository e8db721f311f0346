#include "slot_keys.hpp"

#include <stdexcept>

#include "common/error.hpp"

namespace rdmax::bench {
namespace {

// wr_ids of the owner's local operations: each is waited for alone, so they only need to
// be told apart from each other.
enum class LocalOp : std::uint64_t { Bind = 1, Invalidate = 2 };

}  // namespace

std::string wc_status_name(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return "IBV_WC_SUCCESS";
    case IBV_WC_LOC_LEN_ERR:
      return "IBV_WC_LOC_LEN_ERR";
    case IBV_WC_LOC_QP_OP_ERR:
      return "IBV_WC_LOC_QP_OP_ERR";
    case IBV_WC_LOC_PROT_ERR:
      return "IBV_WC_LOC_PROT_ERR";
    case IBV_WC_WR_FLUSH_ERR:
      return "IBV_WC_WR_FLUSH_ERR";
    case IBV_WC_MW_BIND_ERR:
      return "IBV_WC_MW_BIND_ERR";
    case IBV_WC_REM_INV_REQ_ERR:
      return "IBV_WC_REM_INV_REQ_ERR";
    case IBV_WC_REM_ACCESS_ERR:
      return "IBV_WC_REM_ACCESS_ERR";
    case IBV_WC_REM_OP_ERR:
      return "IBV_WC_REM_OP_ERR";
    case IBV_WC_RETRY_EXC_ERR:
      return "IBV_WC_RETRY_EXC_ERR";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "IBV_WC_RNR_RETRY_EXC_ERR";
    default:
      return std::string(::ibv_wc_status_str(status)) + " (" + std::to_string(status) + ")";
  }
}

Reregistration::Reregistration(LoopbackPair& pair, std::span<std::uint8_t> slot)
    : SlotKeys(slot), pd_(pair.owner().pd.get()) {}

// The access rdma-recv registers a slot with (RdmaTransport, Access::RemoteWrite).
void Reregistration::grant() {
  region_.emplace(pd_, slot_.data(), slot_.size(),
                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

void Reregistration::revoke() {
  region_.reset();
}

MemoryWindow::MemoryWindow(ibv_pd* pd, ibv_mw_type type) {
  // ibv_alloc_mw returns NULL; EOPNOTSUPP when the provider has no memory windows.
  errno = 0;
  mw_ = ::ibv_alloc_mw(pd, type);
  if (mw_ == nullptr) throw_sys("ibv_alloc_mw", errno != 0 ? errno : EOPNOTSUPP);
}

MemoryWindow::~MemoryWindow() {
  if (mw_ == nullptr) return;
  // Returns the errno value itself.
  if (const int err = ::ibv_dealloc_mw(mw_); err != 0) warn_release_failure("ibv_dealloc_mw", err);
}

WindowKeys::WindowKeys(LoopbackPair& pair, std::span<std::uint8_t> region,
                       std::span<std::uint8_t> slot)
    : SlotKeys(slot),
      pair_(pair),
      // Binding a window that grants remote write needs LOCAL_WRITE on the region
      // (IBTA C10-74); the region itself grants no remote access, so its rkey is useless
      // to the peer.
      region_mr_(pair.owner().pd.get(), region.data(), region.size(),
                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
      mw_(pair.owner().pd.get(), IBV_MW_TYPE_2) {}

void WindowKeys::grant() {
  ibv_mw* mw = mw_.get();
  const std::uint32_t next = ::ibv_inc_rkey(mw->rkey);
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(LocalOp::Bind);
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = next;
  wr.bind_mw.bind_info.mr = region_mr_.get();
  wr.bind_mw.bind_info.addr = remote_addr();
  wr.bind_mw.bind_info.length = slot_.size();
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  run_local(wr, "BIND_MW");
  // With type 2 the caller keeps ibv_mw::rkey current: the rxe provider names the window
  // in the next bind by it (mw_rkey), and the kernel refuses a bind naming any key but the
  // window's current one: IBV_WC_MW_BIND_ERR, and the QP goes to the error state. Only
  // the type-1 path, ibv_bind_mw, updates the field itself.
  mw->rkey = next;
}

void WindowKeys::revoke() {
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(LocalOp::Invalidate);
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.invalidate_rkey = rkey();
  run_local(wr, "LOCAL_INV");
}

void WindowKeys::run_local(ibv_send_wr& wr, const char* what) {
  wr.send_flags = IBV_SEND_SIGNALED;
  post_send(pair_.owner_qp(), wr, what);
  const ibv_wc wc = wait_completion(pair_.owner().cq, pair_.timeout());
  if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr.wr_id) {
    throw std::runtime_error(std::string(what) + " completed with " + wc_status_name(wc.status) +
                             " (vendor_err " + std::to_string(wc.vendor_err) + ", wr_id " +
                             std::to_string(wc.wr_id) + ")");
  }
}

}  // namespace rdmax::bench
