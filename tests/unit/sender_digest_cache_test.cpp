// The sender's digest cache (sender/digest_cache.hpp): hits and misses by identity and
// algorithm, a changed file with its mtime put back, replacement, racy entries, the entry
// bound, corrupt files, concurrent updates, a lock held by a hung sender, unwritable directories,
// and the default path. Every cache lives in a test's own temporary directory; the clock is
// injected and far later than any identity (real files included) unless a test is about racy
// entries.
#include "sender/digest_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/os/fd.hpp"
#include "temp_dir.hpp"

namespace rdmax {
namespace {

constexpr auto kSha256 = proto::DigestAlgorithm::WholeFileSha256;
// Another algorithm: the cache keeps it as its u8 value, whether or not the enum names it.
constexpr auto kOther = static_cast<proto::DigestAlgorithm>(2);

constexpr std::uint64_t kSecond = 1'000'000'000;
// Far later than the identities below and than the timestamps of files made now.
constexpr std::uint64_t kNow = 4'000'000'000 * kSecond;

std::uint64_t fixed_now() {
  return kNow;
}

FileIdentity identity(std::uint64_t ino, std::uint64_t size = 100) {
  return FileIdentity{.dev = 7,
                      .ino = ino,
                      .size = size,
                      .mtime_ns = 1'700'000'000 * kSecond,
                      .ctime_ns = 1'700'000'001 * kSecond};
}

Digest digest_of(std::uint8_t seed) {
  Digest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) digest[i] = static_cast<std::uint8_t>(seed + i);
  return digest;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << file;
}

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A valid entry line for identity(ino) under kSha256 with digest_of(seed).
std::string entry_line(std::uint64_t ino, std::uint8_t seed) {
  const FileIdentity id = identity(ino);
  std::ostringstream line;
  line << 1 << ' ' << id.dev << ' ' << id.ino << ' ' << id.size << ' ' << id.mtime_ns << ' '
       << id.ctime_ns << ' ' << to_hex(digest_of(seed));
  return line.str();
}

class DigestCacheTest : public ::testing::Test {
 protected:
  TempDir dir_{"digest-cache"};
  std::filesystem::path file_ = dir_.path() / "rdmax" / "digests";
  DigestCache cache_{file_, fixed_now};
  std::string problem_;
};

TEST_F(DigestCacheTest, MissesOnAnEmptyCache) {
  EXPECT_EQ(cache_.lookup(kSha256, identity(1), &problem_), std::nullopt);
  EXPECT_EQ(problem_, "");
  write_text(dir_.path() / "empty", "");
  DigestCache empty(dir_.path() / "empty", fixed_now);
  EXPECT_EQ(empty.lookup(kSha256, identity(1), &problem_), std::nullopt);
  EXPECT_EQ(problem_, "");
}

TEST_F(DigestCacheTest, HitsAfterRememberForTheSameIdentity) {
  cache_.remember(kSha256, identity(1), digest_of(10), &problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(cache_.lookup(kSha256, identity(1), &problem_), digest_of(10));
  EXPECT_EQ(problem_, "");
  // Another DigestCache on the same file (the next run of the sender) sees it too.
  EXPECT_EQ(DigestCache(file_, fixed_now).lookup(kSha256, identity(1)), digest_of(10));
  EXPECT_EQ(lines_of(file_).front(), DigestCache::kFormatTag);
}

TEST_F(DigestCacheTest, MissesForAnotherAlgorithm) {
  cache_.remember(kSha256, identity(1), digest_of(10));
  EXPECT_EQ(cache_.lookup(kOther, identity(1)), std::nullopt);
  // Both algorithms' digests of one file live side by side.
  cache_.remember(kOther, identity(1), digest_of(20));
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), digest_of(10));
  EXPECT_EQ(cache_.lookup(kOther, identity(1)), digest_of(20));
}

TEST_F(DigestCacheTest, MissesWhenAnyFieldOfTheIdentityDiffers) {
  const FileIdentity id = identity(1);
  cache_.remember(kSha256, id, digest_of(10));
  for (std::uint64_t FileIdentity::*field :
       {&FileIdentity::dev, &FileIdentity::ino, &FileIdentity::size, &FileIdentity::mtime_ns,
        &FileIdentity::ctime_ns}) {
    FileIdentity other = id;
    other.*field += 1;
    EXPECT_EQ(cache_.lookup(kSha256, other), std::nullopt);
  }
}

TEST_F(DigestCacheTest, MissesWhenContentChangedAndMtimeWasPutBack) {
  const auto path = dir_.path() / "data";
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd);
  ASSERT_EQ(::pwrite(fd.get(), "aaaa", 4, 0), 4);
  const FileIdentity before = identity_of(fd.get());
  cache_.remember(kSha256, before, digest_of(10), &problem_);
  ASSERT_EQ(problem_, "");
  ASSERT_EQ(cache_.lookup(kSha256, before), digest_of(10));

