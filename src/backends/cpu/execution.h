// How the CPU device runs a grid: blocks in parallel on the thread pool; within a block, in the
// form the compiler gave the kernel (compiler.h): a BlockLoop runs every thread in one call; a
// Continuation is stepped thread by thread from wait to wait, the scheduler releasing each
// barrier (the whole block) or warp collective (the lanes of the member mask) once every
// participant has arrived; a ThreadEntry (the slow path) runs threads one after another, or as
// fibers when they wait. Translated kernels reach the state below through the device runtime
// functions (device_runtime.cpp), which read the calling CUDA thread's ThreadState.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <csetjmp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/cpu/kernel_faults.h"
#include "backends/device_backend.h"
#include "compiler/compiler.h"
#include "support/fiber.h"
#include "support/result.h"

namespace rocuda::backends::cpu {

using KernelEntry = void (*)(void* params);
using BlockLoopEntry = void (*)(void* params, compiler::BlockContext* context);
using FlatEntry = void (*)(void* params, compiler::BlockContext* context, int64_t begin,
                           int64_t end);
using FlatExtentEntry = int64_t (*)(void* params, compiler::BlockContext* context);
using ContinuationEntry = uint32_t (*)(void* params, compiler::BlockContext* context,
                                       uint32_t linearTid, uint32_t tidX, uint32_t tidY,
                                       uint32_t tidZ, uint32_t resume);
using RoundEntry = uint32_t (*)(void* params, compiler::BlockContext* context, uint32_t resume,
                                uint32_t* codes, uint32_t limit);

// A kernel's host code in the form the compiler chose.
struct KernelCode {
  compiler::CpuExecution execution = compiler::CpuExecution::ThreadEntry;
  KernelEntry threadEntry = nullptr;
  BlockLoopEntry blockLoop = nullptr;
  ContinuationEntry continuation = nullptr;
  RoundEntry round = nullptr;  // Continuation: every thread from one resume point
  // Continuation: the round function runs the next blocks itself while BlockContext::blocksLeft
  // allows (KernelInfo::cpuChainsBlocks).
  bool chainsBlocks = false;
  uint32_t frameBytes = 0;  // Continuation: each thread's frame
  uint32_t uniformFrameBytes = 0;  // Continuation: one copy of the block-uniform slots
  // Continuation: its waits' ops and constant operands, by resume point - 1 (the kernel's
  // KernelInfo::cpuWarpSites, which outlives the launches); null in the lockstep form.
  const compiler::WarpWaitSite* warpSites = nullptr;
  // A BlockLoop kernel's lockstep form (KernelInfo::cpuLockstep), a Continuation: null if none.
  ContinuationEntry lockstepContinuation = nullptr;
  RoundEntry lockstepRound = nullptr;
  uint32_t lockstepFrameBytes = 0;
  uint32_t lockstepUniformFrameBytes = 0;
  // A grid-stride kernel's flat form (KernelInfo::cpuFlat): null if none.
  FlatEntry flat = nullptr;
  FlatExtentEntry flatExtent = nullptr;
  // A BlockLoop kernel's streaming form and the bytes a thread stores through it
  // (KernelInfo::cpuStreamingStoreBytes): null if none.
  BlockLoopEntry streamingBlockLoop = nullptr;
  uint32_t streamingStoreBytes = 0;
  // This launch runs the streaming form: each worker fences its stores after its blocks.
  bool streamingStores = false;
};

// The blocks of a grid that may wait for one another's memory (spin-waits): what lets them give
// up when the grid cannot complete. A block whose wait has seen nothing change for long (about
// 2 s in a cooperative grid, 20 s in an ordinary one) is stuck; when every running block is
// stuck and no other can start, none can release another.
struct WaitingBlocks {
  alignas(64) std::atomic<bool> failed{false};  // a block trapped, or deadlock: stop waiting
  std::atomic<uint32_t> running{0};             // blocks started and not finished
  std::atomic<uint32_t> stuck{0};
  // When every running block counts as stuck, a round of confirmations: each stuck block that
  // polls its wait again confirms it once (round << 32 | confirmations), and only a round that
  // every running block confirmed is a deadlock. A block marked stuck may have left its wait
  // since (what it waited for changed) and be working without polling; it does not confirm.
  std::atomic<uint64_t> confirmations{0};
  std::atomic<int64_t> roundStarted{0};  // steady_clock nanoseconds
  std::atomic<uint32_t> rounds{0};
  // Whether more of the grid's blocks can still start (and release the waiting ones).
  virtual bool canGrow() const { return false; }
  // A running block's wait has seen nothing change for `waited`: start another block if the
  // grid can (OrderedGrid).
  virtual void waitIsLong(std::chrono::nanoseconds waited) {}

