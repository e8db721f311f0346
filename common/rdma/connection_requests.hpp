#pragma once
// What both daemons (rdma-recv's, rdma-send --serve's) do with the connection requests their
// listener gets: each connection is known by a number, which rdma_cm carries in the cm_id's
// context pointer; a request refused is refused in the CM itself, with a few words for the
// peer in the REJ's private data (docs/PROTOCOL.md 4.1): no queue pair, no memory.

#include <rdma/rdma_cma.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "common/rdma/cm_id.hpp"
#include "protocol/refusals.hpp"

namespace rdmax {

inline void* cm_context_for(std::uint64_t number) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(number));
}
// 0: no id, or one that was given no number (the listener's).
inline std::uint64_t cm_number_of(rdma_cm_id* id) {
  return id != nullptr ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(id->context))
                       : 0;
}

inline void reject_request(CmId& cm_id, std::string_view why) noexcept {
  try {
    const std::string text = proto::encode_cm_reject(why);
    cm_id.reject(text.data(), static_cast<std::uint8_t>(text.size()));
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
  }
}

}  // namespace rdmax
