// Waiting for another thread by polling before sleeping. Waking a sleeping thread costs tens of
// microseconds on an idle (virtual) machine, more than a short kernel takes, so the threads that
// hand work to each other (a stream's worker and the host, the pool's workers) first poll what
// they wait for.
#pragma once

#include <chrono>
#include <thread>

namespace rocuda::support {

// The processor's spin-wait hint: lets the sibling hyperthread run and saves power.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a waiter polls before it sleeps.
inline constexpr auto kSpinBeforeSleep = std::chrono::microseconds(50);
// For the first part of that it only polls: a sched_yield is a system call (about a microsecond
// in a VM) that, made as the awaited flag turns, delays the waiter by as much. Later polls
// yield, so that a waiter does not starve the thread it waits for on a machine with more threads
// than cores.
inline constexpr auto kPollBeforeYield = std::chrono::microseconds(10);

// Poll `ready` until it holds (true) or `limit` has passed (false), yielding the processor
// between polls after `pollOnly`.
template <class Ready>
bool spinUntil(Ready ready, std::chrono::nanoseconds limit = kSpinBeforeSleep,
               std::chrono::nanoseconds pollOnly = kPollBeforeYield) {
  auto start = std::chrono::steady_clock::now();
  for (unsigned i = 0;; ++i) {
    if (ready()) return true;
    cpuRelax();
    if ((i & 15) == 15) {
      auto spun = std::chrono::steady_clock::now() - start;
      if (spun > limit) return false;
      if (spun > pollOnly) std::this_thread::yield();
    }
  }
}

}  // namespace rocuda::support
