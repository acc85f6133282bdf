// The device runtime of the CPU device: the functions translated kernels call for special
// registers, barriers, warp collectives, shared memory, trap and printf (the contract is in
// compiler/compiler.h).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "backends/cpu/device_library_runtime.h"
#include "backends/cpu/execution.h"
#include "backends/cpu/memcheck.h"
#include "backends/cpu/warp_collectives.h"
#include "support/device_printf.h"
#include "support/log.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace rocuda::backends::cpu {
namespace {

// Generated code addresses BlockContext by these offsets (host_block_forms.cpp builds the same
// struct type).
static_assert(offsetof(compiler::BlockContext, ctaid) == 12 &&
              offsetof(compiler::BlockContext, nctaid) == 24 &&
              offsetof(compiler::BlockContext, shared) == 40 &&
              offsetof(compiler::BlockContext, frames) == 48 &&
              offsetof(compiler::BlockContext, runtime) == 56 &&
              offsetof(compiler::BlockContext, gridWorkspace) == 64 &&
              offsetof(compiler::BlockContext, warpLanes) == 72 &&
              offsetof(compiler::BlockContext, blocksLeft) == 144 &&
              sizeof(compiler::BlockContext) == 152);

ThreadState& self() { return *currentThread(); }
BlockState& block() { return *self().block; }
const GridState& grid() { return *block().grid; }

uint64_t cycleCounter() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

uint32_t laneOf(const ThreadState& thread) { return thread.linearTid % 32; }

// %envreg<n> on the slow path (block forms read BlockContext::gridWorkspace themselves).
template <int N>
uint32_t sregEnvreg() {
  auto address = reinterpret_cast<uintptr_t>(block().context.gridWorkspace);
  if constexpr (N == 1) return static_cast<uint32_t>(static_cast<uint64_t>(address) >> 32);
  if constexpr (N == 2) return static_cast<uint32_t>(address);
  return 0;
}

}  // namespace

extern "C" {
// clang-format off
static uint32_t sregTidX() { return self().tid[0]; }
static uint32_t sregTidY() { return self().tid[1]; }
static uint32_t sregTidZ() { return self().tid[2]; }
static uint32_t sregNtidX() { return grid().block[0]; }
static uint32_t sregNtidY() { return grid().block[1]; }
static uint32_t sregNtidZ() { return grid().block[2]; }
static uint32_t sregCtaidX() { return block().ctaid[0]; }
static uint32_t sregCtaidY() { return block().ctaid[1]; }
static uint32_t sregCtaidZ() { return block().ctaid[2]; }
static uint32_t sregNctaidX() { return grid().grid[0]; }
static uint32_t sregNctaidY() { return grid().grid[1]; }
static uint32_t sregNctaidZ() { return grid().grid[2]; }
static uint32_t sregLaneId() { return laneOf(self()); }
static uint32_t sregWarpId() { return self().linearTid / 32; }
static uint32_t sregNwarpId() { return 64; }
static uint32_t sregSmId() { return 0; }
static uint32_t sregNsmId() { return 1; }
static uint64_t sregGridId() { return grid().gridId; }
static uint32_t sregLanemaskEq() { return 1u << laneOf(self()); }
static uint32_t sregLanemaskLe() { return 0xffffffffu >> (31 - laneOf(self())); }
static uint32_t sregLanemaskLt() { return (1u << laneOf(self())) - 1; }
static uint32_t sregLanemaskGe() { return 0xffffffffu << laneOf(self()); }
static uint32_t sregLanemaskGt() { return laneOf(self()) == 31 ? 0 : 0xffffffffu << (laneOf(self()) + 1); }
static uint32_t sregClock() { return static_cast<uint32_t>(cycleCounter()); }
static uint64_t sregClock64() { return cycleCounter(); }
// %globaltimer: the system clock in nanoseconds. libcu++'s waits read it on every poll (their
// backoff times itself), and reading the clock was a third of a cuda::pipeline matmul's time: a
// host thread reads it again only once kGlobalTimerTicks cycles (under a microsecond, the timer's
// granularity on NVIDIA GPUs) have passed since its last read, and answers the last value before.
static uint64_t sregGlobalTimer() {
  constexpr uint64_t kGlobalTimerTicks = 1024;
  static thread_local uint64_t lastCycles = 0, lastNanoseconds = 0;
  uint64_t cycles = cycleCounter();
  if (lastNanoseconds != 0 && cycles - lastCycles < kGlobalTimerTicks) return lastNanoseconds;
  lastCycles = cycles;
  lastNanoseconds = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch()).count());
  return lastNanoseconds;
}
static uint32_t sregDynamicSmemSize() { return grid().dynamicSharedBytes; }
static uint32_t sregTotalSmemSize() { return grid().kernelSharedBytes; }
static uint32_t sregAggrSmemSize() { return grid().aggregateSharedBytes; }
static uint32_t sregIsExplicitCluster() { return grid().explicitCluster ? 1 : 0; }
// clang-format on

static void* sharedBase() { return block().shared; }

// isspacep.shared: the block's window (static and dynamic shared memory).
static int32_t isShared(const void* address) {
  auto a = reinterpret_cast<uintptr_t>(address), base = reinterpret_cast<uintptr_t>(block().shared);
  return base != 0 && a >= base && a - base < grid().sharedBytes ? 1 : 0;
}

// isspacep.local: local memory is the CUDA thread's stack (or its Continuation frame).
static int32_t isLocal(const void* address) {
  return onThreadStack(reinterpret_cast<uintptr_t>(address), 1) ? 1 : 0;
}

static void barrierSync(int32_t /*id*/, int32_t /*threads*/) {
  ThreadState& thread = self();
  if (!grid().useFibers()) {
    // The compiler said this kernel has no barrier; running on would be silently wrong.
    log::error("barrier reached in a kernel compiled without barrier support; stopping the kernel");
    block().trapped = true;
    std::longjmp(block().trapExit, 1);
  }
  thread.waiting = WaitKind::Barrier;
  Fiber::switchTo(thread.fiber, thread.block->scheduler);
}

// bar.red (__syncthreads_count / _and / _or): op 0 popc, 1 and, 2 or.
static int32_t barrierReduce(int32_t op, int32_t id, int32_t threads, int32_t predicate) {
  BlockState& b = block();
  uint32_t round = b.roundParity;
  b.reduceArrived[round] += 1;
  b.reduceTrue[round] += predicate != 0 ? 1 : 0;
  barrierSync(id, threads);
  uint32_t arrived = b.reduceArrived[round], votes = b.reduceTrue[round];
  switch (op) {
    case 0: return static_cast<int32_t>(votes);
    case 1: return votes == arrived ? 1 : 0;
    default: return votes != 0 ? 1 : 0;
  }
}

// bar.red on a named barrier or with a thread count (the translator emits arrive, the named
// barrier's wait, result): the vote joins barrier id's tally of its current phase; the result
// reads that phase's tally once the barrier has completed. op 0 popc, 1 and, 2 or.
static int32_t namedReduceArrive(int32_t id, int32_t predicate) {
  BlockState& b = *currentBlock();
  size_t slot = static_cast<uint32_t>(id) & 15;
  b.namedBarriersUsed = true;
  uint32_t phase = b.namedReducePhase[slot];
  b.namedReduceArrived[slot][phase] += 1;
  b.namedReduceTrue[slot][phase] += predicate != 0 ? 1 : 0;
  return static_cast<int32_t>(phase);
}
static int32_t namedReduceResult(int32_t op, int32_t id, int32_t phase) {
  const BlockState& b = *currentBlock();
  size_t slot = static_cast<uint32_t>(id) & 15;
  uint32_t arrived = b.namedReduceArrived[slot][phase & 1];
  uint32_t votes = b.namedReduceTrue[slot][phase & 1];
  switch (op) {
    case 0:
      return static_cast<int32_t>(votes);
    case 1:
      return votes == arrived ? 1 : 0;
    default:
      return votes != 0 ? 1 : 0;
  }
}

