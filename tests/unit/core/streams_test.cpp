#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core_test_support.h"

namespace rocuda::core {
namespace {

using namespace std::chrono_literals;

// CUDA clamps a priority outside the device's range [greatest, 0] into it.
TEST(Streams, PrioritiesAreClampedToTheDevicesRange) {
  backends::DeviceDescription flat;  // the CPU device: [0, 0]
  EXPECT_EQ(clampStreamPriority(-5, flat), 0);
  EXPECT_EQ(clampStreamPriority(3, flat), 0);
  backends::DeviceDescription levels;  // e.g. HIP's three levels
  levels.greatestStreamPriority = -2;
  EXPECT_EQ(clampStreamPriority(-5, levels), -2);
  EXPECT_EQ(clampStreamPriority(-1, levels), -1);
  EXPECT_EQ(clampStreamPriority(0, levels), 0);
  EXPECT_EQ(clampStreamPriority(7, levels), 0);
}

TEST(Streams, CommandsRunInOrderAndAsynchronously) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(/*non-blocking=*/1, 0);
  ASSERT_TRUE(stream.ok());
  std::atomic<bool> release{false};
  std::vector<int> order;
  std::mutex orderMutex;
  ASSERT_TRUE(context.enqueue(**stream, "wait", [&] {
    while (!release) std::this_thread::sleep_for(1ms);
    return Status::success();
  }).ok());
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(context.enqueue(**stream, "record", [&, i] {
      std::lock_guard lock(orderMutex);
      order.push_back(i);
      return Status::success();
    }).ok());
  // The host was not blocked by the first command.
  EXPECT_FALSE((*stream)->idle());
  release = true;
  EXPECT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE((*stream)->idle());
  ASSERT_TRUE(context.destroyStream(*stream).ok());
}

TEST(Streams, LegacyStreamWaitsForBlockingStreams) {
  Context& context = testing::primaryContext();
  auto blocking = context.createStream(0, 0);
  ASSERT_TRUE(blocking.ok());
  std::atomic<bool> release{false};
  std::atomic<bool> slowDone{false};
  ASSERT_TRUE(context.enqueue(**blocking, "slow", [&] {
    while (!release) std::this_thread::sleep_for(1ms);
    slowDone = true;
    return Status::success();
  }).ok());
  std::atomic<bool> sawSlowDone{false};
  ASSERT_TRUE(context.enqueue(context.legacyStream(), "after", [&] {
    sawSlowDone = slowDone.load();
    return Status::success();
  }).ok());
  std::this_thread::sleep_for(20ms);
  release = true;
  EXPECT_TRUE(context.legacyStream().synchronize().ok());
  EXPECT_TRUE(sawSlowDone) << "legacy-stream work ran before earlier work of a blocking stream";
  ASSERT_TRUE(context.destroyStream(*blocking).ok());
}

TEST(Streams, NonBlockingStreamDoesNotWaitForLegacyStream) {
  Context& context = testing::primaryContext();
  auto independent = context.createStream(/*CU_STREAM_NON_BLOCKING=*/1, 0);
  ASSERT_TRUE(independent.ok());
  std::atomic<bool> release{false};
  ASSERT_TRUE(context.enqueue(context.legacyStream(), "held", [&] {
    while (!release) std::this_thread::sleep_for(1ms);
    return Status::success();
  }).ok());
  auto done = context.enqueue(**independent, "free", [] { return Status::success(); });
  ASSERT_TRUE(done.ok());
  (*done)->wait();  // would deadlock if the non-blocking stream waited for the legacy stream
  release = true;
  EXPECT_TRUE(context.synchronize().ok());
  ASSERT_TRUE(context.destroyStream(*independent).ok());
}

// Device work the stream's worker has not started is run by a thread that synchronises the
// stream (the CPU device: launch + synchronize costs no hand-off between cores). The worker
// leaves such work a moment before taking it, so a thread that synchronises at once mostly
// wins; a loaded machine may deschedule it for that moment, hence several tries.
TEST(Streams, SynchronizingThreadsRunDeviceWorkNobodyHasStarted) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(/*non-blocking=*/1, 0);
  ASSERT_TRUE(stream.ok());
  const std::thread::id self = std::this_thread::get_id();
  bool ranHere = false;
  for (int attempt = 0; attempt < 2000 && !ranHere; ++attempt) {
    std::thread::id ranOn;
    ASSERT_TRUE(context
                    .enqueueDeviceWork(**stream, "where",
                                       [&] {
                                         ranOn = std::this_thread::get_id();
                                         return Status::success();
                                       })
                    .ok());
    ASSERT_TRUE((*stream)->synchronize().ok());
    ranHere = ranOn == self;
  }
  EXPECT_TRUE(ranHere) << "device work always ran on the stream's worker";
  // Host work (host functions, event records) always runs on the worker, as CUDA runs host
  // functions on a thread of its own.
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::thread::id ranOn;
    ASSERT_TRUE(context
                    .enqueue(**stream, "host",
                             [&] {
                               ranOn = std::this_thread::get_id();
                               return Status::success();
                             })
                    .ok());
    ASSERT_TRUE((*stream)->synchronize().ok());
    ASSERT_NE(ranOn, self);
  }
  ASSERT_TRUE(context.destroyStream(*stream).ok());
}

