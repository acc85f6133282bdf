// Green contexts through libcuda.so.1: SM resources, splits and descriptors with the errors
// cuda.h documents, a green context's CUcontext on the thread's stack, its streams and events,
// and its kernels held to its share of the multiprocessors (on the CPU device, pool threads).
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

// Four pool threads (before libcuda is loaded): partitions of one and two threads stay smaller
// than the device even on a two-core machine.
const bool kFourThreads = [] { return setenv("ROCUDA_CPU_THREADS", "4", 1) == 0; }();

// occupancy(u32* counters, u64 spinNs), one thread per block: counters[0] counts the blocks
// running now, counters[1] the most that ran at once; each block stays spinNs on %globaltimer.
constexpr const char* kOccupancyPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry occupancy(.param .u64 counters, .param .u64 spin)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [counters];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [spin];
  atom.global.add.u32 %r1, [%rd1], 1;
  add.u32 %r2, %r1, 1;
  atom.global.max.u32 %r3, [%rd1+4], %r2;
  mov.u64 %rd3, %globaltimer;
WAIT:
  mov.u64 %rd4, %globaltimer;
  sub.u64 %rd5, %rd4, %rd3;
  setp.lt.u64 %p1, %rd5, %rd2;
  @%p1 bra WAIT;
  atom.global.add.u32 %r4, [%rd1], -1;
  ret;
}
)";

auto getResource() {
  return CU(cuDeviceGetDevResource, CUdevice, CUdevResource*, CUdevResourceType);
}
auto split() {
  return CU(cuDevSmResourceSplitByCount, CUdevResource*, unsigned*, const CUdevResource*,
            CUdevResource*, unsigned, unsigned);
}
auto generateDesc() {
  return CU(cuDevResourceGenerateDesc, CUdevResourceDesc*, CUdevResource*, unsigned);
}
auto greenCreate() {
  return CU(cuGreenCtxCreate, CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned);
}
auto greenDestroy() { return CU(cuGreenCtxDestroy, CUgreenCtx); }
auto fromGreen() { return CU(cuCtxFromGreenCtx, CUcontext*, CUgreenCtx); }

int multiprocessors() {
  int count = 0;
  EXPECT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
            CUDA_SUCCESS);
  return count;
}