  // Same size, mtime restored; the ctime moves on, once the clock has left the tick of the
  // first write (a coarse tick is a few milliseconds).
  FileIdentity after = before;
  for (int attempt = 0; attempt < 1000 && after.ctime_ns == before.ctime_ns; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(::pwrite(fd.get(), "bbbb", 4, 0), 4);
    const struct timespec times[2] = {
        {.tv_sec = 0, .tv_nsec = UTIME_OMIT},
        {.tv_sec = static_cast<time_t>(before.mtime_ns / kSecond),
         .tv_nsec = static_cast<long>(before.mtime_ns % kSecond)},
    };
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    after = identity_of(fd.get());
  }
  ASSERT_NE(after.ctime_ns, before.ctime_ns);
  EXPECT_EQ(after.dev, before.dev);
  EXPECT_EQ(after.ino, before.ino);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(cache_.lookup(kSha256, after), std::nullopt);
}

TEST_F(DigestCacheTest, ReplacesTheEntryForTheSameInode) {
  cache_.remember(kSha256, identity(1, 100), digest_of(10));
  cache_.remember(kSha256, identity(2, 100), digest_of(30));
  cache_.remember(kSha256, identity(1, 200), digest_of(20));
  EXPECT_EQ(cache_.lookup(kSha256, identity(1, 100)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1, 200)), digest_of(20));
  EXPECT_EQ(cache_.lookup(kSha256, identity(2, 100)), digest_of(30));
  EXPECT_EQ(lines_of(file_).size(), 3u);  // the tag and two entries
}

TEST_F(DigestCacheTest, DoesNotStoreRacyEntries) {
  std::uint64_t now = 0;
  DigestCache cache(file_, [&now] { return now; });
  FileIdentity id = identity(1);
  id.mtime_ns = 1'000 * kSecond;
  id.ctime_ns = 1'000 * kSecond;

  now = id.mtime_ns + kSecond;  // modified a second ago: the same tick may follow
  cache.remember(kSha256, id, digest_of(10), &problem_);
  EXPECT_EQ(problem_, "");  // not a problem, just not stored
  EXPECT_EQ(cache.lookup(kSha256, id), std::nullopt);

  now = id.mtime_ns - kSecond;  // timestamps in the future
  cache.remember(kSha256, id, digest_of(10));
  EXPECT_EQ(cache.lookup(kSha256, id), std::nullopt);

  FileIdentity recent_ctime = id;  // an old mtime does not help if the ctime is recent
  recent_ctime.ctime_ns = 2'000 * kSecond;
  now = recent_ctime.ctime_ns + kSecond;
  cache.remember(kSha256, recent_ctime, digest_of(10));
  EXPECT_EQ(cache.lookup(kSha256, recent_ctime), std::nullopt);

  now = recent_ctime.ctime_ns + DigestCache::kRacyWindowNs;
  cache.remember(kSha256, recent_ctime, digest_of(10));
  EXPECT_EQ(cache.lookup(kSha256, recent_ctime), digest_of(10));
}

