#include "backends/cpu/thread_pool.h"

#include <algorithm>
#include <climits>
#include <string>
#include <system_error>

#include "support/spin_wait.h"

namespace rocuda::backends::cpu {

ThreadPool::ThreadPool(unsigned workers) {
  // The submitting thread is one of the workers.
  for (unsigned i = 1; i < workers; ++i) threads_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    posted_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ThreadPool::work(Job& job) {
  for (;;) {
    uint64_t first = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (first >= job.count) return;
    uint64_t last = std::min(job.count, first + job.chunk);
    job.task.call(job.task.object, first, last);
    job.finished.fetch_add(last - first, std::memory_order_acq_rel);
  }
}

bool ThreadPool::hasRoom(const Job& job) {
  return job.next.load(std::memory_order_relaxed) < job.count &&
         job.workers.load(std::memory_order_relaxed) < job.maxWorkers;
}

bool ThreadPool::join(Job& job) {
  unsigned current = job.workers.load(std::memory_order_relaxed);
  do {
    if (job.next.load(std::memory_order_relaxed) >= job.count || current >= job.maxWorkers)
      return false;
  } while (!job.workers.compare_exchange_weak(current, current + 1, std::memory_order_relaxed));
  return true;
}

void ThreadPool::run(uint64_t count, TaskRef task, unsigned workers, int priority) {
  if (count == 0) return;
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(mutex_);
    // A worker copies a job only from jobs_, under the lock: a spare held by nothing else stays
    // so until it is queued again.
    auto spare = std::find_if(spareJobs_.begin(), spareJobs_.end(),
                              [](const std::shared_ptr<Job>& j) { return j.use_count() == 1; });
    if (spare != spareJobs_.end()) {
      job = std::move(*spare);
      spareJobs_.erase(spare);
    }
  }
  if (job == nullptr) job = std::make_shared<Job>();
  job->count = count;
  job->task = task;
  job->next.store(0, std::memory_order_relaxed);
  job->finished.store(0, std::memory_order_relaxed);
  job->maxWorkers = workers == 0 ? workerCount() : std::min(workers, workerCount());
  job->priority = priority;
  job->workers.store(1, std::memory_order_relaxed);  // the submitter
  // About 16 chunks per worker: a shared counter touched per item costs more than a small block.
  job->chunk = std::max<uint64_t>(1, count / (16 * uint64_t{job->maxWorkers}));
  if (count > 1 && job->maxWorkers > 1) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    posted_.fetch_add(1, std::memory_order_release);
    if (sleepers_ > 0) wake_.notify_all();
  }
  work(*job);
  // The other workers' last items end about when ours do: poll before sleeping.
  auto finished = [&] { return job->finished.load(std::memory_order_acquire) == count; };
  support::spinUntil(finished);
  std::unique_lock lock(mutex_);
  done_.wait(lock, finished);
  std::erase(jobs_, job);
  spareJobs_.push_back(std::move(job));
}

void ThreadPool::workerLoop() {
  auto hasWork = [this] {
    if (stopping_) return true;
    return std::any_of(jobs_.begin(), jobs_.end(),
                       [](const std::shared_ptr<Job>& job) { return hasRoom(*job); });
  };
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!hasWork()) {
      // Back-to-back launches find the worker awake: it polls for the next grid a while
      // before it sleeps (a wake-up takes longer than a short kernel runs).
      uint64_t seen = posted_.load(std::memory_order_relaxed);
      lock.unlock();
      support::spinUntil([&] { return posted_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      ++sleepers_;
      wake_.wait(lock, hasWork);
      --sleepers_;
    }
    if (stopping_) return;
    // The greatest priority's job with room (the oldest of those), else any other.
    int greatest = INT_MAX;
    for (auto& candidate : jobs_)
      if (hasRoom(*candidate)) greatest = std::min(greatest, candidate->priority);
    std::shared_ptr<Job> job;
    for (int pass = 0; pass < 2 && job == nullptr; ++pass)
      for (auto& candidate : jobs_)
        if ((pass == 1 || candidate->priority == greatest) && join(*candidate)) {
          job = candidate;
          break;
        }
    // Claiming takes no lock: the submitter (or another worker) may have taken the last items
    // since the wait saw them, and the job may even be gone. Wait again.
    if (job == nullptr) continue;
    lock.unlock();
    work(*job);
    job->workers.fetch_sub(1, std::memory_order_relaxed);
    lock.lock();
    if (job->finished.load(std::memory_order_acquire) == job->count) done_.notify_all();
  }
}

CoResidentThreads::~CoResidentThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void CoResidentThreads::threadLoop(uint64_t item) {
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    if (item >= count_) continue;  // a smaller job than this thread's item: nothing to do
    const std::function<void(uint64_t)>* task = task_;
    lock.unlock();
    (*task)(item);
    lock.lock();
    if (--remaining_ == 0) done_.notify_all();
  }
}

Status CoResidentThreads::run(uint64_t count, const std::function<void(uint64_t)>& task) {
  if (count == 0) return Status::success();
  std::lock_guard job(jobMutex_);
  {
    std::lock_guard lock(mutex_);
    try {
      while (threads_.size() + 1 < count) {
        uint64_t item = threads_.size() + 1;
        threads_.emplace_back([this, item] { threadLoop(item); });
      }
    } catch (const std::system_error& error) {
      std::string what = "cannot start a host thread for each of " + std::to_string(count) +
                         " co-resident blocks: " + error.what();
      return makeError(ErrorCode::LaunchOutOfResources, what);
    }
    task_ = &task;
    count_ = count;
    remaining_ = count - 1;
    ++generation_;
  }
  wake_.notify_all();
  task(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_ == 0; });
  task_ = nullptr;
  return Status::success();
}

}  // namespace rocuda::backends::cpu