 protected:
  ~WaitingBlocks() = default;
};

// A cooperative grid: every block resident at once, with its workspace (the layout cooperative
// groups expects of NVIDIA's driver, found through %envreg1/%envreg2).
struct CooperativeGrid final : WaitingBlocks {
  struct Workspace {
    uint32_t size = sizeof(Workspace);
    uint32_t barrier = 0;  // grid.sync()'s arrival counter; its top bit flips per completion
  };
  alignas(64) Workspace workspace;
};

// An ordinary grid that spin-waits. Its blocks start in order, claimed one at a time (a block may
// wait for an earlier one, as decoupled look-back does). A block may also wait for a later one (a
// flag, a hand-rolled grid barrier), which a GPU runs at the same time when the grid fits it:
// when no block has finished for 50 ms and every running block is in a wait that has seen
// nothing change as long (a chain of look-back waits keeps finishing blocks), another host thread
// starts claiming blocks, up to `residentLimit` blocks running at once (the device's occupancy
// for the launch).
class OrderedGrid final : public WaitingBlocks {
 public:
  // runOne(index) runs a block; the caller's threads (the pool's workers, at most
  // `claimingThreads`) call claimBlocks.
  OrderedGrid(uint64_t blocks, uint32_t residentLimit, unsigned claimingThreads,
              std::function<void(uint64_t)> runOne);
  ~OrderedGrid() { finish(); }
  // Runs blocks in order until none is left to claim (or the grid failed).
  void claimBlocks();
  // Waits for the threads it added; none is added after.
  void finish();
  bool canGrow() const override;
  void waitIsLong(std::chrono::nanoseconds waited) override;

 private:
  // A thread claiming blocks: whether it runs one, and when that block last polled in a long
  // wait (steady_clock nanoseconds).
  struct Claimer {
    std::atomic<bool> busy{false};
    std::atomic<int64_t> longWaitPoll{0};
  };
  static constexpr unsigned kMaxAddedThreads = 256;

  const uint64_t blocks_;
  const uint32_t residentLimit_;
  const std::function<void(uint64_t)> runOne_;
  std::atomic<uint64_t> next_{0};
  const unsigned claimerCapacity_;
  std::unique_ptr<Claimer[]> claimers_;
  std::atomic<unsigned> claimerCount_{0};
  std::atomic<int64_t> lastCompletion_{0};  // when a block last finished (steady nanoseconds)
  std::mutex mutex_;
  std::vector<std::thread> added_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point lastAdded_{};
};

// Grids that a grid's threads launch themselves (dynamic parallelism, CUDA 12's model): each
// thread fills a parameter buffer (__cudaCDP2GetParameterBufferV2) and queues it
// (__cudaCDP2LaunchDeviceV2); once the launching grid has finished the device runs them in launch
// order, each followed by the grids it launches in turn, and the tail launches
// (cudaStreamTailLaunch) last. A parent cannot wait for its children in this model (device-side
// cudaDeviceSynchronize is gone), so running them after it is one of the schedules CUDA allows.
struct DeviceLaunch {
  LoadedKernel* kernel = nullptr;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  bool tail = false;            // launched into cudaStreamTailLaunch
  std::vector<uint8_t> params;  // the parameter buffer the launching thread fills
};
// CUDA's hardware limit on nested launches: a grid of nesting 23 launches no more.
inline constexpr uint32_t kMaxLaunchNesting = 24;
struct DeviceLaunches {
  std::mutex mutex;
  std::vector<std::unique_ptr<DeviceLaunch>> filling;  // buffers handed out, not launched yet
  std::vector<std::unique_ptr<DeviceLaunch>> queued;   // in launch order
};

struct GridState {
  KernelCode code;
  LoadedModule* module = nullptr;  // the kernel's (dynamic parallelism finds kernels in it)
  DeviceLaunches* deviceLaunches = nullptr;
  uint32_t nesting = 0;  // 0: launched by the host; n: by a grid of nesting n - 1
  void* params = nullptr;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;  // whole window: static, then dynamic from dynamicSharedOffset
  uint32_t dynamicSharedBytes = 0;
  uint32_t kernelSharedBytes = 0;     // %total_smem_size: static and dynamic, not the reserved
  uint32_t aggregateSharedBytes = 0;  // %aggr_smem_size: with the driver's reserved region
  bool explicitCluster = false;       // %is_explicit_cluster
  bool usesBarriers = false;
  bool usesWarpCollectives = false;
  bool spinWaits = false;  // KernelInfo::spinWaits
  uint32_t gridId = 0;
  std::string_view kernelName;  // for diagnostics (a deadlocked block names its kernel)
  CooperativeGrid* cooperative = nullptr;  // cooperative launches only
  WaitingBlocks* waiting = nullptr;        // the cooperative or OrderedGrid state, if either
  uint32_t paramBytes = 0;      // of the parameter buffer (memcheck: reachable through pointers)
  std::atomic<bool>* illegalAddress = nullptr;  // memcheck: set by the first invalid access
  std::atomic<bool>* misalignedAddress = nullptr;  // memcheck: ... when it is a misaligned one
  KernelFault* fault = nullptr;           // the first fault of a wild access (kernel_faults.h)
  RunningGraph* graph = nullptr;  // graph launches: cudaGraphSetConditional, cudaGraphLaunch
  DeviceMallocHeap* mallocHeap = nullptr;  // LaunchConfig's: device malloc's heap
  uint64_t mallocHeapLimit = 0;
  uint64_t stackBytesPerThread = 1024;  // LaunchConfig's: CU_LIMIT_STACK_SIZE
  const DeviceRuntimeQueries* queries = nullptr;  // LaunchConfig's: device code's driver queries
  const DeviceNodeUpdates* nodeUpdates = nullptr;  // LaunchConfig's: device-updatable nodes

