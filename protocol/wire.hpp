#pragma once

// The rdmax wire codec: every control message exchanged over RDMA SEND/RECV.
// The byte layout is specified in docs/PROTOCOL.md; this file and that document must agree.
// Integers are little-endian and fixed width, written field by field (no struct is ever
// copied onto a buffer), so the format does not depend on the compiler or the host.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "protocol/enum_names.hpp"

namespace rdmax::proto {

inline constexpr std::uint32_t kMagic = 0x58414D52;  // "RMAX" in wire (little-endian) order
// Version 1 is the original protocol: one file per connection (Hello, Chunk, Done,
// Verdict). Version 2 (docs/PROTOCOL.md section 7) is sessions: an Open, then entries offered,
// taken, written (FileChunk) and settled (FileDone, FileVerdict), one file or a whole tree;
// with the digest algorithm, keepalives (Working) and extensions (Resume, the digest at the
// end, sender keys). A receiver speaks both; a sender speaks 2 and falls back to 1, whose
// messages it maps onto entry 0 of a session at the edge (sender/version1_transport.hpp).
inline constexpr std::uint16_t kVersion1 = 1;
inline constexpr std::uint16_t kVersion2 = 2;
inline constexpr std::uint16_t kLatestVersion = kVersion2;
inline constexpr std::size_t kHeaderSize = 16;
inline constexpr std::size_t kMaxMessageSize = 4096;  // one SEND buffer, header included
inline constexpr std::size_t kMaxNameBytes = 255;
inline constexpr std::size_t kMaxIdBytes = 256;
inline constexpr std::size_t kMaxSecretBytes = 1024;
inline constexpr std::size_t kMaxTextBytes = 512;
inline constexpr std::size_t kSha256Bytes = 32;

// Accept limits: a slot must hold at least one page and the slot table stays small enough
// for a fixed-size per-connection array on both sides.
inline constexpr std::uint32_t kMinSlotSize = 4096;
// Bounded so that the Credits that follow an Accept always fit the RECVs a sender posts
// before it knows slot_count (docs/PROTOCOL.md 4.2).
inline constexpr std::uint32_t kMaxSlotCount = 64;

// The layout of most messages, written once with the message as its fields in wire order
// (its layout()): the encoder, the decoder and the payload size read it
// (protocol/wire_codec.hpp). A field is a member (an integer or enum, little-endian in its
// own width, or a byte array), N reserved bytes (zero; a message whose are not is refused:
// BadReserved), flag bits (Offer's flags byte: bit 0 and bit 1 are members, the others
// reserved), or a
// counted string (a u16 length, then the bytes: the last field, the rest of the payload).
// Hello, Open and FileDone, whose layouts depend on the version or on their own fields, are
// written out by hand.
template <std::size_t N>
struct Reserved {};
template <class M>
struct FlagBits {
  bool M::*bit0;
  bool M::*bit1;
  bool M::*bit2 = nullptr;  // none: bit 2 is reserved too
};
template <class M>
struct Counted {
  std::string M::*member;
  const char* name;  // in a DecodeFailure
};

enum class MessageType : std::uint16_t {
  Hello = 1,
  Accept = 2,
  Chunk = 3,
  Credit = 4,
  Done = 5,
  Verdict = 6,
  Id = 7,
  Secret = 8,
  Denied = 9,
  Reject = 10,
  Bye = 11,
  Error = 12,
  Working = 13,  // version 2 only
  // Version 2 only: a session of many files on one connection (docs/PROTOCOL.md 7.5).
  Open = 14,
  Offer = 15,
  Take = 16,
  Refuse = 17,
  FileChunk = 18,
  FileDone = 19,
  FileVerdict = 20,
  Resume = 21,  // version 2 only: resume (docs/PROTOCOL.md 7.6)
  Have = 22,
  // Version 2 only: a sender proves it holds a key before any memory is granted, and the
  // receiver proves it back (docs/PROTOCOL.md 7.8).
  Challenge = 23,
  Proof = 24,
  // Version 2 only: the digest at the end (docs/PROTOCOL.md 7.9).
  Holds = 25,
  FileAbort = 26,
  Continue = 27,
  // Version 2 only: any other message, sealed (docs/PROTOCOL.md 7.11).
  Sealed = 28,
  // Version 2 only: one file over several connections (docs/PROTOCOL.md 7.12).
  Stripes = 29,
  Join = 30,
  // Version 2 only: fetching from a server that sends (docs/PROTOCOL.md 7.13).
  Fetch = 31,
  Want = 32,
};

enum class VerdictCode : std::uint8_t {
  Good = 0,
  HashMismatch = 1,
  StorageError = 2,
  SizeMismatch = 3,
  // Version 2 only, in a FileVerdict answering a FileAbort (docs/PROTOCOL.md 7.9): nothing
  // of the entry was kept.
  Abandoned = 4,
  // Version 2 only, in the FileVerdict of a striped entry or of one joined to it (7.12): a
  // connection of its stripe group ended; what was stored in file order is kept for a resume.
  Interrupted = 5,
};

enum class RejectReason : std::uint16_t {
  BadName = 1,
  Exists = 2,
  TooLarge = 3,
  NoSpace = 4,
  Busy = 5,
  UnsupportedVersion = 6,
  Internal = 7,
  NoMemory = 8,
  // Version 2 only (docs/PROTOCOL.md 7.8). A version-1 Hello that a receiver requiring keys
  // refuses gets UnsupportedVersion, with a text that says a key is required.
  AuthRequired = 9,  // this receiver admits only senders with a key (rdma-recv --senders)
  AuthFailed = 10,   // unknown id or wrong key (the two are not told apart)
  // Version 2 only (7.11): this receiver admits a keyed sender only if it seals
  // (rdma-recv --senders without --allow-clear), and the Open did not ask to.
  SealRequired = 11,
};

enum class ErrorCode : std::uint16_t {
  ProtocolViolation = 1,
  Timeout = 2,
  Internal = 3,
  TooManyAttempts = 4,
  ShuttingDown = 5,
  // Version 2 only: the receiver did not prove that it holds the sender's key.
  AuthFailed = 6,
  // Version 2 only (7.11): a sealed chunk did not open: its bytes were altered in the
  // receiver's memory; nothing of it was written.
  SealBroken = 7,
};

// A file's digest, by the algorithm its Hello or Open names (the fs-verity digest or the
// whole file's SHA-256): 32 bytes either way. (common/digest/sha256.hpp's rdmax::Digest is the
// same type; rdmax::Sha256 there is the hasher.)
using Digest = std::array<std::uint8_t, kSha256Bytes>;

// The digest a Hello announces. Version 1 knows only the first.
enum class DigestAlgorithm : std::uint8_t {
  WholeFileSha256 = 1,  // SHA-256 of the whole file content (version 1's digest)
  // The fs-verity file digest: a Merkle tree of SHA-256 over 4096-byte blocks, no salt
  // (docs/PROTOCOL.md 7.4). Chunks must then start on 4096-byte boundaries.
  FsVeritySha256 = 2,
  // BLAKE3's standard hash of the file, what `b3sum` prints (docs/PROTOCOL.md 7.10). Only a
  // session's: an Open names it with kExtensionDigestAlgorithm, never in a fixed field.
  Blake3 = 3,
};
// The block size of FsVeritySha256's tree: with it, Accept.slot_size must be a multiple.
inline constexpr std::uint32_t kFsVerityBlockSize = 4096;
// BLAKE3's chunk: with Blake3, Accept.slot_size must be a multiple (7.10).
inline constexpr std::uint32_t kBlake3ChunkBytes = 1024;

// Hello.keepalive_ms: 0 (no keepalives) or within these bounds.
inline constexpr std::uint32_t kMinKeepaliveMs = 100;
inline constexpr std::uint32_t kMaxKeepaliveMs = 60000;
// The keepalive a side asks for when it gives up after `timeout_s` seconds of silence: three
// chances to hear from the peer in that time, within the bounds.
[[nodiscard]] constexpr std::uint32_t keepalive_ms_for(std::uint64_t timeout_s) {
  const std::uint64_t ms = timeout_s * 1000 / 3;
  return static_cast<std::uint32_t>(ms < kMinKeepaliveMs   ? kMinKeepaliveMs
                                    : ms > kMaxKeepaliveMs ? kMaxKeepaliveMs
                                                           : ms);
}

// Version 2: an optional field a later revision adds to a Hello or an Open without a new
// layout (docs/PROTOCOL.md 7.2); the types defined so far follow. A receiver ignores a type
// it does not know, unless the type has kExtensionMustUnderstand set: then it refuses the
// Hello or Open with Reject(UnsupportedVersion).
struct HelloExtension {
  std::uint16_t type = 0;
  std::string value;  // raw bytes
  bool operator==(const HelloExtension&) const = default;
};
inline constexpr std::uint16_t kExtensionMustUnderstand = 0x8000;
// In a version-2 Hello or an Open, with an empty value: the sender understands Resume and
// Have (docs/PROTOCOL.md 7.6). A receiver sends either only to such a sender.
inline constexpr std::uint16_t kExtensionResume = 0x0001;
// In an Open: "I hold a key for this id; authenticate me and yourself" (docs/PROTOCOL.md
// 7.8). Value: a fresh 32-byte nonce, then the id (1..kMaxIdBytes bytes, the rest of the
// value). Not must-understand: a receiver that ignores it answers without a Proof, and the
// sender, which asked, refuses to go on.
inline constexpr std::uint16_t kExtensionSenderKey = 0x0002;
// In an Open, empty, must-understand: "a file I offer with Offer.digest_at_end gets its
// digest in its FileDone; I may abandon such an entry (FileAbort); tell me what you hold at
// its path (Holds) and I say where to continue (Continue)" (docs/PROTOCOL.md 7.9).
inline constexpr std::uint16_t kExtensionDigestAtEnd = 0x8003;
// In an Open, one byte, must-understand: every file of the session is digested by the
// algorithm it names (3, BLAKE3) instead of Open.digest_algorithm, which is then 2
// (docs/PROTOCOL.md 7.10). A receiver that does not know it refuses the Open, and the sender
// connects again with the fs-verity digest: no receiver ever meets an algorithm byte it
// does not know. The codec lifts it into Open.digest_algorithm (decode) and writes it from
// there (encode): Open.extensions never holds it.
inline constexpr std::uint16_t kExtensionDigestAlgorithm = 0x8004;
// In an Open beside kExtensionSenderKey, one byte naming the suite (1: HKDF-SHA256 and
// AES-256-GCM): "after the proofs, seal every message and every chunk" (docs/PROTOCOL.md
// 7.11). Not must-understand: a receiver that ignores it answers in clear, and the sender,
// which asked, refuses to go on.
inline constexpr std::uint16_t kExtensionSeal = 0x0005;
// In an Open beside kExtensionResume and kExtensionDigestAtEnd, empty, not must-understand:
// "tell me only how much you hold at a path (a 12-byte Holds); I send my digest of that much
// (a 44-byte Continue) and you compare" (docs/PROTOCOL.md 7.9). A receiver of this revision
// sends a Holds only to such a sender, so it never tells anyone the digest of what it holds.
inline constexpr std::uint16_t kExtensionProveHeld = 0x0006;
// In an Open, 20 bytes, not must-understand: "this connection is member `member` of
// `members` connections of one command, named by a random 16-byte token; one file may be
// sent over all of them" (docs/PROTOCOL.md 7.12; protocol/stripes.hpp reads and writes it).
// A receiver that stripes answers it with Stripes before its Accept; one that does not
// ignores it.
inline constexpr std::uint16_t kExtensionStripeGroup = 0x0007;
// In a Fetch, 8 bytes, must-understand: "of the share the Fetch names, send only the part
// `index` of `count` (2..kMaxStripeMembers), cut by the same rule" (docs/PROTOCOL.md 7.13):
// one fetch command over N connections, each asking for its part, whatever share of a job
// it fetches. A server that does not know it refuses the Fetch, rather than send every
// connection the whole share.
inline constexpr std::uint16_t kExtensionFetchPart = 0x8008;
inline constexpr std::size_t kFetchPartValueBytes = 4 + 4;
inline constexpr std::size_t kStripeTokenBytes = 16;
inline constexpr std::size_t kStripeGroupValueBytes = kStripeTokenBytes + 2 + 2;
// The most connections one stripe group may have (Stripes.max_members is at most this).
inline constexpr std::uint16_t kMaxStripeMembers = 64;
inline constexpr std::uint8_t kSealSuiteAes256Gcm = 1;
inline constexpr std::size_t kSealTagBytes = 16;  // AES-GCM's tag
using SealTag = std::array<std::uint8_t, kSealTagBytes>;
inline constexpr std::size_t kNonceBytes = 32;
using Nonce = std::array<std::uint8_t, kNonceBytes>;

// sender -> receiver: the file on offer. The name is raw bytes; whether it is an acceptable
// file name is the receiver's decision (check_file_name, then Reject BadName), not the codec's.
struct Hello {
  std::uint64_t file_size = 0;
  Digest digest{};
  std::uint32_t chunk_size_hint = 0;  // 0 = receiver chooses
  std::string name;                   // 1..kMaxNameBytes bytes
  // Version 2 only (a version-1 Hello cannot carry anything but these defaults).
  DigestAlgorithm digest_algorithm = DigestAlgorithm::WholeFileSha256;
  std::uint32_t keepalive_ms = 0;            // send Working at least this often while I wait on you
  std::vector<HelloExtension> extensions{};  // after the name, in order
  bool operator==(const Hello&) const = default;
};

// receiver -> sender: the registered staging region, split into slot_count slots;
// slot i starts at region_addr + i * slot_size.
struct Accept {
  std::uint64_t region_addr = 0;
  std::uint32_t region_rkey = 0;
  std::uint32_t slot_size = 0;   // >= kMinSlotSize
  std::uint32_t slot_count = 0;  // 1..kMaxSlotCount
  bool operator==(const Accept&) const = default;
  static constexpr auto layout() {
    return std::tuple{&Accept::region_addr, &Accept::region_rkey, &Accept::slot_size,
                      &Accept::slot_count, Reserved<4>{}};
  }
};

// sender -> receiver: sent after the RDMA WRITE of file bytes [offset, offset+length) into slot.
struct Chunk {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t slot = 0;
  bool operator==(const Chunk&) const = default;
  static constexpr auto layout() {
    return std::tuple{&Chunk::offset, &Chunk::length, &Chunk::slot};
  }
};

// receiver -> sender: slot may be written again, using rkey from now on.
struct Credit {
  std::uint32_t slot = 0;
  std::uint32_t rkey = 0;
  bool operator==(const Credit&) const = default;
  static constexpr auto layout() { return std::tuple{&Credit::slot, &Credit::rkey}; }
};

// sender -> receiver: every chunk has been announced.
struct Done {
  std::uint64_t total_bytes = 0;
  bool operator==(const Done&) const = default;
  static constexpr auto layout() { return std::tuple{&Done::total_bytes}; }
};

// receiver -> sender: outcome of the transfer.
struct Verdict {
  VerdictCode code = VerdictCode::Good;
  Digest received_digest{};  // all zero if the receiver did not compute it
  bool operator==(const Verdict&) const = default;
  static constexpr auto layout() { return std::tuple{&Verdict::code, &Verdict::received_digest}; }
};

// sender -> receiver: who the sender claims to be.
struct Id {
  std::string id;  // 1..kMaxIdBytes bytes
  bool operator==(const Id&) const = default;
  static constexpr auto layout() { return std::tuple{Counted<Id>{&Id::id, "Id.id"}}; }
};

// receiver -> sender: the secret key its secrets file holds for the id just sent. The id is
// the sender's credential; the secret is what a successful, verified transfer earns it.
struct Secret {
  std::string secret;  // 1..kMaxSecretBytes bytes
  bool operator==(const Secret&) const = default;
  static constexpr auto layout() {
    return std::tuple{Counted<Secret>{&Secret::secret, "Secret.secret"}};
  }
};

// receiver -> sender: the id is unknown; the sender may try attempts_left more ids.
struct Denied {
  std::uint16_t attempts_left = 0;
  bool operator==(const Denied&) const = default;
  static constexpr auto layout() { return std::tuple{&Denied::attempts_left}; }
};

// receiver -> sender: the offer is refused; the connection will be closed.
struct Reject {
  RejectReason reason = RejectReason::Internal;
  std::string text;  // 0..kMaxTextBytes bytes, for humans
  bool operator==(const Reject&) const = default;
  static constexpr auto layout() {
    return std::tuple{&Reject::reason, Counted<Reject>{&Reject::text, "Reject.text"}};
  }
};

// sender -> receiver: the sender is leaving normally.
struct Bye {
  bool operator==(const Bye&) const = default;
  static constexpr auto layout() { return std::tuple{}; }
};

// either direction: the peer is aborting the connection.
struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string text;  // 0..kMaxTextBytes bytes, for humans
  bool operator==(const Error&) const = default;
  static constexpr auto layout() {
    return std::tuple{&Error::code, Counted<Error>{&Error::text, "Error.text"}};
  }
};