// Whoever runs them, a stream's commands run once each and in the order they were queued, while
// several threads queue and synchronise at once.
TEST(Streams, CommandsRunOnceInOrderWhileThreadsSynchronize) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(/*non-blocking=*/1, 0);
  ASSERT_TRUE(stream.ok());
  constexpr int kQueuers = 2, kCommandsEach = 3000;
  std::mutex queueing;  // tickets in the order the commands were queued
  int nextTicket = 0;
  std::vector<int> ran;  // appended by the command with its ticket; commands run one at a time
  std::atomic<bool> queuersDone{false};
  auto queuer = [&](int id) {
    for (int i = 0; i < kCommandsEach; ++i) {
      {
        std::lock_guard lock(queueing);
        int ticket = nextTicket++;
        auto record = [&ran, ticket] {
          ran.push_back(ticket);
          return Status::success();
        };
        bool device = (i + id) % 3 != 0;
        auto queued = device ? context.enqueueDeviceWork(**stream, "device", record)
                             : context.enqueue(**stream, "host", record);
        ASSERT_TRUE(queued.ok());
      }
      if (i % 7 == id) {
        ASSERT_TRUE((*stream)->synchronize().ok());
      }
    }
  };
  std::thread synchronizer([&] {
    while (!queuersDone) {
      ASSERT_TRUE((*stream)->synchronize().ok());
    }
  });
  std::vector<std::thread> queuers;
  for (int id = 0; id < kQueuers; ++id) queuers.emplace_back(queuer, id);
  for (auto& thread : queuers) thread.join();
  queuersDone = true;
  synchronizer.join();
  ASSERT_TRUE((*stream)->synchronize().ok());
  ASSERT_EQ(ran.size(), size_t{kQueuers} * kCommandsEach);
  for (int i = 0; i < static_cast<int>(ran.size()); ++i)
    ASSERT_EQ(ran[i], i) << "command " << i << " ran out of order (or twice)";
  ASSERT_TRUE(context.destroyStream(*stream).ok());
}

TEST(Events, ElapsedTimeAndErrors) {
  Context& context = testing::primaryContext();
  auto start = context.createEvent(0);
  auto end = context.createEvent(0);
  auto untimed = context.createEvent(/*CU_EVENT_DISABLE_TIMING=*/2);
  ASSERT_TRUE(start.ok() && end.ok() && untimed.ok());
  EXPECT_EQ(elapsedMilliseconds(**start, **end).error().code, ErrorCode::InvalidHandle)
      << "never recorded";
  Stream& stream = context.legacyStream();
  ASSERT_TRUE((*start)->record(stream).ok());
  ASSERT_TRUE(context.enqueue(stream, "sleep", [] {
    std::this_thread::sleep_for(30ms);
    return Status::success();
  }).ok());
  ASSERT_TRUE((*end)->record(stream).ok());
  ASSERT_TRUE((*end)->synchronize().ok());
  EXPECT_TRUE(*(*end)->query());
  auto elapsed = elapsedMilliseconds(**start, **end);
  ASSERT_TRUE(elapsed.ok());
  EXPECT_GE(*elapsed, 25.0f);
  EXPECT_LT(*elapsed, 5000.0f);
  ASSERT_TRUE((*untimed)->record(stream).ok());
  ASSERT_TRUE((*untimed)->synchronize().ok());
  EXPECT_EQ(elapsedMilliseconds(**start, **untimed).error().code, ErrorCode::InvalidHandle);
  for (auto* e : {*start, *end, *untimed}) ASSERT_TRUE(context.destroyEvent(e).ok());
}

TEST(Events, CrossStreamWait) {
  Context& context = testing::primaryContext();
  auto producer = context.createStream(1, 0);
  auto consumer = context.createStream(1, 0);
  auto event = context.createEvent(0);
  ASSERT_TRUE(producer.ok() && consumer.ok() && event.ok());
  std::atomic<int> value{0};
  ASSERT_TRUE(context.enqueue(**producer, "produce", [&] {
    std::this_thread::sleep_for(20ms);
    value = 42;
    return Status::success();
  }).ok());
  ASSERT_TRUE((*event)->record(**producer).ok());
  (*consumer)->enqueueWait((*event)->completion());
  // The wait itself keeps the consumer busy until the producer's record.
  EXPECT_FALSE((*consumer)->idle());
  std::atomic<int> seen{0};
  ASSERT_TRUE(context.enqueue(**consumer, "consume", [&] {
    seen = value.load();
    return Status::success();
  }).ok());
  ASSERT_TRUE((*consumer)->synchronize().ok());
  EXPECT_EQ(seen, 42);
  // A stream whose only command is the wait: its synchronisation waits for the event.
  value = 0;
  ASSERT_TRUE(context
                  .enqueue(**producer, "produce again",
                           [&] {
                             std::this_thread::sleep_for(20ms);
                             value = 7;
                             return Status::success();
                           })
                  .ok());
  ASSERT_TRUE((*event)->record(**producer).ok());
  (*consumer)->enqueueWait((*event)->completion());
  ASSERT_TRUE((*consumer)->synchronize().ok());
  EXPECT_EQ(value.load(), 7);
  ASSERT_TRUE(context.destroyStream(*producer).ok());
  ASSERT_TRUE(context.destroyStream(*consumer).ok());
  ASSERT_TRUE(context.destroyEvent(*event).ok());
}

}  // namespace
}  // namespace rocuda::core