[[noreturn]] static void trap() {
  ThreadState& thread = self();
  BlockState& b = *thread.block;
  b.trapped = true;
  if (b.grid->useFibers()) Fiber::switchTo(thread.fiber, b.scheduler);  // never resumed
  std::longjmp(b.trapExit, 1);
}

// A warp collective: record this lane's contribution and wait until the block's scheduler has
// gathered every member lane's and computed this lane's result (block_runner.cpp).
static uint64_t warpCollective(WarpOp op, int32_t mode, uint64_t value, int32_t b, int32_t c,
                               uint32_t mask) {
  ThreadState& thread = self();
  if (!grid().useFibers()) {
    // Lanes run one after another here: no other lane's value exists to combine with.
    log::error("warp collective reached in a kernel compiled without warp collective support; "
               "stopping the kernel");
    trap();
  }
  compiler::WarpLanes& lanes = thread.block->context.warpLanes;
  uint32_t t = thread.linearTid;
  postLaneValue(lanes, t, value);
  lanes.op[t] = static_cast<int32_t>(op);
  lanes.mode[t] = mode;
  lanes.b[t] = b;
  lanes.c[t] = c;
  lanes.mask[t] = mask;
  thread.waiting = WaitKind::Warp;
  Fiber::switchTo(thread.fiber, thread.block->scheduler);
  if (op == WarpOp::Shfl) return shuffleFromSnapshots(lanes, t, thread.block->context.threadCount);
  return laneResult(lanes, t);
}

static void warpSync(int32_t mask) {
  warpCollective(WarpOp::Sync, 0, 0, 0, 0, static_cast<uint32_t>(mask));
}
static uint64_t shflSync(int32_t mode, int32_t value, int32_t b, int32_t c, int32_t mask) {
  return warpCollective(WarpOp::Shfl, mode, static_cast<uint32_t>(value), b, c,
                        static_cast<uint32_t>(mask));
}
static int32_t voteSync(int32_t mode, int32_t predicate, int32_t mask) {
  return static_cast<int32_t>(warpCollective(WarpOp::Vote, mode, predicate != 0 ? 1 : 0, 0, 0,
                                             static_cast<uint32_t>(mask)));
}
static int32_t reduxSync(int32_t op, int32_t value, int32_t mask) {
  return static_cast<int32_t>(warpCollective(WarpOp::Redux, op, static_cast<uint32_t>(value), 0,
                                             0, static_cast<uint32_t>(mask)));
}
static uint64_t matchSync(int32_t mode, uint64_t value, int32_t mask) {
  return warpCollective(WarpOp::Match, mode, value, 0, 0, static_cast<uint32_t>(mask));
}
// bar.sync / bar.arrive with a barrier id or a thread count: the block's scheduler counts the
// arrival and releases the thread when the barrier completes (at once for an arrive).
static void namedBarrier(int32_t id, int32_t threads, int32_t arrive) {
  warpCollective(WarpOp::NamedBarrier, arrive, static_cast<uint32_t>(id), threads, 0, 0);
}

// mma.sync / wmma.mma: the scheduler runs the operation's tile function over the warp's
// records once every lane has arrived; the outputs are then in this lane's record.
static void mmaSync(void* tile, void* /*lane: for AMD GPUs*/, void* record) {
  auto address = reinterpret_cast<uintptr_t>(tile);
  warpCollective(WarpOp::Mma, 0, reinterpret_cast<uintptr_t>(record),
                 static_cast<int32_t>(static_cast<uint32_t>(address)),
                 static_cast<int32_t>(static_cast<uint32_t>(uint64_t(address) >> 32)), ~0u);
}

// The call site tells activemasks apart (an inlined copy has its own).
[[gnu::noinline]] static int32_t activemask() {
  auto site = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  return static_cast<int32_t>(warpCollective(WarpOp::Active, 0, site, 0, 0, ~0u));
}

// A lockstep point (host_warp_lockstep.cpp): released with the warp's other lanes at it.
static void warpLockstep(int32_t order) {
  warpCollective(WarpOp::Lockstep, 0, static_cast<uint32_t>(order), 0, 0, ~0u);
}

// An mbarrier wait: at once when the phase has completed, else in the block's scheduler.
static int32_t mbarrierWait(const void* mbarrier, uint64_t state, int32_t parity) {
  WarpRequest wait{WarpOp::MBarrier, parity, reinterpret_cast<uintptr_t>(mbarrier),
                   static_cast<int32_t>(state), static_cast<int32_t>(state >> 32), 0};
  int32_t done = mbarrierPhaseDone(wait)
                     ? 1
                     : static_cast<int32_t>(warpCollective(WarpOp::MBarrier, wait.mode, wait.value,
                                                           wait.b, wait.c, 0));
  if (done != 0 && memcheckRaceEnabled())
    raceCheckMBarrierPassed(*currentThread()->block, mbarrier);
  return done;
}

// Block forms of kernels (compiler.h). BlockLoop and Continuation kernels name the thread
// before calls that need it; waits that carry data name it themselves.
static BlockState& blockOf(compiler::BlockContext* context) {
  return *static_cast<BlockState*>(context->runtime);
}
static ThreadState& threadOf(compiler::BlockContext* context, uint32_t linearTid) {
  return *blockOf(context).threads[linearTid];
}
static void enterThread(compiler::BlockContext* context, uint32_t linearTid) {
  currentThread() = &bindThread(blockOf(context), linearTid);
}
static void suspendBarrierReduce(compiler::BlockContext* context, uint32_t linearTid,
                                 int32_t /*op*/, int32_t /*id*/, int32_t /*threads*/,
                                 int32_t predicate) {
  ThreadState& thread = threadOf(context, linearTid);
  BlockState& b = blockOf(context);
  thread.reduceRound = b.roundParity;
  b.reduceArrived[thread.reduceRound] += 1;
  b.reduceTrue[thread.reduceRound] += predicate != 0 ? 1 : 0;
}
static int32_t resumeBarrierReduce(compiler::BlockContext* context, uint32_t linearTid,
                                   int32_t op) {
  const ThreadState& thread = threadOf(context, linearTid);
  const BlockState& b = blockOf(context);
  uint32_t arrived = b.reduceArrived[thread.reduceRound], votes = b.reduceTrue[thread.reduceRound];
  switch (op) {
    case 0: return static_cast<int32_t>(votes);
    case 1: return votes == arrived ? 1 : 0;
    default: return votes != 0 ? 1 : 0;
  }
}
// assert() in device code: report as CUDA does and mark the block; the compiled code ends the
// thread after the call (compiler: kAssertFunction), the block's other threads run on (each
// failing an assert reports it), no further block of the grid starts, and the launch fails with
// CUDA_ERROR_ASSERT.
static void assertFail(uint64_t message, uint64_t file, uint32_t line, uint64_t function,
                       uint64_t /*charSize*/) {
  ThreadState& thread = self();
  BlockState& b = *thread.block;
  auto text = [](uint64_t address) {
    return address != 0 ? reinterpret_cast<const char*>(address) : "?";
  };
  std::fprintf(stderr, device_printf::kAssertFormat, text(file), line, text(function), b.ctaid[0],
               b.ctaid[1], b.ctaid[2], thread.tid[0], thread.tid[1], thread.tid[2], text(message));
  std::fflush(stderr);
  b.asserted = true;
}
// ---- Dynamic parallelism (execution.h: DeviceLaunches) ----

