#include <algorithm>
#include <bit>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "backends/cpu/execution.h"
#include "backends/cpu/memcheck.h"
#include "backends/cpu/warp_collectives.h"
#include "support/log.h"

namespace rocuda::backends::cpu {
namespace {

// Each fiber's stack holds the CUDA thread's local memory (.local depots are allocas) and its
// call frames, so it is sized for deep recursion; pages are only committed when touched. A
// larger CU_LIMIT_STACK_SIZE grows it: host call frames are larger than a GPU's, so four times
// the limit, plus room for the runtime's own calls.
constexpr size_t kFiberStackBytes = 256 * 1024;

size_t fiberStackBytes(const GridState& grid) {
  uint64_t wanted = grid.stackBytesPerThread * 4 + 64 * 1024;
  return static_cast<size_t>(std::max<uint64_t>(kFiberStackBytes, (wanted + 4095) & ~4095ull));
}

// Per worker thread, reused from block to block and launch to launch: no allocation per launch.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// compiler::WarpLanes' storage: values are double-buffered so that a round's results can be
// exchanged with its posts instead of copied (completeUniformCollective).
struct WarpLaneArrays {
  std::vector<uint32_t> values[2], highs[2];  // values: with kWarpLaneArrayPadding either side
  std::vector<int32_t> op, mode, b, c;
  std::vector<uint32_t> mask;

  compiler::WarpLanes prepare(uint32_t count) {
    constexpr uint32_t pad = compiler::kWarpLaneArrayPadding;
    if (op.size() < count) {
      for (auto& v : values) v.resize(count + 2 * pad);
      for (auto* v : {&highs[0], &highs[1], &mask}) v->resize(count);
      for (auto* v : {&op, &mode, &b, &c}) v->resize(count);
    }
    return {values[0].data() + pad,
            values[1].data() + pad,
            highs[0].data(),
            highs[1].data(),
            op.data(),
            mode.data(),
            b.data(),
            c.data(),
            mask.data()};
  }
};

struct WorkerResources {
  std::vector<std::unique_ptr<ThreadState>> threads;
  std::unique_ptr<uint8_t, FreeDeleter> shared;  // the block's shared window
  size_t sharedCapacity = 0;
  std::unique_ptr<uint8_t, FreeDeleter> frames;  // Continuation kernels' per-thread frames
  size_t framesCapacity = 0;
  std::vector<uint32_t> codes;  // Continuation kernels: each thread's last step code
  std::vector<uint32_t> live;   // the per-thread scheduler's running threads
  WarpLaneArrays warpLanes;     // threads waiting in warp collectives (BlockContext)
  // The block this worker runs, kept from block to block: constructing one (its wait records,
  // its scheduler fiber) cost more than an empty kernel's block. A block run while it is in use
  // (none is, today) gets one of its own.
  BlockState block;
  bool blockInUse = false;
};

// A worker's reusable buffer of at least `bytes`, aligned to `alignment` (grown, never shrunk);
// nullptr when the allocation fails.
uint8_t* alignedBuffer(std::unique_ptr<uint8_t, FreeDeleter>& buffer, size_t& capacity,
                       size_t bytes, size_t alignment) {
  if (capacity < bytes) {
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    buffer.reset(static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded)));
    capacity = buffer ? rounded : 0;
  }
  return buffer.get();
}

// The shared window starts on a page, as on NVIDIA GPUs (where it starts at a large power of two):
// the layout honours each variable's `.align` relative to the window, so the window itself must
// be aligned at least as strictly (numba-cuda asks for 256-byte aligned shared arrays).
uint8_t* sharedWindowFor(WorkerResources& resources, size_t bytes) {
  return alignedBuffer(resources.shared, resources.sharedCapacity, bytes, 4096);
}

// Frames hold values of any alignment the compiler laid out (up to 64 bytes).
uint8_t* framesFor(WorkerResources& resources, size_t bytes) {
  return alignedBuffer(resources.frames, resources.framesCapacity, bytes, 64);
}

WorkerResources& workerResources() {
  static thread_local WorkerResources resources;
  return resources;
}

void fiberMain(void* argument) {
  auto* thread = static_cast<ThreadState*>(argument);
  const GridState& grid = *thread->block->grid;
  grid.code.threadEntry(grid.params);
  thread->finished = true;
  Fiber::switchTo(thread->fiber, thread->block->scheduler);
}

std::array<uint32_t, 3> decompose(uint64_t linear, const std::array<uint32_t, 3>& extent) {
  if (linear < extent[0]) return {static_cast<uint32_t>(linear), 0, 0};  // no division
  return {static_cast<uint32_t>(linear % extent[0]),
          static_cast<uint32_t>(linear / extent[0] % extent[1]),
          static_cast<uint32_t>(linear / (uint64_t(extent[0]) * extent[1]))};
}

// decompose's inverse.
uint64_t linearIndex(const std::array<uint32_t, 3>& index, const std::array<uint32_t, 3>& extent) {
  return index[0] + uint64_t{extent[0]} * (index[1] + uint64_t{extent[1]} * index[2]);
}

// Threads one after another: a kernel without barriers cannot observe the difference.
void runSequential(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                   uint32_t count) {
  // setjmp is re-armed per thread: a trap longjmps here and abandons the rest of the block.
  for (uint32_t t = 0; t < count; ++t) {
    ThreadState* thread = threads[t].get();
    currentThread() = thread;
    if (setjmp(block.trapExit) != 0) return;
    block.grid->code.threadEntry(block.grid->params);
  }
}

// Makes this thread's non-temporal stores (a streaming form's) visible before what it does next.
void storeFence() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_sfence();
#endif
}

// A BlockLoop kernel runs the whole block in one call; a trap longjmps out of it.
void runBlockLoop(BlockState& block) {
  currentThread() = &bindThread(block, 0);
  if (setjmp(block.trapExit) != 0) return;
  block.grid->code.blockLoop(block.grid->params, &block.context);
}