// receiver -> sender, version 2 only: the receiver is still at work on the sender's file
// (preparing it, storing chunks, committing it) and alive; see Hello.keepalive_ms.
enum class WorkPhase : std::uint8_t {
  Preparing = 1,   // checking an Open or a Hello, creating the file
  Storing = 2,     // hashing and writing chunks; a session's Working always says this
  Committing = 3,  // fsync and rename
};
struct Working {
  WorkPhase phase = WorkPhase::Storing;
  std::uint64_t stored_bytes = 0;  // bytes of the file stored so far
  bool operator==(const Working&) const = default;
  static constexpr auto layout() { return std::tuple{&Working::phase, &Working::stored_bytes}; }
};

// --- Version 2 sessions (docs/PROTOCOL.md 7.5): many entries (files and directories) on
// one connection, several in flight, sharing one window of slots. ---

// The most entries a sender may have offered and not yet seen settled (by Refuse or
// FileVerdict): it bounds the receiver's open files and both sides' receive buffers.
inline constexpr std::uint32_t kMaxEntriesInFlight = 16;
// How many Continues whose digest is not its own a receiver answers with Take before it
// holds nothing more out to that session (7.9): each is one guess at a file it holds.
inline constexpr std::uint32_t kMaxHeldGuesses = 4;
// Offer.path: a relative path of file names (protocol/paths.hpp), at most this long.
// PATH_MAX is 4096; half of it leaves the receiver room for its own output directory in
// front, and no real tree comes close.
inline constexpr std::size_t kMaxPathBytes = 2048;
inline constexpr std::uint16_t kMaxMode = 07777;

