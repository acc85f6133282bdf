// The CPU device's thread pool: every item of every job runs exactly once, with jobs submitted
// from several threads at once (concurrent streams), including jobs so small that the submitter
// claims all of their items before a woken worker looks at them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace rocuda::backends::cpu {
namespace {

TEST(CpuThreadPool, RunsEveryItemOnceWhileSubmittersRace) {
  ThreadPool pool(4);
  constexpr int kSubmitters = 3;
  constexpr int kJobs = 100000;
  std::vector<std::thread> submitters;
  std::atomic<int> wrong{0};
  for (int s = 0; s < kSubmitters; ++s)
    submitters.emplace_back([&, s] {
      for (int j = 0; j < kJobs; ++j) {
        uint64_t count = 1 + static_cast<uint64_t>((j * 7 + s) % 5);  // 1..5 items
        std::vector<std::atomic<int>> runs(count);
        pool.parallelFor(count, [&](uint64_t i) { runs[i].fetch_add(1); });
        for (auto& r : runs)
          if (r.load() != 1) wrong.fetch_add(1);
      }
    });
  for (auto& t : submitters) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuThreadPool, LargeJobIsSplitAcrossWorkers) {
  ThreadPool pool(3);
  constexpr uint64_t kCount = 100000;
  std::vector<std::atomic<int>> runs(kCount);
  std::atomic<uint64_t> sum{0};
  pool.parallelFor(kCount, [&](uint64_t i) {
    runs[i].fetch_add(1);
    sum.fetch_add(i);
  });
  for (uint64_t i = 0; i < kCount; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
  EXPECT_EQ(sum.load(), kCount * (kCount - 1) / 2);
}

// Idle workers poll for the next grid a while, then sleep: a grid posted to sleeping workers
// wakes them (each item below waits until a second thread has joined, so the job finishes only
// if a worker came), and one posted while they still poll is taken too.
TEST(CpuThreadPool, WorkersJoinGridsAfterPollingAndAfterSleeping) {
  ThreadPool pool(2);
  auto needsTwoThreads = [&] {
    std::atomic<int> arrived{0};
    pool.parallelFor(2, [&](uint64_t) {
      arrived.fetch_add(1);
      while (arrived.load() < 2) std::this_thread::yield();
    });
  };
  needsTwoThreads();  // the worker may be asleep since the pool started
  for (int i = 0; i < 100; ++i) needsTwoThreads();             // back to back: it is still polling
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long past its polling
  needsTwoThreads();
}

// Ranges cover every item once, non-empty and in bounds.
TEST(CpuThreadPool, RangesCoverEveryItemOnce) {
  ThreadPool pool(3);
  constexpr uint64_t kCount = 20000;
  std::vector<std::atomic<int>> runs(kCount);
  std::atomic<int> bad{0};
  pool.parallelForRanges(kCount, [&](uint64_t first, uint64_t last) {
    if (first >= last || last > kCount) bad.fetch_add(1);
    for (uint64_t i = first; i < last && i < kCount; ++i) runs[i].fetch_add(1);
  });
  EXPECT_EQ(bad.load(), 0);
  for (uint64_t i = 0; i < kCount; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
}

// A job capped at N workers (a green context's share) never has more than N threads in its
// items at once, whatever other jobs run beside it, and still runs every item once; uncapped, the
// same job spreads over more threads.
TEST(CpuThreadPool, WorkerCapHoldsWhileOtherJobsRun) {
  ThreadPool pool(4);
  auto peakOf = [&](unsigned workers) {
    std::atomic<unsigned> active{0}, peak{0};
    std::vector<std::atomic<int>> runs(64);
    pool.parallelFor(
        64,
        [&](uint64_t i) {
          unsigned now = active.fetch_add(1) + 1;
          for (unsigned seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
          }
          std::this_thread::sleep_for(std::chrono::microseconds(500));
          runs[i].fetch_add(1);
          active.fetch_sub(1);
        },
        workers);
    for (auto& r : runs) EXPECT_EQ(r.load(), 1);
    return peak.load();
  };
  std::atomic<bool> stop{false};
  std::thread other([&] {  // an uncapped job submitted over and over beside the capped ones
    while (!stop.load()) pool.parallelFor(8, [](uint64_t) { std::this_thread::yield(); });
  });
  EXPECT_EQ(peakOf(1), 1u);
  EXPECT_LE(peakOf(2), 2u);
  stop.store(true);
  other.join();
  EXPECT_GT(peakOf(0), 1u);
}

// A pool thread looking for work takes the greatest priority's job first: with a low and a high
// priority job both waiting for help (their submitters held in their first items), the one
// pool thread, once free, runs the high one's other item.
TEST(CpuThreadPool, AFreeWorkerTakesTheGreatestPriorityFirst) {
  ThreadPool pool(2);  // the submitter and one pool thread
  std::atomic<bool> releaseBlocker{false}, releaseSubmitters{false};
  std::atomic<int> blockerIn{0}, submittersIn{0};
  std::atomic<int> firstHelped{1};  // priority of the first job the pool thread helped
  auto hold = [](std::atomic<bool>& gate) {
    while (!gate.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  // Keep the pool thread on a job of its own until both others are queued.
  std::thread blocker([&] {
    pool.parallelFor(2, [&](uint64_t) {
      ++blockerIn;
      hold(releaseBlocker);
    });
  });
  while (blockerIn.load() < 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  auto submit = [&](int priority) {
    return std::thread([&, priority] {
      pool.parallelFor(
          2,
          [&](uint64_t i) {
            if (i == 0) {
              ++submittersIn;
              hold(releaseSubmitters);  // the submitter keeps item 0; item 1 waits for help
              return;
            }
            int none = 1;
            firstHelped.compare_exchange_strong(none, priority);
            releaseSubmitters.store(true);
          },
          0, priority);
    });
  };
  std::thread low = submit(0);
  while (submittersIn.load() < 1) std::this_thread::sleep_for(std::chrono::microseconds(100));
  std::thread high = submit(-3);
  while (submittersIn.load() < 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  releaseBlocker.store(true);  // the pool thread leaves the blocker's job and looks for more
  blocker.join();
  low.join();
  high.join();
  EXPECT_EQ(firstHelped.load(), -3);
}

}  // namespace
}  // namespace rocuda::backends::cpu