// Device-side cudaGetLastError / cudaPeekAtLastError: the calling thread's last error, as CUDA
// records them (block forms name the thread before the device runtime's calls:
// needsThreadIdentity in compiler/host_block_forms.cpp).
static uint32_t& lastErrorOfThread() {
  static thread_local uint32_t outsideBlocks = 0;
  ThreadState* thread = currentThread();
  BlockState* b = currentBlock();
  if (thread == nullptr || b == nullptr || thread->block != b) return outsideBlocks;
  b->deviceErrorsTouched = true;
  return thread->deviceLastError;
}
static uint32_t recordError(uint32_t error) { return lastErrorOfThread() = error; }
static uint32_t deviceGetLastError() { return std::exchange(lastErrorOfThread(), 0u); }
static uint32_t devicePeekAtLastError() { return lastErrorOfThread(); }

// Device-side streams (cudaStreamNonBlocking only, as CUDA requires): a handle of its own each;
// their grids run in launch order with the others, one of the orders CUDA allows.
static uint32_t deviceStreamCreate(void** stream, uint32_t flags) {
  constexpr uint32_t kNonBlocking = 1;  // cudaStreamNonBlocking
  if (stream == nullptr || flags != kNonBlocking) return 1;
  static std::atomic<uintptr_t> next{0x100};
  *stream = reinterpret_cast<void*>(next.fetch_add(0x10));
  return 0;
}
static uint32_t deviceStreamDestroy(void* stream) {
  return stream == nullptr ? 400 : 0;  // cudaErrorInvalidResourceHandle
}

// Device-side events (cudaEventDisableTiming only, as CUDA requires). Grids run in one total
// order (launch order, each followed by its own, tail launches last), so a grid launched after
// cudaStreamWaitEvent already runs after everything launched before the event was recorded:
// recording and waiting have nothing left to order.
static uint32_t deviceEventCreate(void** event, uint32_t flags) {
  constexpr uint32_t kDisableTiming = 2;  // cudaEventDisableTiming
  if (event == nullptr || flags != kDisableTiming) return 1;
  static std::atomic<uintptr_t> next{0x108};
  *event = reinterpret_cast<void*>(next.fetch_add(0x10));
  return 0;
}
// cudaStreamTailLaunch and cudaStreamFireAndForget: launch-only streams, which events cannot
// record in or make wait (cudaErrorInvalidValue).
constexpr uintptr_t kTailLaunchStream = 0x3;
constexpr uintptr_t kFireAndForgetStream = 0x4;
static bool isLaunchOnlyStream(void* stream) {
  auto handle = reinterpret_cast<uintptr_t>(stream);
  return handle == kTailLaunchStream || handle == kFireAndForgetStream;
}
static uint32_t deviceEventRecord(void* event, void* stream) {
  if (isLaunchOnlyStream(stream)) return 1;
  return event == nullptr ? 400 : 0;
}
// cudaEventRecordWithFlags: cudaEventRecordDefault or cudaEventRecordExternal (0, 1).
static uint32_t deviceEventRecordWithFlags(void* event, void* stream, uint32_t flags) {
  return flags > 1 ? 1 : deviceEventRecord(event, stream);
}
static uint32_t deviceStreamWaitEvent(void* stream, void* event, uint32_t flags) {
  if (flags != 0 || isLaunchOnlyStream(stream)) return 1;
  return event == nullptr ? 400 : 0;
}
static uint32_t deviceEventDestroy(void* event) { return event == nullptr ? 400 : 0; }

// The driver queries of NVIDIA's device runtime library (device_backend.h:
// DeviceRuntimeQueries), answered for the launching module; cudaErrorInvalidValue (1) without
// one, or for a null result pointer. A kernel is named by the translator's reference to it.
static const DeviceRuntimeQueries* launchQueries() {
  BlockState* b = currentBlock();
  return b != nullptr ? b->grid->queries : nullptr;
}
static uint32_t deviceGetDevice(int* device) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || device == nullptr ? 1 : q->device(device);
}
static uint32_t deviceGetDeviceCount(int* count) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || count == nullptr ? 1 : q->deviceCount(count);
}
static uint32_t deviceGetAttribute(int* value, int32_t attribute, int32_t device) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || value == nullptr ? 1 : q->deviceAttribute(value, attribute, device);
}
static uint32_t deviceGetLimit(size_t* value, int32_t limit) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || value == nullptr ? 1 : q->limit(value, limit);
}
static uint32_t deviceGetCacheConfig(int* config) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || config == nullptr ? 1 : q->cacheConfig(config);
}
static uint32_t deviceGetSharedMemConfig(int* config) {
  const DeviceRuntimeQueries* q = launchQueries();
  return q == nullptr || config == nullptr ? 1 : q->sharedMemConfig(config);
}
static uint32_t deviceFuncGetAttribute(int* value, int32_t attribute, const char* kernel) {
  const DeviceRuntimeQueries* q = launchQueries();
  if (q == nullptr || value == nullptr || kernel == nullptr) return 1;
  return q->functionAttribute(value, attribute, kernel);
}
static uint32_t deviceMaxActiveBlocksWithFlags(int* blocks, const char* kernel, int32_t blockSize,
                                               uint64_t dynamicSharedBytes, uint32_t flags) {
  const DeviceRuntimeQueries* q = launchQueries();
  if (q == nullptr || blocks == nullptr || kernel == nullptr) return 1;
  return q->maxActiveBlocksPerMultiprocessor(blocks, kernel, blockSize, dynamicSharedBytes, flags);
}
static uint32_t deviceMaxActiveBlocks(int* blocks, const char* kernel, int32_t blockSize,
                                      uint64_t dynamicSharedBytes) {
  return deviceMaxActiveBlocksWithFlags(blocks, kernel, blockSize, dynamicSharedBytes, 0);
}
// cudaFuncGetAttributes' struct (cudaFuncAttributes, CUDA 13 layout): its fields up to
// preferredShmemCarveout, each CU_FUNC_ATTRIBUTE_* of the kernel (the first three are size_t).
static uint32_t deviceFuncGetAttributes(uint8_t* attributes, const char* kernel) {
  if (attributes == nullptr) return 1;
  struct Field {
    int attribute;
    size_t offset;
    bool wide;
  };
  constexpr Field kFields[] = {{1, 0, true},   {2, 8, true},   {3, 16, true},  {0, 24, false},
                               {4, 28, false}, {5, 32, false}, {6, 36, false}, {7, 40, false},
                               {8, 44, false}, {9, 48, false}};
  for (const Field& field : kFields) {
    int value = 0;
    if (uint32_t error = deviceFuncGetAttribute(&value, field.attribute, kernel); error != 0)
      return error;
    if (field.wide) {
      uint64_t wide = static_cast<uint64_t>(value);
      std::memcpy(attributes + field.offset, &wide, sizeof wide);
    } else {
      std::memcpy(attributes + field.offset, &value, sizeof value);
    }
  }
  return 0;
}

