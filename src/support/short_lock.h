// A mutex for critical sections of a few dozen instructions that two threads on different cores
// take in turn: a stream's queue (the host enqueues while the stream's worker takes the previous
// command), a command's completion. std::mutex sleeps in the kernel at the first contention, and
// the futex wait and wake cost several microseconds on a virtual machine, more than a short
// kernel runs; ShortLock first polls for about as long as such a section is held, then sleeps on
// the lock word (std::atomic wait, a futex on Linux). Meets Lockable: use it with
// std::lock_guard, std::unique_lock and std::condition_variable_any.
#pragma once

#include <atomic>
#include <cstdint>

#include "support/spin_wait.h"

namespace rocuda::support {

class ShortLock {
 public:
  ShortLock() = default;
  ShortLock(const ShortLock&) = delete;
  ShortLock& operator=(const ShortLock&) = delete;

  bool try_lock() {
    uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void lock() {
    for (unsigned i = 0; i < kPolls; ++i) {
      if (state_.load(std::memory_order_relaxed) == kFree && try_lock()) return;
      cpuRelax();
    }
    // Mark the lock contended so that its holder wakes us, and sleep until it is free.
    while (state_.exchange(kContended, std::memory_order_acquire) != kFree)
      state_.wait(kContended, std::memory_order_relaxed);
  }

  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) state_.notify_one();
  }

 private:
  static constexpr uint32_t kFree = 0, kHeld = 1, kContended = 2;
  // About a microsecond of polling: longer than the sections this lock guards, far shorter than
  // a sleep and wake-up.
  static constexpr unsigned kPolls = 128;
  std::atomic<uint32_t> state_{kFree};
};

}  // namespace rocuda::support