// sender -> receiver, instead of Hello: a session of entry_count entries follows.
struct Open {
  DigestAlgorithm digest_algorithm = DigestAlgorithm::FsVeritySha256;  // of every file
  std::uint32_t keepalive_ms = 0;                                      // as in Hello
  std::uint32_t chunk_size_hint = 0;                                   // as in Hello
  std::uint32_t entry_count = 0;             // >= 1: Offers the session will carry
  std::uint64_t total_bytes = 0;             // an upper bound on its files' sizes together
  std::vector<HelloExtension> extensions{};  // after the fixed fields, as in a Hello
  bool operator==(const Open&) const = default;
};

enum class EntryKind : std::uint8_t {
  File = 1,
  Directory = 2,
};

// sender -> receiver: one entry of the session. Entries are numbered 0, 1, 2... in the
// order offered.
struct Offer {
  std::uint32_t entry = 0;
  EntryKind kind = EntryKind::File;
  std::uint16_t mode = 0644;     // permission bits (<= 07777); set-id bits are never applied
  std::uint64_t size = 0;        // 0 for a directory
  std::int64_t mtime_sec = 0;    // modification time, seconds since the epoch
  std::uint32_t mtime_nsec = 0;  // and nanoseconds (< 10^9)
  Digest digest{};               // by Open.digest_algorithm; zero for a directory
  std::string path;              // 1..kMaxPathBytes bytes, checked by the receiver
  // Offer.flags bit 0 (docs/PROTOCOL.md 7.9): the digest is zero here and comes in the
  // FileDone. Only on a connection whose Open carried kExtensionDigestAtEnd.
  bool digest_at_end = false;
  // Offer.flags bit 1 (7.12): a file whose chunks the other members of the connection's
  // stripe group may carry too (Join). Only to a receiver that sent Stripes.
  bool striped = false;
  bool operator==(const Offer&) const = default;
  static constexpr auto layout() {
    return std::tuple{
        &Offer::entry,      &Offer::kind,   FlagBits<Offer>{&Offer::digest_at_end, &Offer::striped},
        &Offer::mode,       &Offer::size,   &Offer::mtime_sec,
        &Offer::mtime_nsec, &Offer::digest, Counted<Offer>{&Offer::path, "Offer.path"}};
  }
};