// A launch's parameter buffer, handed out to be filled (DeviceLaunches::filling); at least one
// byte, so that a kernel without parameters still gets a unique buffer.
static void* handOutParameterBuffer(BlockState& b, std::unique_ptr<DeviceLaunch> launch,
                                    size_t bytes) {
  launch->params.resize(std::max<size_t>(1, bytes));
  void* buffer = launch->params.data();
  if (memcheckEnabled()) AllocationMap::instance().add(buffer, launch->params.size(), false);
  DeviceLaunches& launches = *b.grid->deviceLaunches;
  std::lock_guard lock(launches.mutex);
  launches.filling.push_back(std::move(launch));
  return buffer;
}

// The handed-out launch whose buffer is `buffer` (launches.mutex held), or filling.end().
static auto handedOutLaunch(DeviceLaunches& launches, const void* buffer) {
  return std::find_if(launches.filling.begin(), launches.filling.end(),
                      [&](const auto& l) { return l->params.data() == buffer; });
}

// cudaGetParameterBufferV2 as nvcc calls it: `kernel` is the translator's reference to a kernel
// of the module (its name, see ModuleTranslator's kernel references); grid and block are dim3s.
// NULL when the kernel cannot be launched from here, which the caller's code checks.
static void* deviceParameterBuffer(const char* kernel, const uint32_t* grid, const uint32_t* block,
                                   uint32_t sharedBytes) {
  BlockState* b = currentBlock();
  if (b == nullptr || b->grid->deviceLaunches == nullptr || kernel == nullptr) return nullptr;
  LoadedKernel* child = b->grid->module->kernel(kernel);
  if (child == nullptr) return nullptr;
  auto launch = std::make_unique<DeviceLaunch>();
  launch->kernel = child;
  launch->grid = {grid[0], grid[1], grid[2]};
  launch->block = {block[0], block[1], block[2]};
  launch->sharedBytes = sharedBytes;
  return handOutParameterBuffer(*b, std::move(launch), child->info().paramBufferSize);
}

// cudaGetParameterBuffer(alignment, size), the first form of the device launch API: a buffer of
// `size` bytes for a launch whose kernel and shape cudaLaunchDevice gives (the heap's alignment,
// 16 bytes, serves every kernel parameter).
static void* deviceParameterBufferV1(uint32_t /*alignment*/, uint32_t size) {
  BlockState* b = currentBlock();
  if (b == nullptr || b->grid->deviceLaunches == nullptr) return nullptr;
  return handOutParameterBuffer(*b, std::make_unique<DeviceLaunch>(), size);
}

// cudaLaunchDeviceV2: queues the buffer's launch (the NULL stream, fire-and-forget and tail
// launches all run after the launching grid; see DeviceLaunches). 0 (cudaSuccess), or
// cudaErrorInvalidValue (1) for a buffer not handed out by deviceParameterBuffer,
// cudaErrorInvalidConfiguration (9) for impossible dimensions, cudaErrorLaunchMaxDepthExceeded
// (65) past CUDA's nesting limit (the launch is dropped, as on NVIDIA's device runtime).
static uint32_t deviceLaunch(void* buffer, void* stream) {
  BlockState* b = currentBlock();
  if (b == nullptr || b->grid->deviceLaunches == nullptr) return 1;
  DeviceLaunches& launches = *b->grid->deviceLaunches;
  std::unique_ptr<DeviceLaunch> launch;
  {
    std::lock_guard lock(launches.mutex);
    auto it = handedOutLaunch(launches, buffer);
    // (A buffer of cudaGetParameterBuffer has no kernel until cudaLaunchDevice names it.)
    if (it == launches.filling.end() || (*it)->kernel == nullptr) return 1;
    launch = std::move(*it);
    launches.filling.erase(it);
  }
  if (memcheckEnabled()) AllocationMap::instance().remove(buffer, false);
  uint64_t threads = uint64_t(launch->block[0]) * launch->block[1] * launch->block[2];
  if (threads == 0 || threads > 1024 || launch->block[2] > 64 || launch->grid[0] == 0 ||
      launch->grid[1] == 0 || launch->grid[2] == 0 || launch->grid[1] > 65535 ||
      launch->grid[2] > 65535)
    return 9;
  const compiler::KernelInfo& child = launch->kernel->info();
  // More shared memory than a block of the device may have (the host's launch refuses it too).
  constexpr int kMaxSharedMemoryPerBlockOptin = 97;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int device = 0, sharedLimit = 0;
  if (const DeviceRuntimeQueries* q = b->grid->queries;
      q != nullptr && q->device(&device) == 0 &&
      q->deviceAttribute(&sharedLimit, kMaxSharedMemoryPerBlockOptin, device) == 0 &&
      uint64_t(child.staticSharedBytes) + launch->sharedBytes > uint64_t(sharedLimit))
    return 1;
  // A buffer of cudaGetParameterBuffer may end at the last parameter, before the padding.
  if (launch->params.size() < child.paramBufferSize) launch->params.resize(child.paramBufferSize);
  if (b->grid->nesting + 1 >= kMaxLaunchNesting) return 65;
  launch->tail = reinterpret_cast<uintptr_t>(stream) == kTailLaunchStream;
  std::lock_guard lock(launches.mutex);
  launches.queued.push_back(std::move(launch));
  return 0;
}

// cudaLaunchDevice(kernel, buffer, grid, block, sharedBytes, stream): the launch of a buffer from
// cudaGetParameterBuffer, which must hold the kernel's parameters; then as cudaLaunchDeviceV2.
// `kernel` is the translator's reference to a kernel of the module, grid and block point at dim3s.
static uint32_t deviceLaunchV1(const char* kernel, void* buffer, const uint32_t* grid,
                               const uint32_t* block, uint32_t sharedBytes, void* stream) {
  BlockState* b = currentBlock();
  if (b == nullptr || b->grid->deviceLaunches == nullptr || kernel == nullptr || grid == nullptr ||
      block == nullptr)
    return 1;
  LoadedKernel* child = b->grid->module->kernel(kernel);
  if (child == nullptr) return 1;
  {
    DeviceLaunches& launches = *b->grid->deviceLaunches;
    std::lock_guard lock(launches.mutex);
    auto it = handedOutLaunch(launches, buffer);
    // The buffer must hold the parameters (KernelInfo::parametersEnd: their packed size).
    if (it == launches.filling.end() || (*it)->kernel != nullptr ||
        (*it)->params.size() < child->info().parametersEnd())
      return 1;
    DeviceLaunch& launch = **it;
    launch.kernel = child;
    launch.grid = {grid[0], grid[1], grid[2]};
    launch.block = {block[0], block[1], block[2]};
    launch.sharedBytes = sharedBytes;
  }
  return deviceLaunch(buffer, stream);
}

// The functions above answer a cudaError_t. Called as the device runtime's own functions
// (__cudaCDP2*, where the module has no libcudadevrt), a failure is also the thread's last error.
// NVIDIA's device runtime library (libcudadevrt, linked by `nvcc -rdc -lcudadevrt` or
// cuLinkAddFile) calls the driver instead (__cuda_syscall_cnpv2*, same arguments), which answers
// the driver's CNP error codes: the library maps them to cudaError_t (its cudartErrorCnpMap),
// passes the result to cnpv2SetLastError and returns what that returns.
extern "C++" {
static uint32_t cnpErrorOf(uint32_t error) {
  switch (error) {
    case 0:
      return 0;
    case 2:
      return 4;  // cudaErrorMemoryAllocation
    case 9:
      return 7;  // cudaErrorInvalidConfiguration
    case 65:
      return 5;  // cudaErrorLaunchMaxDepthExceeded
    case 69:
      return 12;  // cudaErrorLaunchPendingCountExceeded
    case 701:
      return 6;  // cudaErrorLaunchOutOfResources
    default:
      return 1;  // cudaErrorInvalidValue (the map has no invalid handle)
  }
}
template <auto F>
struct DeviceRuntimeCall;
template <class... A, uint32_t (*F)(A...)>
struct DeviceRuntimeCall<F> {
  static uint32_t direct(A... a) {
    uint32_t error = F(a...);
    return error == 0 ? 0 : recordError(error);
  }
  static uint32_t syscall(A... a) { return cnpErrorOf(F(a...)); }
};
}
static uint32_t deviceSetLastError(uint32_t error) { return recordError(error); }

