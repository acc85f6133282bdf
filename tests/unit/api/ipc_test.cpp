// Sharing between processes through libcuda.so.1: CUDA IPC of device memory and events (with a
// real second process: this test binary run again as IpcChild) and external memory imported
// from a memfd.
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/api/libcuda_harness.h"

extern char** environ;

namespace rocuda::cuda::testing {
namespace {



CUfunction addOne() {
  static CUfunction function = loadAddOne();
  return function;
}

CUresult launchAddOne(CUdeviceptr data, uint32_t n, CUstream stream) {
  void* params[] = {&data, &n};
  return proc<Launch>("cuLaunchKernel", 7000)(addOne(), (n + 127) / 128, 1, 1, 128, 1, 1, 0,
                                               stream, params, nullptr);
}

auto getMemHandle() { return CU(cuIpcGetMemHandle, CUipcMemHandle*, CUdeviceptr); }
auto openMemHandle() { return CU(cuIpcOpenMemHandle, CUdeviceptr*, CUipcMemHandle, unsigned); }
auto closeMemHandle() { return CU(cuIpcCloseMemHandle, CUdeviceptr); }
auto getEventHandle() { return CU(cuIpcGetEventHandle, CUipcEventHandle*, CUevent); }
auto openEventHandle() { return CU(cuIpcOpenEventHandle, CUevent*, CUipcEventHandle); }

std::vector<uint32_t> readBack(CUdeviceptr pointer, size_t count) {
  std::vector<uint32_t> out(count);
  EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), pointer, count * 4),
            CUDA_SUCCESS);
  return out;
}

template <class Handle>
std::string toHex(const Handle& handle) {
  std::string out;
  char digits[3];
  for (char c : handle.reserved) {
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(c));
    out += digits;
  }
  return out;
}

template <class Handle>
Handle fromHex(const std::string& text) {
  Handle handle{};
  for (size_t i = 0; i < sizeof handle.reserved && 2 * i + 1 < text.size(); ++i)
    handle.reserved[i] = static_cast<char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return handle;
}

// ---- Device memory, in one process ----