// A green context of `count` multiprocessors of device 0 (a group of a split by `count`).
CUgreenCtx makeGreen(unsigned count) {
  CUdevResource device{}, group{};
  EXPECT_EQ(getResource()(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  unsigned groups = 1;
  EXPECT_EQ(split()(&group, &groups, &device, nullptr, 0, count), CUDA_SUCCESS);
  EXPECT_EQ(groups, 1u);
  CUdevResourceDesc desc = nullptr;
  EXPECT_EQ(generateDesc()(&desc, &group, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  EXPECT_EQ(greenCreate()(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  return green;
}

// The most blocks of `occupancy` that ran at once: 12 blocks of one thread, 3 ms each, on
// `stream`.
unsigned peakOccupancy(CUstream stream) {
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kOccupancyPtx), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "occupancy"),
            CUDA_SUCCESS);
  CUdeviceptr counters = 0;
  EXPECT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&counters, 8), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(counters, 0, 2), CUDA_SUCCESS);
  unsigned long long spin = 3'000'000;
  void* args[] = {&counters, &spin};
  auto launch = reinterpret_cast<Launch>(proc<void*>("cuLaunchKernel", 12090));
  EXPECT_EQ(launch(f, 12, 1, 1, 1, 1, 1, 0, stream, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  unsigned got[2] = {99, 99};
  EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(got, counters, 8), CUDA_SUCCESS);
  EXPECT_EQ(got[0], 0u);  // every block finished
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(counters), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  return got[1];
}

void CUDA_CB_waitForGate(void* gate) {
  while (!static_cast<std::atomic<bool>*>(gate)->load()) usleep(1000);
}
void CUDA_CB_setFlag(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true); }

// The device's multiprocessors as a resource; splits, their queries and their refusals.
TEST_F(Driver, GreenContextResourcesSplitAndDescribe) {
  ASSERT_TRUE(kFourThreads);
  int count = multiprocessors();
  ASSERT_EQ(count, 4);
  CUdevResource device{};
  ASSERT_EQ(getResource()(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  EXPECT_EQ(device.type, CU_DEV_RESOURCE_TYPE_SM);
  EXPECT_EQ(device.sm.smCount, 4u);
  EXPECT_EQ(device.sm.minSmPartitionSize, 1u);
  EXPECT_EQ(device.sm.smCoscheduledAlignment, 1u);
  CUdevResource unused{};
  EXPECT_EQ(getResource()(0, nullptr, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getResource()(7, &unused, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(getResource()(0, &unused, CU_DEV_RESOURCE_TYPE_INVALID),
            CUDA_ERROR_INVALID_RESOURCE_TYPE);
  // The primary context holds the whole device.
  CUdevResource primary{};
  ASSERT_EQ(CU(cuCtxGetDevResource, CUcontext, CUdevResource*, CUdevResourceType)(
                context_, &primary, CU_DEV_RESOURCE_TYPE_SM),
            CUDA_SUCCESS);
  EXPECT_EQ(primary.sm.smCount, 4u);

  // How many groups a split would make, without making them.
  unsigned groups = 0;
  ASSERT_EQ(split()(nullptr, &groups, &device, nullptr, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(groups, 4u);
  ASSERT_EQ(split()(nullptr, &groups, &device, nullptr, 0, 3), CUDA_SUCCESS);
  EXPECT_EQ(groups, 1u);
  ASSERT_EQ(split()(nullptr, &groups, &device, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(groups, 4u);  // minCount 0: the minimum partition
  EXPECT_EQ(split()(nullptr, &groups, &device, nullptr, 0, 5), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(split()(nullptr, &groups, &device, nullptr, 0x100, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(split()(nullptr, nullptr, &device, nullptr, 0, 1), CUDA_ERROR_INVALID_VALUE);
  CUdevResource invalid{};
  EXPECT_EQ(split()(nullptr, &groups, &invalid, nullptr, 0, 1), CUDA_ERROR_INVALID_RESOURCE_TYPE);

  // Three groups of one asked for, of a split by one: three made, one left over.
  CUdevResource result[3] = {}, remaining{};
  groups = 3;
  ASSERT_EQ(split()(result, &groups, &device, &remaining, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(groups, 3u);
  for (const CUdevResource& r : result) {
    EXPECT_EQ(r.type, CU_DEV_RESOURCE_TYPE_SM);
    EXPECT_EQ(r.sm.smCount, 1u);
  }
  EXPECT_EQ(remaining.sm.smCount, 1u);
  // More groups than fit: as many as fit (two of two), nothing left over.
  CUdevResource pairs[3] = {}, none{};
  groups = 3;
  ASSERT_EQ(
      split()(pairs, &groups, &device, &none, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 2),
      CUDA_SUCCESS);
  EXPECT_EQ(groups, 2u);
  EXPECT_EQ(pairs[0].sm.smCount, 2u);
  EXPECT_EQ(none.sm.smCount, 0u);
  // A split's group is split again only once a green context holds it.
  EXPECT_EQ(split()(nullptr, &groups, &result[0], nullptr, 0, 1),
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);

  // Descriptors: the groups of one split together, the remainder with them; not groups of two
  // splits, a group twice, another type, or nothing at all.
  auto desc = generateDesc();
  CUdevResourceDesc d = nullptr;
  CUdevResource twoAndRest[3] = {result[0], result[1], remaining};
  EXPECT_EQ(desc(&d, twoAndRest, 3), CUDA_SUCCESS);
  EXPECT_NE(d, nullptr);
  EXPECT_EQ(desc(&d, &device, 1), CUDA_SUCCESS);  // the whole device
  CUdevResource mixed[2] = {result[0], pairs[0]};
  EXPECT_EQ(desc(&d, mixed, 2), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  CUdevResource twice[2] = {result[1], result[1]};
  EXPECT_EQ(desc(&d, twice, 2), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  CUdevResource withDevice[2] = {result[1], device};
  EXPECT_EQ(desc(&d, withDevice, 2), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  EXPECT_EQ(desc(&d, &none, 1), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);  // no multiprocessor
  EXPECT_EQ(desc(&d, &invalid, 1), CUDA_ERROR_INVALID_RESOURCE_TYPE);
  EXPECT_EQ(desc(&d, result, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(desc(nullptr, result, 1), CUDA_ERROR_INVALID_VALUE);
  // Resource bytes this driver did not make.
  CUdevResource forged{};
  forged.type = CU_DEV_RESOURCE_TYPE_SM;
  forged.sm.smCount = 2;
  EXPECT_EQ(desc(&d, &forged, 1), CUDA_ERROR_INVALID_VALUE);
}

// A green context: its creation's refusals, its CUcontext on the thread's stack, its resources
// and id, and what is shared with the primary context.
TEST_F(Driver, GreenContextIsCurrentThroughItsContextHandle) {
  CUdevResource device{}, group{};
  ASSERT_EQ(getResource()(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  unsigned groups = 1;
  ASSERT_EQ(split()(&group, &groups, &device, nullptr, 0, 2), CUDA_SUCCESS);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(generateDesc()(&desc, &group, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  EXPECT_EQ(greenCreate()(&green, desc, 0, 0), CUDA_ERROR_INVALID_VALUE);  // the flag is required
  EXPECT_EQ(greenCreate()(nullptr, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(greenCreate()(&green, reinterpret_cast<CUdevResourceDesc>(&group), 0,
                          CU_GREEN_CTX_DEFAULT_STREAM),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(greenCreate()(&green, desc, 9, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(greenCreate()(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);

  CUdevResource held{};
  auto greenResource = CU(cuGreenCtxGetDevResource, CUgreenCtx, CUdevResource*, CUdevResourceType);
  ASSERT_EQ(greenResource(green, &held, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  EXPECT_EQ(held.sm.smCount, 2u);
  EXPECT_EQ(greenResource(green, &held, CU_DEV_RESOURCE_TYPE_INVALID),
            CUDA_ERROR_INVALID_RESOURCE_TYPE);
  // What a green context holds can be split further.
  unsigned halves = 0;
  EXPECT_EQ(split()(nullptr, &halves, &held, nullptr, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(halves, 2u);

  auto greenId = CU(cuGreenCtxGetId, CUgreenCtx, unsigned long long*);
  auto ctxId = CU(cuCtxGetId, CUcontext, unsigned long long*);
  unsigned long long id = 0, primaryId = 0, viewId = 0, currentId = 0;
  ASSERT_EQ(greenId(green, &id), CUDA_SUCCESS);
  ASSERT_EQ(ctxId(context_, &primaryId), CUDA_SUCCESS);
  EXPECT_NE(id, primaryId);
  EXPECT_EQ(greenId(nullptr, &currentId), CUDA_ERROR_INVALID_CONTEXT);  // no green one current
  EXPECT_EQ(greenId(green, nullptr), CUDA_ERROR_INVALID_VALUE);

  // Its CUcontext is not the green handle, nor the primary context's.
  CUcontext view = nullptr;
  EXPECT_EQ(fromGreen()(nullptr, green), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fromGreen()(&view, reinterpret_cast<CUgreenCtx>(context_)), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(fromGreen()(&view, green), CUDA_SUCCESS);
  EXPECT_NE(view, context_);
  EXPECT_NE(reinterpret_cast<void*>(view), reinterpret_cast<void*>(green));
  // A green handle where a CUcontext is expected is refused.
  EXPECT_EQ(CU(cuCtxSetCurrent, CUcontext)(reinterpret_cast<CUcontext>(green)),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(view), CUDA_ERROR_INVALID_CONTEXT);

  ASSERT_EQ(CU(cuCtxPushCurrent, CUcontext)(view), CUDA_SUCCESS);
  CUcontext current = nullptr;
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, view);
  ASSERT_EQ(greenId(nullptr, &currentId), CUDA_SUCCESS);
  EXPECT_EQ(currentId, id);
  ASSERT_EQ(ctxId(nullptr, &viewId), CUDA_SUCCESS);
  EXPECT_EQ(viewId, id);
  CUdevice ordinal = -1;
  EXPECT_EQ(CU(cuCtxGetDevice, CUdevice*)(&ordinal), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  CUdevResource viewResource{};
  ASSERT_EQ(CU(cuCtxGetDevResource, CUcontext, CUdevResource*, CUdevResourceType)(
                view, &viewResource, CU_DEV_RESOURCE_TYPE_SM),
            CUDA_SUCCESS);
  EXPECT_EQ(viewResource.sm.smCount, 2u);

  // Memory and modules are the primary context's: made here, used there.
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 64 * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 7, 64), CUDA_SUCCESS);
  CUfunction addOne = loadAddOne();
  unsigned n = 64;
  void* args[] = {&data, &n};
  auto launch = reinterpret_cast<Launch>(proc<void*>("cuLaunchKernel", 12090));
  ASSERT_EQ(launch(addOne, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  // The NULL stream is the green context's default stream.
  CUgreenCtx ofStream = nullptr;
  auto streamGreen = CU(cuStreamGetGreenCtx, CUstream, CUgreenCtx*);
  ASSERT_EQ(streamGreen(nullptr, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ofStream, green);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(CU(cuCtxPopCurrent, CUcontext*)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, view);
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, context_);
  ASSERT_EQ(streamGreen(nullptr, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ofStream, nullptr);  // the primary context's legacy stream
  unsigned host[64] = {};
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host, data, sizeof host), CUDA_SUCCESS);
  for (unsigned v : host) ASSERT_EQ(v, 8u);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);

  ASSERT_EQ(greenDestroy()(green), CUDA_SUCCESS);
  EXPECT_EQ(greenDestroy()(green), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(greenId(green, &id), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(fromGreen()(&view, green), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(CU(cuCtxSetCurrent, CUcontext)(view), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(greenDestroy()(reinterpret_cast<CUgreenCtx>(&held)), CUDA_ERROR_INVALID_CONTEXT);
}

// Streams of a green context: made by cuGreenCtxStreamCreate or with its CUcontext current, they
// name it; the per-thread stream does not exist there; destroyed with it, they answer
// CONTEXT_IS_DESTROYED.
TEST_F(Driver, GreenContextStreams) {
  CUgreenCtx green = makeGreen(1);
  ASSERT_NE(green, nullptr);
  CUcontext view = nullptr;
  ASSERT_EQ(fromGreen()(&view, green), CUDA_SUCCESS);
  auto greenStream = CU(cuGreenCtxStreamCreate, CUstream*, CUgreenCtx, unsigned, int);
  CUstream own = nullptr;
  EXPECT_EQ(greenStream(&own, green, CU_STREAM_DEFAULT, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(greenStream(nullptr, green, CU_STREAM_NON_BLOCKING, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(greenStream(&own, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);

  auto streamGreen = CU(cuStreamGetGreenCtx, CUstream, CUgreenCtx*);
  // cuStreamGetCtx as runtimes before CUDA 12.5 ask for it, and as later ones do (its _v2).
  auto getCtx = proc<CUresult (*)(CUstream, CUcontext*)>("cuStreamGetCtx", 12000);
  auto getCtx2 = proc<CUresult (*)(CUstream, CUcontext*, CUgreenCtx*)>("cuStreamGetCtx", 12050);
  CUgreenCtx ofStream = nullptr;
  CUcontext ctx = nullptr;
  ASSERT_EQ(streamGreen(own, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ofStream, green);
  ASSERT_EQ(getCtx(own, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, view);
  ASSERT_EQ(getCtx2(own, &ctx, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ctx, context_);
  EXPECT_EQ(ofStream, green);

  // A stream made with the green context current is its stream too; a primary one is not.
  auto createStream = CU(cuStreamCreate, CUstream*, unsigned);
  CUstream plain = nullptr, madeInGreen = nullptr;
  ASSERT_EQ(createStream(&plain, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(streamGreen(plain, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ofStream, nullptr);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(view), CUDA_SUCCESS);
  ASSERT_EQ(createStream(&madeInGreen, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(streamGreen(madeInGreen, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ofStream, green);
  ASSERT_EQ(getCtx2(nullptr, &ctx, &ofStream), CUDA_SUCCESS);
  EXPECT_EQ(ctx, context_);
  EXPECT_EQ(ofStream, green);
  EXPECT_EQ(getCtx2(CU_STREAM_PER_THREAD, &ctx, &ofStream), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);

  ASSERT_EQ(greenDestroy()(green), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(own), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(CU(cuStreamQuery, CUstream)(madeInGreen), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(own), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(plain), CUDA_SUCCESS);
}

// cuGreenCtxRecordEvent covers the green context's work only; cuGreenCtxWaitEvent holds its later
// work; a record or wait while one of its streams captures is refused.
TEST_F(Driver, GreenContextEvents) {
  CUgreenCtx green = makeGreen(2);
  ASSERT_NE(green, nullptr);
  auto greenStream = CU(cuGreenCtxStreamCreate, CUstream*, CUgreenCtx, unsigned, int);
  auto hostFunc = CU(cuLaunchHostFunc, CUstream, CUhostFn, void*);
  auto record = CU(cuGreenCtxRecordEvent, CUgreenCtx, CUevent);
  auto wait = CU(cuGreenCtxWaitEvent, CUgreenCtx, CUevent);
  CUstream inGreen = nullptr, outside = nullptr;
  ASSERT_EQ(greenStream(&inGreen, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&outside, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, 0), CUDA_SUCCESS);

  // Work outside the green context held back: its record completes regardless.
  std::atomic<bool> outsideGate{false}, greenGate{false}, after{false};
  ASSERT_EQ(hostFunc(outside, CUDA_CB_waitForGate, &outsideGate), CUDA_SUCCESS);
  ASSERT_EQ(record(green, event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);
  // Its own work held back: the record waits for it.
  ASSERT_EQ(hostFunc(inGreen, CUDA_CB_waitForGate, &greenGate), CUDA_SUCCESS);
  ASSERT_EQ(record(green, event), CUDA_SUCCESS);
  usleep(20000);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(event), CUDA_ERROR_NOT_READY);
  greenGate.store(true);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);

  // A wait on an event of the held stream holds the green context's later work.
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, outside), CUDA_SUCCESS);
  ASSERT_EQ(wait(green, event), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc(inGreen, CUDA_CB_setFlag, &after), CUDA_SUCCESS);
  usleep(20000);
  EXPECT_FALSE(after.load());
  outsideGate.store(true);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(inGreen), CUDA_SUCCESS);
  EXPECT_TRUE(after.load());

  // An event of another context cannot be recorded into; bad handles.
  CUcontext second = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&second, 0, 0),
            CUDA_SUCCESS);
  CUevent foreign = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&foreign, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  EXPECT_EQ(record(green, foreign), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(wait(green, foreign), CUDA_SUCCESS);  // a wait takes any context's event
  EXPECT_EQ(record(reinterpret_cast<CUgreenCtx>(&after), event), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(record(green, reinterpret_cast<CUevent>(&after)), CUDA_ERROR_INVALID_HANDLE);

  // While one of its streams captures, both refuse and invalidate the capture.
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(inGreen,
                                                                    CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(record(green, event), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(inGreen, &graph),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(inGreen), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(outside), CUDA_SUCCESS);
  EXPECT_EQ(greenDestroy()(green), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(second), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// Kernels of a green context run on its share of the device: no more of their blocks at once
// than it has multiprocessors (pool threads), on its default stream and on its own streams.
TEST_F(Driver, GreenContextKernelsStayOnTheirShare) {
  ASSERT_EQ(multiprocessors(), 4);
  for (unsigned share : {1u, 2u}) {
    CUgreenCtx green = makeGreen(share);
    ASSERT_NE(green, nullptr);
    CUcontext view = nullptr;
    ASSERT_EQ(fromGreen()(&view, green), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(view), CUDA_SUCCESS);
    EXPECT_LE(peakOccupancy(nullptr), share) << "default stream, " << share << " of 4";
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
    CUstream stream = nullptr;
    ASSERT_EQ(CU(cuGreenCtxStreamCreate, CUstream*, CUgreenCtx, unsigned, int)(
                  &stream, green, CU_STREAM_NON_BLOCKING, 0),
              CUDA_SUCCESS);
    unsigned peak = peakOccupancy(stream);
    EXPECT_LE(peak, share) << "own stream, " << share << " of 4";
    EXPECT_GE(peak, 1u);
    EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
    EXPECT_EQ(greenDestroy()(green), CUDA_SUCCESS);
  }
  // The primary context's kernels may use every pool thread: more than one at once here (12
  // blocks of 3 ms each on four threads), which shows the bound above is the partition's.
  EXPECT_GT(peakOccupancy(nullptr), 1u);
}

}  // namespace
}  // namespace rocuda::cuda::testing
