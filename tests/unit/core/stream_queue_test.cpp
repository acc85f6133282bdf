// Stream workers on a device that queues work (backends::StreamQueue): device steps are issued
// back to back and complete at one drain; host steps, waits for other streams and the end of the
// stream's commands drain first; a failed drain is the context's sticky error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/platform.h"

namespace rocuda::core {
namespace {

using namespace std::chrono_literals;

// What a test's commands and its device's queue did, in order.
class Journal {
 public:
  void note(std::string entry) {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(entries_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> entries_;
};

// A device whose streams get queues that note their drains; its memory operations are not used.
class QueueingBackend final : public backends::DeviceBackend {
 public:
  explicit QueueingBackend(Journal& journal) : journal_(journal) { description_.name = "queueing"; }

  class Queue final : public backends::StreamQueue {
   public:
    Queue(const DeviceBackend& owner, QueueingBackend& backend)
        : StreamQueue(owner), backend_(backend) {}
    Status drain() override {
      while (backend_.holdDrains) std::this_thread::sleep_for(1ms);
      backend_.journal_.note("drain");
      if (backend_.failNextDrain.exchange(false))
        return makeError(ErrorCode::IllegalAddress, "a queued kernel read an unmapped address");
      return Status::success();
    }

   private:
    QueueingBackend& backend_;
  };

  std::unique_ptr<backends::StreamQueue> createStreamQueue() override {
    return std::make_unique<Queue>(*this, *this);
  }
  bool queuesStreamWork() const override { return true; }

  const backends::DeviceDescription& description() const override { return description_; }
  Result<void*> allocateDevice(size_t) override { return unused(); }
  void freeDevice(void*) override {}
  Result<void*> allocateHost(size_t) override { return unused(); }
  void freeHost(void*) override {}
  uint64_t freeMemory() const override { return 0; }
  Status copy(void*, const void*, size_t) override { return unused(); }
  Status fill(void*, uint32_t, size_t, size_t) override { return unused(); }
  Status copy2D(void*, size_t, const void*, size_t, size_t, size_t) override { return unused(); }
  Result<std::unique_ptr<backends::LoadedModule>> loadPtx(std::string_view,
                                                          std::string_view) override {
    return unused();
  }
  Status launch(backends::LoadedKernel&, const backends::LaunchConfig&, const void*) override {
    return unused();
  }

  std::atomic<bool> failNextDrain{false};
  std::atomic<bool> holdDrains{false};

 private:
  static Error unused() { return Error{ErrorCode::NotSupported, "not used by these tests"}; }
  Journal& journal_;
  backends::DeviceDescription description_;
};

class StreamQueues : public ::testing::Test {
 protected:
  StreamQueues() : device_(0, std::make_unique<QueueingBackend>(journal_)) {}

  Context& context() { return device_.primaryContext(); }
  QueueingBackend& backend() { return static_cast<QueueingBackend&>(device_.backend()); }

  // A step that notes its name and whether it ran with a queue to leave work on.
  std::function<Status()> step(std::string name) {
    return [this, name] {
      journal_.note(name + (backends::StreamQueue::active() ? " queued" : " on the host"));
      return Status::success();
    };
  }
  // A host step that holds the stream until `open` is set, so that what follows is queued
  // behind it before the worker reaches it.
  std::function<Status()> gate(std::atomic<bool>& open) {
    return [&open] {
      while (!open) std::this_thread::sleep_for(1ms);
      return Status::success();
    };
  }

  Journal journal_;
  Device device_;
};

TEST_F(StreamQueues, DeviceStepsQueueTogetherAndCompleteAtOneDrain) {
  auto stream = context().createStream(/*non-blocking=*/1, 0);
  ASSERT_TRUE(stream.ok());
  std::atomic<bool> open{false};
  ASSERT_TRUE(context().enqueue(**stream, "gate", gate(open)).ok());
  std::vector<CompletionPtr> kernels;
  for (const char* name : {"k1", "k2", "k3"}) {
    auto queued = context().enqueueDeviceWork(**stream, name, step(name));
    ASSERT_TRUE(queued.ok());
    kernels.push_back(*queued);
  }
  ASSERT_TRUE(context().enqueue(**stream, "host", step("host")).ok());
  ASSERT_TRUE(context().enqueueDeviceWork(**stream, "k4", step("k4")).ok());
  open = true;
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(journal_.take(),
            (std::vector<std::string>{"k1 queued", "k2 queued", "k3 queued", "drain",
                                      "host on the host", "k4 queued", "drain"}));
  for (const CompletionPtr& kernel : kernels) EXPECT_TRUE(kernel->done());
  EXPECT_TRUE((*stream)->idle());
  ASSERT_TRUE(context().destroyStream(*stream).ok());
}

// A device step's completion is reported only after the drain: an event recorded after it (a
// host step) and a host waiting on it see the device's work finished.
TEST_F(StreamQueues, CompletionsWaitForTheDrain) {
  auto stream = context().createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  std::atomic<bool> open{false}, drainsHeld{true};
  ASSERT_TRUE(context().enqueue(**stream, "gate", gate(open)).ok());
  auto kernel = context().enqueueDeviceWork(**stream, "k1", step("k1"));
  ASSERT_TRUE(kernel.ok());
  // The next command holds the worker after k1 was queued, before any drain.
  ASSERT_TRUE(context()
                  .enqueueDeviceWork(**stream, "k2",
                                     [&] {
                                       while (drainsHeld) std::this_thread::sleep_for(1ms);
                                       return Status::success();
                                     })
                  .ok());
  open = true;
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE((*kernel)->done());  // queued on the device, not yet drained
  EXPECT_FALSE((*stream)->idle());
  drainsHeld = false;
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_TRUE((*kernel)->done());
  EXPECT_EQ(journal_.take(), (std::vector<std::string>{"k1 queued", "drain"}));
  ASSERT_TRUE(context().destroyStream(*stream).ok());
}

// The legacy stream has k1 queued when its k2 must wait for a blocking stream, which waits for
// k1 (CUDA's implicit ordering): the legacy stream drains before it waits, so k1 completes and
// neither stream waits for the other forever.
TEST_F(StreamQueues, WaitingForAnotherStreamDrainsFirst) {
  Stream& legacy = context().legacyStream();
  auto blocking = context().createStream(/*blocking*/ 0, 0);
  ASSERT_TRUE(blocking.ok());
  std::atomic<bool> open{false};
  ASSERT_TRUE(context().enqueue(legacy, "gate", gate(open)).ok());
  ASSERT_TRUE(context().enqueueDeviceWork(legacy, "k1", step("k1")).ok());
  ASSERT_TRUE(context().enqueue(**blocking, "after k1", step("after k1")).ok());
  ASSERT_TRUE(context().enqueueDeviceWork(legacy, "k2", step("k2")).ok());
  open = true;
  ASSERT_TRUE(legacy.synchronize().ok());
  EXPECT_EQ(journal_.take(), (std::vector<std::string>{"k1 queued", "drain", "after k1 on the host",
                                                       "k2 queued", "drain"}));
  ASSERT_TRUE(context().destroyStream(*blocking).ok());
}

// A blocking stream whose queue is empty but whose device work is still on the device (issued,
// not drained) is not idle: work on the legacy stream waits for that work, cuStreamQuery says
// not ready, and a context synchronisation waits for the drain.
TEST_F(StreamQueues, DeviceWorkNotYetDrainedKeepsAStreamBusy) {
  auto blocking = context().createStream(/*blocking*/ 0, 0);
  ASSERT_TRUE(blocking.ok());
  backend().holdDrains = true;
  auto kernel = context().enqueueDeviceWork(**blocking, "k1", step("k1"));
  ASSERT_TRUE(kernel.ok());
  for (int i = 0; i < 2000 && journal_.take().empty(); ++i) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(5ms);  // issued and retired: the queue is empty, the drain held
  EXPECT_FALSE((*kernel)->done());
  EXPECT_FALSE((*blocking)->idle());
  std::atomic<bool> sawKernelDone{false};
  auto after = context().enqueue(context().legacyStream(), "after", [&] {
    sawKernelDone = (*kernel)->done();
    return Status::success();
  });
  ASSERT_TRUE(after.ok());
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE((*after)->done());  // the legacy stream waits for k1's drain
  backend().holdDrains = false;
  ASSERT_TRUE(context().synchronize().ok());
  EXPECT_TRUE(sawKernelDone);
  EXPECT_TRUE((*blocking)->idle());
  ASSERT_TRUE(context().destroyStream(*blocking).ok());
}

// cuStreamWaitEvent on an event that has completed: the batch goes on (no drain); on one that has
// not: the stream drains, then waits.
TEST_F(StreamQueues, WaitingForAnEventAlreadyCompleteKeepsTheBatch) {
  auto stream = context().createStream(1, 0);
  auto other = context().createStream(1, 0);
  ASSERT_TRUE(stream.ok() && other.ok());
  auto recorded = context().enqueue(**other, "record", step("record"));
  ASSERT_TRUE(recorded.ok());
  (*recorded)->wait();
  std::atomic<bool> open{false}, release{false};
  ASSERT_TRUE(context().enqueue(**stream, "gate", gate(open)).ok());
  ASSERT_TRUE(context().enqueueDeviceWork(**stream, "k1", step("k1")).ok());
  (*stream)->enqueueWait(*recorded);
  ASSERT_TRUE(context().enqueueDeviceWork(**stream, "k2", step("k2")).ok());
  auto pending = context().enqueue(**other, "later", gate(release));
  ASSERT_TRUE(pending.ok());
  (*stream)->enqueueWait(*pending);
  ASSERT_TRUE(context().enqueueDeviceWork(**stream, "k3", step("k3")).ok());
  open = true;
  std::this_thread::sleep_for(20ms);
  release = true;
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(journal_.take(),
            (std::vector<std::string>{"record on the host", "k1 queued", "k2 queued", "drain",
                                      "k3 queued", "drain"}));
  ASSERT_TRUE(context().destroyStream(*stream).ok());
  ASSERT_TRUE(context().destroyStream(*other).ok());
}

// A fault that surfaces at the drain fails every command of that batch and is the context's
// sticky error: later work is refused with it.
TEST_F(StreamQueues, AFailedDrainIsStickyAndFailsItsBatch) {
  auto stream = context().createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  std::atomic<bool> open{false};
  ASSERT_TRUE(context().enqueue(**stream, "gate", gate(open)).ok());
  auto k1 = context().enqueueDeviceWork(**stream, "k1", step("k1"));
  auto k2 = context().enqueueDeviceWork(**stream, "k2", step("k2"));
  ASSERT_TRUE(k1.ok() && k2.ok());
  backend().failNextDrain = true;
  open = true;
  Status synchronized = (*stream)->synchronize();
  ASSERT_FALSE(synchronized.ok());
  EXPECT_EQ(synchronized.error().code, ErrorCode::IllegalAddress);
  for (const CompletionPtr& kernel : {*k1, *k2}) {
    ASSERT_FALSE(kernel->status().ok());
    EXPECT_EQ(kernel->status().error().code, ErrorCode::IllegalAddress);
  }
  auto refused = context().enqueueDeviceWork(**stream, "k3", step("k3"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::IllegalAddress);
  EXPECT_EQ(journal_.take(), (std::vector<std::string>{"k1 queued", "k2 queued", "drain"}));
  ASSERT_TRUE(context().destroyStream(*stream).ok());
}

}  // namespace
}  // namespace rocuda::core