bool prepareFibers(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                   uint32_t count) {
  for (uint32_t t = 0; t < count; ++t) {
    threads[t]->waiting = WaitKind::None;
    threads[t]->countedAtNamedBarrier = false;
    if (!threads[t]->fiber.prepare(fiberStackBytes(*block.grid), fiberMain, threads[t].get())) {
      log::error("cannot allocate a fiber stack for a CUDA thread");
      block.trapped = true;
      return false;
    }
  }
  return true;
}

// Whether every member of `lane`'s collective waits in the same kind of collective with `lane`
// in its own member mask. A member that waits in another collective (a diverged branch's) or
// for other lanes has not reached this one yet: pairing them would run lanes out of step.
bool membersAgree(const WarpRequests& requests, uint32_t members, uint32_t lane) {
  for (uint32_t k = 0; k < kWarpSize; ++k) {
    if (!(members & (1u << k))) continue;
    const WarpRequest* member = requests[k];
    if (member == nullptr) return false;  // not arrived yet
    if (member->op != requests[lane]->op) return false;
    if (k != lane && !(member->mask & (1u << lane))) return false;
  }
  return true;
}

// Whether every live lane waits in the same kind of collective with the same member mask, which
// names every waiting lane.
bool uniformCollective(const WarpRequests& requests, uint32_t live, uint32_t waiting) {
  if (waiting != live) return false;
  const WarpRequest* first = requests[std::countr_zero(waiting)];
  if ((first->mask & live) != live) return false;
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    const WarpRequest* request = requests[l];
    if (request != nullptr && (request->op != first->op || request->mask != first->mask))
      return false;
    if (request != nullptr && (first->op == WarpOp::Active || first->op == WarpOp::Lockstep) &&
        request->value != first->value)
      return false;  // activemasks at different call sites, lockstep points of different order
  }
  return true;
}

// How many times in a row the lanes at a warp's first lockstep point may go on, storing nothing,
// while others wait at later points before all of them do (BlockState::lockstepHeld).
constexpr uint8_t kLockstepPatience = 8;

// A lockstep point's order among its function's points (compiler.h).
uint64_t orderOf(const WarpRequest& request) {
  return request.value & ~uint64_t{compiler::kLockstepStorePoint};
}

// Release the lanes of warp `first / 32` whose collective can complete: every live lane named in
// their member mask waits in the same collective. Results are computed before any lane resumes,
// so each sees every other lane's contribution. Returns whether a lane was released.
// Called with every live thread of the block waiting somewhere. activemask has no member mask:
// it releases its lanes only when nothing else in the warp can go on, so that lanes still on
// their way (released from another collective) reach it before it answers. A lane waiting for
// an mbarrier is released once the phase has completed, whatever the others do.
bool releaseWarp(BlockState& block, uint32_t first, uint32_t count) {
  const std::unique_ptr<ThreadState>* threads = block.threads;
  compiler::WarpLanes& lanesOf = block.context.warpLanes;
  uint32_t lanes = std::min(kWarpSize, count - first);
  uint32_t live = 0, waiting = 0, phaseDone = 0;
  std::array<WarpRequest, kWarpSize> posted;
  WarpRequests requests{};
  for (uint32_t l = 0; l < lanes; ++l) {
    const ThreadState& thread = *threads[first + l];
    if (thread.finished) continue;
    live |= 1u << l;
    if (thread.waiting != WaitKind::Warp) continue;
    posted[l] = requestOf(lanesOf, first + l);
    if (posted[l].op == WarpOp::NamedBarrier) continue;  // a block-level wait (below)
    if (posted[l].op == WarpOp::MBarrier) {  // not in a collective: to the others, elsewhere
      if (mbarrierPhaseDone(posted[l])) phaseDone |= 1u << l;
      continue;
    }
    waiting |= 1u << l;
    requests[l] = &posted[l];
  }
  for (uint32_t l = 0; l < lanes; ++l)
    if (phaseDone & (1u << l)) {
      setLaneResult(lanesOf, first + l, 1);
      threads[first + l]->waiting = WaitKind::None;
      if (memcheckRaceEnabled())
        raceCheckMBarrierPassed(block, reinterpret_cast<const void*>(posted[l].value));
    }
  if (waiting == 0) return phaseDone != 0;
  uint32_t release = 0;
  std::array<uint32_t, kWarpSize> participants{};
  // The common case, every live lane in one collective with one mask, needs no pairwise checks.
  bool uniform = uniformCollective(requests, live, waiting);
  if (uniform) {
    release = waiting;
    participants.fill(waiting);
  }
  uint32_t active = 0, lockstep = 0;  // lanes in activemask, at lockstep points
  uint64_t firstOrder = UINT64_MAX;   // the order of the first lockstep point lanes wait at
  for (uint32_t l = 0; l < lanes && !uniform; ++l) {
    if (!(waiting & (1u << l))) continue;
    if (requests[l]->op == WarpOp::Active) {
      active |= 1u << l;
      continue;
    }
    if (requests[l]->op == WarpOp::Lockstep) {
      lockstep |= 1u << l;
      firstOrder = std::min(firstOrder, orderOf(*requests[l]));
      continue;
    }
    uint32_t members = (requests[l]->mask & live) | (1u << l);
    if (!membersAgree(requests, members, l)) continue;
    release |= 1u << l;
    participants[l] = members;
  }
  // Lanes at lockstep points that cannot all go on together: those at the first point go on
  // (the lanes of a branch, while those that skipped it wait at its end).
  if (release == 0 && phaseDone == 0 && lockstep != 0) {
    uint32_t atFirst = 0;
    bool stores = false;  // the lanes at the first point store before their next one
    for (uint32_t l = 0; l < lanes; ++l)
      if ((lockstep & (1u << l)) && orderOf(*requests[l]) == firstOrder) {
        atFirst |= 1u << l;
        stores = (requests[l]->value & compiler::kLockstepStorePoint) != 0;
      }
    // Lanes that only load from one point to the next, again and again, while others wait,
    // spin on what a waiting lane will write: past a few rounds every lane goes on.
    uint8_t& held = block.lockstepHeld[first / kWarpSize];
    bool everyone = atFirst == lockstep || (!stores && ++held > kLockstepPatience);
    if (everyone || stores) held = 0;
    release = everyone ? lockstep : atFirst;
    for (uint32_t l = 0; l < lanes; ++l)
      if (release & (1u << l)) participants[l] = 1u << l;
  }
  if (release == 0 && phaseDone == 0 && active != 0) {
    release = active;
    for (uint32_t l = 0; l < lanes; ++l)
      if (active & (1u << l)) participants[l] = active;
  }
  if (release == 0) return phaseDone != 0;
  // An mma's lanes find their outputs in their records, computed for all of them at once.
  uint32_t matrixLanes = 0;
  for (uint32_t l = 0; l < lanes; ++l)
    if ((release & (1u << l)) && requests[l]->op == WarpOp::Mma) matrixLanes |= 1u << l;
  if (matrixLanes != 0) runMatrixTile(requests, matrixLanes);
  // A shfl lane gets a snapshot of its own value; resuming, it reads its source lane's.
  std::array<uint64_t, kWarpSize> results{};
  if (uniform && requests[std::countr_zero(waiting)]->op != WarpOp::Shfl)
    uniformWarpResults(requests, waiting, results);
  else if (!uniform)
    for (uint32_t l = 0; l < lanes; ++l)
      if ((release & (1u << l)) && requests[l]->op != WarpOp::Shfl)
        results[l] = warpResult(requests, participants[l], l);
  for (uint32_t l = 0; l < lanes; ++l) {
    if (!(release & (1u << l))) continue;
    setLaneResult(lanesOf, first + l,
                  requests[l]->op == WarpOp::Shfl ? requests[l]->value : results[l]);
    threads[first + l]->waiting = WaitKind::None;
  }
  return true;
}