// receiver -> sender: the file is created; send its chunks, then FileDone.
struct Take {
  std::uint32_t entry = 0;
  bool operator==(const Take&) const = default;
  static constexpr auto layout() { return std::tuple{&Take::entry}; }
};

// receiver -> sender: the entry is refused (settled); the session goes on.
struct Refuse {
  std::uint32_t entry = 0;
  RejectReason reason = RejectReason::Internal;
  std::string text;  // 0..kMaxTextBytes bytes, for humans
  bool operator==(const Refuse&) const = default;
  static constexpr auto layout() {
    return std::tuple{&Refuse::entry, &Refuse::reason,
                      Counted<Refuse>{&Refuse::text, "Refuse.text"}};
  }
};

// How a chunk's bytes were sealed (7.11): the counter its nonce was made of, and its tag.
struct ChunkSeal {
  std::uint64_t counter = 0;
  SealTag tag{};
  bool operator==(const ChunkSeal&) const = default;
};

// sender -> receiver: as Chunk, for one entry.
struct FileChunk {
  std::uint32_t entry = 0;
  std::uint32_t slot = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  // Exactly on a sealed connection (7.11): the slot holds the bytes sealed.
  std::optional<ChunkSeal> seal{};
  bool operator==(const FileChunk&) const = default;
};