// cudaGraphSetConditional(handle, value): sets a condition of the graph launch running this
// kernel. NVIDIA leaves a call outside a graph (or with another graph's handle) undefined: it is
// reported and ignored.
static void graphSetConditional(uint64_t handle, uint32_t value) {
  BlockState* b = currentBlock();
  RunningGraph* graph = b != nullptr ? b->grid->graph : nullptr;
  if (graph != nullptr && graph->setCondition(handle, value)) return;
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true))
    log::warning(std::string("cudaGraphSetConditional in kernel '") +
                 (b != nullptr ? std::string(b->grid->kernelName) : std::string("?")) +
                 (graph == nullptr ? "' launched outside a graph: ignored"
                                   : "' with a handle not of its graph: ignored"));
}

// cudaGraphLaunch from device code: "device graphs must be launched from another graph when
// launched from the device", so a kernel launched outside a graph is refused
// (cudaErrorNotPermitted); the graph launch running the kernel checks and queues the rest.
static uint32_t deviceGraphLaunch(uint64_t graphExec, uint64_t stream) {
  BlockState* b = currentBlock();
  if (b == nullptr) return 1;
  if (b->grid->graph == nullptr) {
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true))
      log::warning("cudaGraphLaunch in kernel '" + std::string(b->grid->kernelName) +
                   "', which was not launched from a graph: refused (cudaErrorNotPermitted)");
    return 800;
  }
  return b->grid->graph->launchGraph(graphExec, stream);
}

// Device-updatable graph nodes (cudaGraphKernelNodeSetParam, ...SetEnabled, ...SetGridDim and
// ...UpdatesApply): the core's updates, reached through the launch. cudaErrorInvalidValue (1)
// for an unknown node or out-of-range values.
static const DeviceNodeUpdates* nodeUpdates() {
  BlockState* b = currentBlock();
  return b != nullptr ? b->grid->nodeUpdates : nullptr;
}
static uint32_t graphNodeSetParam(uint64_t node, uint64_t offset, const void* value,
                                  uint64_t size) {
  const DeviceNodeUpdates* updates = nodeUpdates();
  return updates != nullptr ? updates->setParam(node, offset, value, size) : 1;
}
static uint32_t graphNodeSetEnabled(uint64_t node, uint32_t enable) {
  const DeviceNodeUpdates* updates = nodeUpdates();
  return updates != nullptr ? updates->setEnabled(node, enable != 0) : 1;
}
static uint32_t graphNodeSetGridDim(uint64_t node, const uint32_t* grid) {
  const DeviceNodeUpdates* updates = nodeUpdates();
  if (updates == nullptr || grid == nullptr) return 1;
  return updates->setGridDim(node, {grid[0], grid[1], grid[2]});
}
// cudaGraphKernelNodeUpdate: the node (u64), the field (u32: 1 grid, 2 parameter, 3 enabled),
// then at 16 a dim3, {pValue, offset, size} (u64 each) or the enabled flag (u32). Applied in
// order; the first failure is the answer.
static uint32_t graphNodeUpdatesApply(const uint8_t* updates, uint64_t count) {
  constexpr uint64_t kUpdateBytes = 40;
  if (count > 0 && updates == nullptr) return 1;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* update = updates + i * kUpdateBytes;
    uint64_t node = 0, words[3] = {};
    uint32_t field = 0, grid[3] = {};
    std::memcpy(&node, update, 8);
    std::memcpy(&field, update + 8, 4);
    std::memcpy(words, update + 16, sizeof words);
    std::memcpy(grid, update + 16, sizeof grid);
    uint32_t error = 1;
    if (field == 1) error = graphNodeSetGridDim(node, grid);
    if (field == 2)
      error = graphNodeSetParam(node, words[1], reinterpret_cast<const void*>(words[0]), words[2]);
    if (field == 3) error = graphNodeSetEnabled(node, grid[0]);
    if (error != 0) return error;
  }
  return 0;
}

// %current_graph_exec: the running device graph's handle, 0 outside one.
static uint64_t sregCurrentGraphExec() {
  BlockState* b = currentBlock();
  RunningGraph* graph = b != nullptr ? b->grid->graph : nullptr;
  return graph != nullptr ? graph->currentGraphExec() : 0;
}
}  // extern "C"

namespace {

// ---- Spin-waits (compiler.h: __rocuda_spin_poll, _spin_wait, _spin_wait_block) ----

// A thread reading the same address in a loop waits for another thread. When the block's
// threads run as fibers, it first lets them run (the one it waits for may be among them), and
// only when none has anything else to do does the block back off; otherwise the host thread
// spins briefly, then yields, then sleeps, ever longer while nothing changes, so that the blocks
// it waits for get the cores: a cooperative grid may hold many more blocks than cores.
constexpr uint32_t kPausePolls = 32;
constexpr uint32_t kYieldPolls = 64;        // then sleeps of 16 us << (polls - kYieldPolls)
constexpr uint32_t kLongestSleepShift = 6;  // ~1 ms
// A host thread that runs the waiting threads one after another (a warp's lanes in a
// continuation, each polling its own address, as CUB's decoupled look-back reads 32
// predecessors' tile descriptors) counts time, not polls: it spins while the wait is short (the
// awaited block runs on another core and is about to publish), yields while it is longer (the
// awaited block's host thread may be waiting for this core), then sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(4);
constexpr auto kYieldTime = std::chrono::milliseconds(2);
// Polls further apart than this belong to different waits (the thread worked in between).
constexpr auto kNewWaitTime = std::chrono::microseconds(300);
// A waiting block (execution.h: WaitingBlocks) whose wait saw nothing change for this many sleeps
// (about 2 s) is stuck; when every block still running is stuck and no other can start, none can
// release another: the grid is deadlocked.
constexpr uint32_t kStuckSleeps = 2000;
// How long a round of deadlock confirmations lasts: a stuck block polls about every millisecond.
constexpr auto kConfirmationTime = std::chrono::milliseconds(50);

// What the host thread's current wait has seen: the value each address polled in it held (a
// small direct-mapped table: a wait polls a handful of addresses; entries of earlier waits are
// told apart by the wait's number), when it last saw something change, and whose wait it is (the
// next block on this host thread, whose look-back reads the same descriptors, waits anew).
struct SpinState {
  using Clock = std::chrono::steady_clock;
  struct Seen {
    const void* address = nullptr;
    uint64_t value = 0;
    uint64_t wait = 0;
  };
  std::array<Seen, 64> seen{};
  uint64_t wait = 0;
  const GridState* grid = nullptr;
  std::array<uint32_t, 3> ctaid{};
  Clock::time_point unchangedSince{};
  Clock::time_point lastPoll{};
  uint32_t sleeps = 0;
  Seen& entryFor(const void* address) {
    return seen[(reinterpret_cast<uintptr_t>(address) >> 3) % seen.size()];
  }
};

SpinState& spinState() {
  static thread_local SpinState state;
  return state;
}

// End the calling block from inside a thread: it belongs to a grid of waiting blocks that
// cannot complete.
[[noreturn]] void abandonBlock(BlockState& b) {
  b.trapped = true;
  if (b.grid->useFibers()) {
    Fiber::switchTo(currentThread()->fiber, b.scheduler);  // never resumed
  }
  std::longjmp(b.trapExit, 1);
}

void markStuck(BlockState& b, bool stuck) {
  if (b.stuck == stuck || b.grid->waiting == nullptr) return;
  b.stuck = stuck;
  b.grid->waiting->stuck.fetch_add(stuck ? 1u : ~0u, std::memory_order_acq_rel);
}

// Called by a stuck block's wait while every running block counts as stuck: confirms the current
// round (WaitingBlocks::confirmations), starting one if there is none or it is stale (left
// unjudged when the blocks stopped being all stuck). True once a round that has run for
// kConfirmationTime has as many confirmations as blocks running; a round short of them ends, and
// the next poll starts another.
bool everyBlockConfirmsItIsStuck(BlockState& b, WaitingBlocks& grid) {
  const int64_t roundTime = std::chrono::nanoseconds(kConfirmationTime).count();
  int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  uint64_t state = grid.confirmations.load(std::memory_order_acquire);
  uint32_t round = static_cast<uint32_t>(state >> 32);
  if (round == 0 || now - grid.roundStarted.load(std::memory_order_acquire) > 2 * roundTime) {
    uint64_t fresh = static_cast<uint64_t>(grid.rounds.fetch_add(1) + 1) << 32 | 1;
    grid.roundStarted.store(now, std::memory_order_release);
    if (grid.confirmations.compare_exchange_strong(state, fresh, std::memory_order_acq_rel))
      b.confirmedRound = static_cast<uint32_t>(fresh >> 32);
    return false;
  }
  if (b.confirmedRound != round) {
    b.confirmedRound = round;
    while (state >> 32 == round &&
           !grid.confirmations.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel)) {
    }
    state = grid.confirmations.load(std::memory_order_acquire);
  }
  if (now - grid.roundStarted.load(std::memory_order_acquire) < roundTime) return false;
  if (state >> 32 == round && (state & 0xffffffffu) >= grid.running.load(std::memory_order_acquire))
    return true;
  grid.confirmations.compare_exchange_strong(state, 0, std::memory_order_acq_rel);
  return false;
}