// Threads resuming from a barrier read this round's bar.red votes; the next barrier counts
// afresh.
void completeBarrierRound(BlockState& block) {
  // The block-uniform slots as written since the last barrier become the values the next
  // regions start from (compiler.h).
  if (size_t uniform = block.grid->code.uniformFrameBytes; uniform > 0)
    std::memcpy(block.context.frames - 2 * uniform, block.context.frames - uniform, uniform);
  ++block.barrierEpoch;
  block.roundParity ^= 1;
  block.reduceArrived[block.roundParity] = 0;
  block.reduceTrue[block.roundParity] = 0;
}

// A block barrier completes when every live thread waits at one (and none in a warp collective).
bool releaseBarrier(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                    const std::vector<uint32_t>& live) {
  for (uint32_t t : live)
    if (threads[t]->waiting != WaitKind::Barrier) return false;
  if (live.empty()) return false;
  for (uint32_t t : live) threads[t]->waiting = WaitKind::None;
  completeBarrierRound(block);
  return true;
}

// Named barriers: a thread waiting at one (bar.sync id, n) or passing it (bar.arrive id, n)
// counts once towards barrier id; `n` arrivals (0: every live thread of the block) complete its
// phase and release the threads waiting there. Arriving threads go on at once. Every arrival at a
// barrier names the same thread count (as PTX requires).
bool releaseNamedBarriers(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                          const std::vector<uint32_t>& live) {
  if (block.context.warpLanes.value == nullptr) return false;
  compiler::WarpLanes& lanes = block.context.warpLanes;
  std::array<uint32_t, 16> expected{};
  bool released = false;
  for (uint32_t t : live) {
    ThreadState& thread = *threads[t];
    if (thread.waiting != WaitKind::Warp ||
        lanes.op[t] != static_cast<int32_t>(WarpOp::NamedBarrier))
      continue;
    size_t id = lanes.value[t] & 15;
    block.namedBarriersUsed = true;
    if (!thread.countedAtNamedBarrier) {
      thread.countedAtNamedBarrier = true;
      ++block.namedArrivals[id];
    }
    expected[id] =
        lanes.b[t] > 0 ? static_cast<uint32_t>(lanes.b[t]) : static_cast<uint32_t>(live.size());
    if (lanes.mode[t] != 0) {  // bar.arrive
      thread.waiting = WaitKind::None;
      thread.countedAtNamedBarrier = false;
      released = true;
    }
  }
  for (size_t id = 0; id < expected.size(); ++id) {
    if (expected[id] == 0 || block.namedArrivals[id] < expected[id]) continue;
    block.namedArrivals[id] -= expected[id];
    ++block.barrierEpoch;
    uint32_t phase = block.namedReducePhase[id] ^= 1;  // released threads read the old phase
    block.namedReduceArrived[id][phase] = 0;
    block.namedReduceTrue[id][phase] = 0;
    for (uint32_t t : live) {
      ThreadState& thread = *threads[t];
      if (thread.waiting != WaitKind::Warp || !thread.countedAtNamedBarrier ||
          lanes.op[t] != static_cast<int32_t>(WarpOp::NamedBarrier) || (lanes.value[t] & 15) != id)
        continue;
      setLaneResult(lanes, t, 0);
      thread.waiting = WaitKind::None;
      thread.countedAtNamedBarrier = false;
      released = true;
    }
  }
  return released;
}

// When nothing else in the block can run, mbarrier waits return unfinished (as try_wait may
// after a time limit, and test_wait does), so that a thread that polls can do other work; a
// block that keeps coming back to that for kMaxStalledPasses passes is deadlocked.
constexpr uint32_t kMaxStalledPasses = 256;

bool releaseUnfinishedMBarrierWaits(BlockState& block,
                                    std::vector<std::unique_ptr<ThreadState>>& threads,
                                    const std::vector<uint32_t>& live) {
  if (block.stalledPasses >= kMaxStalledPasses || block.context.warpLanes.value == nullptr)
    return false;
  compiler::WarpLanes& lanes = block.context.warpLanes;
  bool released = false;
  for (uint32_t t : live) {
    ThreadState& thread = *threads[t];
    if (thread.waiting != WaitKind::Warp || lanes.op[t] != static_cast<int32_t>(WarpOp::MBarrier))
      continue;
    setLaneResult(lanes, t, 0);
    thread.waiting = WaitKind::None;
    released = true;
  }
  if (released) ++block.stalledPasses;
  return released;
}

