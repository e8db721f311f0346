#include "common/digest/merkle.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>
#include <string>

#include "protocol/byte_order.hpp"

namespace rdmax::merkle {
namespace {

constexpr std::array<std::uint8_t, kBlockSize> kZeros{};

[[noreturn]] void fail(const char* call) {
  throw std::runtime_error(std::string(call) + " failed");
}

// SHA-256 fetched once: an implicit fetch on every EVP_DigestInit_ex (OpenSSL 3 looks the
// algorithm up in its providers each time) costs a noticeable share of hashing 4 KiB.
const EVP_MD* sha256_md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
}

}  // namespace

void BlockHasher::CtxDeleter::operator()(evp_md_ctx_st* ctx) const noexcept {
  EVP_MD_CTX_free(ctx);
}

BlockHasher::BlockHasher() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
}

Digest BlockHasher::block(std::span<const std::uint8_t> data) {
  if (data.size() > kBlockSize) throw std::invalid_argument("a block is at most 4096 bytes");
  Digest digest{};
  unsigned length = 0;
  if (EVP_DigestInit_ex2(ctx_.get(), sha256_md(), nullptr) != 1) fail("EVP_DigestInit_ex2");
  if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) fail("EVP_DigestUpdate");
  if (data.size() < kBlockSize &&
      EVP_DigestUpdate(ctx_.get(), kZeros.data(), kBlockSize - data.size()) != 1)
    fail("EVP_DigestUpdate");
  if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length) != 1) fail("EVP_DigestFinal_ex");
  return digest;
}

void BlockHasher::nodes(std::uint64_t offset, std::span<const std::uint8_t> data,
                        std::vector<Node>& out) {
  if (offset % kBlockSize != 0) throw std::invalid_argument("a range must start on a block");
  std::array<std::uint8_t, kBlockSize> group_block{};  // 128 level-0 hashes
  std::size_t done = 0;
  while (done < data.size()) {
    const std::uint64_t at = offset + done;
    const std::size_t left = data.size() - done;
    if (at % kGroupBytes == 0 && left >= kGroupBytes) {
      for (std::size_t i = 0; i < kHashesPerBlock; ++i) {
        const Digest leaf = block(data.subspan(done + i * kBlockSize, kBlockSize));
        std::copy(leaf.begin(), leaf.end(), group_block.begin() + i * sizeof(Digest));
      }
      out.push_back({1, block(group_block)});
      done += kGroupBytes;
      continue;
    }
    const std::size_t length = std::min(left, kBlockSize);
    out.push_back({0, block(data.subspan(done, length))});
    done += length;
  }
}

void TreeFolder::add(const Node& node) {
  for (std::size_t below = 0; below < node.level && below < levels_.size(); ++below) {
    if (!levels_[below].empty())
      throw std::logic_error("a tree node added where a lower level holds a partial block");
  }
  if (!hasher_) hasher_ = std::make_unique<BlockHasher>();
  push(node.level, node.hash, *hasher_, levels_);
}

void TreeFolder::add(std::span<const Node> nodes) {
  for (const Node& node : nodes) add(node);
}

// Appends `hash` to the partial block of `level`; a full block is hashed into the level
// above at once, so a partial block is never full.
void TreeFolder::push(std::size_t level, const Digest& hash, BlockHasher& hasher,
                      std::vector<std::vector<std::uint8_t>>& levels) const {
  if (levels.size() <= level) levels.resize(level + 1);
  auto& partial = levels[level];
  partial.insert(partial.end(), hash.begin(), hash.end());
  if (partial.size() == kBlockSize) {
    const Digest up = hasher.block(partial);
    partial.clear();
    push(level + 1, up, hasher, levels);
  }
}

Digest TreeFolder::root() const {
  if (!hasher_) hasher_ = std::make_unique<BlockHasher>();
  auto levels = levels_;  // finishing pads and hashes partial blocks: work on a copy
  for (std::size_t level = 0; level < levels.size(); ++level) {
    bool above = false;
    for (std::size_t higher = level + 1; higher < levels.size(); ++higher)
      above = above || !levels[higher].empty();
    const std::size_t hashes = levels[level].size() / sizeof(Digest);
    if (hashes == 0) continue;
    if (hashes == 1 && !above) {  // the top of the tree
      Digest top{};
      std::copy(levels[level].begin(), levels[level].end(), top.begin());
      return top;
    }
    const Digest up = hasher_->block(levels[level]);
    levels[level].clear();
    push(level + 1, up, *hasher_, levels);
  }
  return Digest{};  // nothing added: an empty file's root is all zeros
}

std::uint64_t cut_nodes(std::vector<Node>& nodes, std::uint64_t limit, std::uint64_t align,
                        NodeBytes bytes) {
  std::size_t keep = 0;
  std::uint64_t end = 0;
  while (keep < nodes.size() && end + bytes(nodes[keep]) <= limit) end += bytes(nodes[keep++]);
  while (keep > 0 && align != 0 && end % align != 0) end -= bytes(nodes[--keep]);
  nodes.resize(keep);
  return end;
}

Digest file_digest(std::uint64_t data_size, const Digest& root) {
  // struct fsverity_descriptor: version, hash_algorithm, log_blocksize, salt_size,
  // __reserved_0x04 (u32), data_size (le64), root_hash[64], salt[32], __reserved[144].
  std::array<std::uint8_t, 256> descriptor{};
  proto::detail::ByteWriter out(descriptor);
  out.u8(1);   // version
  out.u8(1);   // hash_algorithm: FS_VERITY_HASH_ALG_SHA256
  out.u8(12);  // log_blocksize: log2(4096)
  out.u8(0);   // salt_size
  out.u32(0);  // reserved
  out.u64(data_size);
  out.bytes(root);  // root_hash[64]: the rest of it, the salt and the reserved bytes stay 0
  Sha256 hash;
  hash.update(descriptor);
  return hash.finish();
}

Digest digest_of(std::span<const std::uint8_t> data) {
  BlockHasher hasher;
  std::vector<Node> nodes;
  hasher.nodes(0, data, nodes);
  TreeFolder folder;
  folder.add(nodes);
  return file_digest(data.size(), folder.root());
}

}  // namespace rdmax::merkle
