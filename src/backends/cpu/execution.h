// How the CPU device runs a grid: blocks in parallel on the thread pool; within a block, the
// threads one after another when the kernel has no barrier, or as fibers that all meet at each
// barrier when it has. Translated kernels reach the state below through the device runtime
// functions (device_runtime.cpp), which read the calling CUDA thread's ThreadState.
#pragma once

#include <array>
#include <csetjmp>
#include <cstdint>
#include <vector>

#include "support/fiber.h"
#include "support/result.h"

namespace rocuda::backends::cpu {

using KernelEntry = void (*)(void* params);

struct GridState {
  KernelEntry entry = nullptr;
  void* params = nullptr;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;         // whole window: static, then dynamic from dynamicSharedOffset
  uint32_t dynamicSharedBytes = 0;
  bool usesBarriers = false;
  uint32_t gridId = 0;
};

struct BlockState;

struct ThreadState {
  std::array<uint32_t, 3> tid{0, 0, 0};
  uint32_t linearTid = 0;
  BlockState* block = nullptr;
  Fiber fiber;
  bool finished = false;
};

struct BlockState {
  const GridState* grid = nullptr;
  std::array<uint32_t, 3> ctaid{0, 0, 0};
  uint8_t* shared = nullptr;
  Fiber scheduler;        // the worker's own context while fibers run
  bool trapped = false;   // a thread executed trap (or failed an assert): the block stops
  bool asserted = false;  // the trap came from a failed device-side assert()
  // bar.red: votes of the current barrier round, double-buffered so that threads resuming from
  // one round read its result while the next round counts afresh.
  uint32_t roundParity = 0;
  uint32_t reduceArrived[2] = {0, 0};
  uint32_t reduceTrue[2] = {0, 0};
  std::jmp_buf trapExit;  // where a trap returns to when threads run without fibers
};

// The CUDA thread running on this OS thread (nullptr outside kernels).
ThreadState*& currentThread();

enum class BlockOutcome { Completed, Trapped, Asserted };

// Run one block of `grid` with the given block index.
BlockOutcome runBlock(const GridState& grid, uint64_t linearBlockIndex);

// __rocuda_* and vprintf, for the JIT to resolve.
std::vector<std::pair<std::string, void*>> deviceRuntimeSymbols();

}  // namespace rocuda::backends::cpu