// Each pass resumes every runnable thread until it waits (at a block barrier or in a warp
// collective) or ends; then the waits that can complete are released. When none can and threads
// remain, the block is deadlocked: it stops with an error, never hangs. `resume(thread)` runs one
// thread on to its next wait. Passes visit only the threads still running (often a single warp
// finishing a reduction while the rest of the block has exited). `leave(live)`, asked whenever
// waits were released, returns true to end the scheduling there (the running threads are in
// `live`).
template <class Resume, class Leave>
void schedule(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads, uint32_t count,
              Resume resume, Leave leave) {
  std::vector<uint32_t>& live = workerResources().live;
  live.clear();
  for (uint32_t t = 0; t < count; ++t)
    if (!threads[t]->finished) live.push_back(t);
  uint32_t idlePasses = 0;  // passes in a row in which only spin-waiters ran and saw no change
  while (!block.trapped) {
    size_t kept = 0;
    bool progressed = false, spinning = false;
    for (uint32_t t : live) {
      ThreadState* thread = threads[t].get();
      if (thread->waiting == WaitKind::None || thread->waiting == WaitKind::Spin) {
        thread->waiting = WaitKind::None;
        currentThread() = thread;
        resume(*thread);
        if (block.trapped) return;
        (thread->waiting == WaitKind::Spin ? spinning : progressed) = true;
      }
      if (!thread->finished) live[kept++] = t;
    }
    live.resize(kept);
    if (live.empty()) return;
    bool released = false;
    uint32_t lastWarp = UINT32_MAX;
    for (uint32_t t : live)
      if (uint32_t first = t / kWarpSize * kWarpSize; first != lastWarp) {
        lastWarp = first;
        released = releaseWarp(block, first, count) || released;
      }
    released = releaseNamedBarriers(block, threads, live) || released;
    if (released || releaseBarrier(block, threads, live)) {
      block.stalledPasses = 0;
      if (leave(live)) return;
      continue;
    }
    if (spinning) {
      // Spin-waiters run again in the next pass. A pass in which nothing but their unchanged
      // reads happened means they wait for another block or the host: back off.
      if (progressed || block.spinProgress) {
        if (idlePasses != 0) noteBlockProgress(block);
        idlePasses = 0;
      } else if (!backOff(&block, ++idlePasses)) {
        block.trapped = true;
        return;
      }
      block.spinProgress = false;
      continue;
    }
    if (releaseUnfinishedMBarrierWaits(block, threads, live)) continue;
    log::error("kernel '" + std::string(block.grid->kernelName) + "' deadlocked in block (" +
               std::to_string(block.ctaid[0]) + "," + std::to_string(block.ctaid[1]) + "," +
               std::to_string(block.ctaid[2]) +
               "): threads wait at a barrier, warp collective or mbarrier that cannot complete");
    block.trapped = true;
  }
}

// Every thread a fiber (the slow path for per-thread entries that wait).
void runFibers(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
               uint32_t count) {
  if (!prepareFibers(block, threads, count)) return;
  schedule(
      block, threads, count,
      [&](ThreadState& thread) { Fiber::switchTo(block.scheduler, thread.fiber); },
      [](const std::vector<uint32_t>&) { return false; });
}

// Complete a lane's post in a warp collective with what its wait site holds (the op and the
// operands that are constants of the code, which the step does not store; compiler.h).
void postSiteOperands(compiler::WarpLanes& lanes, uint32_t t, const compiler::WarpWaitSite& site) {
  using Site = compiler::WarpWaitSite;
  lanes.op[t] = site.op;
  if ((site.constants & Site::kMode) != 0) lanes.mode[t] = site.mode;
  if ((site.constants & Site::kB) != 0) lanes.b[t] = site.b;
  if ((site.constants & Site::kC) != 0) lanes.c[t] = site.c;
  if ((site.constants & Site::kMask) != 0) lanes.mask[t] = site.mask;
}

// A step's code (compiler.h): 0 when the thread finished, else (resume point << 2) | the kind
// of wait (1 barrier, 2 bar.red, 3 warp collective), of thread `linearTid` of `block` (whose
// state may not be bound to it yet).
void applyStepCode(BlockState& block, ThreadState& thread, uint32_t linearTid, uint32_t code) {
  thread.finished = code == 0;
  thread.resumePoint = code >> 2;
  thread.countedAtNamedBarrier = false;  // at a new wait
  uint32_t kind = code & 3;
  thread.waiting = kind == 0 ? WaitKind::None : kind == 3 ? WaitKind::Warp : WaitKind::Barrier;
  const compiler::WarpWaitSite* sites = block.grid->code.warpSites;
  if (kind == 3 && sites != nullptr)
    postSiteOperands(block.context.warpLanes, linearTid, sites[thread.resumePoint - 1]);
}

// Every running thread of the block (threads [0, limit); the rest have finished) waits in the
// same warp collective, the one before resume `point`: when it is a shfl, a warp sync, an mma, a
// lockstep point or a shuffle chain, whose completion needs no check of member masks (the lanes
// at one instruction have all arrived), complete it without looking at each thread's state.
// Returns whether it did.
bool completeUniformCollective(BlockState& block, uint32_t limit, uint32_t point) {
  compiler::WarpLanes& lanes = block.context.warpLanes;
  const compiler::WarpWaitSite& site = block.grid->code.warpSites[point - 1];
  auto op = static_cast<WarpOp>(site.op);
  // The posts become the snapshots the resuming lanes read; the old snapshots take the next posts.
  if (op == WarpOp::Shfl) std::swap(lanes.value, lanes.result);
  if (op == WarpOp::ShflChain)
    for (uint32_t first = 0; first < limit; first += kWarpSize) {
      uint32_t count = std::min(kWarpSize, limit - first);
      runShuffleChain(lanes.value + first, count == kWarpSize ? ~0u : (1u << count) - 1, site.mode,
                      site.b, site.c, lanes.result + first);
    }
  if (op == WarpOp::Mma) {
    for (uint32_t first = 0; first < limit; first += kWarpSize) {
      uint32_t count = std::min(kWarpSize, limit - first);
      std::array<WarpRequest, kWarpSize> posted;
      WarpRequests requests{};
      for (uint32_t l = 0; l < count; ++l) {
        postSiteOperands(lanes, first + l, site);
        posted[l] = requestOf(lanes, first + l);
        requests[l] = &posted[l];
      }
      runMatrixTile(requests, count == kWarpSize ? ~0u : (1u << count) - 1);
    }
  }
  return op == WarpOp::Shfl || op == WarpOp::Sync || op == WarpOp::Mma || op == WarpOp::Lockstep ||
         op == WarpOp::ShflChain;
}