TEST_F(DigestCacheTest, KeepsTheNewestEntriesWithinTheBound) {
  std::filesystem::create_directory(file_.parent_path());
  std::string text = std::string(DigestCache::kFormatTag) + '\n';
  for (std::uint64_t ino = 1; ino <= DigestCache::kMaxEntries; ++ino) {
    text += entry_line(ino, static_cast<std::uint8_t>(ino)) + '\n';
  }
  write_text(file_, text);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), digest_of(1));

  // Replacing an entry makes no room to drop anything.
  cache_.remember(kSha256, identity(5), digest_of(200));
  EXPECT_EQ(lines_of(file_).size(), DigestCache::kMaxEntries + 1);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), digest_of(1));
  EXPECT_EQ(cache_.lookup(kSha256, identity(5)), digest_of(200));

  // A new entry drops the oldest, the first line.
  cache_.remember(kSha256, identity(9999), digest_of(99));
  EXPECT_EQ(lines_of(file_).size(), DigestCache::kMaxEntries + 1);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(2)), digest_of(2));
  EXPECT_EQ(cache_.lookup(kSha256, identity(DigestCache::kMaxEntries)),
            digest_of(static_cast<std::uint8_t>(DigestCache::kMaxEntries)));
  EXPECT_EQ(cache_.lookup(kSha256, identity(5)), digest_of(200));
  EXPECT_EQ(cache_.lookup(kSha256, identity(9999)), digest_of(99));
}

TEST_F(DigestCacheTest, IgnoresLinesThatDoNotParse) {
  std::filesystem::create_directory(file_.parent_path());
  const std::string good = entry_line(3, 3);
  write_text(file_, std::string(DigestCache::kFormatTag) + "\n" +
                        "garbage\n"
                        "\n" +
                        entry_line(1, 1).substr(0, good.size() - 1) + "\n" +  // 63 digits
                        entry_line(1, 1) + " extra\n" + entry_line(1, 1).replace(0, 1, "300") +
                        "\n" +                                         // not a u8
                        entry_line(1, 1).replace(2, 1, "-7") + "\n" +  // negative dev
                        entry_line(1, 1).replace(2, 1, "7 ") + "\n" +  // two spaces
                        entry_line(1, 1).replace(good.size() - 1, 1, "g") + "\n" +
                        "1 7 2 100 1700000000000000000 1700000001000000000\n" + good + "\n" +
                        entry_line(4, 4));  // no final newline
  EXPECT_EQ(cache_.lookup(kSha256, identity(1), &problem_), std::nullopt);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(cache_.lookup(kSha256, identity(2)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(3)), digest_of(3));
  EXPECT_EQ(cache_.lookup(kSha256, identity(4)), digest_of(4));

  // An update keeps the good lines and drops the rest.
  cache_.remember(kSha256, identity(5), digest_of(5));
  EXPECT_EQ(lines_of(file_), (std::vector<std::string>{DigestCache::kFormatTag, good,
                                                       entry_line(4, 4), entry_line(5, 5)}));
}

TEST_F(DigestCacheTest, ReadsAFileWithoutTheFormatTagAsEmpty) {
  std::filesystem::create_directory(file_.parent_path());
  write_text(file_, "rdmax-digest-cache 999\n" + entry_line(1, 1) + "\n");
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), std::nullopt);
  cache_.remember(kSha256, identity(2), digest_of(2));
  EXPECT_EQ(lines_of(file_), (std::vector<std::string>{DigestCache::kFormatTag, entry_line(2, 2)}));
}

