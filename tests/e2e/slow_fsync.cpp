// slow_fsync: an LD_PRELOAD shim that makes fsync and fdatasync slow, to test what a
// program does while its storage takes seconds to commit (tests/e2e/slow_storage.sh).
//
//   RDMAX_SLOW_FSYNC_SECONDS    delay before each affected call (0 or unset: no delay)
//   RDMAX_SLOW_FSYNC_MIN_BYTES  only regular files whose fstat size is at least this are
//                               delayed (default 0: every regular file); directories and
//                               other non-regular files never are
//   RDMAX_SLOW_FSYNC_MARK       a path: "MARK.start" is written when a delay begins and
//                               "MARK.end" when it ends, each holding the CLOCK_REALTIME
//                               time in milliseconds (written whole, then renamed)
//
// The size filter, not a name, picks the files: a receiver's temporaries may be O_TMPFILE
// and have no name. The delay comes before the real call, whose result and errno are
// returned unchanged. Safe to call from several threads at once.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

using SyncFn = int (*)(int);

struct Settings {
  double seconds = 0;
  long long min_bytes = 0;
  std::string mark;
};

const Settings& settings() {
  static const Settings s = [] {
    Settings r;
    if (const char* v = std::getenv("RDMAX_SLOW_FSYNC_SECONDS"))
      r.seconds = std::strtod(v, nullptr);
    if (const char* v = std::getenv("RDMAX_SLOW_FSYNC_MIN_BYTES"))
      r.min_bytes = std::strtoll(v, nullptr, 10);
    if (const char* v = std::getenv("RDMAX_SLOW_FSYNC_MARK")) r.mark = v;
    return r;
  }();
  return s;
}

SyncFn real(const char* name) {
  // dlsym returns an object pointer; POSIX guarantees it converts to a function pointer.
  void* sym = ::dlsym(RTLD_NEXT, name);
  if (sym == nullptr) {
    std::fprintf(stderr, "slow_fsync: dlsym(RTLD_NEXT, %s) failed: %s\n", name, ::dlerror());
    std::abort();
  }
  return reinterpret_cast<SyncFn>(sym);
}

bool should_delay(int fd) {
  const Settings& s = settings();
  if (s.seconds <= 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return st.st_size >= s.min_bytes;
}

long long now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Writes "PATH" whole: a reader polling for it never sees it empty or half written.
void write_mark(const std::string& path) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = std::to_string(now_ms()) + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (ok) ::rename(tmp.c_str(), path.c_str());
}

void delay() {
  const Settings& s = settings();
  if (!s.mark.empty()) write_mark(s.mark + ".start");
  timespec until{};
  ::clock_gettime(CLOCK_MONOTONIC, &until);
  const auto whole = static_cast<time_t>(s.seconds);
  until.tv_sec += whole;
  until.tv_nsec += static_cast<long>((s.seconds - static_cast<double>(whole)) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  // Absolute deadline: a signal handler interrupting the sleep does not shorten or lengthen it.
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
  if (!s.mark.empty()) write_mark(s.mark + ".end");
}

int slow_call(SyncFn fn, int fd) {
  const int saved = errno;
  if (should_delay(fd)) delay();
  errno = saved;  // the caller sees only what the real call does to errno
  return fn(fd);
}

}  // namespace

extern "C" int fsync(int fd) {
  static const SyncFn fn = real("fsync");
  return slow_call(fn, fd);
}

extern "C" int fdatasync(int fd) {
  static const SyncFn fn = real("fdatasync");
  return slow_call(fn, fd);
}