// Whether the `bytes` bytes at `p` are all zero, read 64 bytes a step in 16-byte vectors (the
// host compiler does not widen a loop over words at -O2: 5 instructions a word).
bool allZero(const uint8_t* p, size_t bytes) {
  using Chunk = uint64_t __attribute__((vector_size(16)));
  auto chunk = [p](size_t at) {
    Chunk c;
    std::memcpy(&c, p + at, sizeof c);
    return c;
  };
  Chunk any{};
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) any |= chunk(i) | chunk(i + 16) | chunk(i + 32) | chunk(i + 48);
  for (; i + 16 <= bytes; i += 16) any |= chunk(i);
  uint64_t rest = any[0] | any[1];
  for (; i < bytes; ++i) rest |= p[i];
  return rest == 0;
}

// Whether threads [0, limit) are a prefix [0, live) waiting at one point (codes[0]) followed by
// finished threads; all of them finished counts too (live = 0). Codes as a round stores them:
// bytes or i32 (compiler.h). Read eight bytes at a time and more: a reduction's `tid < 32` tail
// leaves 224 finished threads to check in every block, and a loop over bytes was a tenth of a
// shuffle reduction's time.
template <typename Code>
bool waitingPrefix(const Code* codes, uint32_t limit, uint32_t& live) {
  constexpr uint32_t kPerWord = sizeof(uint64_t) / sizeof(Code);
  auto word = [&](uint32_t t) {
    uint64_t w;
    std::memcpy(&w, codes + t, sizeof w);
    return w;
  };
  static_assert(sizeof(Code) == 1 || sizeof(Code) == 4);
  constexpr uint64_t kEachCode = sizeof(Code) == 1 ? 0x0101010101010101ull : 0x0000000100000001ull;
  Code first = codes[0];
  uint64_t firstRepeated = uint64_t{first} * kEachCode;
  uint32_t n = 0;
  while (n + kPerWord <= limit && word(n) == firstRepeated) n += kPerWord;
  while (n < limit && codes[n] == first) ++n;
  live = first == 0 ? 0 : n;
  return allZero(reinterpret_cast<const uint8_t*>(codes + n), size_t{limit - n} * sizeof(Code));
}

// Give threads [0, count) their identities, counting the indices up rather than dividing.
void bindThreads(BlockState& block, uint32_t count) {
  const std::array<uint32_t, 3>& extent = block.grid->block;
  std::array<uint32_t, 3> tid{0, 0, 0};
  for (uint32_t t = 0; t < count; ++t) {
    ThreadState& thread = *block.threads[t];
    thread.tid = tid;
    thread.linearTid = t;
    thread.block = &block;
    if (++tid[0] == extent[0]) {
      tid[0] = 0;
      if (++tid[1] == extent[1]) {
        tid[1] = 0;
        ++tid[2];
      }
    }
  }
}

// Whether round functions complete the waits they can themselves (compiler.h: all but memcheck
// builds', whose race check counts barriers here).
bool roundsCompleteChains() {
  static const bool chained = !memcheckEnabled();
  return chained;
}

// While every thread of the block is at the same resume point, one call of the kernel's round
// function steps them all (the common case: barriers and collectives every thread reaches); in
// a one-dimensional block also while the running threads are a prefix and the rest have
// finished (a reduction's last warp). Returns whether the block finished so; otherwise the
// threads' states are set for the per-thread scheduler.
// They start at resume `point` with threads [0, limit) (the rest have finished).
bool runUniformRounds(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                      uint32_t count, uint32_t* codes, uint32_t point, uint32_t limit) {
  const GridState& grid = *block.grid;
  bool oneDimensional = grid.block[1] * grid.block[2] == 1;
  for (;;) {
    uint32_t granted = block.context.blocksLeft;
    uint32_t common = grid.code.round(grid.params, &block.context, point, codes, limit);
    uint32_t blocksLeft = block.context.blocksLeft;
    if (blocksLeft != granted) {
      // The round function went on to later blocks: the code is the last one's, all of whose
      // threads it started (a limit from the block before no longer holds).
      limit = count;
      for (int axis = 0; axis < 3; ++axis) block.ctaid[axis] = block.context.ctaid[axis];
    }
    // A block the runtime takes part in may keep state in its records: the round function no
    // longer goes on to another block (it runs only blocks whose records stay as reset).
    if (common != 0) block.context.blocksLeft = 0;
    // The codes are there only when the threads' differ, as bytes unless the kernel has many
    // waits (compiler.h).
    bool byteCodes = common == compiler::kMixedRoundCodes;
    auto* bytes = reinterpret_cast<uint8_t*>(codes);
    bool mixed = byteCodes || common == compiler::kMixedWideRoundCodes;
    uint32_t first = !mixed ? common : byteCodes ? bytes[0] : codes[0], live = limit;
    // A prefix short of the limit only runs on in a one-dimensional block (the round's limit).
    bool prefix = mixed && (byteCodes ? waitingPrefix(bytes, limit, live)
                                      : waitingPrefix(codes, limit, live));
    bool uniform = !mixed || (prefix && (first == 0 || live == limit || oneDimensional));
    // Threads stepped one by one read their own codes: widened in place, from the last.
    if (!uniform && byteCodes)
      for (uint32_t t = oneDimensional ? limit : count; t-- > 0;) codes[t] = bytes[t];
    if (uniform && first == 0) return true;
    if (uniform) {
      limit = live;
      if ((first & 3) != 3) {  // all at one barrier: it completes
        completeBarrierRound(block);
        point = first >> 2;
        continue;
      }
      // A shuffle chain the round function completes as vectors: it starts with that.
      if (roundsCompleteChains() && grid.code.warpSites != nullptr &&
          grid.code.warpSites[(first >> 2) - 1].op == static_cast<int32_t>(WarpOp::ShflChain)) {
        point = (first >> 2) | compiler::kCompleteWaitFirst;
        block.context.blocksLeft = blocksLeft;  // which leaves nothing in the records
        continue;
      }
      if (completeUniformCollective(block, limit, first >> 2)) {
        point = first >> 2;
        continue;
      }
    }
    for (uint32_t t = 0; t < limit; ++t)
      applyStepCode(block, *threads[t], t, uniform ? first : codes[t]);
    for (uint32_t t = limit; t < count; ++t) threads[t]->finished = true;
    bool released = uniform;
    if (uniform) {  // all in one warp collective: go on together if every lane's completes
      for (uint32_t warp = 0; warp < limit; warp += kWarpSize) releaseWarp(block, warp, count);
      for (uint32_t t = 0; t < limit && released; ++t)
        released = threads[t]->waiting == WaitKind::None;
    }
    if (!released) {  // the per-thread scheduler takes over: it needs each thread's indices
      bindThreads(block, count);
      return false;
    }
    point = first >> 2;
  }
}