TEST_F(DigestCacheTest, ConcurrentUpdatesLoseNoEntry) {
  constexpr std::uint64_t kPerWriter = 200;
  // Each writer is a cache of its own, as separate senders are: its own lock descriptor.
  auto writer = [this](std::uint64_t dev, std::string* problems) {
    DigestCache cache(file_, fixed_now);
    for (std::uint64_t ino = 1; ino <= kPerWriter; ++ino) {
      FileIdentity id = identity(ino);
      id.dev = dev;
      std::string problem;
      cache.remember(kSha256, id, digest_of(static_cast<std::uint8_t>(ino + dev)), &problem);
      if (!problem.empty()) *problems += problem + '\n';
    }
  };
  std::string problems_a;
  std::string problems_b;
  std::thread a(writer, 100, &problems_a);
  std::thread b(writer, 200, &problems_b);
  a.join();
  b.join();
  EXPECT_EQ(problems_a, "");
  EXPECT_EQ(problems_b, "");

  std::uint64_t found = 0;
  for (std::uint64_t dev : {100, 200}) {
    for (std::uint64_t ino = 1; ino <= kPerWriter; ++ino) {
      FileIdentity id = identity(ino);
      id.dev = dev;
      if (cache_.lookup(kSha256, id) == digest_of(static_cast<std::uint8_t>(ino + dev))) ++found;
    }
  }
  EXPECT_EQ(found, 2 * kPerWriter);
  EXPECT_EQ(lines_of(file_).size(), 2 * kPerWriter + 1);
}

// A sender that hangs holding the lock (here: the test holds it and writes nothing) costs
// the others one update each after kLockTimeout, never a hang and never an exception.
TEST_F(DigestCacheTest, GivesUpOnALockHeldWithoutProgress) {
  cache_.remember(kSha256, identity(1), digest_of(1), &problem_);
  ASSERT_EQ(problem_, "");
  const auto lock_file = std::filesystem::path(file_).concat(".lock");
  Fd holder(::open(lock_file.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(holder);
  ASSERT_EQ(::flock(holder.get(), LOCK_EX), 0);

  const auto start = std::chrono::steady_clock::now();
  cache_.remember(kSha256, identity(2), digest_of(2), &problem_);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(problem_.find("held without progress"), std::string::npos) << problem_;
  EXPECT_GE(waited, std::chrono::seconds(2));
  EXPECT_EQ(cache_.lookup(kSha256, identity(2)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1)), digest_of(1));
}

TEST_F(DigestCacheTest, CreatesAPrivateDirectoryAndFile) {
  const auto nested = dir_.path() / "a" / "b" / "digests";
  DigestCache cache(nested, fixed_now);
  cache.remember(kSha256, identity(1), digest_of(1), &problem_);
  ASSERT_EQ(problem_, "");
  struct stat st {};
  ASSERT_EQ(::stat((dir_.path() / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(nested.parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Only the cache and its lock file: no temporary left behind.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(nested.parent_path())) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"digests", "digests.lock"}));
}

// What a sender whose cache directory is not writable sees: 0 if remember reports a
// problem without throwing and lookup misses, else a code saying what went wrong.
int check_unwritable(const std::filesystem::path& file) {
  DigestCache cache(file, fixed_now);
  std::string problem;
  try {
    cache.remember(kSha256, identity(1), digest_of(1), &problem);
  } catch (...) {
    return 1;
  }
  if (problem.find("Permission denied") == std::string::npos) return 2;
  if (cache.lookup(kSha256, identity(1)) != std::nullopt) return 3;
  return 0;
}

TEST_F(DigestCacheTest, UnwritableDirectoryIsReportedNotThrown) {
  const auto locked = dir_.path() / "locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0500), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(check_unwritable(locked / "digests"), 0);
    return;
  }
  // Mode bits do not stop root: the check runs in a child that is `nobody`, in a directory
  // of its own.
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0711), 0);
  ASSERT_EQ(::chown(locked.c_str(), kNobody, kNobody), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(10);
    ::_exit(check_unwritable(locked / "digests"));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: threw, 2: no problem reported, 3: lookup hit, "
                                       "10: could not become nobody";
}

TEST_F(DigestCacheTest, DirectoryThatIsARegularFileIsReportedNotThrown) {
  // Fails for root too, unlike a directory's mode bits.
  const auto not_a_directory = dir_.path() / "file";
  write_text(not_a_directory, "x");
  DigestCache cache(not_a_directory / "rdmax" / "digests", fixed_now);
  EXPECT_NO_THROW(cache.remember(kSha256, identity(1), digest_of(1), &problem_));
  EXPECT_NE(problem_.find("Not a directory"), std::string::npos) << problem_;
  EXPECT_EQ(cache.lookup(kSha256, identity(1), &problem_), std::nullopt);
  EXPECT_NE(problem_.find("Not a directory"), std::string::npos) << problem_;
  // Without somewhere to report to, nothing is reported and nothing thrown either.
  EXPECT_NO_THROW(cache.remember(kSha256, identity(1), digest_of(1)));
}

