#include "common/digest/blake3_tree.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>

extern "C" {
#include "blake3_impl.h"
}

namespace rdmax::blake3 {
namespace {

static_assert(kChunkBytes == BLAKE3_CHUNK_LEN);
constexpr std::size_t kBlocksPerChunk = BLAKE3_CHUNK_LEN / BLAKE3_BLOCK_LEN;

Digest bytes_of(const std::uint32_t (&words)[8]) {
  Digest out{};
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t b = 0; b < 4; ++b)
      out[4 * i + b] = static_cast<std::uint8_t>(words[i] >> (8 * b));
  return out;
}

// A parent node's chaining value, or with `root` the hash of the file it tops.
Digest parent(const Digest& left, const Digest& right, bool root) {
  std::array<std::uint8_t, BLAKE3_BLOCK_LEN> block{};
  std::memcpy(block.data(), left.data(), left.size());
  std::memcpy(block.data() + left.size(), right.data(), right.size());
  std::uint32_t cv[8];
  std::memcpy(cv, IV, sizeof cv);
  blake3_compress_in_place(cv, block.data(), BLAKE3_BLOCK_LEN, 0,
                           static_cast<std::uint8_t>(PARENT | (root ? ROOT : 0)));
  return bytes_of(cv);
}

// The chaining value of one chunk of fewer than 1024 bytes (the file's last), not the root.
Digest short_chunk(std::span<const std::uint8_t> data, std::uint64_t chunk) {
  std::uint32_t cv[8];
  std::memcpy(cv, IV, sizeof cv);
  const std::size_t blocks =
      std::max<std::size_t>(1, (data.size() + BLAKE3_BLOCK_LEN - 1) / BLAKE3_BLOCK_LEN);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::array<std::uint8_t, BLAKE3_BLOCK_LEN> block{};
    const std::size_t at = b * BLAKE3_BLOCK_LEN;
    const std::size_t length = std::min<std::size_t>(BLAKE3_BLOCK_LEN, data.size() - at);
    std::memcpy(block.data(), data.data() + at, length);
    const int flags = (b == 0 ? CHUNK_START : 0) | (b + 1 == blocks ? CHUNK_END : 0);
    blake3_compress_in_place(cv, block.data(), static_cast<std::uint8_t>(length), chunk,
                             static_cast<std::uint8_t>(flags));
  }
  return bytes_of(cv);
}

// The chaining value of the 2^level whole chunks `data`, the first being chunk `chunk`: the
// chunks on every SIMD lane at once, then each level of parents the same way.
Digest subtree(std::span<const std::uint8_t> data, std::uint64_t chunk, unsigned level) {
  std::size_t count = std::size_t{1} << level;
  std::vector<std::uint8_t> cvs(count * BLAKE3_OUT_LEN);
  std::vector<std::uint8_t> up(count / 2 * BLAKE3_OUT_LEN + BLAKE3_OUT_LEN);
  std::vector<const std::uint8_t*> inputs(count);
  for (std::size_t i = 0; i < count; ++i) inputs[i] = data.data() + i * BLAKE3_CHUNK_LEN;
  blake3_hash_many(inputs.data(), count, kBlocksPerChunk, IV, chunk, true, 0, CHUNK_START,
                   CHUNK_END, cvs.data());
  while (count > 1) {
    count /= 2;
    for (std::size_t i = 0; i < count; ++i) inputs[i] = cvs.data() + i * BLAKE3_BLOCK_LEN;
    blake3_hash_many(inputs.data(), count, 1, IV, 0, false, PARENT, 0, 0, up.data());
    cvs.swap(up);
  }
  Digest out{};
  std::memcpy(out.data(), cvs.data(), out.size());
  return out;
}

}  // namespace