// sender -> receiver: as Done, for one entry.
struct FileDone {
  std::uint32_t entry = 0;
  std::uint64_t total_bytes = 0;
  // The file's digest, exactly for an entry offered with digest_at_end (7.9).
  std::optional<Digest> digest{};
  bool operator==(const FileDone&) const = default;
};

// receiver -> sender: as Verdict, for one entry (settled). A directory's is Good once it
// exists with its mode and time.
struct FileVerdict {
  std::uint32_t entry = 0;
  VerdictCode code = VerdictCode::Good;
  Digest received_digest{};
  bool operator==(const FileVerdict&) const = default;
  static constexpr auto layout() {
    return std::tuple{&FileVerdict::entry, &FileVerdict::code, &FileVerdict::received_digest};
  }
};

// "I hold the first `offset` bytes of this file, durable and checked: send the chunks from
// there" (a Take from `offset`; before the Accept of a single file, entry 0).
struct Resume {
  std::uint32_t entry = 0;
  std::uint64_t offset = 0;
  bool operator==(const Resume&) const = default;
  static constexpr auto layout() { return std::tuple{&Resume::entry, &Resume::offset}; }
};

// "A file of this path, size and digest is in place already: nothing moves." Settles the
// entry as Good (instead of the Accept of a single file, entry 0).
struct Have {
  std::uint32_t entry = 0;
  Digest digest{};  // the receiver's, by the connection's algorithm
  bool operator==(const Have&) const = default;
  static constexpr auto layout() { return std::tuple{&Have::entry, &Have::digest}; }
};