TEST_F(DigestCacheTest, ACacheFileThatIsADirectoryIsAMissWithAProblem) {
  std::filesystem::create_directories(file_);
  EXPECT_EQ(cache_.lookup(kSha256, identity(1), &problem_), std::nullopt);
  EXPECT_NE(problem_, "");
  cache_.remember(kSha256, identity(1), digest_of(1), &problem_);
  EXPECT_NE(problem_, "");
}

// --- DigestCacheBatch: a command's one read and one write ---

TEST_F(DigestCacheTest, BatchAnswersEveryLookupFromOneRead) {
  cache_.remember(kSha256, identity(1), digest_of(1));
  cache_.remember(kOther, identity(2), digest_of(2));
  DigestCache reader(file_, fixed_now);
  DigestCacheBatch batch(reader, &problem_);
  EXPECT_EQ(problem_, "");
  // Another sender replaces the file after the snapshot: the batch does not see it.
  cache_.remember(kSha256, identity(3), digest_of(3));
  for (int round = 0; round < 10; ++round) {
    EXPECT_EQ(batch.lookup(kSha256, identity(1)), digest_of(1));
    EXPECT_EQ(batch.lookup(kOther, identity(2)), digest_of(2));
    EXPECT_EQ(batch.lookup(kSha256, identity(2)), std::nullopt);       // another algorithm
    EXPECT_EQ(batch.lookup(kSha256, identity(1, 101)), std::nullopt);  // another size
    EXPECT_EQ(batch.lookup(kSha256, identity(3)), std::nullopt);
  }
  EXPECT_EQ(reader.stats().reads, 1u);
  EXPECT_EQ(reader.stats().writes, 0u);
  EXPECT_EQ(batch.pending(), 0u);
}

