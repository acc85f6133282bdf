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

}  // namespace
}  // namespace rocuda::backends::cpu