// Whether the threads the per-thread scheduler runs can go back to rounds: all released from
// their waits at one resume point, and the block's first threads (all of them, or a prefix of a
// one-dimensional block whose other threads have finished). CUB's kernels mix warp collectives
// of a few threads (`if (tid < RADIX_DIGITS)`) with barriers every thread reaches.
bool canRunRounds(const BlockState& block, const std::vector<std::unique_ptr<ThreadState>>& threads,
                  const std::vector<uint32_t>& live, uint32_t count, uint32_t& point) {
  if (live.empty() || (live.size() < count && block.grid->block[1] * block.grid->block[2] != 1))
    return false;
  point = threads[live[0]]->resumePoint;
  for (uint32_t i = 0; i < live.size(); ++i) {
    const ThreadState& thread = *threads[live[i]];
    if (live[i] != i || thread.resumePoint != point || thread.waiting != WaitKind::None)
      return false;
  }
  return true;
}

// The per-thread scheduler, handing the block back to rounds whenever it can.
void stepContinuations(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                       uint32_t count, uint32_t* codes) {
  const GridState& grid = *block.grid;
  for (;;) {
    uint32_t point = 0, limit = 0;
    bool rounds = false;
    schedule(
        block, threads, count,
        [&](ThreadState& thread) {
          applyStepCode(
              block, thread, thread.linearTid,
              grid.code.continuation(grid.params, &block.context, thread.linearTid, thread.tid[0],
                                     thread.tid[1], thread.tid[2], thread.resumePoint));
        },
        [&](const std::vector<uint32_t>& live) {
          rounds = canRunRounds(block, threads, live, count, point);
          limit = static_cast<uint32_t>(live.size());
          return rounds;
        });
    if (!rounds || block.trapped) return;
    if (runUniformRounds(block, threads, count, codes, point, limit)) return;
  }
}

// A Continuation kernel: threads stepped from wait to wait, state in their frames (the block's
// context holds them: prepareRange). A trap longjmps back here and abandons the block.
void runContinuations(BlockState& block, std::vector<std::unique_ptr<ThreadState>>& threads,
                      uint32_t count, WorkerResources& resources) {
  if (setjmp(block.trapExit) != 0) return;
  if (!runUniformRounds(block, threads, count, resources.codes.data(), 0, count))
    stepContinuations(block, threads, count, resources.codes.data());
}

// Give `block.context` what the block forms of its kernel receive (its ctaid, shared window and
// grid set first), field by field: a worker's block is reused, and building a whole context to
// copy it in cost a tenth of an empty block.
void setContext(BlockState& block, uint32_t threadCount) {
  const GridState& grid = *block.grid;
  compiler::BlockContext& context = block.context;
  for (int axis = 0; axis < 3; ++axis) {
    context.ntid[axis] = grid.block[axis];
    context.ctaid[axis] = block.ctaid[axis];
    context.nctaid[axis] = grid.grid[axis];
  }
  context.threadCount = threadCount;
  context.shared = block.shared;
  context.frames = nullptr;
  context.runtime = &block;
  context.gridWorkspace = grid.cooperative ? &grid.cooperative->workspace : nullptr;
  context.warpLanes = {};
  context.blocksLeft = 0;
}

// Make `block` a fresh block of `grid`: the wait records only where the kernel can wait.
void resetBlockState(BlockState& block, const GridState& grid) {
  block.grid = &grid;
  block.trapped = false;
  block.asserted = false;
  block.stuck = false;
  block.confirmedRound = 0;
  block.spinProgress = false;
  block.barrierEpoch = 0;
  block.stalledPasses = 0;
  block.flatRange = false;
  if (!grid.usesBarriers && !grid.usesWarpCollectives &&
      grid.code.execution != compiler::CpuExecution::ThreadEntry)
    return;
  block.roundParity = 0;
  block.reduceArrived[0] = block.reduceArrived[1] = 0;
  block.reduceTrue[0] = block.reduceTrue[1] = 0;
  if (block.namedBarriersUsed) {
    block.namedBarriersUsed = false;
    block.namedArrivals.fill(0);
    block.namedReducePhase.fill(0);
    block.namedReduceArrived = {};
    block.namedReduceTrue = {};
  }
  block.lockstepHeld = {};  // stores, where fill() called memset for 32 bytes
}

// The worker's thread-local records, found once per range of blocks: in a shared library each
// look-up is a call (__tls_get_addr), and five of them per block were a fifth of a block that
// only waits at a barrier. Not inlined: inlined, the host compiler recomputed the addresses
// (a call each) at every use instead of keeping them.
struct WorkerSlots {
  WorkerResources& resources;
  BlockState*& block;
  ThreadState*& thread;
};

[[gnu::noinline]] WorkerSlots workerSlots() {
  prepareFaultStack();
  return {workerResources(), currentBlock(), currentThread()};
}