// receiver -> sender, after an Open that carries kExtensionSenderKey, when keys are
// required: prove that you hold the key, over this fresh nonce.
struct Challenge {
  Nonce nonce{};
  bool operator==(const Challenge&) const = default;
  static constexpr auto layout() { return std::tuple{&Challenge::nonce}; }
};

// Either direction: HMAC-SHA256 over the handshake's transcript (docs/PROTOCOL.md 7.8). The
// sender's answers a Challenge; the receiver's comes right before its Accept.
struct Proof {
  Digest mac{};
  bool operator==(const Proof&) const = default;
  static constexpr auto layout() { return std::tuple{&Proof::mac}; }
};

// receiver -> sender, answering an Offer with digest_at_end (7.9): what the receiver holds at
// the path: the whole file (length == the offered size) or a kept partial's first `length`
// bytes. 12 bytes to a sender whose Open carried kExtensionProveHeld: the sender proves it has
// the same bytes (its digest in the Continue). 44 bytes, with the receiver's own digest of
// them, only from a receiver of a revision before that extension (which told any admitted
// sender a digest: SECURITY.md); a sender still answers it.
struct Holds {
  std::uint32_t entry = 0;
  std::uint64_t length = 0;
  std::optional<Digest> digest{};
  bool operator==(const Holds&) const = default;
};