  // Per-thread entries run as fibers when threads may wait for one another: at barriers and
  // warp collectives, or in spin-waits (the thread waited for may be a later one of the block).
  bool useFibers() const {
    return code.execution == compiler::CpuExecution::ThreadEntry &&
           (usesBarriers || usesWarpCollectives || spinWaits);
  }
};

// Kinds of warp collective a thread can wait in (see compiler.h for the runtime contract).
// MBarrier is no collective of the warp: a thread waiting for an mbarrier's phase, which the
// same scheduler releases.
enum class WarpOp : uint8_t {
  Sync,
  Shfl,
  Vote,
  Redux,
  Match,
  Active,
  MBarrier,
  NamedBarrier,
  Mma,
  Lockstep,   // implicit warp synchronisation (host_warp_lockstep.cpp); value: the point's order
  ShflChain,  // a warp reduction by shuffles as one collective (compiler.h: shuffle chains)
};

// One lane's contribution to a warp collective (a copy of its entries in compiler::WarpLanes).
struct WarpRequest {
  WarpOp op = WarpOp::Sync;
  int32_t mode = 0;      // shfl/vote/match mode, redux op
  uint64_t value = 0;    // shfl/redux/match value, vote predicate, activemask site, mbarrier,
                         // named barrier id, mma record, lockstep point's order
  int32_t b = 0, c = 0;  // shfl operands; mma: the tile function's halves
  uint32_t mask = 0;     // PTX member mask
};

// Why a fiber gave control back to the block's scheduler. Spin: it read the same value again in
// a spin-wait; it runs again in the scheduler's next pass, after the others.
enum class WaitKind : uint8_t { None, Barrier, Warp, Spin };

struct BlockState;

struct ThreadState {
  std::array<uint32_t, 3> tid{0, 0, 0};
  uint32_t linearTid = 0;
  BlockState* block = nullptr;
  Fiber fiber;
  bool finished = false;
  WaitKind waiting = WaitKind::None;
  uint32_t resumePoint = 0;  // Continuation: where the thread goes on
  uint32_t reduceRound = 0;  // bar.red in a Continuation: the round this thread voted in
  bool countedAtNamedBarrier = false;  // waiting at a named barrier: its arrival is counted
  const void* spinAddress = nullptr;   // what its spin-wait read last (fibers only)
  uint64_t spinValue = 0;
  // Device-side cudaGetLastError's state: CUDA records the device runtime's errors per thread.
  uint32_t deviceLastError = 0;
};

// A worker keeps one from block to block: resetBlockState (block_runner.cpp) resets every field
// a block may change.
struct BlockState {
  const GridState* grid = nullptr;
  compiler::BlockContext context{};                  // what block forms of kernels receive
  const std::unique_ptr<ThreadState>* threads = nullptr;  // the block's threads, by linear id
  std::array<uint32_t, 3> ctaid{0, 0, 0};
  uint8_t* shared = nullptr;
  Fiber scheduler;        // the worker's own context while fibers run
  bool trapped = false;   // a thread executed trap (or failed an assert): the block stops
  bool asserted = false;  // the trap came from a failed device-side assert()
  bool stuck = false;     // counted in the grid's WaitingBlocks::stuck
  uint32_t confirmedRound = 0;  // the last of WaitingBlocks' deadlock rounds it confirmed
  bool spinProgress = false;  // a fiber's spin-wait read something new since the last pass
  // Some thread of the block touched its device-side last error (ThreadState::deviceLastError):
  // the worker's threads' errors are cleared before its next block.
  bool deviceErrorsTouched = false;
  // bar.red: votes of the current barrier round, double-buffered so that threads resuming from
  // one round read its result while the next round counts afresh.
  uint32_t roundParity = 0;
  uint32_t reduceArrived[2] = {0, 0};
  uint32_t reduceTrue[2] = {0, 0};
  std::jmp_buf trapExit;  // where a trap returns to when threads run without fibers
  bool flatRange = false;  // runs a range of a grid-stride loop's iterations (no block of its own)
  uint32_t barrierEpoch = 0;  // block barriers completed so far (ROCUDA_MEMCHECK=race)
  // Passes in a row in which only mbarrier waits were released unfinished (nothing else could
  // run): past a limit the block is deadlocked.
  uint32_t stalledPasses = 0;
  // Named barriers (bar.sync / bar.arrive with an id or a thread count): arrivals so far at each
  // of the 16 barriers in their current phase. `namedBarriersUsed`: the records below hold
  // something to clear before the next block (clearing them for every block of every kernel
  // cost a tenth of a barrier-free block).
  bool namedBarriersUsed = false;
  std::array<uint32_t, 16> namedArrivals{};
  // bar.red on a named barrier: each barrier's votes per phase, double-buffered like the block
  // barrier's (a completion of barrier id flips namedReducePhase[id] and clears the new phase).
  std::array<uint32_t, 16> namedReducePhase{};
  std::array<std::array<uint32_t, 2>, 16> namedReduceArrived{};
  std::array<std::array<uint32_t, 2>, 16> namedReduceTrue{};
  // Warp lockstep points (host_warp_lockstep.cpp), per warp: releases in a row of the lanes at the
  // first point while other lanes of the warp wait at later ones. Past a few, every lane goes on,
  // so that a lane spinning on what another lane of its warp will write lets that lane run (the
  // forward progress Volta's scheduler gives diverged lanes).
  std::array<uint8_t, 32> lockstepHeld{};
};

// The CUDA thread running on this OS thread (nullptr outside kernels).
ThreadState*& currentThread();

// The block running on this OS thread (nullptr outside kernels); unlike currentThread() always
// set, whatever the block form.
BlockState*& currentBlock();

// Give thread `linearTid` of `block` its identity (indices, block) for the runtime.
ThreadState& bindThread(BlockState& block, uint32_t linearTid);

enum class BlockOutcome { Completed, Trapped, Asserted };

// Run one block of `grid` with the given block index.
BlockOutcome runBlock(const GridState& grid, uint64_t linearBlockIndex);

// Run blocks [first, last) of `grid` in order on the calling thread, until one does not complete
// (its outcome is returned) or `stop` is set (the grid is failing elsewhere).
BlockOutcome runBlocks(const GridState& grid, uint64_t first, uint64_t last,
                       const std::atomic<bool>& stop);

// The iterations a launch of a grid-stride kernel runs in its flat form (KernelCode::flat), or
// nothing when that form does not apply to the launch.
std::optional<uint64_t> flatIterations(const GridState& grid);

// Run, in its flat form, the iterations of threads [first, last) of `grid`'s grid-stride loop
// (n iterations in all, flatIterations): pass by pass over the grid, the threads' consecutive
// indices, so that each thread's iterations run in order.
BlockOutcome runFlatThreads(const GridState& grid, uint64_t iterations, uint64_t first,
                            uint64_t last);

// A waiter that has nothing else to run looks at unchanged memory for the `polls`th time:
// spin, then yield the host thread, then sleep ever longer. False when the block must stop (its
// grid of waiting blocks failed or is deadlocked). noteBlockProgress: its waits saw a change.
bool backOff(BlockState* block, uint32_t polls);
void noteBlockProgress(BlockState& block);

// __rocuda_* and vprintf, for the JIT to resolve.
std::vector<std::pair<std::string, void*>> deviceRuntimeSymbols();

// The rate of %clock / %clock64 (the host's cycle counter), in kHz: the device's reported clock
// rate, so that programs that turn cycles into time with cudaDevAttrClockRate get real time.
// Measured once (about 2 ms).
int cycleCounterRateKHz();

}  // namespace rocuda::backends::cpu