// What the blocks of one range share, prepared once by prepareRange: each block starts from
// these lanes and frames.
struct RangeSetup {
  compiler::WarpLanes warpLanes{};
  uint8_t* frames = nullptr;  // Continuations: the threads' frames, past the uniform slots
};

// Size the worker's buffers for `grid` and give `block.context` the fields the grid alone sets,
// once per range of blocks rather than per block (a tenth of a reduction's block). False, logged,
// when an allocation fails.
bool prepareRange(BlockState& block, WorkerResources& resources, const GridState& grid,
                  RangeSetup& setup) {
  block.grid = &grid;
  block.shared = sharedWindowFor(resources, grid.sharedBytes);
  if (block.shared == nullptr && grid.sharedBytes > 0) {
    log::error("cannot allocate " + std::to_string(grid.sharedBytes) +
               " bytes of shared memory for a block");
    return false;
  }
  uint32_t count = grid.block[0] * grid.block[1] * grid.block[2];
  while (resources.threads.size() < count)
    resources.threads.push_back(std::make_unique<ThreadState>());
  // Block forms bind a thread's state only when the runtime needs it (bindThread), so that a
  // block costs nothing per thread outside the generated code.
  block.threads = resources.threads.data();
  if (grid.usesWarpCollectives) setup.warpLanes = resources.warpLanes.prepare(count);
  if (grid.code.execution == compiler::CpuExecution::Continuation) {
    // The block-uniform slots' two copies, then the threads' frames (compiler.h).
    size_t uniformBytes = 2 * size_t{grid.code.uniformFrameBytes};
    size_t bytes = uniformBytes + size_t{grid.code.frameBytes} * count;
    uint8_t* area = framesFor(resources, std::max<size_t>(bytes, 1));
    if (area == nullptr) {
      log::error("cannot allocate " + std::to_string(bytes) +
                 " bytes of thread frames for kernel '" + std::string(grid.kernelName) + "'");
      return false;
    }
    setup.frames = area + uniformBytes;
    if (resources.codes.size() < count) resources.codes.resize(count);
  }
  setContext(block, count);
  return true;
}

// How many blocks after one a round function that chains blocks may run before the runtime
// looks at the range's stop flag again.
constexpr uint64_t kMaxChainedBlocks = 63;

// Run block `linearBlockIndex`, and where its round function chains blocks up to `laterBlocks`
// after it; `ran` gets how many blocks ran (at least one).
BlockOutcome runBlockIn(BlockState& block, const WorkerSlots& slots, const RangeSetup& setup,
                        const GridState& grid, uint64_t linearBlockIndex, uint64_t laterBlocks,
                        uint64_t& ran) {
  WorkerResources& resources = slots.resources;
  resetBlockState(block, grid);
  block.ctaid = decompose(linearBlockIndex, grid.grid);
  compiler::BlockContext& context = block.context;
  for (int axis = 0; axis < 3; ++axis) context.ctaid[axis] = block.ctaid[axis];
  if (grid.code.chainsBlocks)
    context.blocksLeft = static_cast<uint32_t>(std::min(laterBlocks, kMaxChainedBlocks));
  context.frames = setup.frames;
  context.warpLanes = setup.warpLanes;  // the runtime swaps a shfl's arrays (completeShfl)
  uint32_t count = context.threadCount;
  if (block.deviceErrorsTouched) {  // a thread's device-side last error is its block's only
    for (auto& thread : resources.threads) thread->deviceLastError = 0;
    block.deviceErrorsTouched = false;
  }
  if (grid.code.execution == compiler::CpuExecution::ThreadEntry) {
    bindThreads(block, count);
    for (uint32_t t = 0; t < count; ++t) {
      block.threads[t]->finished = false;
      block.threads[t]->waiting = WaitKind::None;
      block.threads[t]->spinAddress = nullptr;
    }
  }
  slots.block = &block;
  switch (grid.code.execution) {
    case compiler::CpuExecution::BlockLoop: runBlockLoop(block); break;
    case compiler::CpuExecution::Continuation:
      runContinuations(block, resources.threads, count, resources);
      break;
    case compiler::CpuExecution::ThreadEntry:
      if (grid.useFibers())
        runFibers(block, resources.threads, count);
      else
        runSequential(block, resources.threads, count);
      break;
  }
  slots.thread = nullptr;
  slots.block = nullptr;
  ran = 1;
  if (grid.code.chainsBlocks) {
    // The block the round function stopped at: the last it ran.
    for (int axis = 0; axis < 3; ++axis) block.ctaid[axis] = context.ctaid[axis];
    ran = linearIndex(block.ctaid, grid.grid) - linearBlockIndex + 1;
    context.blocksLeft = 0;
  }
  if (block.stuck) grid.waiting->stuck.fetch_sub(1, std::memory_order_acq_rel);
  if (block.asserted) return BlockOutcome::Asserted;
  return block.trapped ? BlockOutcome::Trapped : BlockOutcome::Completed;
}

}  // namespace

ThreadState& bindThread(BlockState& block, uint32_t linearTid) {
  ThreadState& thread = *block.threads[linearTid];
  thread.tid = decompose(linearTid, block.grid->block);
  thread.linearTid = linearTid;
  thread.block = &block;
  return thread;
}

ThreadState*& currentThread() {
  static thread_local ThreadState* current = nullptr;
  return current;
}

BlockState*& currentBlock() {
  static thread_local BlockState* current = nullptr;
  return current;
}

// How far apart an ordered grid starts more blocks (a waiting block polls at least this often,
// backing off, and CUB's look-back waits for a running predecessor are far shorter).
constexpr auto kOrderedGrowthInterval = std::chrono::milliseconds(5);
// How long a wait must have seen nothing change before it counts as one that no running block
// will end (OrderedGrid).
constexpr auto kGrowthWait = std::chrono::milliseconds(50);
constexpr int64_t kRecentLongWaitNanoseconds = 3'000'000;

// The claimer the calling thread runs blocks for (null outside ordered grids).
thread_local void* currentClaimer = nullptr;

int64_t steadyNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