// Whether a block of a grid of waiting blocks (cooperative, or ordered: execution.h) whose wait
// has slept `sleeps` times must give up: the grid failed, or every block still running waits as
// long and no other can start (a deadlock, logged once). Before that, a long wait lets an
// ordered grid start another block, which may be the one waited for.
bool waitingGridFailed(BlockState& b, uint32_t sleeps, std::chrono::nanoseconds waited) {
  WaitingBlocks& grid = *b.grid->waiting;
  if (grid.failed.load(std::memory_order_relaxed)) return true;
  grid.waitIsLong(waited);
  // An ordinary grid's blocks may simply be slow on a loaded machine (a look-back chain handing
  // on): they count as stuck only after ten times as long.
  if (sleeps < (b.grid->cooperative != nullptr ? kStuckSleeps : 10 * kStuckSleeps)) return false;
  markStuck(b, true);
  if (grid.stuck.load(std::memory_order_acquire) < grid.running.load(std::memory_order_acquire) ||
      grid.canGrow() || !everyBlockConfirmsItIsStuck(b, grid))
    return false;
  if (grid.failed.exchange(true, std::memory_order_relaxed)) return true;
  std::string where = "kernel '" + std::string(b.grid->kernelName) + "' deadlocked: block (" +
                      std::to_string(b.ctaid[0]) + "," + std::to_string(b.ctaid[1]) + "," +
                      std::to_string(b.ctaid[2]) + ") and every other running block";
  if (b.grid->cooperative != nullptr)
    log::error(where +
               " of its cooperative grid wait for memory that no block changes (a block "
               "left before grid.sync()?)");
  else
    log::error(where +
               " wait for memory that no block changes, and no other block can start "
               "(blocks run together up to the device's occupancy for the launch, as on a "
               "GPU; in a kernel with barriers, a thread cannot wait for a later thread "
               "of its own block)");
  return true;
}

void pauseBriefly() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// CUDA's device printf (support/device_printf.h). Like CUDA's, it returns the number of
// arguments the format reads (-1 for a null format); device memory is host memory here, so %s
// reads the string in place.
int devicePrintf(const char* format, const uint8_t* args) {
  if (format == nullptr) return -1;
  device_printf::Layout layout = device_printf::layoutOf(format);
  std::string out = device_printf::format(
      format, args, args == nullptr ? 0 : layout.bytes,
      [](uint64_t address) { return std::string(reinterpret_cast<const char*>(address)); });
  static std::mutex outputMutex;
  std::lock_guard lock(outputMutex);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return static_cast<int>(layout.arguments);
}

}  // namespace

bool backOff(BlockState* block, uint32_t polls) {
  if (polls < kPausePolls) {
    pauseBriefly();
  } else if (polls < kYieldPolls) {
    std::this_thread::yield();
  } else {
    uint32_t sleeps = polls - kYieldPolls;
    // About a millisecond a sleep once they are long (16 us << 6).
    if (block != nullptr && block->grid->waiting != nullptr &&
        waitingGridFailed(*block, sleeps, std::chrono::milliseconds(sleeps)))
      return false;
    std::this_thread::sleep_for(
        std::chrono::microseconds(16u << std::min(sleeps, kLongestSleepShift)));
  }
  return true;
}

void noteBlockProgress(BlockState& block) { markStuck(block, false); }

// `sleeps`: false for a loop that ends for another reason (__rocuda_spin_poll), which backs off
// no further than yielding: such a loop may read one unchanged value thousands of times without
// waiting for anything (NVIDIA's system_wide_atomics sample: a compare-and-swap chain that fails
// for most threads, 50 times each), and sleeps there added up to minutes.
static void pollRead(const void* address, uint64_t value, bool sleeps) {
  if (ThreadState* thread = currentThread();
      thread != nullptr && thread->block != nullptr && thread->block->grid->useFibers()) {
    // The thread it waits for may be one of its block's: they run first (the block backs off
    // once none has anything else to do; block_runner.cpp).
    if (address == thread->spinAddress && value == thread->spinValue) {
      thread->waiting = WaitKind::Spin;
      Fiber::switchTo(thread->fiber, thread->block->scheduler);
      return;
    }
    thread->spinAddress = address;
    thread->spinValue = value;
    thread->block->spinProgress = true;
    return;
  }
  SpinState& s = spinState();
  auto now = SpinState::Clock::now();
  BlockState* block = currentBlock();
  bool sameBlock = block == nullptr || (block->grid == s.grid && block->ctaid == s.ctaid);
  if (!sameBlock || now - s.lastPoll > kNewWaitTime) {
    if (s.sleeps != 0 && block != nullptr) markStuck(*block, false);
    ++s.wait;
    s.grid = block != nullptr ? block->grid : nullptr;
    s.ctaid = block != nullptr ? block->ctaid : std::array<uint32_t, 3>{};
    s.unchangedSince = now;
    s.sleeps = 0;
  }
  SpinState::Seen& entry = s.entryFor(address);
  bool known = entry.wait == s.wait && entry.address == address;
  bool changed = known && entry.value != value;
  entry = {address, value, s.wait};
  s.lastPoll = now;
  if (changed) {
    // Others make progress (arrivals at a barrier, a predecessor's partial result): go on
    // waiting, but past the spinning.
    if (s.sleeps != 0 && block != nullptr) markStuck(*block, false);
    s.unchangedSince = now - kSpinTime;
    s.sleeps = 0;
    return;
  }
  if (!known) return;  // the wait's first read of this address
  auto waited = now - s.unchangedSince;
  if (waited < kSpinTime) {
    pauseBriefly();
  } else if (waited < kYieldTime || !sleeps) {
    std::this_thread::yield();
  } else {
    if (block != nullptr && block->grid->waiting != nullptr &&
        waitingGridFailed(*block, s.sleeps, now - s.unchangedSince))
      abandonBlock(*block);
    std::this_thread::sleep_for(
        std::chrono::microseconds(16u << std::min(s.sleeps / 8, kLongestSleepShift)));
    ++s.sleeps;
  }
  s.lastPoll = SpinState::Clock::now();
}

