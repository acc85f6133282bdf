// Device and context extras, logs, async notifications, occupancy (cluster, potential block
// size), library modules and managed variables, and the entry points of facilities unavailable
// here, through libcuda.so.1.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/api/cuda/graph_abi.h"
#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

using AtomicCaps = CUresult (*)(unsigned*, const CUatomicOperation*, unsigned, CUdevice);

TEST_F(Driver, HostAtomicCapabilitiesMatchTheDeviceAttribute) {
  auto caps = CU13(cuDeviceGetHostAtomicCapabilities, unsigned*, const CUatomicOperation*, unsigned,
                   CUdevice);
  int native = -1;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &native, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0),
            CUDA_SUCCESS);
  CUatomicOperation ops[] = {CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_CAS,
                             CU_ATOMIC_OPERATION_FLOAT_ADD};
  unsigned out[3] = {99, 99, 99};
  ASSERT_EQ(caps(out, ops, 3, 0), CUDA_SUCCESS);
  if (native == 1) {
    EXPECT_NE(out[0] & CU_ATOMIC_CAPABILITY_SCALAR_32, 0u);
    EXPECT_NE(out[0] & CU_ATOMIC_CAPABILITY_SIGNED, 0u);
    EXPECT_NE(out[1] & CU_ATOMIC_CAPABILITY_SCALAR_64, 0u);
    EXPECT_EQ(out[1] & CU_ATOMIC_CAPABILITY_REDUCTION, 0u);  // CAS returns a value
    EXPECT_EQ(out[2] & CU_ATOMIC_CAPABILITY_SIGNED, 0u);
  } else {
    for (unsigned c : out) EXPECT_EQ(c, 0u);
  }
  EXPECT_EQ(caps(out, ops, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(caps(nullptr, ops, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CUatomicOperation bad = CU_ATOMIC_OPERATION_MAX;
  EXPECT_EQ(caps(out, &bad, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(caps(out, ops, 1, 77), CUDA_ERROR_INVALID_DEVICE);

  auto p2p = CU13(cuDeviceGetP2PAtomicCapabilities, unsigned*, const CUatomicOperation*, unsigned,
                  CUdevice, CUdevice);
  EXPECT_EQ(p2p(out, ops, 1, 0, 0), CUDA_ERROR_INVALID_DEVICE);  // the same device
  EXPECT_EQ(p2p(out, ops, 1, 0, 77), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, ModuleLoadingModeFollowsCudaModuleLoading) {
  auto mode = CU(cuModuleGetLoadingMode, CUmoduleLoadingMode*);
  CUmoduleLoadingMode answer = CU_MODULE_EAGER_LOADING;
  ::unsetenv("CUDA_MODULE_LOADING");
  ASSERT_EQ(mode(&answer), CUDA_SUCCESS);
  EXPECT_EQ(answer, CU_MODULE_LAZY_LOADING);  // NVIDIA's default since CUDA 12.2
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  ASSERT_EQ(mode(&answer), CUDA_SUCCESS);
  EXPECT_EQ(answer, CU_MODULE_EAGER_LOADING);
  ::unsetenv("CUDA_MODULE_LOADING");
  EXPECT_EQ(mode(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, Texture1DLinearMaxWidthFollowsTheAttribute) {
  auto width = CU(cuDeviceGetTexture1DLinearMaxWidth, size_t*, CUarray_format, unsigned, CUdevice);
  int attribute = -1;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &attribute, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 0),
            CUDA_SUCCESS);
  size_t elements = 1234;
  ASSERT_EQ(width(&elements, CU_AD_FORMAT_FLOAT, 4, 0), CUDA_SUCCESS);
  EXPECT_EQ(elements, static_cast<size_t>(attribute));
  EXPECT_EQ(width(&elements, CU_AD_FORMAT_FLOAT, 3, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(width(&elements, static_cast<CUarray_format>(5), 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(width(nullptr, CU_AD_FORMAT_FLOAT, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(width(&elements, CU_AD_FORMAT_FLOAT, 1, 9), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, CtxDetachDestroysACurrentCreatedContext) {
  auto detach = CU(cuCtxDetach, CUcontext);
  EXPECT_EQ(detach(context_), CUDA_ERROR_INVALID_CONTEXT);  // a primary context
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  CUcontext created = nullptr;
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  CUcontext other = nullptr;
  ASSERT_EQ(create(&other, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(detach(created), CUDA_ERROR_INVALID_CONTEXT);  // not current: `other` is
  EXPECT_EQ(detach(other), CUDA_SUCCESS);
  unsigned version = 0;
  EXPECT_EQ(CU(cuCtxGetApiVersion, CUcontext, unsigned*)(other, &version),
            CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(created), CUDA_SUCCESS);
  EXPECT_EQ(detach(created), CUDA_SUCCESS);
  EXPECT_EQ(detach(created), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// ---- Logs ----
struct Received {
  int calls = 0;
  std::string last;
};

void onLog(void* data, CUlogLevel level, char* message, size_t length) {
  auto* received = static_cast<Received*>(data);
  ++received->calls;
  received->last.assign(message, length);
}

TEST_F(Driver, LogsKeepErrorsForCallbacksAndDumps) {
  auto current = CU(cuLogsCurrent, CUlogIterator*, unsigned);
  auto toMemory = CU(cuLogsDumpToMemory, CUlogIterator*, char*, size_t*, unsigned);
  CUlogIterator start = 0;
  ASSERT_EQ(current(&start, 0), CUDA_SUCCESS);
  Received received;
  CUlogsCallbackHandle handle = nullptr;
  ASSERT_EQ(CU(cuLogsRegisterCallback, CUlogsCallback, void*, CUlogsCallbackHandle*)(
                &onLog, &received, &handle),
            CUDA_SUCCESS);
  // An unavailable facility logs what is missing (and a failed call logs its error).
  auto importSemaphore = CU(cuImportExternalSemaphore, void*, const void*);
  EXPECT_EQ(importSemaphore(nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_GE(received.calls, 1);
  EXPECT_NE(received.last.find("cuImportExternalSemaphore"), std::string::npos) << received.last;

  char buffer[4096];
  size_t size = sizeof buffer;
  CUlogIterator it = start;
  ASSERT_EQ(toMemory(&it, buffer, &size, 0), CUDA_SUCCESS);
  EXPECT_GT(size, 0u);
  EXPECT_EQ(std::strlen(buffer), size);
  EXPECT_NE(std::string(buffer).find("external semaphores"), std::string::npos) << buffer;
  // The iterator advanced: nothing new since.
  size = sizeof buffer;
  ASSERT_EQ(toMemory(&it, buffer, &size, 0), CUDA_SUCCESS);
  EXPECT_EQ(size, 0u);

  // Too small for any message.
  CUlogIterator again = start;
  size = 4;
  EXPECT_EQ(toMemory(&again, buffer, &size, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(size, 0u);

  char path[] = "/tmp/rocuda_logs_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  CUlogIterator fromStart = start;
  ASSERT_EQ(CU(cuLogsDumpToFile, CUlogIterator*, const char*, unsigned)(&fromStart, path, 0),
            CUDA_SUCCESS);
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find("cuImportExternalSemaphore"), std::string::npos);
  std::remove(path);
  EXPECT_EQ(fromStart, it);

  ASSERT_EQ(CU(cuLogsUnregisterCallback, CUlogsCallbackHandle)(handle), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuLogsUnregisterCallback, CUlogsCallbackHandle)(handle), CUDA_ERROR_INVALID_VALUE);
  int calls = received.calls;
  EXPECT_EQ(importSemaphore(nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(received.calls, calls);

  EXPECT_EQ(current(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(current(&it, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(toMemory(&it, nullptr, &size, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuLogsDumpToFile, CUlogIterator*, const char*, unsigned)(&it, nullptr, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuLogsRegisterCallback, CUlogsCallback, void*, CUlogsCallbackHandle*)(
                nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

void onAsync(CUasyncNotificationInfo*, void*, CUasyncCallbackHandle) {}

TEST_F(Driver, AsyncNotificationRegistrations) {
  auto reg = CU(cuDeviceRegisterAsyncNotification, CUdevice, CUasyncCallback, void*,
                CUasyncCallbackHandle*);
  auto unreg = CU(cuDeviceUnregisterAsyncNotification, CUdevice, CUasyncCallbackHandle);
  CUasyncCallbackHandle handle = nullptr;
  ASSERT_EQ(reg(0, &onAsync, nullptr, &handle), CUDA_SUCCESS);
  EXPECT_NE(handle, nullptr);
  EXPECT_EQ(unreg(5, handle), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(unreg(0, handle), CUDA_SUCCESS);
  EXPECT_EQ(unreg(0, handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(reg(0, nullptr, nullptr, &handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(reg(0, &onAsync, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(reg(3, &onAsync, nullptr, &handle), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Driver, ProfilerInitializeIsNotSupported) {
  EXPECT_EQ(CU(cuProfilerInitialize, const char*, const char*, CUoutput_mode)("c", "o", CU_OUT_CSV),
            CUDA_ERROR_NOT_SUPPORTED);
}

// ---- Code: cluster occupancy, libraries ----
constexpr const char* kPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .global .align 4 .u32 plain = 5;
.visible .global .attribute(.managed) .align 4 .u32 shared_counter = 9;

.visible .entry bump(.param .u64 data)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [data];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [%rd2];
  add.s32 %r2, %r1, 1;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";

using Occupancy = CUresult (*)(int*, CUfunction, const CUlaunchConfig*);

TEST_F(Driver, ClusterOccupancyOfSingleBlockClusters) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "bump"),
            CUDA_SUCCESS);
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof config);
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 64;
  config.blockDimY = config.blockDimZ = 1;
  int size = 0;
  ASSERT_EQ(proc<Occupancy>("cuOccupancyMaxPotentialClusterSize")(&size, function, &config),
            CUDA_SUCCESS);
  EXPECT_EQ(size, 1);

  auto clusters = proc<Occupancy>("cuOccupancyMaxActiveClusters");
  int count = 0;
  EXPECT_EQ(clusters(&count, function, &config), CUDA_ERROR_INVALID_VALUE);  // no cluster size
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof attribute);
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim = {2, 1, 1};
  config.attrs = &attribute;
  config.numAttrs = 1;
  EXPECT_EQ(clusters(&count, function, &config), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  attribute.value.clusterDim = {1, 1, 1};
  ASSERT_EQ(clusters(&count, function, &config), CUDA_SUCCESS);
  int perSm = 0, sms = 0;
  ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                &perSm, function, 64, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(count, perSm * sms);
  EXPECT_GT(count, 0);
  EXPECT_EQ(clusters(nullptr, function, &config), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(proc<Occupancy>("cuOccupancyMaxPotentialClusterSize")(&size, function, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// A kernel that any block size may run, one declared for at most 96 threads and one with 24 KiB
// of static shared memory.
const char* kOccupancyPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry any_size() { ret; }
.visible .entry capped() .maxntid 96, 1, 1 { ret; }
.visible .entry tiled(.param .u64 out)
{
  .shared .align 4 .b8 tile[24576];
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, tile;
  ld.shared.u32 %r1, [%r1];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

using PotentialBlockSizeWithFlags = CUresult (*)(int*, int*, CUfunction, CUoccupancyB2DSize, size_t,
                                                 int, unsigned);

size_t sharedPerBlockOf(int blockSize) { return static_cast<size_t>(blockSize) * 64; }

TEST_F(Driver, MaxPotentialBlockSizeFillsAMultiprocessorWithTheLargestBlocks) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kOccupancyPtx), CUDA_SUCCESS);
  auto function = [&](const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, name),
              CUDA_SUCCESS);
    return f;
  };
  auto attribute = [](CUdevice_attribute which) {
    int value = 0;
    EXPECT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(&value, which, 0),
              CUDA_SUCCESS);
    return value;
  };
  int warp = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  int maxThreads = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  int multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  auto perMultiprocessor = [](CUfunction f, int blockSize, size_t shared) {
    int blocks = -1;
    EXPECT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                  &blocks, f, blockSize, shared),
              CUDA_SUCCESS);
    return blocks;
  };
  // The definition: among the warp multiples up to the limit (and the limit itself), the size
  // whose resident blocks hold the most threads; the largest of those.
  auto expectedSize = [&](CUfunction f, int limit, CUoccupancyB2DSize shared) {
    int best = 0, bestThreads = 0;
    std::vector<int> sizes = {limit};
    for (int size = limit / warp * warp; size > 0; size -= warp)
      if (size != limit) sizes.push_back(size);
    for (int size : sizes) {
      int threads = size * perMultiprocessor(f, size, shared ? shared(size) : 0);
      if (threads > bestThreads || (threads == bestThreads && size > best)) {
        best = size;
        bestThreads = threads;
      }
    }
    return best;
  };
  auto potential =
      CU(cuOccupancyMaxPotentialBlockSize, int*, int*, CUfunction, CUoccupancyB2DSize, size_t, int);
  struct Case {
    const char* kernel;
    int limit;  // 0: the kernel's own
    CUoccupancyB2DSize shared;
    int expectedLimit;
  };
  for (const Case& c : {Case{"any_size", 0, nullptr, maxThreads}, Case{"capped", 0, nullptr, 96},
                        Case{"any_size", 50, nullptr, 50}, Case{"tiled", 0, nullptr, maxThreads},
                        Case{"tiled", 0, sharedPerBlockOf, maxThreads}}) {
    SCOPED_TRACE(std::string(c.kernel) + " limit " + std::to_string(c.limit));
    CUfunction f = function(c.kernel);
    int minGrid = -1, blockSize = -1;
    ASSERT_EQ(potential(&minGrid, &blockSize, f, c.shared, 0, c.limit), CUDA_SUCCESS);
    EXPECT_EQ(blockSize, expectedSize(f, c.expectedLimit, c.shared));
    EXPECT_GT(blockSize, 0);
    EXPECT_LE(blockSize, c.expectedLimit);
    EXPECT_EQ(minGrid, perMultiprocessor(f, blockSize, c.shared ? c.shared(blockSize) : 0) *
                           multiprocessors);
  }
  // A block larger than the kernel allows has no occupancy.
  EXPECT_EQ(perMultiprocessor(function("capped"), 128, 0), 0);
  EXPECT_GT(perMultiprocessor(function("capped"), 96, 0), 0);

  auto withFlags = proc<PotentialBlockSizeWithFlags>("cuOccupancyMaxPotentialBlockSizeWithFlags");
  int minGrid = 0, blockSize = 0;
  EXPECT_EQ(withFlags(&minGrid, &blockSize, function("capped"), nullptr, 0, 0,
                      CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE),
            CUDA_SUCCESS);
  EXPECT_EQ(blockSize, expectedSize(function("capped"), 96, nullptr));
  EXPECT_EQ(withFlags(&minGrid, &blockSize, function("capped"), nullptr, 0, 0, 7),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(potential(nullptr, &blockSize, function("capped"), nullptr, 0, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(potential(&minGrid, nullptr, function("capped"), nullptr, 0, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(potential(&minGrid, &blockSize, function("capped"), nullptr, 0, -1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(potential(&minGrid, &blockSize, reinterpret_cast<CUfunction>(&minGrid), nullptr, 0, 0),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

TEST_F(Driver, LibraryModuleManagedVariablesAndUnifiedFunctions) {
  using LoadLibrary = CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                   CUlibraryOption*, void**, unsigned);
  CUlibrary library = nullptr;
  ASSERT_EQ(proc<LoadLibrary>("cuLibraryLoadData")(&library, kPtx, nullptr, nullptr, 0, nullptr,
                                                   nullptr, 0),
            CUDA_SUCCESS);
  auto managed = CU(cuLibraryGetManaged, CUdeviceptr*, size_t*, CUlibrary, const char*);
  CUdeviceptr address = 0;
  size_t bytes = 0;
  ASSERT_EQ(managed(&address, &bytes, library, "shared_counter"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  // A managed variable is visible to the host directly, and is managed memory to the driver.
  EXPECT_EQ(*reinterpret_cast<uint32_t*>(address), 9u);
  auto attribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  int isManaged = 0;
  EXPECT_EQ(attribute(&isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, address), CUDA_SUCCESS);
  EXPECT_EQ(isManaged, 1);
  void* host = nullptr;
  EXPECT_EQ(attribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, address), CUDA_SUCCESS);
  EXPECT_EQ(host, reinterpret_cast<void*>(address));
  CUmemLocation onDevice{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_EQ(CU13(cuMemAdvise, CUdeviceptr, size_t, CUmem_advise, CUmemLocation)(
                address, 4, CU_MEM_ADVISE_SET_READ_MOSTLY, onDevice),
            CUDA_SUCCESS);
  int readMostly = 0;
  EXPECT_EQ(CU(cuMemRangeGetAttribute, void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t)(
                &readMostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, address, 4),
            CUDA_SUCCESS);
  EXPECT_EQ(readMostly, 1);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(address), CUDA_ERROR_INVALID_VALUE);  // the module's
  // Its range bounds copies into it as any allocation's does.
  uint32_t eight[2] = {};
  EXPECT_EQ(CU(cuMemcpy, CUdeviceptr, CUdeviceptr, size_t)(
                address, reinterpret_cast<CUdeviceptr>(eight), sizeof eight),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(managed(&address, nullptr, library, "shared_counter"), CUDA_SUCCESS);
  EXPECT_EQ(managed(&address, &bytes, library, "plain"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(managed(nullptr, nullptr, library, "shared_counter"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(managed(&address, &bytes, reinterpret_cast<CUlibrary>(&bytes), "shared_counter"),
            CUDA_ERROR_INVALID_HANDLE);

  CUmodule module = nullptr;
  auto getModule = CU(cuLibraryGetModule, CUmodule*, CUlibrary);
  ASSERT_EQ(getModule(&module, library), CUDA_SUCCESS);
  CUmodule again = nullptr;
  ASSERT_EQ(getModule(&again, library), CUDA_SUCCESS);
  EXPECT_EQ(again, module);
  CUfunction function = nullptr;
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "bump"),
            CUDA_SUCCESS);
  CUdeviceptr plain = 0;
  EXPECT_EQ(CU(cuModuleGetGlobal, CUdeviceptr*, size_t*, CUmodule, const char*)(&plain, &bytes,
                                                                                module, "plain"),
            CUDA_SUCCESS);
  EXPECT_EQ(*reinterpret_cast<uint32_t*>(plain), 5u);
  // "Attempting to unload a module which was obtained from the Library Management API such as
  // cuLibraryGetModule will return CUDA_ERROR_NOT_PERMITTED"; the library keeps working.
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_ERROR_NOT_PERMITTED);
  CUkernel kernel = nullptr;
  ASSERT_EQ(CU(cuLibraryGetKernel, CUkernel*, CUlibrary, const char*)(&kernel, library, "bump"),
            CUDA_SUCCESS);
  CUfunction kernelFunction = nullptr;
  ASSERT_EQ(CU(cuKernelGetFunction, CUfunction*, CUkernel)(&kernelFunction, kernel), CUDA_SUCCESS);
  CUmodule owner = nullptr;
  ASSERT_EQ(CU(cuFuncGetModule, CUmodule*, CUfunction)(&owner, kernelFunction), CUDA_SUCCESS);
  EXPECT_EQ(owner, module);  // the library's module, as cuLibraryGetModule gives it
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(owner), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(reinterpret_cast<CUmodule>(library)),
            CUDA_ERROR_INVALID_HANDLE);  // a library handle is no module
  EXPECT_EQ(getModule(nullptr, library), CUDA_ERROR_INVALID_VALUE);

  void* pointer = nullptr;
  auto unified = CU(cuLibraryGetUnifiedFunction, void**, CUlibrary, const char*);
  EXPECT_EQ(unified(&pointer, library, "bump"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(unified(nullptr, library, "bump"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(library), CUDA_SUCCESS);
  EXPECT_EQ(getModule(&module, library), CUDA_ERROR_INVALID_HANDLE);
}

// JIT options that shape the kernels, the library loader's outputs, and the two levels of a
// kernel's settable attributes, as cuda.h documents them.
TEST_F(Driver, JitOptionsLibraryLogsAndKernelAttributeLevels) {
  // CU_JIT_MAX_THREADS_PER_BLOCK: "This limit is guaranteed not to be exceeded in any invocation
  // of the kernel"; CU_JIT_CACHE_MODE ca is reported by CU_FUNC_ATTRIBUTE_CACHE_MODE_CA.
  CUjit_option options[] = {CU_JIT_MAX_THREADS_PER_BLOCK, CU_JIT_CACHE_MODE};
  void* values[] = {reinterpret_cast<void*>(uintptr_t{64}),
                    reinterpret_cast<void*>(uintptr_t{CU_JIT_CACHE_OPTION_CA})};
  auto loadEx = CU(cuModuleLoadDataEx, CUmodule*, const void*, unsigned, CUjit_option*, void**);
  CUmodule module = nullptr;
  ASSERT_EQ(loadEx(&module, kAddOnePtx, 2, options, values), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "add_one"),
      CUDA_SUCCESS);
  auto attribute = CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  int value = 0;
  ASSERT_EQ(attribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function), CUDA_SUCCESS);
  EXPECT_EQ(value, 64);
  ASSERT_EQ(attribute(&value, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, function), CUDA_SUCCESS);
  EXPECT_EQ(value, 1);
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 128 * sizeof(uint32_t)), CUDA_SUCCESS);
  unsigned n = 128;
  void* args[] = {&data, &n};
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  EXPECT_EQ(launch(function, 1, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch(function, 2, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);

  // cuLibraryLoadData writes the JIT error log as cuModuleLoadDataEx does.
  using LoadLibrary = CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                   CUlibraryOption*, void**, unsigned);
  char log[256] = {};
  CUjit_option logOptions[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* logValues[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  CUlibrary library = nullptr;
  const char* bad = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry k() { bogus; }";
  EXPECT_EQ(proc<LoadLibrary>("cuLibraryLoadData")(&library, bad, logOptions, logValues, 2, nullptr,
                                                   nullptr, 0),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("bogus"), std::string::npos) << log;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(logValues[1]), std::strlen(log));
  // "Specifying this option with cuLibraryLoadFromFile() is invalid".
  char path[] = "/tmp/rocuda-library-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kAddOnePtx, std::strlen(kAddOnePtx)),
            static_cast<ssize_t>(std::strlen(kAddOnePtx)));
  close(fd);
  using LoadLibraryFile = CUresult (*)(CUlibrary*, const char*, CUjit_option*, void**, unsigned,
                                       CUlibraryOption*, void**, unsigned);
  CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED;
  void* preservedValue = nullptr;
  EXPECT_EQ(proc<LoadLibraryFile>("cuLibraryLoadFromFile")(&library, path, nullptr, nullptr, 0,
                                                           &preserved, &preservedValue, 1),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(proc<LoadLibraryFile>("cuLibraryLoadFromFile")(&library, path, nullptr, nullptr, 0,
                                                           nullptr, nullptr, 0),
            CUDA_SUCCESS);
  unlink(path);

  // cuKernelSetAttribute's value is what cuKernelGetAttribute "will always return"; the
  // function's own (cuFuncSetAttribute) overrides it for launches and cuFuncGetAttribute.
  CUkernel kernel = nullptr;
  ASSERT_EQ(CU(cuLibraryGetKernel, CUkernel*, CUlibrary, const char*)(&kernel, library, "add_one"),
            CUDA_SUCCESS);
  // Its parameters, read through the current context: none current is INVALID_CONTEXT.
  auto paramInfo = CU(cuKernelGetParamInfo, CUkernel, size_t, size_t*, size_t*);
  size_t paramOffset = 99, paramSize = 99;
  ASSERT_EQ(paramInfo(kernel, 1, &paramOffset, &paramSize), CUDA_SUCCESS);
  EXPECT_EQ(paramOffset, 8u);
  EXPECT_EQ(paramSize, 4u);
  EXPECT_EQ(paramInfo(kernel, 2, &paramOffset, &paramSize), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(paramInfo(kernel, 0, &paramOffset, &paramSize), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  auto kernelSet = CU(cuKernelSetAttribute, CUfunction_attribute, int, CUkernel, CUdevice);
  auto kernelGet = CU(cuKernelGetAttribute, int*, CUfunction_attribute, CUkernel, CUdevice);
  ASSERT_EQ(kernelSet(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1000, kernel, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuKernelGetFunction, CUfunction*, CUkernel)(&function, kernel), CUDA_SUCCESS);
  ASSERT_EQ(attribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1000);
  ASSERT_EQ(CU(cuFuncSetAttribute, CUfunction, CUfunction_attribute, int)(
                function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 2000),
            CUDA_SUCCESS);
  ASSERT_EQ(kernelGet(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1000);
  ASSERT_EQ(attribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 2000);
  ASSERT_EQ(kernelSet(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 3000, kernel, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(attribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 2000);  // "irrespective of whether the call to cuFuncSetAttribute() is made
                           // before or after this API call"
  // The occupancy calculator counts that limit: a block asking for more runs nowhere.
  auto occupancy = CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t);
  int blocks = -1;
  ASSERT_EQ(occupancy(&blocks, function, 32, 2001), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 0);
  ASSERT_EQ(occupancy(&blocks, function, 32, 2000), CUDA_SUCCESS);
  EXPECT_GT(blocks, 0);
  size_t available = 0;
  ASSERT_EQ(CU(cuOccupancyAvailableDynamicSMemPerBlock, size_t*, CUfunction, int, int)(
                &available, function, 1, 32),
            CUDA_SUCCESS);
  EXPECT_EQ(available, 2000u);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(library), CUDA_SUCCESS);

  // cuLinkAddData "does not accept" the link's own outputs and target.
  auto linkCreate = CU(cuLinkCreate, unsigned, CUjit_option*, void**, CUlinkState*);
  auto addData = CU(cuLinkAddData, CUlinkState, CUjitInputType, void*, size_t, const char*,
                    unsigned, CUjit_option*, void**);
  CUlinkState link = nullptr;
  ASSERT_EQ(linkCreate(0, nullptr, nullptr, &link), CUDA_SUCCESS);
  for (CUjit_option refused : {CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER,
                               CU_JIT_TARGET_FROM_CUCONTEXT, CU_JIT_TARGET}) {
    void* none = nullptr;
    EXPECT_EQ(addData(link, CU_JIT_INPUT_PTX, const_cast<char*>(kAddOnePtx),
                      std::strlen(kAddOnePtx) + 1, "add_one.ptx", 1, &refused, &none),
              CUDA_ERROR_INVALID_VALUE)
        << refused;
  }
  EXPECT_EQ(addData(link, CU_JIT_INPUT_PTX, const_cast<char*>(kAddOnePtx),
                    std::strlen(kAddOnePtx) + 1, "add_one.ptx", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuLinkDestroy, CUlinkState)(link), CUDA_SUCCESS);
}

// Limits, flags and entry-point versions as cuda.h documents them.
TEST_F(Driver, QueryOnlyLimitsPrimaryFlagsAndNewerEntryPointVersions) {
  auto setLimit = CU(cuCtxSetLimit, CUlimit, size_t);
  auto getLimit = CU(cuCtxGetLimit, size_t*, CUlimit);
  size_t before = 0, after = 0;
  for (CUlimit queried : {CU_LIMIT_SHMEM_SIZE, CU_LIMIT_CIG_ENABLED}) {
    ASSERT_EQ(getLimit(&before, queried), CUDA_SUCCESS);
    EXPECT_EQ(setLimit(queried, 1000), CUDA_ERROR_INVALID_VALUE) << queried;
    ASSERT_EQ(getLimit(&after, queried), CUDA_SUCCESS);
    EXPECT_EQ(after, before);  // "can only be queried, cannot be set"
  }
  // A stack size no device could hold for all its threads fails, and the limit stays.
  ASSERT_EQ(setLimit(CU_LIMIT_STACK_SIZE, 64 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_STACK_SIZE, size_t{1} << 40), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(getLimit(&after, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(after, 64u * 1024);

  // "If the specified CUDA version is greater than the driver version, the API will return
  // CUDA_ERROR_INVALID_VALUE."
  int driver = 0;
  ASSERT_EQ(CU(cuDriverGetVersion, int*)(&driver), CUDA_SUCCESS);
  using GetProc =
      CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto getProc = proc<GetProc>("cuGetProcAddress", 12000);
  void* pfn = nullptr;
  EXPECT_EQ(getProc("cuMemAlloc", &pfn, driver + 10, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pfn, nullptr);
  EXPECT_EQ(getProc("cuMemAlloc", &pfn, driver, 0, nullptr), CUDA_SUCCESS);
  EXPECT_NE(pfn, nullptr);

  // The primary context's flags are one value, whichever call set them.
  CUcontext primary = nullptr;
  ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxPushCurrent, CUcontext)(primary), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetFlags, unsigned)(CU_CTX_SCHED_YIELD), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 0;
  ASSERT_EQ(CU(cuDevicePrimaryCtxGetState, CUdevice, unsigned*, int*)(0, &flags, &active),
            CUDA_SUCCESS);
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_YIELD});
  ASSERT_EQ(CU(cuCtxSetFlags, unsigned)(0), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(CU(cuCtxPopCurrent, CUcontext*)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, CUdevice)(0), CUDA_SUCCESS);

  // cuCtxCreate_v4: a negative affinity count is an invalid parameter.
  CUexecAffinityParam affinity{};
  CUctxCreateParams params{&affinity, -1, nullptr};
  CUcontext created = nullptr;
  EXPECT_EQ(CU13(cuCtxCreate, CUcontext*, CUctxCreateParams*, unsigned, CUdevice)(&created, &params,
                                                                                  0, 0),
            CUDA_ERROR_INVALID_VALUE);
}

// ---- Documented errors of copies, registration, modules and the linker ----

TEST_F(Driver, CopiesHonourTheirDocumentedBounds) {
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 1024), CUDA_SUCCESS);
  std::vector<uint8_t> host(8192, 1);
  // Unified cuMemcpy: a side inside an allocation must hold the whole range.
  auto copy = CU(cuMemcpy, CUdeviceptr, CUdeviceptr, size_t);
  auto hostAddress = reinterpret_cast<CUdeviceptr>(host.data());
  EXPECT_EQ(copy(device, hostAddress, 8192), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(copy(hostAddress, device + 512, 1024), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(copy(device, hostAddress, 1024), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)(device, hostAddress, 4096,
                                                                          nullptr),
            CUDA_ERROR_INVALID_VALUE);
  // cuMemcpy2D: "srcPitch must be greater than or equal to WidthInBytes + srcXInBytes" (and
  // dst), and no pitch above CU_DEVICE_ATTRIBUTE_MAX_PITCH.
  CUDA_MEMCPY2D shape{};
  shape.srcMemoryType = CU_MEMORYTYPE_HOST;
  shape.srcHost = host.data();
  shape.srcPitch = 64;
  shape.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  shape.dstDevice = device;
  shape.dstPitch = 128;
  shape.WidthInBytes = 64;
  shape.Height = 4;
  auto copy2D = CU(cuMemcpy2D, const CUDA_MEMCPY2D*);
  EXPECT_EQ(copy2D(&shape), CUDA_SUCCESS);
  shape.srcXInBytes = 1;
  EXPECT_EQ(copy2D(&shape), CUDA_ERROR_INVALID_VALUE);
  shape.srcXInBytes = 0;
  shape.dstXInBytes = 65;
  EXPECT_EQ(copy2D(&shape), CUDA_ERROR_INVALID_VALUE);
  shape.dstXInBytes = 0;
  int maxPitch = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &maxPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0),
            CUDA_SUCCESS);
  shape.srcPitch = static_cast<size_t>(maxPitch) + 1;
  shape.Height = 1;
  EXPECT_EQ(copy2D(&shape), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);

  // The devices do not report read-only host registration: the flag fails as documented.
  int readOnly = -1;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &readOnly, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(readOnly, 0);
  EXPECT_EQ(CU(cuMemHostRegister, void*, size_t, unsigned)(host.data(), 4096,
                                                           CU_MEMHOSTREGISTER_READ_ONLY),
            CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(Driver, ModuleLoadsReportVersionWallTimeAndGlobals) {
  // A PTX ISA newer than the driver's: CUDA_ERROR_UNSUPPORTED_PTX_VERSION.
  std::string future = kAddOnePtx;
  future.replace(future.find(".version 7.0"), 12, ".version 99.9");
  CUmodule module = nullptr;
  EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, future.c_str()),
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  future.replace(future.find(".version 99.9"), 13, ".version 10.0");
  EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, future.c_str()),
            CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  // A later minor version of the newest major one loads when every instruction is known.
  future.replace(future.find(".version 10.0"), 13, ".version 9.4");
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, future.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  // CU_JIT_WALL_TIME: the option's value becomes the milliseconds spent, a float.
  CUjit_option options[] = {CU_JIT_WALL_TIME};
  void* values[1] = {};
  float sentinel = -12345.0f;
  std::memcpy(&values[0], &sentinel, sizeof sentinel);
  ASSERT_EQ(CU(cuModuleLoadDataEx, CUmodule*, const void*, unsigned, CUjit_option*, void**)(
                &module, kAddOnePtx, 1, options, values),
            CUDA_SUCCESS);
  float milliseconds = -1;
  std::memcpy(&milliseconds, &values[0], sizeof milliseconds);
  EXPECT_GE(milliseconds, 0.0f);
  // An option that is no CUjit_option is refused.
  CUjit_option unknown[] = {static_cast<CUjit_option>(9999)};
  CUmodule refused = nullptr;
  EXPECT_EQ(CU(cuModuleLoadDataEx, CUmodule*, const void*, unsigned, CUjit_option*, void**)(
                &refused, kAddOnePtx, 1, unknown, values),
            CUDA_ERROR_INVALID_VALUE);
  CUlinkState state = nullptr;
  EXPECT_EQ(
      CU(cuLinkCreate, unsigned, CUjit_option*, void**, CUlinkState*)(1, unknown, values, &state),
      CUDA_ERROR_INVALID_VALUE);
  // cuModuleGetGlobal: "One of the parameters dptr or bytes (not both) can be NULL".
  const char* withGlobal = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 counter = 5;
)";
  CUmodule globals = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&globals, withGlobal), CUDA_SUCCESS);
  auto getGlobal = CU(cuModuleGetGlobal, CUdeviceptr*, size_t*, CUmodule, const char*);
  size_t bytes = 0;
  EXPECT_EQ(getGlobal(nullptr, &bytes, globals, "counter"), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  EXPECT_EQ(getGlobal(nullptr, nullptr, globals, "counter"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(globals), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

TEST_F(Driver, LinkingAnUndefinedFunctionFailsAtComplete) {
  const char* caller = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 r) missing (.param .b32 x);
.visible .entry needs_missing(.param .u64 out) {
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, 1;
  { .param .b32 x; st.param.b32 [x], %r1; .param .b32 r;
    call.uni (r), missing, (x); ld.param.b32 %r2, [r]; }
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r2;
  ret;
}
)";
  char log[1024] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
  CUlinkState state = nullptr;
  ASSERT_EQ(
      CU(cuLinkCreate, unsigned, CUjit_option*, void**, CUlinkState*)(2, options, values, &state),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuLinkAddData, CUlinkState, CUjitInputType, void*, size_t, const char*, unsigned,
               CUjit_option*, void**)(state, CU_JIT_INPUT_PTX, const_cast<char*>(caller),
                                      std::strlen(caller) + 1, "caller.ptx", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  void* image = nullptr;
  size_t size = 0;
  EXPECT_EQ(CU(cuLinkComplete, CUlinkState, void**, size_t*)(state, &image, &size),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("undefined reference to 'missing'"), std::string::npos) << log;
  EXPECT_EQ(CU(cuLinkDestroy, CUlinkState)(state), CUDA_SUCCESS);
}

// A library with a variable its kernel counts in.
constexpr const char* kCountingLibraryPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .global .align 4 .u32 launches = 100;

.visible .entry count()
{
  .reg .b32 %r<3>;
  ld.global.u32 %r1, [launches];
  add.s32 %r2, %r1, 1;
  st.global.u32 [launches], %r2;
  ret;
}
)";

TEST_F(Driver, LibrariesAreLoadedIntoEveryContextThatUsesThem) {
  // Libraries are context-independent: "the context to launch the kernel on will either be
  // taken from the specified stream hStream or the current context", and each context has the
  // library's module "associated with the current context", with its own variables.
  using LoadLibrary = CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                   CUlibraryOption*, void**, unsigned);
  CUlibrary library = nullptr;
  ASSERT_EQ(proc<LoadLibrary>("cuLibraryLoadData")(&library, kCountingLibraryPtx, nullptr, nullptr,
                                                   0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  ASSERT_EQ(CU(cuLibraryGetKernel, CUkernel*, CUlibrary, const char*)(&kernel, library, "count"),
            CUDA_SUCCESS);
  auto getModule = CU(cuLibraryGetModule, CUmodule*, CUlibrary);
  auto getGlobal = CU(cuLibraryGetGlobal, CUdeviceptr*, size_t*, CUlibrary, const char*);
  auto getFunction = CU(cuKernelGetFunction, CUfunction*, CUkernel);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  auto read = [](CUdeviceptr address) {
    uint32_t value = 0;
    EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, address, sizeof value),
              CUDA_SUCCESS);
    return value;
  };
  CUmodule first = nullptr;
  CUdeviceptr firstCount = 0;
  CUfunction firstFunction = nullptr;
  ASSERT_EQ(getModule(&first, library), CUDA_SUCCESS);
  ASSERT_EQ(getGlobal(&firstCount, nullptr, library, "launches"), CUDA_SUCCESS);
  ASSERT_EQ(getFunction(&firstFunction, kernel), CUDA_SUCCESS);

  CUcontext created = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&created, 0, 0),
            CUDA_SUCCESS);  // current now
  CUmodule second = nullptr;
  CUdeviceptr secondCount = 0;
  CUfunction secondFunction = nullptr;
  ASSERT_EQ(getModule(&second, library), CUDA_SUCCESS);
  EXPECT_NE(second, first);
  CUmodule again = nullptr;
  ASSERT_EQ(getModule(&again, library), CUDA_SUCCESS);
  EXPECT_EQ(again, second);
  ASSERT_EQ(getGlobal(&secondCount, nullptr, library, "launches"), CUDA_SUCCESS);
  EXPECT_NE(secondCount, firstCount);
  ASSERT_EQ(getFunction(&secondFunction, kernel), CUDA_SUCCESS);
  EXPECT_NE(secondFunction, firstFunction);
  CUmodule owner = nullptr;
  ASSERT_EQ(CU(cuFuncGetModule, CUmodule*, CUfunction)(&owner, secondFunction), CUDA_SUCCESS);
  EXPECT_EQ(owner, second);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(second), CUDA_ERROR_NOT_PERMITTED);

  // The CUkernel launched here counts in this context's variable, the other's stays.
  EXPECT_EQ(
      launch(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
      CUDA_SUCCESS);
  EXPECT_EQ(launch(secondFunction, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(read(secondCount), 102u);
  EXPECT_EQ(read(firstCount), 100u);
  // The CUkernel's own attributes are the library's in every context.
  ASSERT_EQ(CU(cuKernelSetAttribute, CUfunction_attribute, int, CUkernel, CUdevice)(
                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1234, kernel, 0),
            CUDA_SUCCESS);
  int value = 0;
  ASSERT_EQ(CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction)(
                &value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, secondFunction),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1234);

  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  // cuKernelGetFunction answers "for the current context": none is an error.
  CUcontext popped = nullptr;
  while (CU(cuCtxPopCurrent, CUcontext*)(&popped) == CUDA_SUCCESS) {
  }
  CUfunction function = nullptr;
  EXPECT_EQ(getFunction(&function, kernel), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  EXPECT_EQ(getFunction(&function, kernel), CUDA_SUCCESS);
  EXPECT_EQ(function, firstFunction);
  EXPECT_EQ(launch(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(read(firstCount), 101u);
  // A context created after the other went is loaded afresh (the variable starts at 100 again).
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&created, 0, 0),
            CUDA_SUCCESS);
  CUdeviceptr thirdCount = 0;
  ASSERT_EQ(getGlobal(&thirdCount, nullptr, library, "launches"), CUDA_SUCCESS);
  EXPECT_EQ(read(thirdCount), 100u);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(library), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// A kernel with 4 KB of static shared memory and dynamic shared memory after it.
constexpr const char* kStaticSharedPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.extern .shared .align 4 .b8 dynamicTile[];
.visible .entry staticShared(.param .u64 out)
{
  .shared .align 4 .b8 tile[4096];
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  mov.u32 %r1, 7;
  st.shared.u32 [tile], %r1;
  st.shared.u32 [dynamicTile], %r1;
  ld.shared.u32 %r2, [tile];
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

// Function, stream, context and event corners as cuda.h documents them.
TEST_F(Driver, DocumentedCornersOfFunctionsStreamsContextsAndEvents) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kStaticSharedPtx), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module,
                                                                        "staticShared"),
            CUDA_SUCCESS);
  // The default dynamic limit is MAX_SHARED_MEMORY_PER_BLOCK less the static shared memory, and
  // a launch beyond it fails.
  int perBlock = 0, staticBytes = 0, maxDynamic = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &perBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0),
            CUDA_SUCCESS);
  auto attribute = CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  ASSERT_EQ(attribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function), CUDA_SUCCESS);
  ASSERT_EQ(attribute(&maxDynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
            CUDA_SUCCESS);
  EXPECT_EQ(staticBytes, 4096);
  EXPECT_EQ(maxDynamic, perBlock - staticBytes);
  CUdeviceptr out = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, 4), CUDA_SUCCESS);
  void* args[] = {&out};
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  EXPECT_EQ(launch(function, 1, 1, 1, 32, 1, 1, static_cast<unsigned>(maxDynamic + 4), nullptr,
                   args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(function, 1, 1, 1, 32, 1, 1, static_cast<unsigned>(maxDynamic), nullptr, args,
                   nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  // The dynamic shared memory that lets two blocks share a multiprocessor lets two blocks run.
  size_t available = 0;
  ASSERT_EQ(CU(cuOccupancyAvailableDynamicSMemPerBlock, size_t*, CUfunction, int, int)(
                &available, function, 2, 32),
            CUDA_SUCCESS);
  int blocks = 0;
  ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                &blocks, function, 32, available),
            CUDA_SUCCESS);
  EXPECT_GE(blocks, 2);
  // Names: "If either **name or hfunc is NULL, CUDA_ERROR_INVALID_VALUE is returned."
  const char* name = nullptr;
  EXPECT_EQ(CU(cuFuncGetName, const char**, CUfunction)(&name, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuKernelGetName, const char**, CUkernel)(&name, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(nullptr), CUDA_ERROR_INVALID_VALUE);
  // A library's function belongs to a module too.
  using LoadLibrary = CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                   CUlibraryOption*, void**, unsigned);
  CUlibrary library = nullptr;
  ASSERT_EQ(proc<LoadLibrary>("cuLibraryLoadData")(&library, kAddOnePtx, nullptr, nullptr, 0,
                                                   nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  ASSERT_EQ(CU(cuLibraryGetKernel, CUkernel*, CUlibrary, const char*)(&kernel, library, "add_one"),
            CUDA_SUCCESS);
  CUfunction libraryFunction = nullptr, again = nullptr;
  ASSERT_EQ(CU(cuKernelGetFunction, CUfunction*, CUkernel)(&libraryFunction, kernel), CUDA_SUCCESS);
  CUmodule owner = nullptr;
  ASSERT_EQ(CU(cuFuncGetModule, CUmodule*, CUfunction)(&owner, libraryFunction), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&again, owner, "add_one"),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(library), CUDA_SUCCESS);

  // cuStreamGetCtx_v2: the regular context, and no green context.
  CUcontext ctx = nullptr;
  CUgreenCtx green = reinterpret_cast<CUgreenCtx>(&ctx);
  ASSERT_EQ(CU13(cuStreamGetCtx, CUstream, CUcontext*, CUgreenCtx*)(nullptr, &ctx, &green),
            CUDA_SUCCESS);
  EXPECT_EQ(ctx, context_);
  EXPECT_EQ(green, nullptr);
  // "Only one of the scheduling flags can be set."
  CUcontext created = nullptr;
  EXPECT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(
                &created, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuCtxSetFlags, unsigned)(CU_CTX_SCHED_SPIN | CU_CTX_SCHED_BLOCKING_SYNC),
            CUDA_ERROR_INVALID_VALUE);

  // External event records and waits become nodes of a capture, and are invalid outside one.
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto recordWithFlags = CU(cuEventRecordWithFlags, CUevent, CUstream, unsigned);
  auto waitEvent = CU(cuStreamWaitEvent, CUstream, CUevent, unsigned);
  EXPECT_EQ(recordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(waitEvent(stream, event, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream,
                                                                    CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(waitEvent(stream, event, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
  EXPECT_EQ(recordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream, &graph), CUDA_SUCCESS);
  CUgraphNode nodes[4] = {};
  size_t count = 4;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nodes, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  CUgraphNodeType type{};
  ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(nodes[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(nodes[1], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// ---- Entry points CUDA 13's libcuda exports beyond what cudart asks for ----

TEST_F(Driver, EveryCuda13StubSymbolIsExportedAndHandedOut) {
  // Entry points a program linking libcuda may name (CUDA 13's stub exports them) that no cudart
  // requests: each must be there, or the program does not start.
  const char* const names[] = {"cuCheckpointProcessCheckpoint",
                               "cuCheckpointProcessGetRestoreThreadId",
                               "cuCheckpointProcessGetState",
                               "cuCheckpointProcessLock",
                               "cuCheckpointProcessRestore",
                               "cuCheckpointProcessUnlock",
                               "cuCoredumpGetAttribute",
                               "cuCoredumpGetAttributeGlobal",
                               "cuCoredumpSetAttribute",
                               "cuCoredumpSetAttributeGlobal",
                               "cuCtxFromGreenCtx",
                               "cuCtxGetDevResource",
                               "cuCtxGetExecAffinity",
                               "cuCtxRecordEvent",
                               "cuCtxWaitEvent",
                               "cuDevResourceGenerateDesc",
                               "cuDevSmResourceSplitByCount",
                               "cuDeviceGetDevResource",
                               "cuDeviceGetExecAffinitySupport",
                               "cuDeviceGetLuid",
                               "cuFuncIsLoaded",
                               "cuFuncLoad",
                               "cuGraphAddExternalSemaphoresSignalNode",
                               "cuGraphAddExternalSemaphoresWaitNode",
                               "cuGraphExecExternalSemaphoresSignalNodeSetParams",
                               "cuGraphExecExternalSemaphoresWaitNodeSetParams",
                               "cuGraphExternalSemaphoresSignalNodeGetParams",
                               "cuGraphExternalSemaphoresSignalNodeSetParams",
                               "cuGraphExternalSemaphoresWaitNodeGetParams",
                               "cuGraphExternalSemaphoresWaitNodeSetParams",
                               "cuGreenCtxCreate",
                               "cuGreenCtxDestroy",
                               "cuGreenCtxGetDevResource",
                               "cuGreenCtxGetId",
                               "cuGreenCtxRecordEvent",
                               "cuGreenCtxStreamCreate",
                               "cuGreenCtxWaitEvent",
                               "cuLaunchCooperativeKernelMultiDevice",
                               "cuMemBatchDecompressAsync",
                               "cuMemGetHandleForAddressRange",
                               "cuMemMapArrayAsync",
                               "cuModuleEnumerateFunctions",
                               "cuModuleGetFunctionCount",
                               "cuMulticastAddDevice",
                               "cuMulticastBindAddr",
                               "cuMulticastBindMem",
                               "cuMulticastCreate",
                               "cuMulticastGetGranularity",
                               "cuMulticastUnbind",
                               "cuPointerSetAttribute",
                               "cuStreamGetGreenCtx",
                               "cuTensorMapEncodeIm2col",
                               "cuTensorMapEncodeIm2colWide",
                               "cuTensorMapEncodeTiled",
                               "cuTensorMapReplaceAddress",
                               "cuTexRefGetBorderColor",
                               "cuTexRefGetMaxAnisotropy",
                               "cuTexRefGetMipmapFilterMode",
                               "cuTexRefGetMipmapLevelBias",
                               "cuTexRefGetMipmapLevelClamp",
                               "cuTexRefGetMipmappedArray",
                               "cuTexRefSetBorderColor",
                               "cuTexRefSetMaxAnisotropy",
                               "cuTexRefSetMipmapFilterMode",
                               "cuTexRefSetMipmapLevelBias",
                               "cuTexRefSetMipmapLevelClamp",
                               "cuTexRefSetMipmappedArray"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    EXPECT_NE(dlsym(library(), name), nullptr);
    void* function = nullptr;
    CUdriverProcAddressQueryResult found{};
    EXPECT_EQ(CU13(cuGetProcAddress, const char*, void**, int, cuuint64_t,
                   CUdriverProcAddressQueryResult*)(name, &function, 13000, 0, &found),
              CUDA_SUCCESS);
    EXPECT_NE(function, nullptr);
  }
  // Facilities no device here has answer their documented error.
  EXPECT_EQ(CU(cuTensorMapEncodeIm2col, void*)(nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(CU(cuMulticastCreate, void*, const void*)(nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(CU(cuCheckpointProcessGetState, int, void*)(0, nullptr), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(Driver, ModuleFunctionsLoadingStateAndPointerAttributes) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kAddOnePtx), CUDA_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(CU(cuModuleGetFunctionCount, unsigned*, CUmodule)(&count, module), CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  CUfunction function = nullptr;
  ASSERT_EQ(CU(cuModuleEnumerateFunctions, CUfunction*, unsigned, CUmodule)(&function, 1, module),
            CUDA_SUCCESS);
  const char* name = nullptr;
  ASSERT_EQ(CU(cuFuncGetName, const char**, CUfunction)(&name, function), CUDA_SUCCESS);
  EXPECT_STREQ(name, "add_one");
  // The CPU device compiles a kernel at its first launch, or at cuFuncLoad.
  CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_MAX;
  auto isLoaded = CU(cuFuncIsLoaded, CUfunctionLoadingState*, CUfunction);
  ASSERT_EQ(isLoaded(&state, function), CUDA_SUCCESS);
  EXPECT_EQ(state, CU_FUNCTION_LOADING_STATE_UNLOADED);
  ASSERT_EQ(CU(cuFuncLoad, CUfunction)(function), CUDA_SUCCESS);
  ASSERT_EQ(isLoaded(&state, function), CUDA_SUCCESS);
  EXPECT_EQ(state, CU_FUNCTION_LOADING_STATE_LOADED);
  EXPECT_EQ(isLoaded(nullptr, function), CUDA_ERROR_INVALID_VALUE);

  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 256), CUDA_SUCCESS);
  auto setAttribute = CU(cuPointerSetAttribute, const void*, CUpointer_attribute, CUdeviceptr);
  int on = 1;
  // SYNC_MEMOPS reads back as set ("can either be set (1) or unset (0)").
  auto getAttribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  int sync = -1;
  ASSERT_EQ(getAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, device + 8), CUDA_SUCCESS);
  EXPECT_EQ(sync, 0);
  EXPECT_EQ(setAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, device), CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, device + 8), CUDA_SUCCESS);
  EXPECT_EQ(sync, 1);
  int off = 0;
  EXPECT_EQ(setAttribute(&off, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, device + 8), CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, device), CUDA_SUCCESS);
  EXPECT_EQ(sync, 0);
  // Stream-ordered allocations "are not context associated": their CONTEXT is NULL.
  CUdeviceptr ordered = 0;
  ASSERT_EQ(CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream)(&ordered, 64, nullptr),
            CUDA_SUCCESS);
  CUcontext owner = reinterpret_cast<CUcontext>(1);
  ASSERT_EQ(getAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, ordered), CUDA_SUCCESS);
  EXPECT_EQ(owner, nullptr);
  ASSERT_EQ(getAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, device), CUDA_SUCCESS);
  EXPECT_EQ(owner, context_);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(ordered, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(setAttribute(&on, CU_POINTER_ATTRIBUTE_CONTEXT, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 0x10), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);

  int affinity = -1;
  ASSERT_EQ(CU(cuDeviceGetExecAffinitySupport, int*, CUexecAffinityType, CUdevice)(
                &affinity, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(affinity, 0);
  CUexecAffinityParam param{};
  EXPECT_EQ(CU(cuCtxGetExecAffinity, CUexecAffinityParam*, CUexecAffinityType)(
                &param, CU_EXEC_AFFINITY_TYPE_SM_COUNT),
            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

void CUDA_CB_waitForGate(void* gate) {
  while (!static_cast<std::atomic<bool>*>(gate)->load()) usleep(1000);
}
void CUDA_CB_setFlag(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true); }

TEST_F(Driver, ContextWideEventRecordsAndWaits) {
  // cuCtxRecordEvent: the event stands for all the context's work at the call, on every stream;
  // cuCtxWaitEvent: all later work of the context waits for it.
  CUstream gated = nullptr, other = nullptr;
  auto createStream = CU(cuStreamCreate, CUstream*, unsigned);
  ASSERT_EQ(createStream(&gated, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(createStream(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent all = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&all, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  std::atomic<bool> gate{false}, after{false};
  auto hostFunc = CU(cuLaunchHostFunc, CUstream, CUhostFn, void*);
  ASSERT_EQ(hostFunc(gated, CUDA_CB_waitForGate, &gate), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxRecordEvent, CUcontext, CUevent)(context_, all), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(all), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(CU(cuCtxWaitEvent, CUcontext, CUevent)(nullptr, all), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc(other, CUDA_CB_setFlag, &after), CUDA_SUCCESS);
  usleep(20000);
  EXPECT_FALSE(after.load());  // held by the context-wide wait
  gate.store(true);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(all), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(other), CUDA_SUCCESS);
  EXPECT_TRUE(after.load());
  EXPECT_EQ(CU(cuCtxRecordEvent, CUcontext, CUevent)(reinterpret_cast<CUcontext>(&gate), all),
            CUDA_ERROR_INVALID_CONTEXT);
  // A synchronization of the context covers its context-wide records.
  gate.store(false);
  ASSERT_EQ(hostFunc(gated, CUDA_CB_waitForGate, &gate), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxRecordEvent, CUcontext, CUevent)(context_, all), CUDA_SUCCESS);
  gate.store(true);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(all), CUDA_SUCCESS);

  // Another context may wait for this context's event ("hEvent may be from a different
  // context"); it may not record into it.
  CUcontext second = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&second, 0, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);  // creation made it current
  EXPECT_EQ(CU(cuCtxWaitEvent, CUcontext, CUevent)(second, all), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxRecordEvent, CUcontext, CUevent)(second, all), CUDA_ERROR_INVALID_HANDLE);
  // While a stream of the context captures, both refuse and invalidate the capture.
  CUstream capturing = nullptr;
  ASSERT_EQ(createStream(&capturing, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto beginCapture = CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode);
  auto isCapturing = CU(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*);
  auto endCapture = CU(cuStreamEndCapture, CUstream, CUgraph*);
  for (bool record : {true, false}) {
    ASSERT_EQ(beginCapture(capturing, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    CUresult refused = record ? CU(cuCtxRecordEvent, CUcontext, CUevent)(context_, all)
                              : CU(cuCtxWaitEvent, CUcontext, CUevent)(context_, all);
    EXPECT_EQ(refused, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    ASSERT_EQ(isCapturing(capturing, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph graph = reinterpret_cast<CUgraph>(&gate);
    EXPECT_EQ(endCapture(capturing, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
  }
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(capturing), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(second), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(all), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(gated), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(other), CUDA_SUCCESS);
}

// Peer access with one device: the current context is no peer of itself (INVALID_CONTEXT), nor
// is another context on the same device (INVALID_DEVICE); nothing was enabled to disable.
TEST_F(Driver, PeerAccessOnOneDevice) {
  auto enable = CU(cuCtxEnablePeerAccess, CUcontext, unsigned);
  EXPECT_EQ(enable(context_, 0), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext second = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&second, 0, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  EXPECT_EQ(enable(second, 0), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(enable(second, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuCtxDisablePeerAccess, CUcontext)(second), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  int can = -1;
  EXPECT_EQ(CU(cuDeviceCanAccessPeer, int*, CUdevice, CUdevice)(&can, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(second), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

TEST_F(Driver, TextureReferencesKeepTheirMipmapSampling) {
  CUtexref ref = nullptr;
  ASSERT_EQ(CU(cuTexRefCreate, CUtexref*)(&ref), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuTexRefSetMipmapFilterMode, CUtexref, CUfilter_mode)(ref, CU_TR_FILTER_MODE_LINEAR),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuTexRefSetMipmapLevelBias, CUtexref, float)(ref, 0.5f), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuTexRefSetMipmapLevelClamp, CUtexref, float, float)(ref, 1.0f, 4.0f), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuTexRefSetMaxAnisotropy, CUtexref, unsigned)(ref, 8), CUDA_SUCCESS);
  float border[4] = {1, 2, 3, 4};
  EXPECT_EQ(CU(cuTexRefSetBorderColor, CUtexref, float*)(ref, border), CUDA_SUCCESS);
  CUfilter_mode mode = CU_TR_FILTER_MODE_POINT;
  EXPECT_EQ(CU(cuTexRefGetMipmapFilterMode, CUfilter_mode*, CUtexref)(&mode, ref), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_TR_FILTER_MODE_LINEAR);
  float bias = 0, low = 0, high = 0, got[4] = {};
  EXPECT_EQ(CU(cuTexRefGetMipmapLevelBias, float*, CUtexref)(&bias, ref), CUDA_SUCCESS);
  EXPECT_EQ(bias, 0.5f);
  EXPECT_EQ(CU(cuTexRefGetMipmapLevelClamp, float*, float*, CUtexref)(&low, &high, ref),
            CUDA_SUCCESS);
  EXPECT_EQ(low, 1.0f);
  EXPECT_EQ(high, 4.0f);
  int anisotropy = 0;
  EXPECT_EQ(CU(cuTexRefGetMaxAnisotropy, int*, CUtexref)(&anisotropy, ref), CUDA_SUCCESS);
  EXPECT_EQ(anisotropy, 8);
  EXPECT_EQ(CU(cuTexRefGetBorderColor, float*, CUtexref)(got, ref), CUDA_SUCCESS);
  EXPECT_EQ(got[3], 4.0f);
  CUmipmappedArray none = nullptr;
  EXPECT_EQ(CU(cuTexRefGetMipmappedArray, CUmipmappedArray*, CUtexref)(&none, ref),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuTexRefSetMipmappedArray, CUtexref, CUmipmappedArray, unsigned)(
                ref, reinterpret_cast<CUmipmappedArray>(&bias), CU_TRSA_OVERRIDE_FORMAT),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuTexRefDestroy, CUtexref)(ref), CUDA_SUCCESS);
}

// ---- Facilities unavailable here ----
TEST_F(Driver, UnavailableFacilitiesAnswerTheirDocumentedErrors) {
  // Exported and handed out by cuGetProcAddress, unlike unimplemented entry points.
  EXPECT_NE(dlsym(library(), "cuImportExternalSemaphore"), nullptr);
  EXPECT_NE(dlsym(library(), "cuGraphicsMapResources_ptsz"), nullptr);
  // OpenGL buffer interop exists, but this process never loaded OpenGL (graphics_interop_test
  // covers it with a GL context).
  unsigned count = 7;
  EXPECT_EQ(CU(cuGLGetDevices, unsigned*, CUdevice*, unsigned, int)(&count, nullptr, 0, 1),
            CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  EXPECT_EQ(count, 7u);
  CUgraphicsResource resource = nullptr;
  auto registerBuffer = CU(cuGraphicsGLRegisterBuffer, CUgraphicsResource*, unsigned, unsigned);
  EXPECT_EQ(registerBuffer(&resource, 1, 0), CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  EXPECT_EQ(CU(cuGraphicsGLRegisterImage, CUgraphicsResource*, unsigned, unsigned, unsigned)(
                &resource, 1, 0x0DE1, 0),
            CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  CUgraphicsResource bogus = reinterpret_cast<CUgraphicsResource>(&count);
  EXPECT_EQ(CU(cuGraphicsMapResources, unsigned, CUgraphicsResource*, CUstream)(1, &bogus, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuImportExternalSemaphore, void*, const void*)(nullptr, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(CU(cuDestroyExternalSemaphore, void*)(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuDeviceGetNvSciSyncAttributes, void*, CUdevice, int)(nullptr, 0, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(CU(cuEGLStreamConsumerConnect, void*, void*)(nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuVDPAUGetDevice, CUdevice*, void*, void*)(nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace rocuda::cuda::testing

namespace rocuda::cuda::testing {
namespace {

// ---- The JIT linker with PTX inputs ----
const char* kLinkCaller = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 ret) twice(.param .b32 x);
.extern .global .align 4 .u32 scale;
.visible .entry run(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, 3;
  {
    .param .b32 a;
    .param .b32 b;
    st.param.b32 [a], %r1;
    call.uni (b), twice, (a);
    ld.param.b32 %r2, [b];
  }
  ld.global.u32 %r3, [scale];
  mul.lo.s32 %r2, %r2, %r3;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";

const char* kLinkCallee = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 scale = 10;
.visible .func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
)";

using LinkCreate = CUresult (*)(unsigned, CUjit_option*, void**, CUlinkState*);
using LinkAddData = CUresult (*)(CUlinkState, CUjitInputType, void*, size_t, const char*, unsigned,
                                 CUjit_option*, void**);
using LinkAddFile = CUresult (*)(CUlinkState, CUjitInputType, const char*, unsigned, CUjit_option*,
                                 void**);

class Linker : public Driver {
 protected:
  CUresult addPtx(CUlinkState state, const char* text, const char* name) {
    return addData_(state, CU_JIT_INPUT_PTX, const_cast<char*>(text), std::strlen(text) + 1, name,
                    0, nullptr, nullptr);
  }
  LinkCreate create_ = proc<LinkCreate>("cuLinkCreate", 12090);
  LinkAddData addData_ = proc<LinkAddData>("cuLinkAddData", 12090);
  LinkAddFile addFile_ = proc<LinkAddFile>("cuLinkAddFile", 12090);
  CUresult (*complete_)(CUlinkState, void**, size_t*) =
      proc<CUresult (*)(CUlinkState, void**, size_t*)>("cuLinkComplete", 12090);
  CUresult (*destroy_)(CUlinkState) = proc<CUresult (*)(CUlinkState)>("cuLinkDestroy", 12090);
};

TEST_F(Linker, LinkedPtxLoadsAndRunsAcrossModules) {
  CUlinkState state = nullptr;
  ASSERT_EQ(create_(0, nullptr, nullptr, &state), CUDA_SUCCESS);
  ASSERT_EQ(addPtx(state, kLinkCaller, "caller.ptx"), CUDA_SUCCESS);
  // The second input through a file, as cuLinkAddFile reads it.
  char path[] = "/tmp/rocuda_link_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kLinkCallee, std::strlen(kLinkCallee)),
            static_cast<ssize_t>(std::strlen(kLinkCallee)));
  close(fd);
  ASSERT_EQ(addFile_(state, CU_JIT_INPUT_PTX, path, 0, nullptr, nullptr), CUDA_SUCCESS);
  std::remove(path);
  void* image = nullptr;
  size_t size = 0;
  ASSERT_EQ(complete_(state, &image, &size), CUDA_SUCCESS);
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(std::strlen(static_cast<const char*>(image)) + 1, size);

  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, image), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(state), CUDA_SUCCESS);  // the module keeps no reference to the image
  CUfunction run = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&run, module, "run"),
            CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, 4), CUDA_SUCCESS);
  void* params[] = {&out};
  ASSERT_EQ(
      CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
         unsigned, CUstream, void**, void**)(run, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  uint32_t value = 0;
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, out, 4), CUDA_SUCCESS);
  EXPECT_EQ(value, 60u);  // twice(3) * scale
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// Dynamic parallelism through NVIDIA's device runtime library, linked as PyCUDA's DynamicModule
// links it: libcudadevrt defines the launch and stream calls nvcc emits in terms of the driver's
// __cuda_syscall_cnpv2* calls, which the CPU device supplies. Each block launches its child into
// a device-side stream of its own, then records and waits for an event.
const char* kLaunchesChildren = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2(.param .b64 f,
    .param .align 4 .b8 grid[12], .param .align 4 .b8 block[12], .param .b32 shared);
.extern .func (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2(.param .b64 b, .param .b64 s);
.extern .func (.param .b32 func_retval0) __cudaCDP2StreamCreateWithFlags(.param .b64 s,
    .param .b32 flags);
.extern .func (.param .b32 func_retval0) __cudaCDP2StreamDestroy(.param .b64 s);
.extern .func (.param .b32 func_retval0) __cudaCDP2EventCreateWithFlags(.param .b64 e,
    .param .b32 flags);
.extern .func (.param .b32 func_retval0) __cudaCDP2EventRecord(.param .b64 e, .param .b64 s);
.extern .func (.param .b32 func_retval0) __cudaCDP2StreamWaitEvent(.param .b64 s, .param .b64 e,
    .param .b32 flags);
.extern .func (.param .b32 func_retval0) __cudaCDP2EventDestroy(.param .b64 e);
.visible .entry child(.param .u64 out, .param .u32 base)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [base];
  mov.u32 %r2, %tid.x;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
.visible .entry parent(.param .u64 out)
{
  .local .align 8 .b8 slot[8];
  .local .align 8 .b8 eventSlot[8];
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd5, slot;
  cvta.local.u64 %rd6, %rd5;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd6;
  .param .b32 param1;
  st.param.b32 [param1], 1;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2StreamCreateWithFlags, (param0, param1);
  ld.param.b32 %r4, [retval0];
  }
  setp.ne.s32 %p1, %r4, 0;
  @%p1 trap;
  ld.local.u64 %rd7, [slot];
  mov.u64 %rd2, child;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd2;
  .param .align 4 .b8 param1[12];
  st.param.b32 [param1+0], 1;
  st.param.b32 [param1+4], 1;
  st.param.b32 [param1+8], 1;
  .param .align 4 .b8 param2[12];
  st.param.b32 [param2+0], 32;
  st.param.b32 [param2+4], 1;
  st.param.b32 [param2+8], 1;
  .param .b32 param3;
  st.param.b32 [param3], 0;
  .param .b64 retval0;
  call.uni (retval0), __cudaCDP2GetParameterBufferV2, (param0, param1, param2, param3);
  ld.param.b64 %rd3, [retval0];
  }
  setp.eq.s64 %p1, %rd3, 0;
  @%p1 bra DONE;
  mov.u32 %r1, %ctaid.x;
  shl.b32 %r2, %r1, 5;
  st.u64 [%rd3], %rd1;
  st.u32 [%rd3+8], %r2;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd3;
  .param .b64 param1;
  st.param.b64 [param1], %rd7;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2LaunchDeviceV2, (param0, param1);
  ld.param.b32 %r3, [retval0];
  }
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd7;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2StreamDestroy, (param0);
  ld.param.b32 %r5, [retval0];
  }
  setp.ne.s32 %p1, %r5, 0;
  @%p1 trap;
  // An event recorded on the (destroyed) stream's successor and waited for: each call succeeds.
  mov.u64 %rd5, eventSlot;
  cvta.local.u64 %rd6, %rd5;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd6;
  .param .b32 param1;
  st.param.b32 [param1], 2;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2EventCreateWithFlags, (param0, param1);
  ld.param.b32 %r4, [retval0];
  }
  ld.local.u64 %rd7, [eventSlot];
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd7;
  .param .b64 param1;
  st.param.b64 [param1], 0;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2EventRecord, (param0, param1);
  ld.param.b32 %r5, [retval0];
  }
  or.b32 %r4, %r4, %r5;
  {
  .param .b64 param0;
  st.param.b64 [param0], 0;
  .param .b64 param1;
  st.param.b64 [param1], %rd7;
  .param .b32 param2;
  st.param.b32 [param2], 0;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2StreamWaitEvent, (param0, param1, param2);
  ld.param.b32 %r5, [retval0];
  }
  or.b32 %r4, %r4, %r5;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd7;
  .param .b32 retval0;
  call.uni (retval0), __cudaCDP2EventDestroy, (param0);
  ld.param.b32 %r5, [retval0];
  }
  or.b32 %r4, %r4, %r5;
  setp.ne.s32 %p1, %r4, 0;
  @%p1 trap;
DONE:
  ret;
}
)";

TEST_F(Linker, DeviceSideLaunchesThroughTheDeviceRuntimeLibrary) {
  const char* devrt = ROCUDA_CUDA_DEVRT_PATH;
  if (access(devrt, R_OK) != 0) GTEST_SKIP() << "no " << devrt << " (CUDA toolkit) here";
  CUlinkState state = nullptr;
  ASSERT_EQ(create_(0, nullptr, nullptr, &state), CUDA_SUCCESS);
  ASSERT_EQ(addPtx(state, kLaunchesChildren, "parent.ptx"), CUDA_SUCCESS);
  ASSERT_EQ(addFile_(state, CU_JIT_INPUT_LIBRARY, devrt, 0, nullptr, nullptr), CUDA_SUCCESS);
  void* image = nullptr;
  ASSERT_EQ(complete_(state, &image, nullptr), CUDA_SUCCESS);
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, image), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(state), CUDA_SUCCESS);
  CUfunction parent = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&parent, module, "parent"),
            CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(proc<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020)(&out, 128 * 4),
            CUDA_SUCCESS);
  void* params[] = {&out};
  ASSERT_EQ(
      CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
         unsigned, CUstream, void**, void**)(parent, 4, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  std::vector<uint32_t> got(128);
  ASSERT_EQ(proc<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH", 3020)(got.data(), out,
                                                                                 128 * 4),
            CUDA_SUCCESS);
  for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(got[i], i) << i;
  EXPECT_EQ(proc<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// A successful link leaves both logs empty and their size options at 0 bytes written (PyCUDA
// reads back that many bytes of each buffer).
TEST_F(Linker, SuccessLeavesEmptyLogsAndTheirSizes) {
  char info[64], error[64];
  std::memset(info, 0xe0, sizeof info);
  std::memset(error, 0xe0, sizeof error);
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info, reinterpret_cast<void*>(uintptr_t{sizeof info}), error,
                    reinterpret_cast<void*>(uintptr_t{sizeof error})};
  CUlinkState state = nullptr;
  ASSERT_EQ(create_(4, options, values, &state), CUDA_SUCCESS);
  ASSERT_EQ(addPtx(state, kLinkCallee, "callee.ptx"), CUDA_SUCCESS);
  void* image = nullptr;
  ASSERT_EQ(complete_(state, &image, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[3]), 0u);
  EXPECT_EQ(info[0], '\0');
  EXPECT_EQ(error[0], '\0');
  EXPECT_EQ(destroy_(state), CUDA_SUCCESS);
}

// A function no module defines is an error of the module's load (NVIDIA's JIT: "Unresolved
// extern function"), not a kernel that fails to run at its first launch with no call reporting
// it. (A link leaves it alone: NVIDIA's driver supplies its own device-runtime syscalls there.)
TEST_F(Linker, UndefinedFunctionsFailTheLoad) {
  char log[512] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  auto loadEx = CU(cuModuleLoadDataEx, CUmodule*, const void*, unsigned, CUjit_option*, void**);
  CUmodule module = nullptr;
  EXPECT_EQ(loadEx(&module, kLinkCaller, 2, options, values), CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("unresolved extern function 'twice'"), std::string::npos) << log;
  EXPECT_NE(std::string(log).find("at 18:5"), std::string::npos) << log;  // the call
}

TEST_F(Linker, ErrorsAreReportedAndLogged) {
  char log[512] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
  CUlinkState state = nullptr;
  ASSERT_EQ(create_(2, options, values, &state), CUDA_SUCCESS);
  EXPECT_EQ(addPtx(state, ".version 7.0\n.target sm_50\n.address_size 64\nbogus;\n", "bad.ptx"),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_GT(std::strlen(log), 0u);
  // Given as PTX, text that does not even look like PTX is a PTX error too.
  EXPECT_EQ(addPtx(state, "garbage here", "garbage.ptx"), CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("garbage.ptx:1:"), std::string::npos) << log;
  EXPECT_EQ(addData_(state, CU_JIT_INPUT_LIBRARY, const_cast<char*>(kLinkCallee), 10, "lib", 0,
                     nullptr, nullptr),
            CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(addData_(state, CU_JIT_INPUT_PTX, nullptr, 10, "x", 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(addFile_(state, CU_JIT_INPUT_PTX, "/nonexistent/rocuda.ptx", 0, nullptr, nullptr),
            CUDA_ERROR_FILE_NOT_FOUND);
  void* image = nullptr;
  EXPECT_EQ(complete_(state, &image, nullptr), CUDA_ERROR_INVALID_VALUE);  // nothing added
  ASSERT_EQ(addPtx(state, kLinkCallee, "a.ptx"), CUDA_SUCCESS);
  ASSERT_EQ(addPtx(state, kLinkCallee, "b.ptx"), CUDA_SUCCESS);
  EXPECT_EQ(complete_(state, &image, nullptr), CUDA_ERROR_INVALID_PTX);  // two `scale`s
  EXPECT_NE(std::string(log).find("multiple definitions"), std::string::npos) << log;
  // The size option now holds the bytes written, as NVIDIA's driver leaves it.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), std::strlen(log));
  EXPECT_EQ(destroy_(state), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(state), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(addPtx(state, kLinkCallee, "c.ptx"), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(create_(0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// Cluster permissions exist from compute capability 9.0 (cuBLAS sets this one as it starts
// there). ROCUDA_CC=9.0 makes the device report 9.0 when set before the driver starts, as it is
// in this test's own process under ctest; run among others it checks the 8.6 answer instead.
TEST(ComputeCapability90, NonPortableClusterSizeIsSettable) {
  setenv("ROCUDA_CC", "9.0", 0);
  ASSERT_NE(library(), nullptr) << dlerror();
  ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context), CUDA_SUCCESS);
  int major = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
            CUDA_SUCCESS);
  CUfunction function = loadAddOne();
  auto set = CU(cuFuncSetAttribute, CUfunction, CUfunction_attribute, int);
  auto get = CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  int allowed = -1;
  if (major >= 9) {
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), CUDA_SUCCESS);
    ASSERT_EQ(get(&allowed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, function),
              CUDA_SUCCESS);
    EXPECT_EQ(allowed, 1);
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2),
              CUDA_ERROR_INVALID_VALUE);
    // A cluster shape set at run time reads back, and a shape of more than one block cannot
    // launch on Rocuda's devices (clusters of one block).
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2), CUDA_SUCCESS);
    int width = 0;
    ASSERT_EQ(get(&width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, function), CUDA_SUCCESS);
    EXPECT_EQ(width, 2);
    CUdeviceptr data = 0;
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 4), CUDA_SUCCESS);
    unsigned n = 1;
    void* args[] = {&data, &n};
    using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
    auto launch = proc<Launch>("cuLaunchKernel", 7000);
    EXPECT_EQ(launch(function, 2, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
              CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 0), CUDA_SUCCESS);
    EXPECT_EQ(launch(function, 2, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
    // __cluster_dims__ (.reqnctapercluster) fixes the shape: reported, and not settable.
    const char* ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry fixed() .reqnctapercluster 2, 1, 1 { ret; }
)";
    CUmodule module = nullptr;
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
    CUfunction fixed = nullptr;
    ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&fixed, module, "fixed"),
              CUDA_SUCCESS);
    int dims[3] = {};
    for (int d = 0; d < 3; ++d)
      ASSERT_EQ(get(&dims[d],
                    static_cast<CUfunction_attribute>(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH + d),
                    fixed),
                CUDA_SUCCESS);
    EXPECT_EQ(dims[0], 2);
    EXPECT_EQ(dims[1], 1);
    EXPECT_EQ(dims[2], 1);
    EXPECT_EQ(set(fixed, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 1), CUDA_ERROR_NOT_PERMITTED);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  } else {
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(set(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
              CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(get(&allowed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, function),
              CUDA_SUCCESS);
    EXPECT_EQ(allowed, 0);
  }
  EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, CUdevice)(0), CUDA_SUCCESS);
}

// A child of fork() whose parent initialized CUDA has none of the parent's threads (the CPU
// device's workers, stream executors): as with NVIDIA's driver, every call that needs cuInit,
// cuInit included, is NOT_INITIALIZED there instead of hanging; the parent goes on working.
TEST_F(Driver, ForkedChildOfAnInitializedParentIsNotInitialized) {
  CUfunction function = loadAddOne();
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 64 * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 0, 64), CUDA_SUCCESS);
  auto launchAddOne = [&] {
    unsigned n = 64;
    void* args[] = {&data, &n};
    auto launch = proc<Launch>("cuLaunchKernel", 7000);
    if (launch(function, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS)
      return false;
    return CU(cuCtxSynchronize)() == CUDA_SUCCESS;
  };
  ASSERT_TRUE(launchAddOne());  // the workers exist now
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int failures = 0;
    failures += CU(cuInit, unsigned)(0) != CUDA_ERROR_NOT_INITIALIZED;
    CUdeviceptr more = 0;
    failures += CU(cuMemAlloc, CUdeviceptr*, size_t)(&more, 4) != CUDA_ERROR_NOT_INITIALIZED;
    CUcontext current = nullptr;
    failures += CU(cuCtxGetCurrent, CUcontext*)(&current) != CUDA_ERROR_NOT_INITIALIZED;
    failures += CU(cuCtxSynchronize)() != CUDA_ERROR_NOT_INITIALIZED;
    int version = 0;
    failures += CU(cuDriverGetVersion, int*)(&version) != CUDA_SUCCESS || version == 0;
    _exit(failures);
  }
  int status = 0;
  pid_t waited = 0;
  for (int tries = 0; tries < 600 && waited == 0; ++tries) {
    waited = waitpid(child, &status, WNOHANG);
    if (waited == 0) usleep(50000);
  }
  if (waited == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child hung";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "calls in the child that did not answer as documented";
  EXPECT_TRUE(launchAddOne());
  std::vector<int> host(64);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), data, 64 * sizeof(int)),
            CUDA_SUCCESS);
  for (int value : host) EXPECT_EQ(value, 2);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
}

// An instruction Rocuda refuses fails the kernels that reach it, at launch (NOT_SUPPORTED, no
// sticky error), not the module: its other kernels load and run (a fast path compiled beside its
// fallback).
TEST_F(Driver, UnsupportedInstructionFailsOnlyItsKernelAtLaunch) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry refused(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  isspacep.param %p1, %rd1;
  ret;
}
.visible .entry plain(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  CUfunction refused = nullptr, plain = nullptr;
  auto get = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  ASSERT_EQ(get(&refused, module, "refused"), CUDA_SUCCESS);
  ASSERT_EQ(get(&plain, module, "plain"), CUDA_SUCCESS);
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 0, 1), CUDA_SUCCESS);
  void* args[] = {&data};
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  EXPECT_EQ(launch(refused, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(launch(plain, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  unsigned value = 0;
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, data, 4), CUDA_SUCCESS);
  EXPECT_EQ(value, 7u);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// The CPU device has no register file: NUM_REGS is each thread's share of a multiprocessor's at
// full occupancy (never 0, which libraries divide by), and limits no occupancy.
TEST_F(Driver, RegisterCountIsTheShareOfAFullMultiprocessor) {
  CUfunction function = loadAddOne();
  int registers = 0, perMultiprocessor = 0, threads = 0;
  ASSERT_EQ(CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction)(
                &registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function),
            CUDA_SUCCESS);
  auto attribute = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  ASSERT_EQ(attribute(&perMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(attribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0),
            CUDA_SUCCESS);
  EXPECT_GT(registers, 0);
  EXPECT_EQ(registers % 8, 0);
  EXPECT_LE(registers * threads, perMultiprocessor);
  int blocks = 0;
  ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                &blocks, function, 256, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(blocks, threads / 256);
}

// A preferred substitute cluster is best-effort: with a valid shape (x and y multiples of the
// regular cluster's dividing the grid, z the regular one's) the launch runs with the regular
// clusters; an invalid shape is INVALID_VALUE.
TEST_F(Driver, PreferredClusterDimensionFallsBackToTheRegularCluster) {
  CUfunction function = loadAddOne();
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 128 * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 0, 128), CUDA_SUCCESS);
  unsigned n = 128;
  void* args[] = {&data, &n};
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof attribute);
  attribute.id = CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION;
  attribute.value.preferredClusterDim = {2, 1, 1};
  CUlaunchConfig config{};
  config.gridDimX = 4;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
  auto launchEx = proc<LaunchEx>("cuLaunchKernelEx", 12090);
  ASSERT_EQ(launchEx(&config, function, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  std::vector<int> host(128);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), data, 128 * sizeof(int)),
            CUDA_SUCCESS);
  for (int value : host) EXPECT_EQ(value, 1);
  config.gridDimX = 3;  // not a multiple of 2
  EXPECT_EQ(launchEx(&config, function, args, nullptr), CUDA_ERROR_INVALID_VALUE);
  config.gridDimX = 4;
  attribute.value.preferredClusterDim = {2, 1, 2};  // z differs from the regular cluster's
  EXPECT_EQ(launchEx(&config, function, args, nullptr), CUDA_ERROR_INVALID_VALUE);
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;  // a dimension of 0 divides no grid
  attribute.value.clusterDim = {0, 0, 0};
  EXPECT_EQ(launchEx(&config, function, args, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
}

// Cluster attributes of the code: .explicitcluster is CLUSTER_SIZE_MUST_BE_SET, and such a kernel
// launched without a cluster size fails (INVALID_CLUSTER_SIZE); a compiled cluster size is the
// occupancy query's when its config names none; the scheduling policy is a hint that reads back.
TEST_F(Driver, ClusterAttributesOfTheCode) {
  const char* ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry explicitly() .explicitcluster { ret; }
.visible .entry onePerCluster() .reqnctapercluster 1, 1, 1 { ret; }
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  CUfunction explicitly = nullptr, onePerCluster = nullptr;
  auto get = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  ASSERT_EQ(get(&explicitly, module, "explicitly"), CUDA_SUCCESS);
  ASSERT_EQ(get(&onePerCluster, module, "onePerCluster"), CUDA_SUCCESS);
  auto attribute = CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  int mustBeSet = -1;
  ASSERT_EQ(attribute(&mustBeSet, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, explicitly),
            CUDA_SUCCESS);
  EXPECT_EQ(mustBeSet, 1);
  ASSERT_EQ(attribute(&mustBeSet, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, onePerCluster),
            CUDA_SUCCESS);
  EXPECT_EQ(mustBeSet, 0);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  EXPECT_EQ(launch(explicitly, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CUlaunchAttribute cluster;
  std::memset(&cluster, 0, sizeof cluster);
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim = {1, 1, 1};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
  EXPECT_EQ(proc<LaunchEx>("cuLaunchKernelEx", 12090)(&config, explicitly, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);

  using Occupancy = CUresult (*)(int*, CUfunction, const CUlaunchConfig*);
  auto clusters = proc<Occupancy>("cuOccupancyMaxActiveClusters");
  config.numAttrs = 0;
  int count = 0;
  EXPECT_EQ(clusters(&count, onePerCluster, &config), CUDA_SUCCESS);
  EXPECT_GT(count, 0);
  EXPECT_EQ(clusters(&count, explicitly, &config), CUDA_ERROR_INVALID_VALUE);  // no size anywhere

  auto set = CU(cuFuncSetAttribute, CUfunction, CUfunction_attribute, int);
  EXPECT_EQ(set(onePerCluster, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                CU_CLUSTER_SCHEDULING_POLICY_SPREAD),
            CUDA_SUCCESS);
  int policy = -1;
  ASSERT_EQ(
      attribute(&policy, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, onePerCluster),
      CUDA_SUCCESS);
  EXPECT_EQ(policy, CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
  EXPECT_EQ(set(onePerCluster, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 7),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// A compare-and-swap in a loop that ends by its count, not by the value read: thread t sets
// the word to t only when it holds t - 1, so most threads read one unchanged value over and over
// without waiting for anything (NVIDIA's system_wide_atomics sample). The poll after each read
// may yield but must not sleep: sleeps made the 64 x 256 x 50 reads take minutes.
constexpr const char* kCasChainPtx = R"(
.version 7.0
.target sm_60
.address_size 64

.visible .entry cas_chain(.param .u64 words)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [words];
  cvta.to.global.u64 %rd1, %rd1;
  add.s64 %rd2, %rd1, 4;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  add.s32 %r5, %r4, -1;
  mov.u32 %r6, 0;
LOOP:
  atom.global.sys.add.u32 %r7, [%rd1], 1;
  atom.global.sys.cas.b32 %r8, [%rd2], %r5, %r4;
  add.s32 %r6, %r6, 1;
  setp.ne.s32 %p1, %r6, 50;
  @%p1 bra LOOP;
  ret;
}
)";

TEST_F(Driver, ACompareAndSwapChainInACountedLoopDoesNotSleep) {
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kCasChainPtx), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "cas_chain"),
            CUDA_SUCCESS);
  uint32_t words[2] = {0, 0xffffffffu};  // the chain starts with thread 0 (t - 1 = -1)
  CUdeviceptr pointer = reinterpret_cast<CUdeviceptr>(words);  // pageable host memory
  void* args[] = {&pointer};
  auto launch = reinterpret_cast<Launch>(proc<void*>("cuLaunchKernel", 12090));
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(launch(f, 64, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(words[0], 64u * 256u * 50u);
  EXPECT_LT(words[1], 64u * 256u);  // some thread's index: the chain went as far as it could
  EXPECT_LT(seconds, 30.0);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
