#include <csetjmp>
#include <memory>

#include "backends/cpu/execution.h"
#include "support/log.h"

namespace rocuda::backends::cpu {
namespace {

// Each fiber's stack holds the CUDA thread's local memory (.local depots are allocas) and its
// call frames, so it is sized for deep recursion; pages are only committed when touched.
constexpr size_t kFiberStackBytes = 256 * 1024;

// Per worker thread, reused from block to block and launch to launch: no allocation per launch.
struct WorkerResources {
  std::vector<std::unique_ptr<ThreadState>> threads;
  std::unique_ptr<uint8_t[]> shared;
  size_t sharedCapacity = 0;
};

WorkerResources& workerResources() {
  static thread_local WorkerResources resources;
  return resources;
}

void fiberMain(void* argument) {
  auto* thread = static_cast<ThreadState*>(argument);
  const GridState& grid = *thread->block->grid;
  grid.entry(grid.params);
  thread->finished = true;
  Fiber::switchTo(thread->fiber, thread->block->scheduler);
}

std::array<uint32_t, 3> decompose(uint64_t linear, const std::array<uint32_t, 3>& extent) {
  return {static_cast<uint32_t>(linear % extent[0]),
          static_cast<uint32_t>(linear / extent[0] % extent[1]),
          static_cast<uint32_t>(linear / (uint64_t(extent[0]) * extent[1]))};
}

// Threads one after another: a kernel without barriers cannot observe the difference.
void runSequential(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                   uint32_t count) {
  // setjmp is re-armed per thread: a trap longjmps here and abandons the rest of the block.
  for (uint32_t t = 0; t < count; ++t) {
    ThreadState* thread = threads[t].get();
    currentThread() = thread;
    if (setjmp(block.trapExit) != 0) return;
    block.grid->entry(block.grid->params);
  }
}

// Every thread a fiber; each round resumes every live thread until it reaches a barrier or ends,
// so no thread passes a barrier before all live threads have arrived at it.
void runWithBarriers(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                     uint32_t count) {
  for (uint32_t t = 0; t < count; ++t) {
    if (!threads[t]->fiber.prepare(kFiberStackBytes, fiberMain, threads[t].get())) {
      log::error("cannot allocate a fiber stack for a CUDA thread");
      block.trapped = true;
      return;
    }
  }
  bool anyLive = true;
  while (anyLive && !block.trapped) {
    anyLive = false;
    for (uint32_t t = 0; t < count && !block.trapped; ++t) {
      ThreadState* thread = threads[t].get();
      if (thread->finished) continue;
      currentThread() = thread;
      Fiber::switchTo(block.scheduler, thread->fiber);
      anyLive = anyLive || !thread->finished;
    }
    // Every live thread now waits at a barrier: the next round's bar.red votes start afresh.
    block.roundParity ^= 1;
    block.reduceArrived[block.roundParity] = 0;
    block.reduceTrue[block.roundParity] = 0;
  }
}

}  // namespace

ThreadState*& currentThread() {
  static thread_local ThreadState* current = nullptr;
  return current;
}

BlockOutcome runBlock(const GridState& grid, uint64_t linearBlockIndex) {
  WorkerResources& resources = workerResources();
  if (resources.sharedCapacity < grid.sharedBytes) {
    resources.shared.reset(new uint8_t[grid.sharedBytes]);
    resources.sharedCapacity = grid.sharedBytes;
  }
  BlockState block;
  block.grid = &grid;
  block.ctaid = decompose(linearBlockIndex, grid.grid);
  block.shared = resources.shared.get();

  uint32_t count = grid.block[0] * grid.block[1] * grid.block[2];
  while (resources.threads.size() < count)
    resources.threads.push_back(std::make_unique<ThreadState>());
  for (uint32_t t = 0; t < count; ++t) {
    ThreadState& thread = *resources.threads[t];
    thread.tid = decompose(t, grid.block);
    thread.linearTid = t;
    thread.block = &block;
    thread.finished = false;
  }
  if (grid.usesBarriers)
    runWithBarriers(block, resources.threads, count);
  else
    runSequential(block, resources.threads, count);
  currentThread() = nullptr;
  if (block.asserted) return BlockOutcome::Asserted;
  return block.trapped ? BlockOutcome::Trapped : BlockOutcome::Completed;
}

}  // namespace rocuda::backends::cpu