extern "C" {
static void spinWait(const void* address, uint64_t value) { pollRead(address, value, true); }
static void loopPoll(const void* address, uint64_t value) { pollRead(address, value, false); }

// Device-side malloc and free (PTX calls them by value with 64-bit integers). Blocks come from
// the launching context's heap (DeviceMallocHeap, cudaLimitMallocHeapSize), which frees them with
// the context; past the limit malloc returns NULL, as on NVIDIA's GPUs. Under memcheck the blocks
// are allocations it checks; a freed one is remembered as freed (not owned: the quarantine
// releases device memory only) until its address is allocated again.
static uint64_t deviceMalloc(uint64_t size) {
  const GridState* grid = currentThread() ? currentThread()->block->grid : nullptr;
  // Outside a launch that counts (none here calls malloc), an unbounded heap of the process.
  static DeviceMallocHeap processHeap;
  DeviceMallocHeap* heap = grid && grid->mallocHeap ? grid->mallocHeap : &processHeap;
  uint64_t limit = grid && grid->mallocHeap ? grid->mallocHeapLimit : UINT64_MAX;
  void* memory = heap->allocate(size == 0 ? 1 : size, limit);
  if (memory == nullptr) return 0;
  if (memcheckEnabled()) AllocationMap::instance().add(memory, size, /*owned=*/false);
  return reinterpret_cast<uint64_t>(memory);
}

static void deviceFree(uint64_t pointer) {
  if (pointer == 0) return;
  void* memory = reinterpret_cast<void*>(pointer);
  if (memcheckEnabled()) (void)AllocationMap::instance().remove(memory, /*owned=*/false);
  DeviceMallocHeap::free(memory);
}

static int32_t vprintfEntry(const char* format, const uint8_t* args) {
  return devicePrintf(format, args);
}
}

int cycleCounterRateKHz() {
#if defined(__x86_64__)
  static const int rate = [] {
    using Clock = std::chrono::steady_clock;
    auto start = Clock::now();
    uint64_t first = cycleCounter();
    while (Clock::now() - start < std::chrono::milliseconds(2)) {
    }
    uint64_t cycles = cycleCounter() - first;
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    return static_cast<int>(static_cast<double>(cycles) / us * 1000.0);
  }();
  return rate;
#else
  return 1000000;  // steady_clock nanoseconds
#endif
}

