#pragma once

// Little-endian field access for the wire codec. Fields are assembled byte by byte so the
// encoding is the same on every host and no struct layout ever reaches the wire.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rdmax::proto::detail {

// Writes fixed-width fields into a buffer the caller has already checked is large enough.
class ByteWriter {
 public:
  explicit ByteWriter(std::span<std::uint8_t> out) : out_(out) {}

  void u8(std::uint8_t v) { out_[pos_++] = v; }
  void u16(std::uint16_t v) { put_le(v, 2); }
  void u32(std::uint32_t v) { put_le(v, 4); }
  void u64(std::uint64_t v) { put_le(v, 8); }
  void bytes(std::span<const std::uint8_t> b) {
    for (std::uint8_t v : b) out_[pos_++] = v;
  }
  void text(std::string_view s) {
    for (char c : s) out_[pos_++] = static_cast<std::uint8_t>(c);
  }
  [[nodiscard]] std::size_t written() const { return pos_; }

 private:
  void put_le(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_[pos_++] = static_cast<std::uint8_t>(v >> (8 * i));
  }

  std::span<std::uint8_t> out_;
  std::size_t pos_ = 0;
};

// Reads fixed-width fields; every read is bounds-checked so a lying length can never make
// the decoder read past the received bytes. A read past the end returns 0 (or an empty
// span) and makes ok() false for good: the decoder checks sizes first and ok() once at the
// end, so no read needs a result check of its own.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}

  std::uint8_t u8() { return static_cast<std::uint8_t>(get_le(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(get_le(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get_le(4)); }
  std::uint64_t u64() { return get_le(8); }

  // The next n bytes, or an empty span if fewer remain.
  std::span<const std::uint8_t> take(std::size_t n) {
    if (n > remaining()) {
      ok_ = false;
      return {};
    }
    auto out = in_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  [[nodiscard]] std::size_t remaining() const { return in_.size() - pos_; }
  // No read so far went past the end.
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  std::uint64_t get_le(std::size_t width) {
    if (width > remaining()) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v |= std::uint64_t{in_[pos_++]} << (8 * i);
    return v;
  }

  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace rdmax::proto::detail