TEST_F(DigestCacheTest, BatchWritesManyEntriesOnce) {
  cache_.remember(kSha256, identity(1000), digest_of(100));
  DigestCache writer(file_, fixed_now);
  DigestCacheBatch batch(writer);
  constexpr std::uint64_t kFiles = 500;
  for (std::uint64_t ino = 1; ino <= kFiles; ++ino)
    batch.remember(kSha256, identity(ino), digest_of(static_cast<std::uint8_t>(ino)));
  EXPECT_EQ(batch.pending(), kFiles);
  // Seen by the batch's own lookups at once, written by nothing yet.
  EXPECT_EQ(batch.lookup(kSha256, identity(7)), digest_of(7));
  EXPECT_EQ(writer.stats().writes, 0u);
  EXPECT_EQ(DigestCache(file_, fixed_now).lookup(kSha256, identity(7)), std::nullopt);

  batch.commit(&problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(batch.pending(), 0u);
  EXPECT_EQ(writer.stats().writes, 1u);
  EXPECT_EQ(writer.stats().reads, 2u);            // the snapshot, and the merge under the lock
  EXPECT_EQ(lines_of(file_).size(), kFiles + 2);  // the tag, the older entry, the batch's
  EXPECT_EQ(cache_.lookup(kSha256, identity(1000)), digest_of(100));
  for (std::uint64_t ino = 1; ino <= kFiles; ++ino)
    EXPECT_EQ(cache_.lookup(kSha256, identity(ino)), digest_of(static_cast<std::uint8_t>(ino)));

  // Nothing new: no I/O at all.
  batch.commit(&problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(writer.stats().writes, 1u);
  EXPECT_EQ(writer.stats().reads, 2u);
}

TEST_F(DigestCacheTest, BatchReplacesEntriesAndKeepsTheNewestWithinTheBound) {
  std::filesystem::create_directory(file_.parent_path());
  std::string text = std::string(DigestCache::kFormatTag) + '\n';
  for (std::uint64_t ino = 1; ino <= DigestCache::kMaxEntries; ++ino)
    text += entry_line(ino, static_cast<std::uint8_t>(ino)) + '\n';
  write_text(file_, text);

  DigestCacheBatch batch(cache_);
  batch.remember(kSha256, identity(5, 200), digest_of(200));  // replaces ino 5's entry
  batch.remember(kSha256, identity(9000), digest_of(90));
  batch.remember(kSha256, identity(9000, 300), digest_of(91));  // and again: the last wins
  batch.remember(kSha256, identity(9001), digest_of(92));
  batch.remember(kOther, identity(9001), digest_of(93));  // another algorithm: both kept
  batch.commit(&problem_);
  EXPECT_EQ(problem_, "");

  // 4095 old entries and 4 new ones: the 3 oldest go.
  EXPECT_EQ(lines_of(file_).size(), DigestCache::kMaxEntries + 1);
  for (std::uint64_t ino : {1, 2, 3})
    EXPECT_EQ(cache_.lookup(kSha256, identity(ino)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(4)), digest_of(4));
  EXPECT_EQ(cache_.lookup(kSha256, identity(5)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(5, 200)), digest_of(200));
  EXPECT_EQ(cache_.lookup(kSha256, identity(9000)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(9000, 300)), digest_of(91));
  EXPECT_EQ(cache_.lookup(kSha256, identity(9001)), digest_of(92));
  EXPECT_EQ(cache_.lookup(kOther, identity(9001)), digest_of(93));
  const auto lines = lines_of(file_);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.starts_with("1 7 9000 "); }),
            1);

  // A batch larger than the bound keeps its newest entries only.
  DigestCacheBatch big(cache_);
  for (std::uint64_t ino = 1; ino <= DigestCache::kMaxEntries + 10; ++ino)
    big.remember(kSha256, identity(100000 + ino), digest_of(static_cast<std::uint8_t>(ino)));
  big.commit(&problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(lines_of(file_).size(), DigestCache::kMaxEntries + 1);
  EXPECT_EQ(cache_.lookup(kSha256, identity(100010)), std::nullopt);
  EXPECT_EQ(cache_.lookup(kSha256, identity(100011)), digest_of(11));
}