// sender -> receiver (7.9), after Holds: where the file continues. 12 bytes after a Holds with
// a digest: Holds.length (the sender hashed its own first Holds.length bytes and found that
// digest: Have, or Resume from there) or 0. 44 bytes after a Holds without one: `from` =
// Holds.length and `digest` the sender's digest of its first `from` bytes, which the receiver
// compares with its own (Have or Resume when they match, else Take); a 12-byte Continue
// from 0 is still allowed.
struct Continue {
  std::uint32_t entry = 0;
  std::uint64_t from = 0;
  std::optional<Digest> digest{};
  bool operator==(const Continue&) const = default;
};

// sender -> receiver (7.9): the sender abandons a taken entry offered with digest_at_end;
// the receiver keeps nothing of it and answers FileVerdict(Abandoned).
enum class AbortReason : std::uint16_t {
  Changed = 1,     // the file changed while it was read (size, mtime or ctime)
  Unreadable = 2,  // it could not be read to its end
};
struct FileAbort {
  std::uint32_t entry = 0;
  AbortReason reason = AbortReason::Changed;
  bool operator==(const FileAbort&) const = default;
  static constexpr auto layout() {
    return std::tuple{&FileAbort::entry, &FileAbort::reason, Reserved<2>{}};
  }
};

// Either direction, after the proofs of a connection whose Open asked for sealing (7.11):
// another message (its 16-byte header included), encrypted, then its 16-byte tag.
struct Sealed {
  std::string box;  // kSealedMinBox..: the ciphertext, then the tag
  bool operator==(const Sealed&) const = default;
  static constexpr auto layout() { return std::tuple{Counted<Sealed>{&Sealed::box, "Sealed.box"}}; }
};
inline constexpr std::size_t kSealedMinBox = kHeaderSize + kSealTagBytes;

// receiver -> sender (7.12), right before the Accept (on a sealed connection, sealed, after
// the receiver's Proof), only to an Open that carried kExtensionStripeGroup: this connection
// may carry chunks of a striped file, in a group of at most `max_members` connections.
struct Stripes {
  std::uint16_t max_members = 0;  // >= 2
  bool operator==(const Stripes&) const = default;
  static constexpr auto layout() { return std::tuple{&Stripes::max_members, Reserved<2>{}}; }
};

// sender -> receiver (7.12), on a member connection of a stripe group: "entry `entry` of this
// session carries chunks of the file the group's lead connection offered as `lead_entry`".
// Answered Take{entry} (joined) or Refuse{entry, reason}.
struct Join {
  std::uint32_t entry = 0;
  std::uint32_t lead_entry = 0;
  bool operator==(const Join&) const = default;
  static constexpr auto layout() { return std::tuple{&Join::entry, &Join::lead_entry}; }
};

// --- Fetching (docs/PROTOCOL.md 7.13): the peer that connects asks for files, and the one it
// connects to sends them in the session of 7.5, as a sender. ---

// The most shards a Fetch may name (rdma-send --shard takes as many).
inline constexpr std::uint32_t kMaxShards = 1'000'000;
// The most Wants one fetch may send: each names a path (with --files-from, a file each); and
// the most bytes their paths may hold together, which a server keeps until the last came.
inline constexpr std::uint32_t kMaxWants = 1'000'000;
inline constexpr std::uint64_t kMaxWantBytes = 64ULL << 20;