OrderedGrid::OrderedGrid(uint64_t blocks, uint32_t residentLimit, unsigned claimingThreads,
                         std::function<void(uint64_t)> runOne)
    : blocks_(blocks),
      residentLimit_(residentLimit),
      runOne_(std::move(runOne)),
      claimerCapacity_(claimingThreads + kMaxAddedThreads),
      claimers_(new Claimer[claimerCapacity_]),
      lastCompletion_(steadyNanoseconds()) {}

void OrderedGrid::finish() {
  std::vector<std::thread> added;
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
    added.swap(added_);
  }
  for (std::thread& thread : added) thread.join();
}

void OrderedGrid::claimBlocks() {
  unsigned slot = claimerCount_.fetch_add(1, std::memory_order_acq_rel);
  Claimer* me = slot < claimerCapacity_ ? &claimers_[slot] : nullptr;
  void* outer = currentClaimer;
  currentClaimer = me;
  while (!failed.load(std::memory_order_relaxed)) {
    // Counted as running before it is claimed, so that no block looks like the last one awake
    // while another is being started.
    running.fetch_add(1, std::memory_order_acq_rel);
    if (me != nullptr) {
      me->longWaitPoll.store(0, std::memory_order_relaxed);
      me->busy.store(true, std::memory_order_release);
    }
    uint64_t index = next_.fetch_add(1, std::memory_order_acq_rel);
    if (index < blocks_) {
      runOne_(index);
      lastCompletion_.store(steadyNanoseconds(), std::memory_order_relaxed);
    }
    if (me != nullptr) me->busy.store(false, std::memory_order_release);
    running.fetch_sub(1, std::memory_order_acq_rel);
    if (index >= blocks_) break;
  }
  currentClaimer = outer;
}

bool OrderedGrid::canGrow() const {
  return next_.load(std::memory_order_acquire) < blocks_ &&
         running.load(std::memory_order_acquire) < residentLimit_;
}

void OrderedGrid::waitIsLong(std::chrono::nanoseconds waited) {
  if (waited < kGrowthWait) return;
  int64_t now = steadyNanoseconds();
  if (auto* me = static_cast<Claimer*>(currentClaimer); me != nullptr)
    me->longWaitPoll.store(now, std::memory_order_relaxed);
  // Blocks still finishing (a look-back chain handing on, slowly on a loaded machine): no need.
  if (now - lastCompletion_.load(std::memory_order_relaxed) <
          std::chrono::nanoseconds(kGrowthWait).count() ||
      !canGrow())
    return;
  // Only when no running block works: each is in a long wait it polled just now.
  unsigned claimers = std::min(claimerCount_.load(std::memory_order_acquire), claimerCapacity_);
  for (unsigned i = 0; i < claimers; ++i)
    if (claimers_[i].busy.load(std::memory_order_acquire) &&
        now - claimers_[i].longWaitPoll.load(std::memory_order_relaxed) >
            kRecentLongWaitNanoseconds)
      return;
  std::lock_guard lock(mutex_);
  auto time = std::chrono::steady_clock::now();
  if (finished_ || time - lastAdded_ < kOrderedGrowthInterval ||
      added_.size() >= std::min<uint32_t>(residentLimit_, kMaxAddedThreads))
    return;
  lastAdded_ = time;
  added_.emplace_back([this] { claimBlocks(); });
}

BlockOutcome runBlock(const GridState& grid, uint64_t linearBlockIndex) {
  return runBlocks(grid, linearBlockIndex, linearBlockIndex + 1, std::atomic<bool>{false});
}

BlockOutcome runBlocks(const GridState& grid, uint64_t first, uint64_t last,
                       const std::atomic<bool>& stop) {
  WorkerSlots slots = workerSlots();
  WorkerResources& resources = slots.resources;
  // The worker's block, unless it is running one already (a block run from within a block gets
  // one of its own).
  bool nested = resources.blockInUse;
  std::optional<BlockState> own;
  if (nested) own.emplace();
  BlockState& block = nested ? *own : resources.block;
  resources.blockInUse = true;
  RangeSetup setup;
  BlockOutcome outcome = first < last && !prepareRange(block, resources, grid, setup)
                             ? BlockOutcome::Trapped
                             : BlockOutcome::Completed;
  for (uint64_t index = first, ran = 1;
       outcome == BlockOutcome::Completed && index < last && !stop.load(std::memory_order_relaxed);
       index += ran)
    outcome = runBlockIn(block, slots, setup, grid, index, last - index - 1, ran);
  // Non-temporal stores are ordered by fences only: before the worker reports its blocks done.
  if (grid.code.streamingStores) storeFence();
  resources.blockInUse = nested;
  return outcome;
}

std::optional<uint64_t> flatIterations(const GridState& grid) {
  if (grid.code.flat == nullptr || grid.cooperative != nullptr) return std::nullopt;
  BlockState block;
  block.grid = &grid;
  setContext(block, grid.block[0] * grid.block[1] * grid.block[2]);
  int64_t iterations = grid.code.flatExtent(grid.params, &block.context);
  if (iterations < 0) return std::nullopt;
  return static_cast<uint64_t>(iterations);
}

BlockOutcome runFlatThreads(const GridState& grid, uint64_t iterations, uint64_t first,
                            uint64_t last) {
  prepareFaultStack();
  WorkerResources& resources = workerResources();
  if (resources.threads.empty()) resources.threads.push_back(std::make_unique<ThreadState>());
  BlockState block;
  block.grid = &grid;
  block.flatRange = true;
  block.threads = resources.threads.data();
  setContext(block, grid.block[0] * grid.block[1] * grid.block[2]);
  currentBlock() = &block;
  currentThread() = &bindThread(block, 0);
  uint64_t threads = uint64_t{grid.block[0]} * grid.grid[0];
  if (setjmp(block.trapExit) == 0)
    for (uint64_t pass = 0; pass + first < iterations; pass += threads)
      grid.code.flat(grid.params, &block.context, static_cast<int64_t>(pass + first),
                     static_cast<int64_t>(std::min(iterations, pass + last)));
  currentThread() = nullptr;
  currentBlock() = nullptr;
  return block.trapped ? BlockOutcome::Trapped : BlockOutcome::Completed;
}

}  // namespace rocuda::backends::cpu
