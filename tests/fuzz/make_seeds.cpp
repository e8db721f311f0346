// Writes the seed corpora of the fuzz targets: real encoded messages and a real conversation
// each, so the fuzzers start from inputs that get past the header checks instead of having to
// discover the magic first. Usage: fuzz_make_seeds CORPUS_DIR (tests/fuzz/corpus).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/receiver_machine.hpp"
#include "protocol/sender_machine.hpp"
#include "protocol/wire.hpp"

namespace {

using namespace rdmax::proto;
using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

Sha256 sample_sha() {
  Sha256 sha{};
  for (std::size_t i = 0; i < sha.size(); ++i) sha[i] = static_cast<std::uint8_t>(0xa0 + i);
  return sha;
}

void write(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write(const fs::path& path, std::string_view text) {
  write(path, Bytes(text.begin(), text.end()));
}

// fuzz_machines records (see run_messages there): one event byte, or 0x80 + u16 length + bytes.
struct Conversation {
  Bytes bytes;
  Conversation& event(std::uint8_t e) {
    bytes.push_back(e);
    return *this;
  }
  Conversation& message(const Message& m) {
    const Bytes encoded = encode(m);
    bytes.push_back(0x80);
    bytes.push_back(static_cast<std::uint8_t>(encoded.size()));
    bytes.push_back(static_cast<std::uint8_t>(encoded.size() >> 8));
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
    return *this;
  }
};

template <typename Event>
std::uint8_t as_byte(Event e) {
  return static_cast<std::uint8_t>(e);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* dir : {"fuzz_decode", "fuzz_machines", "fuzz_names_secrets"}) {
    fs::create_directories(root / dir);
  }

  const std::vector<std::pair<const char*, Message>> messages = {
      {"hello", Hello{1 << 20, sample_sha(), 0, "a.bin"}},
      {"accept", Accept{0x7f0012340000, 0xdeadbeef, 1 << 20, 8}},
      {"chunk", Chunk{65536, 65536, 1}},
      {"credit", Credit{1, 0x1234}},
      {"done", Done{1 << 20}},
      {"verdict", Verdict{VerdictCode::Good, sample_sha()}},
      {"id", Id{"alice"}},
      {"secret", Secret{"correct-horse"}},
      {"denied", Denied{2}},
      {"reject", Reject{RejectReason::Exists, "exists"}},
      {"bye", Bye{}},
      {"error", Error{ErrorCode::Timeout, "timeout"}},
  };
  for (const auto& [name, message] : messages) write(root / "fuzz_decode" / name, encode(message));
  Bytes version2 = encode(Hello{1, sample_sha(), 0, "v2"});
  version2[4] = 2;  // the version field: what peek_version must still read
  write(root / "fuzz_decode" / "hello-version-2", version2);

  using RE = ReceiverEvent;
  using SE = SenderEvent;
  write(root / "fuzz_machines" / "receiver-with-id",
        Conversation{}
            .message(Hello{1 << 20, sample_sha(), 0, "a.bin"})
            .event(as_byte(RE::HelloAccepted))
            .message(Chunk{0, 1 << 20, 0})
            .event(as_byte(RE::ChunkStored))
            .message(Done{1 << 20})
            .event(as_byte(RE::Drained))
            .event(as_byte(RE::VerifiedGood))
            .message(Id{"alice"})
            .event(as_byte(RE::IdKnown))
            .event(as_byte(RE::Disconnected))
            .bytes);
  write(root / "fuzz_machines" / "sender-with-id",
        Conversation{}
            .event(as_byte(SE::AddressResolved))
            .event(as_byte(SE::RouteResolved))
            .event(as_byte(SE::Established))
            .message(Accept{0x7f0012340000, 0xdeadbeef, 1 << 20, 8})
            .message(Credit{0, 0x1234})
            .event(as_byte(SE::AllDataSent))
            .message(Verdict{VerdictCode::Good, sample_sha()})
            .message(Secret{"correct-horse"})
            .event(as_byte(SE::Disconnected))
            .bytes);
  Bytes every_event;
  for (std::uint8_t e = 0; e < 21; ++e) every_event.push_back(e);
  write(root / "fuzz_machines" / "every-event", every_event);

  write(root / "fuzz_names_secrets" / "name", "report.pdf");
  write(root / "fuzz_names_secrets" / "name-utf8", "données-日本語.txt");
  write(root / "fuzz_names_secrets" / "secrets",
        "# id secret\nalice   correct-horse-battery\r\nbob\ts3cret\n\n");
  write(root / "fuzz_names_secrets" / "size", "16MiB");
  return 0;
}
