#include "support/short_lock.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/fifo.h"

namespace rocuda::support {
namespace {

// Increments under the lock from more threads than cores, long enough for every path of lock()
// (free, polled until free, asleep until woken) to be taken many times: none may be lost.
TEST(ShortLock, ExcludesUnderContention) {
  ShortLock lock;
  uint64_t counter = 0;  // deliberately not atomic: the lock alone protects it
  constexpr int kThreads = 4, kRounds = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(lock);
        ++counter;
        if (i % 1000 == 0) std::this_thread::yield();  // held across a reschedule now and then
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kRounds);
}

TEST(ShortLock, TryLockFailsWhileHeld) {
  ShortLock lock;
  ASSERT_TRUE(lock.try_lock());
  std::thread other([&] { EXPECT_FALSE(lock.try_lock()); });
  other.join();
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

// What a stream does with it: a worker asleep on a condition variable under the lock.
TEST(ShortLock, WorksWithConditionVariableAny) {
  ShortLock lock;
  std::condition_variable_any cv;
  int produced = 0, consumed = 0;
  constexpr int kItems = 20000;
  std::thread consumer([&] {
    std::unique_lock guard(lock);
    while (consumed < kItems) {
      cv.wait(guard, [&] { return produced > consumed; });
      consumed = produced;
    }
  });
  for (int i = 0; i < kItems; ++i) {
    {
      std::lock_guard guard(lock);
      ++produced;
    }
    cv.notify_one();
  }
  consumer.join();
  EXPECT_EQ(consumed, kItems);
}

TEST(Fifo, KeepsOrderAcrossCompactions) {
  Fifo<int> fifo;
  EXPECT_TRUE(fifo.empty());
  int next = 0, expected = 0;
  // Push two, pop one, many times: the popped prefix is compacted away again and again while
  // elements remain.
  for (int round = 0; round < 1000; ++round) {
    fifo.push_back(next++);
    fifo.push_back(next++);
    ASSERT_EQ(fifo.front(), expected++);
    fifo.pop_front();
  }
  EXPECT_EQ(fifo.size(), 1000u);
  while (!fifo.empty()) {
    ASSERT_EQ(fifo.front(), expected++);
    fifo.pop_front();
  }
  EXPECT_EQ(expected, next);
}

TEST(Fifo, PopReleasesTheElementAtOnce) {
  Fifo<std::shared_ptr<int>> fifo;
  auto value = std::make_shared<int>(7);
  fifo.push_back(value);
  fifo.push_back(std::make_shared<int>(8));
  EXPECT_EQ(value.use_count(), 2);
  fifo.pop_front();
  EXPECT_EQ(value.use_count(), 1) << "the queue still held the popped element";
  EXPECT_EQ(*fifo.front(), 8);
}

}  // namespace
}  // namespace rocuda::support
