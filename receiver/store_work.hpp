#pragma once
// What storing a chunk costs the receiver's workers, given to each IncomingFile
// (receiver/incoming_file.hpp) by the daemon's context (ReceiverContext::work): the chunk's
// write, on a write lane, and the file's hashing. rdma-recv leaves both empty: the real ones
// (OutputFile::write_at, the offered digest). The pipeline benchmark's emulation gives
// stand-ins that wait instead (tests/bench/work_emulation.hpp).

#include <cstdint>
#include <functional>
#include <span>

#include "common/digest/file_hasher.hpp"
#include "receiver/output_file.hpp"

namespace rdmax::receiver {

struct StoreWork {
  // Writes `bytes` at `offset` of `file`; throws to say it failed. Runs on a write lane, as
  // OutputFile::write_at may (several at once). Empty: OutputFile::write_at.
  using Write = std::function<void(OutputFile& file, std::uint64_t offset,
                                   std::span<const std::uint8_t> bytes)>;
  Write write;
  FileHashing hashing;  // makes the file's FileHasher
};

}  // namespace rdmax::receiver