TEST_F(Driver, IpcMemHandleNamesTheWholeAllocationAndKeepsItsContents) {
  constexpr uint32_t kN = 5000;  // several pages
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 7, kN / 2), CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(data, kN, nullptr), CUDA_SUCCESS);  // queued work drains first
  int capable = 0;
  ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                &capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, data),
            CUDA_SUCCESS);
  EXPECT_EQ(capable, 1);

  CUipcMemHandle first{}, again{}, inner{};
  ASSERT_EQ(getMemHandle()(&first, data), CUDA_SUCCESS);
  ASSERT_EQ(getMemHandle()(&again, data), CUDA_SUCCESS);
  ASSERT_EQ(getMemHandle()(&inner, data + 4 * 1234), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&first, &again, sizeof first), 0);
  EXPECT_EQ(std::memcmp(&first, &inner, sizeof first), 0);  // the allocation, not the offset

  // Shared in place: same address, same contents, kernels still work on it.
  std::vector<uint32_t> values = readBack(data, kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(values[i], i < kN / 2 ? 8u : 1u) << i;
  ASSERT_EQ(launchAddOne(data, kN, nullptr), CUDA_SUCCESS);
  values = readBack(data, kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(values[i], i < kN / 2 ? 9u : 2u) << i;
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(CU(cuMemGetAddressRange, CUdeviceptr*, size_t*, CUdeviceptr)(&base, &size, data + 8),
            CUDA_SUCCESS);
  EXPECT_EQ(base, data);
  EXPECT_EQ(size, kN * 4u);

  // Opening in the exporting process is refused, as CUDA does.
  CUdeviceptr opened = 0;
  EXPECT_EQ(openMemHandle()(&opened, first, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
}

TEST_F(Driver, IpcMemHandleErrors) {
  CUipcMemHandle handle{};
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 256), CUDA_SUCCESS);
  EXPECT_EQ(getMemHandle()(nullptr, data), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getMemHandle()(&handle, 0), CUDA_ERROR_INVALID_VALUE);
  int onStack = 0;
  EXPECT_EQ(getMemHandle()(&handle, reinterpret_cast<CUdeviceptr>(&onStack)),
            CUDA_ERROR_INVALID_VALUE);
  // Only cuMemAlloc's memory is exportable: not pinned host, managed or pool memory.
  void* host = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(&host, 256), CUDA_SUCCESS);
  EXPECT_EQ(getMemHandle()(&handle, reinterpret_cast<CUdeviceptr>(host)),
            CUDA_ERROR_INVALID_VALUE);
  int capable = 1;
  ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                &capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                reinterpret_cast<CUdeviceptr>(host)),
            CUDA_SUCCESS);
  EXPECT_EQ(capable, 0);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(host), CUDA_SUCCESS);
  CUdeviceptr managed = 0;
  ASSERT_EQ(CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 256, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(getMemHandle()(&handle, managed), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);
  CUdeviceptr pooled = 0;
  ASSERT_EQ(CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream)(&pooled, 256, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(getMemHandle()(&handle, pooled), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(pooled, nullptr), CUDA_SUCCESS);

  CUdeviceptr opened = 0;
  CUipcMemHandle garbage{};
  EXPECT_EQ(openMemHandle()(&opened, garbage, 0), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(getMemHandle()(&handle, data), CUDA_SUCCESS);
  EXPECT_EQ(openMemHandle()(nullptr, handle, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(openMemHandle()(&opened, handle, 2), CUDA_ERROR_INVALID_VALUE);
  // Not memory opened from a handle.
  EXPECT_EQ(closeMemHandle()(data), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(closeMemHandle()(0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
}

// ---- Events, in one process ----

TEST_F(Driver, IpcEventHandlesShareCompletion) {
  int supported = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &supported, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(supported, 1);
  auto create = CU(cuEventCreate, CUevent*, unsigned);
  CUevent plain = nullptr, timed = nullptr, shared = nullptr;
  EXPECT_EQ(create(&timed, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(create(&plain, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(create(&shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUipcEventHandle handle{};
  EXPECT_EQ(getEventHandle()(&handle, plain), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getEventHandle()(nullptr, shared), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getEventHandle()(&handle, nullptr), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(getEventHandle()(&handle, shared), CUDA_SUCCESS);
  CUevent opened = nullptr;
  EXPECT_EQ(openEventHandle()(nullptr, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(openEventHandle()(&opened, CUipcEventHandle{}), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(openEventHandle()(&opened, handle), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(opened), CUDA_SUCCESS);  // never recorded

  // A record on a stream held back by a memory wait: the opened event sees it pending.
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  uint32_t* flag = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(reinterpret_cast<void**>(&flag), 4),
            CUDA_SUCCESS);
  *flag = 0;
  ASSERT_EQ(CU(cuStreamWaitValue32, CUstream, CUdeviceptr, cuuint32_t, unsigned)(
                stream, reinterpret_cast<CUdeviceptr>(flag), 1, CU_STREAM_WAIT_VALUE_GEQ),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(shared, stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(opened), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(shared), CUDA_ERROR_NOT_READY);
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(opened), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(shared), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(CU(cuEventElapsedTime, float*, CUevent, CUevent)(&ms, opened, opened),
            CUDA_ERROR_INVALID_HANDLE);

  // A record of the opened event is one of the exported event too.
  *flag = 0;
  ASSERT_EQ(CU(cuStreamWaitValue32, CUstream, CUdeviceptr, cuuint32_t, unsigned)(
                stream, reinterpret_cast<CUdeviceptr>(flag), 1, CU_STREAM_WAIT_VALUE_GEQ),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(opened, stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(shared), CUDA_ERROR_NOT_READY);
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(shared), CUDA_SUCCESS);

  EXPECT_EQ(CU(cuEventDestroy, CUevent)(opened), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(shared), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(plain), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(flag), CUDA_SUCCESS);
}

// Graph event-record and event-wait nodes of an interprocess event go through its shared state.
TEST_F(Driver, IpcEventsInGraphs) {
  CUevent shared = nullptr, opened = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(
                &shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
            CUDA_SUCCESS);
  CUipcEventHandle handle{};
  ASSERT_EQ(getEventHandle()(&handle, shared), CUDA_SUCCESS);
  ASSERT_EQ(openEventHandle()(&opened, handle), CUDA_SUCCESS);
  auto graphOf = [](CUevent event, bool record) {
    CUgraph graph = nullptr;
    CUgraphNode node = nullptr;
    CUgraphExec exec = nullptr;
    EXPECT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    if (record)
      EXPECT_EQ(CU(cuGraphAddEventRecordNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                   CUevent)(&node, graph, nullptr, 0, event),
                CUDA_SUCCESS);
    else
      EXPECT_EQ(CU(cuGraphAddEventWaitNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                   CUevent)(&node, graph, nullptr, 0, event),
                CUDA_SUCCESS);
    EXPECT_EQ(CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(
                  &exec, graph, 0),
              CUDA_SUCCESS);
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
    return exec;
  };
  CUgraphExec recordExec = graphOf(shared, true), waitExec = graphOf(opened, false);
  CUstream gated = nullptr, waiting = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&gated, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&waiting, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  uint32_t* flag = nullptr;
  CUdeviceptr value = 0;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(reinterpret_cast<void**>(&flag), 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&value, 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(value, 0, 1), CUDA_SUCCESS);
  *flag = 0;
  ASSERT_EQ(CU(cuStreamWaitValue32, CUstream, CUdeviceptr, cuuint32_t, unsigned)(
                gated, reinterpret_cast<CUdeviceptr>(flag), 1, CU_STREAM_WAIT_VALUE_GEQ),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(recordExec, gated), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(opened), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(waitExec, waiting), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(value, 77, 1, waiting),
            CUDA_SUCCESS);
  usleep(20000);  // the memset is held back by the graph's wait, however long we wait
  EXPECT_EQ(readBack(value, 1)[0], 0u);
  EXPECT_EQ(CU(cuStreamQuery, CUstream)(waiting), CUDA_ERROR_NOT_READY);
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(waiting), CUDA_SUCCESS);
  EXPECT_EQ(readBack(value, 1)[0], 77u);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(opened), CUDA_SUCCESS);

  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(recordExec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(waitExec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(gated), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(waiting), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(opened), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(shared), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(flag), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(value), CUDA_SUCCESS);
}

// ---- Memory pools shared between processes, in one process ----

CUmemoryPool createPool(CUmemAllocationHandleType types, CUresult* result) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = types;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  *result = CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &props);
  return pool;
}

auto exportPool() {
  return CU(cuMemPoolExportToShareableHandle, void*, CUmemoryPool, CUmemAllocationHandleType,
            unsigned long long);
}
auto importPool() {
  return CU(cuMemPoolImportFromShareableHandle, CUmemoryPool*, void*, CUmemAllocationHandleType,
            unsigned long long);
}
auto exportPointer() { return CU(cuMemPoolExportPointer, CUmemPoolPtrExportData*, CUdeviceptr); }
auto importPointer() {
  return CU(cuMemPoolImportPointer, CUdeviceptr*, CUmemoryPool, CUmemPoolPtrExportData*);
}
auto allocFromPool() {
  return CU(cuMemAllocFromPoolAsync, CUdeviceptr*, size_t, CUmemoryPool, CUstream);
}

TEST_F(Driver, ShareableMemoryPools) {
  int types = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUresult result = CUDA_SUCCESS;
  createPool(CU_MEM_HANDLE_TYPE_WIN32, &result);
  EXPECT_EQ(result, CUDA_ERROR_NOT_SUPPORTED);
  CUmemoryPool plain = createPool(CU_MEM_HANDLE_TYPE_NONE, &result);
  ASSERT_EQ(result, CUDA_SUCCESS);
  CUmemoryPool pool = createPool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &result);
  ASSERT_EQ(result, CUDA_SUCCESS);

  int fd = -1;
  EXPECT_EQ(exportPool()(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPool()(nullptr, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPool()(&fd, pool, CU_MEM_HANDLE_TYPE_WIN32, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPool()(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(exportPool()(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  ASSERT_GE(fd, 0);
  auto asHandle = [](int descriptor) { return reinterpret_cast<void*>(uintptr_t(descriptor)); };
  CUmemoryPool imported = nullptr;
  int notAPool = memfd_create("not-a-pool", MFD_CLOEXEC);
  EXPECT_EQ(importPool()(&imported, asHandle(notAPool), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                         0),
            CUDA_ERROR_INVALID_VALUE);
  close(notAPool);
  ASSERT_EQ(importPool()(&imported, asHandle(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  close(fd);  // the caller's: importing did not take it
  CUdeviceptr fromImported = 0;
  EXPECT_EQ(allocFromPool()(&fromImported, 256, imported, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuDeviceSetMemPool, CUdevice, CUmemoryPool)(0, imported), CUDA_ERROR_INVALID_VALUE);

  // Pointers: only the start of an allocation from a shareable pool.
  CUdeviceptr shared = 0, unshared = 0, ordinary = 0;
  ASSERT_EQ(allocFromPool()(&shared, 4096 * 4, pool, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(allocFromPool()(&unshared, 256, plain, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&ordinary, 256), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(shared, 40, 4096), CUDA_SUCCESS);
  auto allowedTypes = [](CUdeviceptr pointer) {
    unsigned long long allowed = 99;
    EXPECT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                  &allowed, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, pointer),
              CUDA_SUCCESS);
    return allowed;
  };
  EXPECT_EQ(allowedTypes(shared), unsigned{CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR});
  EXPECT_EQ(allowedTypes(unshared), 0u);
  EXPECT_EQ(allowedTypes(ordinary), 0u);
  CUmemPoolPtrExportData data{};
  EXPECT_EQ(exportPointer()(nullptr, shared), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPointer()(&data, unshared), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPointer()(&data, ordinary), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportPointer()(&data, shared + 4), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(exportPointer()(&data, shared), CUDA_SUCCESS);
  CUdeviceptr alias = 0;
  EXPECT_EQ(importPointer()(&alias, pool, &data), CUDA_ERROR_INVALID_VALUE);  // not imported
  EXPECT_EQ(importPointer()(nullptr, imported, &data), CUDA_ERROR_INVALID_VALUE);
  CUmemPoolPtrExportData garbage{};
  EXPECT_EQ(importPointer()(&alias, imported, &garbage), CUDA_ERROR_INVALID_VALUE);
  // Imported in the same process, it is a second mapping of the same memory.
  ASSERT_EQ(importPointer()(&alias, imported, &data), CUDA_SUCCESS);
  EXPECT_NE(alias, shared);
  ASSERT_EQ(launchAddOne(alias, 4096, nullptr), CUDA_SUCCESS);
  std::vector<uint32_t> values = readBack(shared, 4096);
  for (uint32_t i = 0; i < 4096; ++i) ASSERT_EQ(values[i], 41u) << i;
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(alias), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(shared, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(unshared, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(ordinary), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(imported), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(plain), CUDA_SUCCESS);
}

// A pool of page-locked host memory on a NUMA node, shared as a file descriptor (cuda.core's
// PinnedMemoryResource with IPC): exported and imported back, a pointer of it imported as a
// second mapping of the same pages, which a kernel writes and the host reads at the first.
TEST_F(Driver, ShareableHostNumaPool) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr shared = 0;
  ASSERT_EQ(allocFromPool()(&shared, 4096 * 4, pool, nullptr), CUDA_SUCCESS);
  auto* host = reinterpret_cast<uint32_t*>(shared);
  for (uint32_t i = 0; i < 4096; ++i) host[i] = i;
  int fd = -1;
  ASSERT_EQ(exportPool()(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  CUmemoryPool imported = nullptr;
  ASSERT_EQ(importPool()(&imported, reinterpret_cast<void*>(uintptr_t(fd)),
                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  close(fd);
  CUmemPoolPtrExportData data{};
  ASSERT_EQ(exportPointer()(&data, shared), CUDA_SUCCESS);
  CUdeviceptr alias = 0;
  ASSERT_EQ(importPointer()(&alias, imported, &data), CUDA_SUCCESS);
  EXPECT_NE(alias, shared);
  ASSERT_EQ(launchAddOne(alias, 4096, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  for (uint32_t i = 0; i < 4096; ++i) ASSERT_EQ(host[i], i + 1) << i;
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(alias), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(shared, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(imported), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
}

// ---- Two processes ----

// This binary again, running only IpcChild with the parent's handles in its environment.
pid_t spawnChild(const std::string& arguments) {
  std::string variable = "ROCUDA_TEST_IPC_CHILD=" + arguments;
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "ROCUDA_TEST_IPC_CHILD=", 22) != 0) env.push_back(*e);
  env.push_back(variable.data());
  env.push_back(nullptr);
  std::string filter = "--gtest_filter=IpcChild.UsesTheParentsMemoryAndEvent";
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv, env.data()) != 0) return -1;
  return pid;
}

TEST_F(Driver, IpcSharesMemoryAndEventsWithAnotherProcess) {
  constexpr uint32_t kN = 3000;
  CUdeviceptr data = 0, gone = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, kN * 4), CUDA_SUCCESS);
  std::vector<uint32_t> initial(kN);
  for (uint32_t i = 0; i < kN; ++i) initial[i] = i * 3;
  ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(data, initial.data(), kN * 4),
            CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(
                &event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
            CUDA_SUCCESS);
  CUipcMemHandle memory{}, stale{};
  CUipcEventHandle eventHandle{};
  ASSERT_EQ(getMemHandle()(&memory, data), CUDA_SUCCESS);
  ASSERT_EQ(getEventHandle()(&eventHandle, event), CUDA_SUCCESS);
  // A handle of memory freed since: the child must find it gone.
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&gone, 4096), CUDA_SUCCESS);
  ASSERT_EQ(getMemHandle()(&stale, gone), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemFree, CUdeviceptr)(gone), CUDA_SUCCESS);

  // A pool allocation, shared through the pool's descriptor and the pointer's export data.
  CUresult created = CUDA_SUCCESS;
  CUmemoryPool pool = createPool(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &created);
  ASSERT_EQ(created, CUDA_SUCCESS);
  CUdeviceptr pooled = 0;
  ASSERT_EQ(allocFromPool()(&pooled, kN * 4, pool, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(pooled, 1000, kN), CUDA_SUCCESS);
  int poolFd = -1;
  ASSERT_EQ(exportPool()(&poolFd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(fcntl(poolFd, F_SETFD, 0), 0);  // handed to the child (SCM_RIGHTS would do too)
  CUmemPoolPtrExportData pointerData{};
  ASSERT_EQ(exportPointer()(&pointerData, pooled), CUDA_SUCCESS);

  int toChild[2], toParent[2];
  ASSERT_EQ(pipe2(toChild, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(toParent, O_CLOEXEC), 0);
  // The child's ends stay open across exec.
  ASSERT_EQ(fcntl(toChild[0], F_SETFD, 0), 0);
  ASSERT_EQ(fcntl(toParent[1], F_SETFD, 0), 0);
  std::ostringstream arguments;
  arguments << toHex(memory) << ' ' << toHex(eventHandle) << ' ' << toHex(stale) << ' '
            << toChild[0] << ' ' << toParent[1] << ' ' << kN << ' ' << poolFd << ' '
            << toHex(pointerData);
  pid_t child = spawnChild(arguments.str());
  ASSERT_GT(child, 0);
  close(toChild[0]);
  close(toParent[1]);

  // 1. The child adds one with a kernel and records the event; we wait on the event.
  char byte = 0;
  ASSERT_EQ(read(toParent[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'r');
  ASSERT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);
  std::vector<uint32_t> values = readBack(data, kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(values[i], i * 3 + 1) << i;

  // 2. We add one and record; the child's stream waits on the event, then copies.
  ASSERT_EQ(launchAddOne(data, kN, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, nullptr), CUDA_SUCCESS);
  byte = 'g';
  ASSERT_EQ(write(toChild[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  close(toChild[1]);
  close(toParent[0]);
  // The child's writes of step 2 (it adds one more after its copy) are ours to see.
  values = readBack(data, kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(values[i], i * 3 + 3) << i;
  // The child added one to the pool allocation through its imported pointer.
  values = readBack(pooled, kN);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(values[i], 1001u) << i;
  close(poolFd);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(pooled, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
}

class IpcChild : public Driver {};

TEST_F(IpcChild, UsesTheParentsMemoryAndEvent) {
  const char* variable = std::getenv("ROCUDA_TEST_IPC_CHILD");
  if (variable == nullptr) GTEST_SKIP() << "run by IpcSharesMemoryAndEventsWithAnotherProcess";
  std::istringstream in(variable);
  std::string memoryHex, eventHex, staleHex;
  int fromParent = -1, toParent = -1;
  uint32_t n = 0;
  int poolFd = -1;
  std::string pointerHex;
  in >> memoryHex >> eventHex >> staleHex >> fromParent >> toParent >> n >> poolFd >> pointerHex;
  ASSERT_TRUE(in) << variable;

  // The parent's pool allocation, through the pool's descriptor. Importing the pool needs no
  // current context (the pool's device comes with it).
  CUcontext current = nullptr;
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  if (current != nullptr) {
    ASSERT_EQ(CU(cuCtxPopCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  }
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(importPool()(&pool, reinterpret_cast<void*>(uintptr_t(poolFd)),
                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  if (current != nullptr) {
    ASSERT_EQ(CU(cuCtxPushCurrent, CUcontext)(current), CUDA_SUCCESS);
  }
  auto pointerData = fromHex<CUmemPoolPtrExportData>(pointerHex);
  CUdeviceptr pooled = 0;
  ASSERT_EQ(importPointer()(&pooled, pool, &pointerData), CUDA_SUCCESS);
  std::vector<uint32_t> fromPool = readBack(pooled, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(fromPool[i], 1000u) << i;
  ASSERT_EQ(launchAddOne(pooled, n, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(pooled), CUDA_SUCCESS);  // before the exporter frees it
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);

  CUdeviceptr stalePointer = 0;
  EXPECT_EQ(openMemHandle()(&stalePointer, fromHex<CUipcMemHandle>(staleHex), 0),
            CUDA_ERROR_MAP_FAILED);
  auto memory = fromHex<CUipcMemHandle>(memoryHex);
  CUdeviceptr data = 0, again = 0;
  ASSERT_EQ(openMemHandle()(&data, memory, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
  ASSERT_EQ(openMemHandle()(&again, memory, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
  EXPECT_EQ(again, data);  // counted, not mapped twice
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_ERROR_INVALID_VALUE);  // not ours to free
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(CU(cuMemGetAddressRange, CUdeviceptr*, size_t*, CUdeviceptr)(&base, &size, data + 4),
            CUDA_SUCCESS);
  EXPECT_EQ(base, data);
  EXPECT_EQ(size, n * 4u);
  CUevent event = nullptr;
  ASSERT_EQ(openEventHandle()(&event, fromHex<CUipcEventHandle>(eventHex)), CUDA_SUCCESS);

  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(data, n, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream), CUDA_SUCCESS);
  char byte = 'r';
  ASSERT_EQ(write(toParent, &byte, 1), 1);

  ASSERT_EQ(read(fromParent, &byte, 1), 1);
  ASSERT_EQ(byte, 'g');
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(stream, event, 0), CUDA_SUCCESS);
  std::vector<uint32_t> values(n);
  ASSERT_EQ(CU(cuMemcpyDtoHAsync, void*, CUdeviceptr, size_t, CUstream)(values.data(), data,
                                                                          n * 4, stream),
            CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(data, n, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * 3 + 2) << i;

  EXPECT_EQ(closeMemHandle()(data), CUDA_SUCCESS);
  EXPECT_EQ(closeMemHandle()(data), CUDA_SUCCESS);
  EXPECT_EQ(closeMemHandle()(data), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

// ---- External memory from a file descriptor ----

using ImportExternal = CUresult (*)(CUexternalMemory*, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC*);
using MapBuffer = CUresult (*)(CUdeviceptr*, CUexternalMemory,
                               const CUDA_EXTERNAL_MEMORY_BUFFER_DESC*);

TEST_F(Driver, ExternalMemoryFromAnFdIsDeviceMemory) {
  constexpr size_t kBytes = 3 * 4096;
  int fd = memfd_create("rocuda-test-external", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kBytes), 0);
  std::vector<uint32_t> contents(kBytes / 4);
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<uint32_t>(i * 7);
  ASSERT_EQ(pwrite(fd, contents.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  int keep = dup(fd);  // CUDA takes `fd`; this one checks what the device wrote
  ASSERT_GE(keep, 0);

  auto import = CU(cuImportExternalMemory, CUexternalMemory*,
                   const CUDA_EXTERNAL_MEMORY_HANDLE_DESC*);
  auto map = CU(cuExternalMemoryGetMappedBuffer, CUdeviceptr*, CUexternalMemory,
                const CUDA_EXTERNAL_MEMORY_BUFFER_DESC*);
  auto destroy = CU(cuDestroyExternalMemory, CUexternalMemory);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = kBytes;
  CUexternalMemory external = nullptr;
  EXPECT_EQ(import(nullptr, &desc), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(import(&external, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC bad = desc;
  bad.size = kBytes + 1;  // more than the fd holds
  EXPECT_EQ(import(&external, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = desc;
  bad.flags = 2;
  EXPECT_EQ(import(&external, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = desc;
  bad.handle.fd = -1;
  EXPECT_EQ(import(&external, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = desc;
  bad.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32;
  EXPECT_EQ(import(&external, &bad), CUDA_ERROR_OPERATING_SYSTEM);
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);  // failed imports leave the fd to the caller
  desc.flags = CUDA_EXTERNAL_MEMORY_DEDICATED;
  ASSERT_EQ(import(&external, &desc), CUDA_SUCCESS);

  // A buffer at an offset that is not page aligned.
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer{};
  buffer.offset = 4096 + 64;
  buffer.size = 4096;
  CUdeviceptr pointer = 0;
  EXPECT_EQ(map(nullptr, external, &buffer), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(map(&pointer, nullptr, &buffer), CUDA_ERROR_INVALID_HANDLE);
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC outside = buffer;
  outside.size = kBytes;
  EXPECT_EQ(map(&pointer, external, &outside), CUDA_ERROR_INVALID_VALUE);
  outside = buffer;
  outside.flags = 1;
  EXPECT_EQ(map(&pointer, external, &outside), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(map(&pointer, external, &buffer), CUDA_SUCCESS);
  std::vector<uint32_t> values = readBack(pointer, 1024);
  for (size_t i = 0; i < 1024; ++i) ASSERT_EQ(values[i], contents[1040 + i]) << i;
  ASSERT_EQ(launchAddOne(pointer, 1024, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  std::vector<uint32_t> file(kBytes / 4);
  ASSERT_EQ(pread(keep, file.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  for (size_t i = 0; i < file.size(); ++i)
    ASSERT_EQ(file[i], contents[i] + (i >= 1040 && i < 2064 ? 1 : 0)) << i;
  CUmemorytype type{};
  ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer),
            CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);

  CUmipmappedArray array = nullptr;
  char arrayDesc[128] = {};
  EXPECT_EQ(CU(cuExternalMemoryGetMappedMipmappedArray, CUmipmappedArray*, CUexternalMemory,
               const void*)(&array, external, arrayDesc),
            CUDA_ERROR_NOT_SUPPORTED);
  // The buffer outlives the object; cuMemFree releases it once.
  EXPECT_EQ(destroy(external), CUDA_SUCCESS);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed: it was CUDA's
  EXPECT_EQ(destroy(external), CUDA_ERROR_INVALID_HANDLE);
  values = readBack(pointer, 4);
  EXPECT_EQ(values[0], contents[1040] + 1);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(pointer), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(pointer), CUDA_ERROR_INVALID_VALUE);
  close(keep);
}

}  // namespace
}  // namespace rocuda::cuda::testing
