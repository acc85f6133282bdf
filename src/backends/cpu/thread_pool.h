// A fixed pool of worker threads that runs the blocks of kernel grids. Several grids (from
// concurrent streams) may be in flight; each worker takes blocks from the oldest grid with blocks
// left, and the thread that submitted a grid works on it too, so a launch never waits for a
// worker to wake up before progress starts.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/result.h"

namespace rocuda::backends::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned workers);
  ~ThreadPool();

  unsigned workerCount() const { return static_cast<unsigned>(threads_.size()) + 1; }

  // Run task(i) for every i in [0, count), in parallel, and return when all have finished.
  // `task` is called by reference: a launch copies nothing and allocates nothing. `workers`:
  // at most that many threads work on the items at once, the calling thread among them (a
  // green context's share of the device's multiprocessors); 0: every worker of the pool.
  // `priority` (CUDA's: lower is greater): a pool thread looking for work takes the greatest
  // priority's job first (a thread already on a job stays on it: no preemption).
  template <typename Task>
  void parallelFor(uint64_t count, const Task& task, unsigned workers = 0, int priority = 0) {
    run(count,
        TaskRef{&task,
                [](const void* object, uint64_t first, uint64_t last) {
                  for (uint64_t index = first; index < last; ++index)
                    (*static_cast<const Task*>(object))(index);
                }},
        workers, priority);
  }

  // The same, `task(first, last)` called once per claimed range [first, last) of items (in
  // order within it), so that what a worker sets up per item (its thread-local state) it can
  // set up once per range.
  template <typename RangeTask>
  void parallelForRanges(uint64_t count, const RangeTask& task, unsigned workers = 0,
                         int priority = 0) {
    run(count,
        TaskRef{&task,
                [](const void* object, uint64_t first, uint64_t last) {
                  (*static_cast<const RangeTask*>(object))(first, last);
                }},
        workers, priority);
  }

 private:
  struct TaskRef {
    const void* object;
    void (*call)(const void* object, uint64_t first, uint64_t last);
  };
  struct Job {
    uint64_t count = 0;
    uint64_t chunk = 1;  // items taken per claim: few claims, yet enough chunks to balance
    TaskRef task{};
    unsigned maxWorkers = 1;  // threads allowed on the job at once, the submitter included
    int priority = 0;
    // Threads on the job now. One leaves only once every item is claimed, so a pool thread
    // turned away by a full job never needs waking when a place frees up.
    std::atomic<unsigned> workers{0};
    // Separate cache lines: claiming and finishing are done by different workers at once.
    alignas(64) std::atomic<uint64_t> next{0};
    alignas(64) std::atomic<uint64_t> finished{0};
  };
  // Run items of `job` until none are left; true if this call finished the last item.
  static void work(Job& job);
  // Whether a pool thread could take a place on `job` now: items left and room for one more.
  static bool hasRoom(const Job& job);
  // A pool thread takes a place on `job`: false when the job has no item left or is full.
  static bool join(Job& job);
  void run(uint64_t count, TaskRef task, unsigned workers, int priority);
  void workerLoop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::deque<std::shared_ptr<Job>> jobs_;
  // Finished jobs kept for the next grids (one per grid in flight at once): no allocation per
  // launch. A job is reused once no worker holds it any more.
  std::vector<std::shared_ptr<Job>> spareJobs_;
  bool stopping_ = false;
  // Grids posted so far (changed under mutex_): what idle workers poll before they sleep.
  std::atomic<uint64_t> posted_{0};
  unsigned sleepers_ = 0;  // workers asleep on wake_ (under mutex_): a post wakes them
  std::vector<std::thread> threads_;
};

// Threads that run every item of a job at the same time, each on its own thread (the blocks of a
// cooperative grid, which wait for one another). Threads are kept from job to job, so that
// launching costs no thread creation once the largest grid has been seen; one job at a time.
class CoResidentThreads {
 public:
  CoResidentThreads() = default;
  CoResidentThreads(const CoResidentThreads&) = delete;
  CoResidentThreads& operator=(const CoResidentThreads&) = delete;
  ~CoResidentThreads();

  // Run task(i) for every i in [0, count) at once, the calling thread taking item 0, and return
  // when all have finished. LaunchOutOfResources, running nothing, when the threads cannot be
  // started.
  Status run(uint64_t count, const std::function<void(uint64_t)>& task);

 private:
  void threadLoop(uint64_t item);

  std::mutex jobMutex_;  // held for a whole job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(uint64_t)>* task_ = nullptr;
  uint64_t count_ = 0;
  uint64_t generation_ = 0;
  uint64_t remaining_ = 0;  // items of the current job not finished by the kept threads
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // threads_[i] runs item i + 1
};

}  // namespace rocuda::backends::cpu
