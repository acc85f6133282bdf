#include "backends/cpu/thread_pool.h"

#include <algorithm>

namespace rocuda::backends::cpu {

ThreadPool::ThreadPool(unsigned workers) {
  // The submitting thread is one of the workers.
  for (unsigned i = 1; i < workers; ++i) threads_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ThreadPool::work(Job& job) {
  for (;;) {
    uint64_t first = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (first >= job.count) return;
    uint64_t last = std::min(job.count, first + job.chunk);
    for (uint64_t index = first; index < last; ++index) (*job.task)(index);
    job.finished.fetch_add(last - first, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallelFor(uint64_t count, const std::function<void(uint64_t)>& task) {
  if (count == 0) return;
  auto job = std::make_shared<Job>();
  job->count = count;
  job->task = &task;
  // About 16 chunks per worker: a shared counter touched per item costs more than a small block.
  job->chunk = std::max<uint64_t>(1, count / (16 * (threads_.size() + 1)));
  if (count > 1 && !threads_.empty()) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    wake_.notify_all();
  }
  work(*job);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return job->finished.load(std::memory_order_acquire) == count; });
  std::erase(jobs_, job);
}

void ThreadPool::workerLoop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      if (stopping_) return true;
      for (auto& job : jobs_)
        if (job->next.load(std::memory_order_relaxed) < job->count) return true;
      return false;
    });
    if (stopping_) return;
    std::shared_ptr<Job> job;
    for (auto& candidate : jobs_)
      if (candidate->next.load(std::memory_order_relaxed) < candidate->count) {
        job = candidate;
        break;
      }
    lock.unlock();
    work(*job);
    lock.lock();
    if (job->finished.load(std::memory_order_acquire) == job->count) done_.notify_all();
  }
}

}  // namespace rocuda::backends::cpu