std::vector<std::pair<std::string, void*>> deviceRuntimeSymbols() {
  auto fn = [](auto f) { return reinterpret_cast<void*>(f); };
  std::vector<std::pair<std::string, void*>> symbols = {
      {"__rocuda_sreg_tid_x", fn(sregTidX)},
      {"__rocuda_sreg_tid_y", fn(sregTidY)},
      {"__rocuda_sreg_tid_z", fn(sregTidZ)},
      {"__rocuda_sreg_ntid_x", fn(sregNtidX)},
      {"__rocuda_sreg_ntid_y", fn(sregNtidY)},
      {"__rocuda_sreg_ntid_z", fn(sregNtidZ)},
      {"__rocuda_sreg_ctaid_x", fn(sregCtaidX)},
      {"__rocuda_sreg_ctaid_y", fn(sregCtaidY)},
      {"__rocuda_sreg_ctaid_z", fn(sregCtaidZ)},
      {"__rocuda_sreg_nctaid_x", fn(sregNctaidX)},
      {"__rocuda_sreg_nctaid_y", fn(sregNctaidY)},
      {"__rocuda_sreg_nctaid_z", fn(sregNctaidZ)},
      {"__rocuda_sreg_laneid", fn(sregLaneId)},
      {"__rocuda_sreg_warpid", fn(sregWarpId)},
      {"__rocuda_sreg_nwarpid", fn(sregNwarpId)},
      {"__rocuda_sreg_smid", fn(sregSmId)},
      {"__rocuda_sreg_nsmid", fn(sregNsmId)},
      {"__rocuda_sreg_gridid", fn(sregGridId)},
      {"__rocuda_sreg_lanemask_eq", fn(sregLanemaskEq)},
      {"__rocuda_sreg_lanemask_le", fn(sregLanemaskLe)},
      {"__rocuda_sreg_lanemask_lt", fn(sregLanemaskLt)},
      {"__rocuda_sreg_lanemask_ge", fn(sregLanemaskGe)},
      {"__rocuda_sreg_lanemask_gt", fn(sregLanemaskGt)},
      {"__rocuda_sreg_clock", fn(sregClock)},
      {"__rocuda_sreg_clock64", fn(sregClock64)},
      {"__rocuda_sreg_globaltimer", fn(sregGlobalTimer)},
      {"__rocuda_sreg_dynamic_smem_size", fn(sregDynamicSmemSize)},
      {"__rocuda_sreg_total_smem_size", fn(sregTotalSmemSize)},
      {"__rocuda_sreg_aggr_smem_size", fn(sregAggrSmemSize)},
      {"__rocuda_sreg_is_explicit_cluster", fn(sregIsExplicitCluster)},
      {"__rocuda_shared_base", fn(sharedBase)},
      {"__rocuda_is_shared", fn(isShared)},
      {"__rocuda_is_local", fn(isLocal)},
      {"__rocuda_spin_poll", fn(loopPoll)},
      {"__rocuda_spin_wait", fn(spinWait)},
      {"__rocuda_spin_wait_block", fn(spinWait)},
      {"__rocuda_barrier_sync", fn(barrierSync)},
      {"__rocuda_barrier_reduce", fn(barrierReduce)},
      {"__rocuda_named_barrier", fn(namedBarrier)},
      {"__rocuda_named_reduce_arrive", fn(namedReduceArrive)},
      {"__rocuda_named_reduce_result", fn(namedReduceResult)},
      {"__assertfail", fn(assertFail)},
      {"__rocuda_warp_sync", fn(warpSync)},
      {"__rocuda_shfl_sync", fn(shflSync)},
      {"__rocuda_mma_sync", fn(mmaSync)},
      {"__rocuda_vote_sync", fn(voteSync)},
      {"__rocuda_redux_sync", fn(reduxSync)},
      {"__rocuda_match_sync", fn(matchSync)},
      {"__rocuda_activemask", fn(activemask)},
      {"__rocuda_warp_lockstep", fn(warpLockstep)},
      {"__rocuda_mbarrier_wait", fn(mbarrierWait)},
      {"__rocuda_trap", fn(trap)},
      {"__rocuda_enter_thread", fn(enterThread)},
      {"__rocuda_suspend_barrier_reduce", fn(suspendBarrierReduce)},
      {"__rocuda_resume_barrier_reduce", fn(resumeBarrierReduce)},
      {"vprintf", fn(vprintfEntry)},
      {"malloc", fn(deviceMalloc)},
      {"free", fn(deviceFree)},
      {"cudaGraphSetConditional", fn(graphSetConditional)},
      {"cudaGraphLaunch", fn(DeviceRuntimeCall<deviceGraphLaunch>::direct)},
      {"cudaGraphKernelNodeSetParam", fn(DeviceRuntimeCall<graphNodeSetParam>::direct)},
      {"cudaGraphKernelNodeSetEnabled", fn(DeviceRuntimeCall<graphNodeSetEnabled>::direct)},
      {"cudaGraphKernelNodeSetGridDim", fn(DeviceRuntimeCall<graphNodeSetGridDim>::direct)},
      {"cudaGraphKernelNodeUpdatesApply", fn(DeviceRuntimeCall<graphNodeUpdatesApply>::direct)},
      {"__rocuda_sreg_current_graph_exec", fn(sregCurrentGraphExec)},
      {"__cudaCDP2GetParameterBufferV2", fn(deviceParameterBuffer)},
      {"__cudaCDP2LaunchDeviceV2", fn(DeviceRuntimeCall<deviceLaunch>::direct)},
      {"__cudaCDP2GetLastError", fn(deviceGetLastError)},
      {"__cudaCDP2PeekAtLastError", fn(devicePeekAtLastError)},
      {"__cudaCDP2StreamCreateWithFlags", fn(DeviceRuntimeCall<deviceStreamCreate>::direct)},
      {"__cudaCDP2StreamDestroy", fn(DeviceRuntimeCall<deviceStreamDestroy>::direct)},
      {"__cudaCDP2EventCreateWithFlags", fn(DeviceRuntimeCall<deviceEventCreate>::direct)},
      {"__cudaCDP2EventRecord", fn(DeviceRuntimeCall<deviceEventRecord>::direct)},
      {"cudaEventRecordWithFlags", fn(DeviceRuntimeCall<deviceEventRecordWithFlags>::direct)},
      {"cudaEventRecordWithFlags_ptsz", fn(DeviceRuntimeCall<deviceEventRecordWithFlags>::direct)},
      {"__cudaCDP2StreamWaitEvent", fn(DeviceRuntimeCall<deviceStreamWaitEvent>::direct)},
      {"__cudaCDP2EventDestroy", fn(DeviceRuntimeCall<deviceEventDestroy>::direct)},
      {"__cuda_syscall_cnpv2GetParameterBufferV2", fn(deviceParameterBuffer)},
      {"__cuda_syscall_cnpv2LaunchDeviceV2", fn(DeviceRuntimeCall<deviceLaunch>::syscall)},
      {"__cuda_syscall_cnpv2GetParameterBuffer", fn(deviceParameterBufferV1)},
      {"__cuda_syscall_cnpv2LaunchDevice", fn(DeviceRuntimeCall<deviceLaunchV1>::syscall)},
      {"__cuda_syscall_cnpv2SetLastError", fn(deviceSetLastError)},
      {"__cuda_syscall_cnpv2StreamCreate", fn(DeviceRuntimeCall<deviceStreamCreate>::syscall)},
      {"__cuda_syscall_cnpv2StreamDestroy", fn(DeviceRuntimeCall<deviceStreamDestroy>::syscall)},
      {"__cuda_syscall_cnpv2EventCreate", fn(DeviceRuntimeCall<deviceEventCreate>::syscall)},
      {"__cuda_syscall_cnpv2EventRecord", fn(DeviceRuntimeCall<deviceEventRecord>::syscall)},
      {"__cuda_syscall_cnpv2StreamWaitEvent",
       fn(DeviceRuntimeCall<deviceStreamWaitEvent>::syscall)},
      {"__cuda_syscall_cnpv2EventDestroy", fn(DeviceRuntimeCall<deviceEventDestroy>::syscall)},
      // libcudadevrt's cudaGetLastError calls this, then SetLastError(0); its
      // cudaPeekAtLastError calls only this: the driver's call reads without clearing.
      {"__cuda_syscall_cnpv2GetLastError", fn(devicePeekAtLastError)},
      // Driver queries: libcudadevrt's syscalls, and the device runtime's own functions where a
      // module has no libcudadevrt.
      {"__cuda_syscall_cnpv2GetDevice", fn(DeviceRuntimeCall<deviceGetDevice>::syscall)},
      {"__cuda_syscall_cnpv2GetDeviceCount", fn(DeviceRuntimeCall<deviceGetDeviceCount>::syscall)},
      {"__cuda_syscall_cnpv2DeviceGetAttribute",
       fn(DeviceRuntimeCall<deviceGetAttribute>::syscall)},
      {"__cuda_syscall_cnpv2GetLimit", fn(DeviceRuntimeCall<deviceGetLimit>::syscall)},
      {"__cuda_syscall_cnpv2GetCacheConfig", fn(DeviceRuntimeCall<deviceGetCacheConfig>::syscall)},
      {"__cuda_syscall_cnpv2GetSharedMemConfig",
       fn(DeviceRuntimeCall<deviceGetSharedMemConfig>::syscall)},
      {"__cuda_syscall_cnpv2FuncGetAttribute",
       fn(DeviceRuntimeCall<deviceFuncGetAttribute>::syscall)},
      {"__cuda_syscall_cnpv2MaxActiveBlocksPerMultiprocessor",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocks>::syscall)},
      {"__cuda_syscall_cnpv2MaxActiveBlocksPerMultiprocessorWithFlags",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocksWithFlags>::syscall)},
      {"__cuda_syscall_cnpMaxActiveBlocksPerMultiprocessor",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocks>::syscall)},
      {"__cuda_syscall_cnpMaxActiveBlocksPerMultiprocessorWithFlags",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocksWithFlags>::syscall)},
      {"__cudaCDP2GetDevice", fn(DeviceRuntimeCall<deviceGetDevice>::direct)},
      {"__cudaCDP2GetDeviceCount", fn(DeviceRuntimeCall<deviceGetDeviceCount>::direct)},
      {"__cudaCDP2DeviceGetAttribute", fn(DeviceRuntimeCall<deviceGetAttribute>::direct)},
      {"__cudaCDP2DeviceGetLimit", fn(DeviceRuntimeCall<deviceGetLimit>::direct)},
      {"__cudaCDP2DeviceGetCacheConfig", fn(DeviceRuntimeCall<deviceGetCacheConfig>::direct)},
      {"__cudaCDP2DeviceGetSharedMemConfig",
       fn(DeviceRuntimeCall<deviceGetSharedMemConfig>::direct)},
      {"__cudaCDP2FuncGetAttributes", fn(DeviceRuntimeCall<deviceFuncGetAttributes>::direct)},
      {"__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessor",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocks>::direct)},
      {"__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
       fn(DeviceRuntimeCall<deviceMaxActiveBlocksWithFlags>::direct)},
  };
  [&]<int... N>(std::integer_sequence<int, N...>) {
    (symbols.emplace_back("__rocuda_sreg_envreg" + std::to_string(N), fn(sregEnvreg<N>)), ...);
  }(std::make_integer_sequence<int, 32>{});
  for (auto& symbol : deviceLibrarySymbols()) symbols.push_back(std::move(symbol));
  return symbols;
}

}  // namespace rocuda::backends::cpu
