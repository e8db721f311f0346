#include "common/sha256.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <stdexcept>

#include "common/aligned_buffer.hpp"
#include "common/error.hpp"

namespace rdmax {
namespace {

// Large enough to amortise syscalls and keep readahead streaming, small enough to stay
// cache-friendly.
constexpr size_t kReadSize = 4 << 20;

[[noreturn]] void throw_openssl(const char* call) {
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  throw std::runtime_error(std::string(call) + ": " + text);
}

// Where a SIGBUS raised by this thread while it hashes a mapping returns to.
// Set only while OpenSSL reads [begin, end) of a mapping, so that nothing else (a
// progress callback holding a lock, another fault, `kill -BUS`) is ever jumped out of.
struct MappingFaultExit {
  sigjmp_buf* exit = nullptr;
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
};
thread_local MappingFaultExit mapping_fault_exit;

void on_sigbus(int signal, siginfo_t* info, void*) {
  const MappingFaultExit& m = mapping_fault_exit;
  const auto* address = static_cast<const uint8_t*>(info->si_addr);
  if (m.exit != nullptr && info->si_code > 0 /* raised by the kernel, not sent */ &&
      address >= m.begin && address < m.end) {
    siglongjmp(*m.exit, 1);
  }
  // Not a fault of a mapping being hashed: die of it as if there were no handler.
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void Sha256::CtxDeleter::operator()(evp_md_ctx_st* ctx) const noexcept {
  EVP_MD_CTX_free(ctx);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw_openssl("EVP_DigestInit_ex");
}

void Sha256::update(std::span<const uint8_t> data) {
  if (data.empty()) return;
  if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) {
    throw_openssl("EVP_DigestUpdate");
  }
}

void Sha256::update(std::span<const std::byte> data) {
  update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

Digest Sha256::finish() {
  Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length) != 1 || length != digest.size()) {
    throw_openssl("EVP_DigestFinal_ex");
  }
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw_openssl("EVP_DigestInit_ex");
  return digest;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 0xf]);
  }
  return text;
}

Digest sha256_of_file(int fd, uint64_t size, const std::function<void(uint64_t done)>& progress) {
  // Advisory only (doubles the readahead window); failure changes nothing but speed.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  AlignedBuffer buffer(
      static_cast<size_t>(std::min<uint64_t>(kReadSize, std::max<uint64_t>(size, 1))));
  Sha256 hash;
  uint64_t done = 0;
  while (done < size) {
    const auto want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - done));
    const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_sys("pread");
    }
    if (n == 0) {
      throw std::runtime_error("file shrank while hashing: expected " + std::to_string(size) +
                               " bytes, got " + std::to_string(done));
    }
    hash.update(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
    if (progress) progress(done);
  }
  return hash.finish();
}

Digest sha256_of_mapping(std::span<const uint8_t> mapping,
                         const std::function<void(uint64_t done)>& progress) {
  Sha256 hash;
  // Installed for this call only; restored on return and on exceptions (OpenSSL errors,
  // the progress callback).
  struct SigbusScope {
    struct sigaction previous {};
    SigbusScope() {
      struct sigaction handler {};
      handler.sa_sigaction = on_sigbus;
      handler.sa_flags = SA_SIGINFO;
      sigemptyset(&handler.sa_mask);
      if (::sigaction(SIGBUS, &handler, &previous) != 0) throw_sys("sigaction(SIGBUS)");
    }
    ~SigbusScope() {
      mapping_fault_exit = {};
      ::sigaction(SIGBUS, &previous, nullptr);
    }
  } scope;
  // The jump skips only OpenSSL's C frames: the exit is armed around hash.update alone,
  // and everything owned lives outside it.
  sigjmp_buf fault_exit;
  volatile uint64_t done = 0;
  if (sigsetjmp(fault_exit, 1) != 0) {
    mapping_fault_exit = {};
    throw std::runtime_error("the file shrank while it was being hashed (" + std::to_string(done) +
                             " of " + std::to_string(mapping.size()) + " bytes read)");
  }
  while (done < mapping.size()) {
    const auto step = static_cast<size_t>(std::min<uint64_t>(kReadSize, mapping.size() - done));
    mapping_fault_exit = {&fault_exit, mapping.data(), mapping.data() + mapping.size()};
    hash.update(mapping.subspan(static_cast<size_t>(done), step));
    mapping_fault_exit = {};
    done = done + step;
    if (progress) progress(done);
  }
  return hash.finish();
}

}  // namespace rdmax