void nodes(std::uint64_t offset, std::span<const std::uint8_t> data, bool ends_file,
           std::vector<merkle::Node>& out) {
  if (offset % kChunkBytes != 0) throw std::invalid_argument("a range must start on a chunk");
  if (!ends_file && data.size() % kChunkBytes != 0)
    throw std::invalid_argument("a range inside the file must end on a chunk");
  if (offset == 0 && ends_file) {
    out.push_back({kRootLevel, digest_of(data)});
    return;
  }
  std::size_t done = 0;
  while (done < data.size()) {
    const std::uint64_t chunk = (offset + done) / kChunkBytes;
    const std::uint64_t whole = (data.size() - done) / kChunkBytes;
    if (whole == 0) {  // the file's last bytes, inside one chunk
      out.push_back({0, short_chunk(data.subspan(done), chunk)});
      break;
    }
    // The largest run of 2^level chunks that starts here on its own alignment and fits; at
    // chunk 0, half of it (the header says why).
    unsigned level = static_cast<unsigned>(std::bit_width(whole) - 1);
    if (chunk != 0) level = std::min(level, static_cast<unsigned>(std::countr_zero(chunk)));
    if (chunk == 0 && level > 0) --level;
    const std::size_t length = static_cast<std::size_t>(kChunkBytes << level);
    out.push_back(
        {static_cast<std::uint8_t>(level), subtree(data.subspan(done, length), chunk, level)});
    done += length;
  }
}

merkle::Node run_node(std::uint64_t offset, std::span<const std::uint8_t> data) {
  const std::uint64_t chunks = data.size() / kChunkBytes;
  if (offset % kChunkBytes != 0 || data.size() % kChunkBytes != 0 || !std::has_single_bit(chunks) ||
      (offset / kChunkBytes) % chunks != 0)
    throw std::invalid_argument("not an aligned run of 2^k BLAKE3 chunks");
  const auto level = static_cast<unsigned>(std::countr_zero(chunks));
  return {static_cast<std::uint8_t>(level), subtree(data, offset / kChunkBytes, level)};
}

void Folder::add(const merkle::Node& node) {
  if (root_) throw std::logic_error("a BLAKE3 node added after the whole file's");
  if (node.level > kMaxLevel && node.level != kRootLevel)
    throw std::logic_error("a BLAKE3 node above the tree's deepest level");
  if (node.level == kRootLevel) {
    if (has_last_) throw std::logic_error("a whole file's BLAKE3 node after others");
    root_ = true;
    last_ = node;
    return;
  }
  if (has_last_) {
    // More input follows the latest node: the stack may now join whatever BLAKE3 joins
    // before a subtree that starts where the latest does (one entry per 1 bit of that
    // chunk count), and take the latest in.
    while (stack_.size() > static_cast<std::size_t>(std::popcount(last_chunk_))) {
      const Digest right = stack_.back();
      stack_.pop_back();
      stack_.back() = parent(stack_.back(), right, false);
    }
    stack_.push_back(last_.hash);
  }
  if (chunks_ % (std::uint64_t{1} << node.level) != 0)
    throw std::logic_error("a BLAKE3 subtree node off its alignment");
  last_ = node;
  has_last_ = true;
  last_chunk_ = chunks_;
  chunks_ += std::uint64_t{1} << node.level;
}

void Folder::add(std::span<const merkle::Node> nodes) {
  for (const merkle::Node& node : nodes) add(node);
}

Digest Folder::finish(std::uint64_t size) const {
  if (root_) return last_.hash;
  if (!has_last_) {
    if (size != 0) throw std::logic_error("no BLAKE3 nodes for a file that is not empty");
    return digest_of({});
  }
  if ((size + kChunkBytes - 1) / kChunkBytes != chunks_ || stack_.empty())
    throw std::logic_error("the BLAKE3 nodes added do not cover the file");
  auto stack = stack_;
  while (stack.size() > static_cast<std::size_t>(std::popcount(last_chunk_))) {
    const Digest right = stack.back();
    stack.pop_back();
    stack.back() = parent(stack.back(), right, false);
  }
  Digest top = last_.hash;
  while (!stack.empty()) {
    top = parent(stack.back(), top, stack.size() == 1);
    stack.pop_back();
  }
  return top;
}

Digest digest_of(std::span<const std::uint8_t> data) {
  blake3_hasher hasher;
  blake3_hasher_init(&hasher);
  blake3_hasher_update(&hasher, data.data(), data.size());
  Digest out{};
  blake3_hasher_finalize(&hasher, out.data(), out.size());
  return out;
}

}  // namespace rdmax::blake3
