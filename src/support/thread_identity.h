// Which host thread is calling, in a form that outlives the thread: CUDA keys per-thread state
// (the per-thread default stream, the owner of a thread-local stream capture) by host thread,
// and std::thread::id cannot be that key, since the C library gives a new thread the id of one
// that has exited.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace rocuda::support {

struct ThreadIdentity {
  uint64_t serial;  // never reused within the process
  // False once the thread has exited (set by the thread's own thread_local destructor).
  std::shared_ptr<const std::atomic<bool>> alive;
};

// The calling thread's identity.
const ThreadIdentity& currentThread();

}  // namespace rocuda::support