// fetcher -> server, the first message of a fetch: which share of what the Wants name
// (shard_index of shard_count, as rdma-send --shard partitions a tree), the keepalives the
// fetcher asks for while the server walks and sends (as an Open's), and extensions as an
// Open carries them (a key claim, the ask to seal, a group of connections).
struct Fetch {
  std::uint32_t keepalive_ms = 0;
  std::uint32_t shard_index = 0;  // < shard_count
  std::uint32_t shard_count = 1;  // 1..kMaxShards; 1: all of it
  std::vector<HelloExtension> extensions{};
  bool operator==(const Fetch&) const = default;
};

// fetcher -> server, after its Fetch (and, with a key, the proofs): one path within the
// server's export ("." for all of it), by the rule of an Offer's path. `last`: no Want
// follows, and the server answers with its Open (or a Reject). `recursive`: a directory is
// sent with its tree; without it, naming one is refused. `keep_path` (a list's names, rdma-recv
// --files-from): the path arrives under its whole path, the directories above it offered too
// (each alone: its mode and time), and a directory named without `recursive` arrives alone.
struct Want {
  bool last = true;
  bool recursive = false;
  std::string path;  // 1..kMaxPathBytes bytes
  bool keep_path = false;
  bool operator==(const Want&) const = default;
  static constexpr auto layout() {
    return std::tuple{FlagBits<Want>{&Want::last, &Want::recursive, &Want::keep_path},
                      Reserved<1>{}, Counted<Want>{&Want::path, "Want.path"}};
  }
};

using Message = std::variant<Hello, Accept, Chunk, Credit, Done, Verdict, Id, Secret, Denied,
                             Reject, Bye, Error, Working, Open, Offer, Take, Refuse, FileChunk,
                             FileDone, FileVerdict, Resume, Have, Challenge, Proof, Holds,
                             FileAbort, Continue, Sealed, Stripes, Join, Fetch, Want>;

enum class DecodeError {
  Short,           // fewer bytes than a header
  BadMagic,        // not an rdmax message
  BadVersion,      // a version this build does not speak (see peek_version)
  BadType,         // unknown message type
  LengthMismatch,  // payload_length or an inner length disagrees with the bytes received
  TooLarge,        // the message claims or has more than kMaxMessageSize bytes
  BadReserved,     // a reserved field is not zero
  BadField,        // a field breaks a static rule (range, unknown enum code, empty name...)
  NotSealed,       // a message in clear where every message is sealed (7.11); never decode's
};

struct DecodeFailure {
  DecodeError error;
  std::string detail;  // for logs: which field and why
};

[[nodiscard]] const char* to_string(DigestAlgorithm algorithm);
[[nodiscard]] const char* to_string(EntryKind kind);

[[nodiscard]] MessageType type_of(const Message& message);

// Bytes encode would produce for message (header included) in `version`, whether or not it
// is encodable.
[[nodiscard]] std::size_t encoded_size(const Message& message, std::uint16_t version);

// The encoder refuses (empty vector / 0) any message that decode would reject, so a message
// that was encoded always decodes back to itself. Refused too: a message that `version`
// cannot express (Working, the session messages, or a Hello with version-2 fields, in
// version 1).
[[nodiscard]] std::vector<std::uint8_t> encode(const Message& message, std::uint16_t version);

// Encodes into a caller-owned (e.g. preregistered) buffer without allocating.
// Returns the number of bytes written, or 0 if the message does not fit or is not encodable.
[[nodiscard]] std::size_t encode_into(const Message& message, std::span<std::uint8_t> out,
                                      std::uint16_t version);

// Decodes exactly one message of version 1 or 2; bytes must be the whole received SEND,
// nothing more. peek_version tells which version it was.
[[nodiscard]] std::variant<Message, DecodeFailure> decode(std::span<const std::uint8_t> bytes);

// The version field of anything that carries the rdmax magic, even a version decode rejects:
// a driver learns a connection's version from the first message, and a receiver can answer
// a version it does not speak with Reject(UnsupportedVersion) instead of dropping the peer.
// Magic and version sit at offsets 0 and 4 in every version, so 6 bytes suffice.
[[nodiscard]] std::optional<std::uint16_t> peek_version(std::span<const std::uint8_t> bytes);

}  // namespace rdmax::proto