TEST_F(DigestCacheTest, BatchDoesNotKeepRacyEntries) {
  std::uint64_t now = 0;
  DigestCache cache(file_, [&now] { return now; });
  DigestCacheBatch batch(cache);
  FileIdentity id = identity(1);
  now = std::max(id.mtime_ns, id.ctime_ns) + kSecond;
  batch.remember(kSha256, id, digest_of(1));
  EXPECT_EQ(batch.pending(), 0u);
  EXPECT_EQ(batch.lookup(kSha256, id), std::nullopt);
  batch.commit(&problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(cache.stats().writes, 0u);
  EXPECT_FALSE(std::filesystem::exists(file_));

  // remember_all leaves out the racy ones and stores the others.
  now = id.ctime_ns + DigestCache::kRacyWindowNs;
  FileIdentity recent = identity(2);
  recent.ctime_ns = now;
  const DigestCacheEntry entries[] = {{kSha256, id, digest_of(1)}, {kSha256, recent, digest_of(2)}};
  cache.remember_all(entries, &problem_);
  EXPECT_EQ(problem_, "");
  EXPECT_EQ(cache.lookup(kSha256, id), digest_of(1));
  EXPECT_EQ(cache.lookup(kSha256, recent), std::nullopt);
}

TEST_F(DigestCacheTest, BatchProblemsAreReportedNotThrown) {
  std::filesystem::create_directories(file_);  // the cache file is a directory
  std::optional<DigestCacheBatch> batch;
  EXPECT_NO_THROW(batch.emplace(cache_, &problem_));
  EXPECT_NE(problem_, "");
  EXPECT_EQ(batch->lookup(kSha256, identity(1)), std::nullopt);
  batch->remember(kSha256, identity(1), digest_of(1));
  EXPECT_EQ(batch->lookup(kSha256, identity(1)), digest_of(1));  // this command still knows
  EXPECT_NO_THROW(batch->commit(&problem_));
  EXPECT_NE(problem_, "");
  EXPECT_EQ(batch->pending(), 0u);
}

TEST_F(DigestCacheTest, ConcurrentBatchesAndSingleRemembersLoseNoEntry) {
  constexpr std::uint64_t kPerWriter = 200;
  constexpr std::uint64_t kPerBatch = 25;
  auto id_of = [](std::uint64_t dev, std::uint64_t ino) {
    FileIdentity id = identity(ino);
    id.dev = dev;
    return id;
  };
  auto digest_for = [](std::uint64_t dev, std::uint64_t ino) {
    return digest_of(static_cast<std::uint8_t>(ino + dev));
  };
  // One sender commits batches, the other remembers entry by entry.
  auto batcher = [&](std::string* problems) {
    DigestCache cache(file_, fixed_now);
    for (std::uint64_t first = 1; first <= kPerWriter; first += kPerBatch) {
      DigestCacheBatch batch(cache);
      for (std::uint64_t ino = first; ino < first + kPerBatch; ++ino)
        batch.remember(kSha256, id_of(100, ino), digest_for(100, ino));
      std::string problem;
      batch.commit(&problem);
      if (!problem.empty()) *problems += problem + '\n';
    }
  };
  auto single = [&](std::string* problems) {
    DigestCache cache(file_, fixed_now);
    for (std::uint64_t ino = 1; ino <= kPerWriter; ++ino) {
      std::string problem;
      cache.remember(kSha256, id_of(200, ino), digest_for(200, ino), &problem);
      if (!problem.empty()) *problems += problem + '\n';
    }
  };
  std::string problems_a;
  std::string problems_b;
  std::thread a(batcher, &problems_a);
  std::thread b(single, &problems_b);
  a.join();
  b.join();
  EXPECT_EQ(problems_a, "");
  EXPECT_EQ(problems_b, "");

  DigestCacheBatch check(cache_);
  std::uint64_t found = 0;
  for (std::uint64_t dev : {100, 200})
    for (std::uint64_t ino = 1; ino <= kPerWriter; ++ino)
      if (check.lookup(kSha256, id_of(dev, ino)) == digest_for(dev, ino)) ++found;
  EXPECT_EQ(found, 2 * kPerWriter);
  EXPECT_EQ(lines_of(file_).size(), 2 * kPerWriter + 1);
}

TEST(FileIdentityTest, IdentityOfABadDescriptorThrowsSysError) {
  EXPECT_THROW(identity_of(-1), SysError);
}

TEST(FileIdentityTest, IdentityOfAFileMatchesStat) {
  TempDir dir("file-identity");
  const auto path = dir.path() / "f";
  write_text(path, "hello");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const FileIdentity id = identity_of(fd.get());
  EXPECT_EQ(id.dev, st.st_dev);
  EXPECT_EQ(id.ino, st.st_ino);
  EXPECT_EQ(id.size, 5u);
  EXPECT_EQ(id.mtime_ns,
            static_cast<std::uint64_t>(st.st_mtim.tv_sec) * kSecond + st.st_mtim.tv_nsec);
  EXPECT_EQ(id.ctime_ns,
            static_cast<std::uint64_t>(st.st_ctim.tv_sec) * kSecond + st.st_ctim.tv_nsec);
}

// Sets (or with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

TEST(DigestCacheDefaultPathTest, FollowsXdgCacheHomeThenHome) {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(DigestCache::default_path(), std::filesystem::path("/xdg/cache/rdmax/digests"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");  // the XDG spec says to ignore it
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(DigestCache::default_path(),
              std::filesystem::path("/home/someone/.cache/rdmax/digests"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "");
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(DigestCache::default_path(),
              std::filesystem::path("/home/someone/.cache/rdmax/digests"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    EXPECT_EQ(DigestCache::default_path(), std::nullopt);
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "");
    EXPECT_EQ(DigestCache::default_path(), std::nullopt);
  }
}

}  // namespace
}  // namespace rdmax
