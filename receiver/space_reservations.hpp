#pragma once
// Free space spoken for by files being received (rdma-recv(1), "Free space"): the bytes a
// file was admitted with and that neither a preallocation reserved on the disk nor a write
// has put there yet. The next file's free-space check counts them as taken, so that files
// received at once on a file system that does not preallocate (tmpfs) do not all pass a
// check that only one of them can.
//
// Why a lock and not the loop: the check reads the file system's free space and the
// admitted file is created and preallocated on worker threads, several files at once. The
// check, the creation and the reservation run under one mutex, so each file's check sees
// every file admitted before it and none that is still being checked (one that ends refused
// never made another file fail: issue 21). Releases come from the loop, lock-free.
//
// Threads: admit() on workers; release(), reserved() and Hold's members on any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

namespace rdmax::receiver {

class SpaceReservations {
 public:
  // A file's reservation: what is left of it goes back when it is released or destroyed.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept;
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release_all(); }

    std::uint64_t bytes() const { return bytes_; }
    // `written` bytes reached the disk: the free space counts them now.
    void release(std::uint64_t written) noexcept;
    void release_all() noexcept { release(bytes_); }

   private:
    friend class SpaceReservations;
    Hold(SpaceReservations* owner, std::uint64_t bytes) : owner_(owner), bytes_(bytes) {}
    SpaceReservations* owner_ = nullptr;
    std::uint64_t bytes_ = 0;
  };

  // Whether `needed` bytes fit into `free` beside `reserved` ones (a pure rule).
  static bool fits(std::uint64_t free, std::uint64_t needed, std::uint64_t reserved) {
    return free >= needed && free - needed >= reserved;
  }

  // On a worker. Under the lock: if `needed` bytes fit into `free_bytes()` beside the bytes
  // reserved, runs `make` (it creates and preallocates the file and returns whether the
  // file system reserved the space) and returns the file's Hold: empty when `make`
  // preallocated, else `needed` bytes. nullopt when they do not fit (`make` not run). An
  // exception from either function leaves nothing reserved.
  std::optional<Hold> admit(std::uint64_t needed, const std::function<std::uint64_t()>& free_bytes,
                            const std::function<bool()>& make);

  std::uint64_t reserved() const { return reserved_.load(std::memory_order_relaxed); }

 private:
  std::mutex admitting_;
  std::atomic<std::uint64_t> reserved_{0};
};

}  // namespace rdmax::receiver
