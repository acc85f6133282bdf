#include "support/thread_identity.h"

namespace rocuda::support {
namespace {

std::atomic<uint64_t> nextSerial{1};

// Made on a thread's first call; marks the thread gone when the thread ends.
struct ThreadRecord {
  std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true);
  ThreadIdentity identity{nextSerial.fetch_add(1, std::memory_order_relaxed), alive};
  ~ThreadRecord() { alive->store(false, std::memory_order_release); }
};

}  // namespace

const ThreadIdentity& currentThread() {
  thread_local ThreadRecord record;
  return record.identity;
}

}  // namespace rocuda::support
