// libcuda.so.1 as cudart uses it: loaded with dlopen, everything reached through
// cuGetProcAddress_v2, the export tables called like cudart calls them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/cuda/integrity.h"
#include "rocuda/cuda_abi.h"

namespace rocuda::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

void* library() {
  static void* handle = dlopen(ROCUDA_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F proc(const char* name, int version = 13000, cuuint64_t flags = 0) {
  static auto getProc = reinterpret_cast<GetProcAddress>(dlsym(library(), "cuGetProcAddress_v2"));
  void* pfn = nullptr;
  CUresult result = getProc(name, &pfn, version, flags, nullptr);
  EXPECT_EQ(result, CUDA_SUCCESS) << name;
  return reinterpret_cast<F>(pfn);
}

// Entry points as a CUDA 12.9 runtime would see them (13.0 changed cuCtxGetDevice and
// cuCtxSynchronize, whose new forms are tested explicitly).
#define CU(name, ...) proc<CUresult (*)(__VA_ARGS__)>(#name, 12090)

// ---- Before cuInit (first in this file: gtest keeps definition order in one process, and ctest
// runs each test in its own) ----
TEST(LibCudaBeforeInit, CallsBeforeInitFail) {
  ASSERT_NE(library(), nullptr) << dlerror();
  int count = -1;
  EXPECT_EQ(CU(cuDeviceGetCount, int*)(&count), CUDA_ERROR_NOT_INITIALIZED);
  int version = 0;
  EXPECT_EQ(CU(cuDriverGetVersion, int*)(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  EXPECT_EQ(CU(cuInit, unsigned)(1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
}

class LibCuda : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
  }
};

TEST_F(LibCuda, GetProcAddress) {
  auto getProc = reinterpret_cast<GetProcAddress>(dlsym(library(), "cuGetProcAddress_v2"));
  ASSERT_NE(getProc, nullptr);
  void* pfn = &pfn;
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(getProc("", &pfn, 0, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(pfn, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  pfn = &pfn;
  EXPECT_EQ(getProc("cuDeviceTotalMem", &pfn, 2000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(pfn, nullptr);
  EXPECT_EQ(getProc("cuMemAlloc", &pfn, 1000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(getProc("cuMemAlloc", &pfn, 3020, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(pfn, dlsym(library(), "cuMemAlloc_v2"));
  EXPECT_EQ(
      getProc("cuMemcpyHtoD", &pfn, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr),
      CUDA_SUCCESS);
  EXPECT_EQ(pfn, dlsym(library(), "cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(getProc("cuCtxGetDevice", &pfn, 13000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(pfn, dlsym(library(), "cuCtxGetDevice_v2"));
  // Only driver API symbols are exported; nothing unimplemented is.
  EXPECT_EQ(dlsym(library(), "cuDeviceTotalMem"), nullptr);
  EXPECT_EQ(dlsym(library(), "_ZN6rocuda4core8Platform8instanceEv"), nullptr);
}

TEST_F(LibCuda, ErrorNames) {
  const char* text = nullptr;
  ASSERT_EQ(CU(cuGetErrorName, CUresult, const char**)(CUDA_ERROR_INVALID_VALUE, &text),
            CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_INVALID_VALUE");
  ASSERT_EQ(CU(cuGetErrorString, CUresult, const char**)(CUDA_ERROR_OUT_OF_MEMORY, &text),
            CUDA_SUCCESS);
  EXPECT_STREQ(text, "out of memory");
  EXPECT_EQ(CU(cuGetErrorName, CUresult, const char**)(static_cast<CUresult>(4242), &text),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(LibCuda, Devices) {
  int count = 0;
  ASSERT_EQ(CU(cuDeviceGetCount, int*)(&count), CUDA_SUCCESS);
  ASSERT_GE(count, 1);
  CUdevice device = -1;
  EXPECT_EQ(CU(cuDeviceGet, CUdevice*, int)(&device, count), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(CU(cuDeviceGet, CUdevice*, int)(&device, 0), CUDA_SUCCESS);
  auto getAttribute = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  for (int attribute = 1; attribute < CU_DEVICE_ATTRIBUTE_MAX; ++attribute) {
    int value = -12345;
    EXPECT_EQ(getAttribute(&value, static_cast<CUdevice_attribute>(attribute), device),
              CUDA_SUCCESS)
        << attribute;
  }
  int value = 0;
  EXPECT_EQ(getAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getAttribute(&value, static_cast<CUdevice_attribute>(0), device),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 99), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(getAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device), CUDA_SUCCESS);
  EXPECT_EQ(value, 32);
  ASSERT_EQ(getAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device), CUDA_SUCCESS);
  EXPECT_GE(value, 32);

  char name[256] = {};
  ASSERT_EQ(CU(cuDeviceGetName, char*, int, CUdevice)(name, sizeof name, device), CUDA_SUCCESS);
  EXPECT_GT(std::strlen(name), 0u);
  size_t total = 0;
  ASSERT_EQ(CU(cuDeviceTotalMem, size_t*, CUdevice)(&total, device), CUDA_SUCCESS);
  EXPECT_GT(total, 0u);
  char busId[32] = {};
  ASSERT_EQ(CU(cuDeviceGetPCIBusId, char*, int, CUdevice)(busId, sizeof busId, device),
            CUDA_SUCCESS);
  CUdevice found = -1;
  ASSERT_EQ(CU(cuDeviceGetByPCIBusId, CUdevice*, const char*)(&found, busId), CUDA_SUCCESS);
  EXPECT_EQ(found, device);
  EXPECT_EQ(CU(cuDeviceGetByPCIBusId, CUdevice*, const char*)(&found, "zz"),
            CUDA_ERROR_INVALID_VALUE);
}

CUcontext retainPrimary() {
  CUcontext context = nullptr;
  EXPECT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context, 0), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSetCurrent, CUcontext)(context), CUDA_SUCCESS);
  return context;
}

// cuCtxDestroy frees what the context owned: its memory and modules are unknown afterwards.
TEST_F(LibCuda, ContextDestroyFreesItsMemoryAndModules) {
  CUcontext primary = retainPrimary();
  CUcontext created = nullptr;
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  CUdeviceptr memory = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&memory, 1 << 20), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(&pinned, 4096), CUDA_SUCCESS);
  CUmodule module = nullptr;
  const char* ptx =
      ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry add_one() { ret; }\n";
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(primary), CUDA_SUCCESS);
  CUcontext owner = nullptr;
  auto attribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  EXPECT_EQ(attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, memory), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, reinterpret_cast<CUdeviceptr>(pinned)),
            CUDA_ERROR_INVALID_VALUE);
  CUfunction f = nullptr;
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "add_one"),
            CUDA_ERROR_INVALID_HANDLE);
}

// cuDevicePrimaryCtxReset destroys what the primary context allocated: device and pinned memory
// and host registrations; pointers to them are unknown afterwards, and the device is usable.
TEST_F(LibCuda, PrimaryContextResetFreesItsAllocations) {
  retainPrimary();
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 256), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(&pinned, 64), CUDA_SUCCESS);
  std::vector<char> page(4096);
  ASSERT_EQ(CU(cuMemHostRegister, void*, size_t, unsigned)(page.data(), page.size(), 0),
            CUDA_SUCCESS);
  // Arrays, mipmapped arrays and texture objects of the context go too.
  CUDA_ARRAY3D_DESCRIPTOR desc{8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  CUarray array = nullptr;
  ASSERT_EQ(CU(cuArray3DCreate, CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*)(&array, &desc),
            CUDA_SUCCESS);
  CUmipmappedArray mipmap = nullptr;
  ASSERT_EQ(CU(cuMipmappedArrayCreate, CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned)(
                &mipmap, &desc, 2),
            CUDA_SUCCESS);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  CUDA_TEXTURE_DESC sampling{};
  CUtexObject texture = 0;
  ASSERT_EQ(CU(cuTexObjectCreate, CUtexObject*, const CUDA_RESOURCE_DESC*, const CUDA_TEXTURE_DESC*,
               const CUDA_RESOURCE_VIEW_DESC*)(&texture, &resource, &sampling, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(proc<CUresult (*)(CUdevice)>("cuDevicePrimaryCtxReset", 11000)(0), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuTexObjectDestroy, CUtexObject)(texture), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_ERROR_INVALID_HANDLE);
  unsigned type = 0;
  auto attribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  EXPECT_EQ(attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pinned)),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(page.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 256), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, CUdevice)(0), CUDA_SUCCESS);
}

TEST_F(LibCuda, Contexts) {
  EXPECT_EQ(CU(cuCtxSetCurrent, CUcontext)(nullptr), CUDA_SUCCESS);
  CUdevice device = -1;
  EXPECT_EQ(CU(cuCtxGetDevice, CUdevice*)(&device), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext primary = retainPrimary();
  ASSERT_NE(primary, nullptr);
  ASSERT_EQ(CU(cuCtxGetDevice, CUdevice*)(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  auto getDeviceV2 = proc<CUresult (*)(CUdevice*, CUcontext)>("cuCtxGetDevice", 13000);
  EXPECT_EQ(getDeviceV2(&device, primary), CUDA_SUCCESS);
  EXPECT_EQ(getDeviceV2(&device, reinterpret_cast<CUcontext>(&device)), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(primary), CUDA_ERROR_INVALID_CONTEXT);

  CUcontext created = nullptr;
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  CUcontext current = nullptr;
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  CUcontext popped = nullptr;
  ASSERT_EQ(CU(cuCtxPopCurrent, CUcontext*)(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  ASSERT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxPushCurrent, CUcontext)(created), CUDA_ERROR_INVALID_CONTEXT);

  size_t stack = 0;
  ASSERT_EQ(CU(cuCtxSetLimit, CUlimit, size_t)(CU_LIMIT_STACK_SIZE, 4096), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxGetLimit, size_t*, CUlimit)(&stack, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(stack, 4096u);
  EXPECT_EQ(CU(cuCtxGetLimit, size_t*, CUlimit)(&stack, CU_LIMIT_MAX), CUDA_ERROR_INVALID_VALUE);
  CUfunc_cache cache{};
  ASSERT_EQ(CU(cuCtxSetCacheConfig, CUfunc_cache)(CU_FUNC_CACHE_PREFER_L1), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxGetCacheConfig, CUfunc_cache*)(&cache), CUDA_SUCCESS);
  EXPECT_EQ(cache, CU_FUNC_CACHE_PREFER_L1);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  auto synchronizeV2 = proc<CUresult (*)(CUcontext)>("cuCtxSynchronize", 13000);
  EXPECT_EQ(synchronizeV2(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(synchronizeV2(primary), CUDA_SUCCESS);
  EXPECT_EQ(synchronizeV2(reinterpret_cast<CUcontext>(&stack)), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(LibCuda, MemoryAndCopies) {
  retainPrimary();
  CUdeviceptr buffer = 0;
  constexpr size_t kCount = 1000;
  EXPECT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&buffer, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&buffer, kCount * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(buffer, 0xDEADBEEF, kCount),
            CUDA_SUCCESS);
  std::vector<uint32_t> host(kCount);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), buffer, kCount * 4),
            CUDA_SUCCESS);
  for (uint32_t v : host) ASSERT_EQ(v, 0xDEADBEEFu);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<uint32_t>(i);
  ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(buffer, host.data(), kCount * 4),
            CUDA_SUCCESS);
  CUdeviceptr second = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&second, kCount * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyDtoD, CUdeviceptr, CUdeviceptr, size_t)(second, buffer, kCount * 4),
            CUDA_SUCCESS);
  std::vector<uint32_t> back(kCount);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(back.data(), second, kCount * 4),
            CUDA_SUCCESS);
  EXPECT_EQ(back, host);
  // A copy past the end of the allocation is refused, not performed.
  EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(back.data(), second + 8, kCount * 4),
            CUDA_ERROR_INVALID_VALUE);

  // 2D: copy a 10x10 block out of the middle of a 40-byte-pitch image.
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = buffer;
  copy.srcPitch = 40;
  copy.srcXInBytes = 8;
  copy.srcY = 2;
  std::vector<uint8_t> block(100);
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = block.data();
  copy.dstPitch = 10;
  copy.WidthInBytes = 10;
  copy.Height = 10;
  ASSERT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&copy), CUDA_SUCCESS);
  const auto* bytes = reinterpret_cast<const uint8_t*>(host.data());
  for (int row = 0; row < 10; ++row)
    for (int col = 0; col < 10; ++col)
      ASSERT_EQ(block[row * 10 + col], bytes[(2 + row) * 40 + 8 + col]);

  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(CU(cuMemGetAddressRange, CUdeviceptr*, size_t*, CUdeviceptr)(&base, &size, buffer + 12),
            CUDA_SUCCESS);
  EXPECT_EQ(base, buffer);
  EXPECT_EQ(size, kCount * 4);
  unsigned type = 0;
  ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buffer),
            CUDA_SUCCESS);
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  // The mapping a pointer lies in, and the ids of its buffer and physical memory: each
  // allocation its own, process-wide.
  auto pointerAttribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  void* mappingBase = nullptr;
  size_t mappingSize = 0;
  unsigned long long bufferId = 0, blockId = 0, secondBufferId = 0, secondBlockId = 0;
  CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(&size);
  ASSERT_EQ(pointerAttribute(&mappingBase, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, buffer + 12),
            CUDA_SUCCESS);
  ASSERT_EQ(pointerAttribute(&mappingSize, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, buffer + 12),
            CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<CUdeviceptr>(mappingBase), buffer);
  EXPECT_EQ(mappingSize, kCount * 4);
  ASSERT_EQ(pointerAttribute(&bufferId, CU_POINTER_ATTRIBUTE_BUFFER_ID, buffer + 12), CUDA_SUCCESS);
  ASSERT_EQ(pointerAttribute(&blockId, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, buffer), CUDA_SUCCESS);
  ASSERT_EQ(pointerAttribute(&secondBufferId, CU_POINTER_ATTRIBUTE_BUFFER_ID, second),
            CUDA_SUCCESS);
  ASSERT_EQ(pointerAttribute(&secondBlockId, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, second),
            CUDA_SUCCESS);
  EXPECT_NE(bufferId, 0u);
  EXPECT_NE(bufferId, secondBufferId);
  EXPECT_NE(blockId, 0u);
  EXPECT_NE(blockId, secondBlockId);
  ASSERT_EQ(pointerAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, buffer), CUDA_SUCCESS);
  EXPECT_EQ(pool, nullptr);  // not from a pool
  // Device memory has no host pointer (an error here, unlike cuPointerGetAttributes' NULL); the
  // device pointer is the current context's, so there must be one.
  void* hostPointer = &size;
  EXPECT_EQ(pointerAttribute(&hostPointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, buffer),
            CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr devicePointer = 0;
  ASSERT_EQ(pointerAttribute(&devicePointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer + 4),
            CUDA_SUCCESS);
  EXPECT_EQ(devicePointer, buffer + 4);
  CUcontext saved = nullptr;
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&saved), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(pointerAttribute(&devicePointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer),
            CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(saved), CUDA_SUCCESS);
  int local = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
  void* data[] = {&type};
  ASSERT_EQ(CU(cuPointerGetAttributes, unsigned, CUpointer_attribute*, void**, CUdeviceptr)(
                1, attributes, data, reinterpret_cast<uintptr_t>(&local)),
            CUDA_SUCCESS);
  EXPECT_EQ(type, 0u);  // not CUDA memory

  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(buffer + 4), CUDA_ERROR_INVALID_VALUE);
  // Hints are for managed memory only.
  auto prefetchV1 =
      proc<CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream)>("cuMemPrefetchAsync", 8000);
  EXPECT_EQ(prefetchV1(buffer, 16, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(buffer), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(second), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(buffer), CUDA_ERROR_INVALID_VALUE);

  // Managed memory and its hints (v2 forms, as a CUDA 13 runtime asks for them).
  CUdeviceptr managed = 0;
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 4096, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  auto prefetch = proc<CUresult (*)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream)>(
      "cuMemPrefetchAsync", 13000);
  auto advise =
      proc<CUresult (*)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation)>("cuMemAdvise", 13000);
  CUmemLocation onDevice{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_EQ(prefetch(managed, 4096, onDevice, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(advise(managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, onDevice), CUDA_SUCCESS);
  EXPECT_EQ(prefetch(managed, 8192, onDevice, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(prefetch(managed, 4096, CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 7}, 0, nullptr),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);

  void* pinned = nullptr;
  ASSERT_EQ(CU(cuMemHostAlloc, void**, size_t, unsigned)(&pinned, 256, CU_MEMHOSTALLOC_PORTABLE),
            CUDA_SUCCESS);
  unsigned flags = 0;
  ASSERT_EQ(CU(cuMemHostGetFlags, unsigned*, void*)(&flags, pinned), CUDA_SUCCESS);
  // Mapped as well, as all page-locked memory is with unified addressing (NVIDIA's driver
  // reports DEVICEMAP for flags 0 too).
  EXPECT_EQ(flags, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  // Not registered memory: the wrong pointer for cuMemHostUnregister (INVALID_VALUE, as NVIDIA's
  // driver answers), not memory that was never registered.
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(pinned), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(pinned), CUDA_SUCCESS);
  void* plain = nullptr;
  ASSERT_EQ(CU(cuMemHostAlloc, void**, size_t, unsigned)(&plain, 64, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemHostGetFlags, unsigned*, void*)(&flags, plain), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEMHOSTALLOC_DEVICEMAP});
  EXPECT_EQ(CU(cuMemFreeHost, void*)(plain), CUDA_SUCCESS);
  // Zero bytes succeed and allocate nothing.
  void* none = &flags;
  EXPECT_EQ(CU(cuMemHostAlloc, void**, size_t, unsigned)(&none, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(CU(cuMemHostAlloc, void**, size_t, unsigned)(nullptr, 64, 0), CUDA_ERROR_INVALID_VALUE);
  // A null pointer is freed as free(NULL) is, as on NVIDIA's driver; unregistering one is not.
  EXPECT_EQ(CU(cuMemFreeHost, void*)(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(nullptr), CUDA_ERROR_INVALID_VALUE);
  // Registered memory is page-locked, but not an allocation of cuMemAllocHost / cuMemHostAlloc.
  std::vector<uint8_t> page(8192);
  ASSERT_EQ(CU(cuMemHostRegister, void*, size_t, unsigned)(page.data(), page.size(), 0),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemHostGetFlags, unsigned*, void*)(&flags, page.data()), CUDA_ERROR_INVALID_VALUE);
  // Inside the range but not its start: the wrong pointer (INVALID_VALUE), not memory that was
  // never registered.
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(page.data() + 4096), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(page.data()), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemHostUnregister, void*)(page.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

  // Stream ids are unique for the life of the process: a new stream at a freed stream's address
  // still gets a new one.
  std::set<unsigned long long> ids;
  for (int i = 0; i < 20; ++i) {
    CUstream stream = nullptr;
    ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
    unsigned long long id = 0;
    ASSERT_EQ(CU(cuStreamGetId, CUstream, unsigned long long*)(stream, &id), CUDA_SUCCESS);
    EXPECT_TRUE(ids.insert(id).second) << id;
    ASSERT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  }
}

void CUDA_CB_increment(void* counter) { ++*static_cast<int*>(counter); }

TEST_F(LibCuda, StreamsAndEvents) {
  retainPrimary();
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  unsigned flags = 0;
  ASSERT_EQ(CU(cuStreamGetFlags, CUstream, unsigned*)(stream, &flags), CUDA_SUCCESS);
  EXPECT_EQ(flags, 1u);
  CUevent start = nullptr, end = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&end, 0), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&buffer, 1 << 20), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(start, stream), CUDA_SUCCESS);
  ASSERT_EQ(
      CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)(buffer, 7, 1 << 20, stream),
      CUDA_SUCCESS);
  int counter = 0;
  ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(stream, CUDA_CB_increment, &counter),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(end, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventSynchronize, CUevent)(end), CUDA_SUCCESS);
  EXPECT_EQ(counter, 1);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(end), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamQuery, CUstream)(stream), CUDA_SUCCESS);
  float ms = -1;
  ASSERT_EQ(CU(cuEventElapsedTime, float*, CUevent, CUevent)(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  uint8_t last = 0;
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&last, buffer + (1 << 20) - 1, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(last, 7);
  // The special handles.
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(reinterpret_cast<CUstream>(&counter)),
            CUDA_ERROR_INVALID_HANDLE);
  // No stream is ever capturing; the thread's capture mode is exchanged.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(CU(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*)(stream, &capture),
            CUDA_SUCCESS);
  EXPECT_EQ(capture, CU_STREAM_CAPTURE_STATUS_NONE);
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(CU(cuThreadExchangeStreamCaptureMode, CUstreamCaptureMode*)(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_EQ(CU(cuThreadExchangeStreamCaptureMode, CUstreamCaptureMode*)(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(start), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(end), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(end), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(buffer), CUDA_SUCCESS);
}

TEST_F(LibCuda, ContextDestroyedWhileCurrentOnAnotherThread) {
  ASSERT_NE(retainPrimary(), nullptr);
  // "If ctx is current to other threads, then ctx will remain current to those threads, and
  // attempting to access ctx from those threads will result in the error
  // CUDA_ERROR_CONTEXT_IS_DESTROYED."
  CUcontext created = nullptr;
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(CU(cuCtxPopCurrent, CUcontext*)(&popped), CUDA_SUCCESS);
  std::atomic<int> step{0};
  CUresult sync = CUDA_SUCCESS, alloc = CUDA_SUCCESS;
  std::thread worker([&] {
    EXPECT_EQ(CU(cuCtxSetCurrent, CUcontext)(created), CUDA_SUCCESS);
    step = 1;
    while (step != 2) std::this_thread::yield();
    sync = CU(cuCtxSynchronize)();
    CUdeviceptr p = 0;
    alloc = CU(cuMemAlloc, CUdeviceptr*, size_t)(&p, 64);
  });
  while (step != 1) std::this_thread::yield();
  ASSERT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  step = 2;
  worker.join();
  EXPECT_EQ(sync, CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(alloc, CUDA_ERROR_CONTEXT_IS_DESTROYED);
}

TEST_F(LibCuda, PrintfAndMallocLimitsAreFixedOnceUsed) {
  ASSERT_NE(retainPrimary(), nullptr);
  // "Setting CU_LIMIT_PRINTF_FIFO_SIZE must be performed before launching any kernel that uses
  // the printf() device system call, otherwise CUDA_ERROR_INVALID_VALUE will be returned"; the
  // same for CU_LIMIT_MALLOC_HEAP_SIZE and malloc()/free().
  const char* ptx = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);
.extern .func (.param .b64 r) malloc (.param .b64 size);
.global .align 1 .b8 text[4] = {111, 107, 10, 0};
.visible .entry say() {
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  cvta.global.u64 %rd1, text;
  mov.u64 %rd2, 0;
  { .param .b64 f; st.param.b64 [f], %rd1; .param .b64 a; st.param.b64 [a], %rd2;
    .param .b32 r; call.uni (r), vprintf, (f, a); ld.param.b32 %r1, [r]; }
  ret;
}
.visible .entry take() {
  .reg .b64 %rd<3>;
  mov.u64 %rd1, 16;
  { .param .b64 size; st.param.b64 [size], %rd1; .param .b64 r;
    call.uni (r), malloc, (size); ld.param.b64 %rd2, [r]; }
  ret;
}
.visible .entry plain() { ret; }
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  auto function = [&](const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, name),
              CUDA_SUCCESS);
    return f;
  };
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  auto setLimit = CU(cuCtxSetLimit, CUlimit, size_t);
  ASSERT_EQ(launch(function("plain"), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 2 << 20), CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16 << 20), CUDA_SUCCESS);
  ASSERT_EQ(launch(function("say"), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4 << 20), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 32 << 20), CUDA_SUCCESS);
  ASSERT_EQ(launch(function("take"), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setLimit(CU_LIMIT_STACK_SIZE, 2048), CUDA_SUCCESS);
  // "up the maximum launch depth of 24"; the L2 fetch granularity ranges over 0..128 bytes.
  EXPECT_EQ(setLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 25), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 24), CUDA_SUCCESS);
  EXPECT_EQ(setLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 256), CUDA_SUCCESS);
  size_t granularity = 0;
  EXPECT_EQ(CU(cuCtxGetLimit, size_t*, CUlimit)(&granularity, CU_LIMIT_MAX_L2_FETCH_GRANULARITY),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, 128u);
  // Shared memory banks are four bytes wide and fixed: setting another size does nothing.
  CUsharedconfig banks = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
  EXPECT_EQ(CU(cuCtxSetSharedMemConfig, CUsharedconfig)(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxGetSharedMemConfig, CUsharedconfig*)(&banks), CUDA_SUCCESS);
  EXPECT_EQ(banks, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// A host function that waits until the test opens its gate.
void CUDA_CB_waitForGate(void* gate) {
  while (!static_cast<std::atomic<bool>*>(gate)->load()) usleep(1000);
}
void CUDA_CB_setFlag(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true); }

TEST_F(LibCuda, StreamDestroyReturnsWhileWorkIsQueued) {
  ASSERT_NE(retainPrimary(), nullptr);
  // "In case the device is still doing work in the stream when cuStreamDestroy() is called, the
  // function will return immediately and the resources ... released automatically once the
  // device has completed all work": here the work waits for a gate opened only afterwards.
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::atomic<bool> gate{false}, after{false};
  ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(stream, CUDA_CB_waitForGate, &gate),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(stream, CUDA_CB_setFlag, &after),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_FALSE(after.load());
  EXPECT_EQ(CU(cuStreamQuery, CUstream)(stream), CUDA_ERROR_INVALID_HANDLE);
  gate.store(true);
  // The queued work still runs; a context-wide synchronisation waits for it.
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_TRUE(after.load());
}

// Each host thread has its own per-thread default stream, also a thread started after another
// has exited (whose std::thread::id the C library hands out again): the later thread's stream
// has another id and does not wait behind the work the exited thread left queued.
TEST_F(LibCuda, PerThreadStreamsOfLaterThreadsAreTheirOwn) {
  CUcontext primary = retainPrimary();
  ASSERT_NE(primary, nullptr);
  std::atomic<bool> gate{false}, firstDone{false};
  unsigned long long firstId = 0, secondId = 0;
  std::thread first([&] {
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(primary), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamGetId, CUstream, unsigned long long*)(CU_STREAM_PER_THREAD, &firstId),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(CU_STREAM_PER_THREAD,
                                                              CUDA_CB_waitForGate, &gate),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(CU_STREAM_PER_THREAD, CUDA_CB_setFlag,
                                                              &firstDone),
              CUDA_SUCCESS);
  });
  first.join();
  std::thread second([&] {
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(primary), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamGetId, CUstream, unsigned long long*)(CU_STREAM_PER_THREAD, &secondId),
              CUDA_SUCCESS);
    // Its own, empty stream: done at once although the first thread's work still waits.
    EXPECT_EQ(CU(cuStreamQuery, CUstream)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  });
  second.join();
  EXPECT_NE(firstId, secondId);
  EXPECT_FALSE(firstDone.load());
  gate.store(true);
  // The exited thread's work still runs, and context-wide synchronisation waits for it.
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_TRUE(firstDone.load());
}

const void* const* exportTable(std::initializer_list<uint8_t> guid) {
  CUuuid id{};
  std::copy(guid.begin(), guid.end(), reinterpret_cast<uint8_t*>(id.bytes));
  const void* table = nullptr;
  EXPECT_EQ(CU(cuGetExportTable, const void**, const CUuuid*)(&table, &id), CUDA_SUCCESS);
  return static_cast<const void* const*>(table);
}

// The CUDA 3.x names whose signature _v2 kept are exported (cuDNN's runtime looks them up by
// name) and act as _v2; those with 32-bit device pointers are not.
TEST_F(LibCuda, PlainNamesOfUnchangedEntryPoints) {
  CUcontext primary = retainPrimary();
  auto push = reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(library(), "cuCtxPushCurrent"));
  auto pop = reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(library(), "cuCtxPopCurrent"));
  ASSERT_NE(push, nullptr);
  ASSERT_NE(pop, nullptr);
  ASSERT_EQ(push(primary), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, primary);
  for (const char* name :
       {"cuCtxDestroy", "cuStreamDestroy", "cuEventDestroy", "cuMemHostRegister"})
    EXPECT_NE(dlsym(library(), name), nullptr) << name;
  auto destroyStream =
      reinterpret_cast<CUresult (*)(CUstream)>(dlsym(library(), "cuStreamDestroy"));
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  EXPECT_EQ(destroyStream(stream), CUDA_SUCCESS);
  EXPECT_EQ(destroyStream(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(dlsym(library(), "cuMemAlloc"), nullptr);
}

int gDestroyed = 0;
void destroyValue(CUcontext, void*, void* value) { gDestroyed += *static_cast<int*>(value); }

TEST_F(LibCuda, ExportTables) {
  CUcontext primary = retainPrimary();
  CUuuid unknown{};
  const void* table = nullptr;
  EXPECT_EQ(CU(cuGetExportTable, const void**, const CUuuid*)(&table, &unknown),
            CUDA_ERROR_INVALID_VALUE);

  ASSERT_NE(exportTable({0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46,
                         0x9e, 0x7c, 0x0d, 0xd9}),
            nullptr);
  ASSERT_NE(exportTable({0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7,
                         0x8a, 0x3a, 0xec, 0xdc}),
            nullptr);
  auto table2 = exportTable({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39,
                             0x12, 0xfd, 0x9d, 0xf9});
  CUcontext fromTable = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(table2[2])(&fromTable, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(fromTable, primary);
  // CUDA 13.2's runtime calls slot 12 without arguments as it starts (and fails on an error);
  // slot 0 counts the slots.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(table2[0]), 13 * sizeof(void*));
  EXPECT_EQ(reinterpret_cast<CUresult (*)()>(table2[12])(), CUDA_SUCCESS);
  // The tools' context table, which cuDNN's runtime requires and cuBLASLt's heuristics use: slot
  // 4 keys a context, 51 resolves a stream handle, 39 names that stream as cuStreamGetId does.
  auto table8 = exportTable({0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff,
                             0x73, 0x24, 0xc8, 0xf2});
  ASSERT_NE(table8, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(table8[0]), 93 * sizeof(void*));
  uint64_t contextKey = 0;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext, uint64_t*)>(table8[4])(primary, &contextKey),
            CUDA_SUCCESS);
  unsigned long long contextId = 0;
  ASSERT_EQ(CU(cuCtxGetId, CUcontext, unsigned long long*)(primary, &contextId), CUDA_SUCCESS);
  EXPECT_EQ(contextKey, contextId);
  CUstream keyed = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&keyed, 0), CUDA_SUCCESS);
  void* object = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext, CUstream, void**, int)>(table8[51])(
                primary, keyed, &object, 0),
            CUDA_SUCCESS);
  uint64_t streamId = 0;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext, const void*, uint64_t*)>(table8[39])(
                primary, object, &streamId),
            CUDA_SUCCESS);
  unsigned long long expectedId = 0;
  ASSERT_EQ(CU(cuStreamGetId, CUstream, unsigned long long*)(keyed, &expectedId), CUDA_SUCCESS);
  EXPECT_EQ(streamId, expectedId);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(keyed), CUDA_SUCCESS);
  // Table 4 slot 2: the current context.
  auto table4 = exportTable({0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7,
                             0x8a, 0x3a, 0xec, 0xdc});
  CUcontext current = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(CUcontext*)>(table4[2])(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);

  auto table3 = exportTable({0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00,
                             0x20, 0x0c, 0x0a, 0x66});
  EXPECT_GE(reinterpret_cast<uintptr_t>(table3[0]), 56u);
  void* buffer = nullptr;
  size_t size = 0;
  using BufferSlot = CUresult (*)(void**, size_t*);
  ASSERT_EQ(reinterpret_cast<BufferSlot>(table3[2])(&buffer, &size), CUDA_SUCCESS);
  EXPECT_NE(buffer, nullptr);
  EXPECT_GE(size, 523u);
  ASSERT_EQ(reinterpret_cast<BufferSlot>(table3[6])(&buffer, &size), CUDA_SUCCESS);
  EXPECT_GE(size, 14u);

  // Context-local storage: get misses, put, get hits, destructors run when the context dies.
  auto table5 = exportTable({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3,
                             0x55, 0xd8, 0x95, 0x93});
  using Put = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
  using Delete = CUresult (*)(CUcontext, void*);
  using Get = CUresult (*)(void**, CUcontext, void*);
  auto put = reinterpret_cast<Put>(table5[0]);
  auto del = reinterpret_cast<Delete>(table5[1]);
  auto get = reinterpret_cast<Get>(table5[2]);
  int key = 0, value = 5;
  void* out = nullptr;
  EXPECT_NE(get(&out, nullptr, &key), CUDA_SUCCESS);
  ASSERT_EQ(put(nullptr, &key, &value, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(get(&out, primary, &key), CUDA_SUCCESS);
  EXPECT_EQ(out, &value);
  ASSERT_EQ(del(nullptr, &key), CUDA_SUCCESS);
  EXPECT_NE(get(&out, nullptr, &key), CUDA_SUCCESS);

  CUcontext created = nullptr;
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(put(created, &key, &value, destroyValue), CUDA_SUCCESS);
  gDestroyed = 0;
  ASSERT_EQ(CU(cuCtxDestroy, CUcontext)(created), CUDA_SUCCESS);
  EXPECT_EQ(gDestroyed, 5);
  retainPrimary();

  auto table6 = exportTable({0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5,
                             0x00, 0x6d, 0xfa, 0x7e});
  ASSERT_NE(table6, nullptr);

  // The integrity check, recomputed here from what the driver API reports.
  auto table7 = exportTable({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12,
                             0x3c, 0x66, 0xe1, 0xf2});
  using Integrity = CUresult (*)(uint32_t, uint64_t, uint64_t*);
  auto integrity = reinterpret_cast<Integrity>(table7[1]);
  uint64_t answer[2] = {};
  ASSERT_EQ(integrity(13000, 1700000000, answer), CUDA_SUCCESS);
  EXPECT_EQ(answer[0], 0x3341181C03CB675CULL);
  ASSERT_EQ(integrity(13001, 1700000000, answer), CUDA_SUCCESS);
  EXPECT_EQ(answer[0], 0x1841181C03CB675CULL);
  ASSERT_EQ(integrity(13002, 1700000000, answer), CUDA_SUCCESS);

  api::IntegrityInputs inputs;
  inputs.driverVersion = 13000;
  inputs.version = 13002;
  inputs.processId = static_cast<uint32_t>(getpid());
  inputs.threadId = static_cast<uint32_t>(pthread_self());
  inputs.table2 = table2;
  inputs.table7 = table7;
  inputs.slot1 = table7[1];
  inputs.unixSeconds = 1700000000;
  int count = 0;
  ASSERT_EQ(CU(cuDeviceGetCount, int*)(&count), CUDA_SUCCESS);
  auto getAttribute = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  for (int d = 0; d < count; ++d) {
    api::IntegrityDevice device;
    CUuuid uuid{};
    ASSERT_EQ(CU(cuDeviceGetUuid, CUuuid*, CUdevice)(&uuid, d), CUDA_SUCCESS);
    std::memcpy(device.uuid.data(), uuid.bytes, 16);
    getAttribute(&device.pciDomain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    getAttribute(&device.pciBus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    getAttribute(&device.pciDevice, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    inputs.devices.push_back(device);
  }
  auto expected = api::integrityAnswer(inputs);
  EXPECT_EQ(answer[0], expected[0]);
  EXPECT_EQ(answer[1], expected[1]);
}

constexpr const char* kPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .global .align 4 .u32 counter = 5;

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  add.s32 %r7, %r6, 1;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

// The module-functions table cuFFT uses: slot 7 visits each kernel of a module, with the handle
// cuModuleGetFunction gives, and returns how many there are.
struct VisitedFunctions {
  std::vector<CUfunction> functions;
};
void visitFunction(void* opaque, CUfunction function, uint64_t) {
  static_cast<VisitedFunctions*>(opaque)->functions.push_back(function);
}

TEST_F(LibCuda, ModuleFunctionsExportTable) {
  CUcontext primary = retainPrimary();
  auto table9 = exportTable({0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82,
                             0xaf, 0xf1, 0x99, 0x1e});
  ASSERT_NE(table9, nullptr);
  EXPECT_GE(reinterpret_cast<uintptr_t>(table9[0]), 8 * sizeof(void*));  // cuFFT checks it
  using Visit = void (*)(void*, CUfunction, uint64_t);
  auto iterate = reinterpret_cast<int (*)(CUcontext, CUmodule, Visit, void*)>(table9[7]);
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx), CUDA_SUCCESS);
  VisitedFunctions visited;
  EXPECT_EQ(iterate(primary, module, visitFunction, &visited), 1);
  CUfunction function = nullptr;
  ASSERT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "add_one"),
      CUDA_SUCCESS);
  ASSERT_EQ(visited.functions.size(), 1u);
  EXPECT_EQ(visited.functions[0], function);
  // An unloaded module has none, and nothing is visited.
  ASSERT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(iterate(primary, module, visitFunction, &visited), 0);
  EXPECT_EQ(visited.functions.size(), 1u);
}

TEST_F(LibCuda, ModuleAndLaunch) {
  retainPrimary();
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "nope"),
            CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "add_one"),
      CUDA_SUCCESS);
  CUdeviceptr global = 0;
  size_t globalSize = 0;
  ASSERT_EQ(CU(cuModuleGetGlobal, CUdeviceptr*, size_t*, CUmodule, const char*)(
                &global, &globalSize, module, "counter"),
            CUDA_SUCCESS);
  EXPECT_EQ(globalSize, 4u);
  uint32_t counter = 0;
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&counter, global, 4), CUDA_SUCCESS);
  EXPECT_EQ(counter, 5u);

  constexpr uint32_t kN = 300;
  CUdeviceptr data = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 41, kN), CUDA_SUCCESS);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  uint32_t n = kN;
  void* params[] = {&data, &n};
  ASSERT_EQ(launch(function, 3, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  // The same through `extra`: the packed parameter buffer {u64 data, u32 n}.
  struct {
    CUdeviceptr data;
    uint32_t n;
  } packed{data, kN};
  size_t packedSize = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packedSize, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(launch(function, 3, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  EXPECT_EQ(launch(function, 3, 1, 1, 128, 1, 1, 0, nullptr, params, extra),
            CUDA_ERROR_INVALID_VALUE);
  std::vector<uint32_t> result(kN);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(result.data(), data, kN * 4),
            CUDA_SUCCESS);
  for (uint32_t v : result) ASSERT_EQ(v, 43u);

  int maxThreads = 0;
  ASSERT_EQ(CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction)(
                &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
            CUDA_SUCCESS);
  EXPECT_GE(maxThreads, 128);
  size_t offset = 0, size = 0;
  ASSERT_EQ(
      CU(cuFuncGetParamInfo, CUfunction, size_t, size_t*, size_t*)(function, 1, &offset, &size),
      CUDA_SUCCESS);
  EXPECT_EQ(offset, 8u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(launch(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

// cudaDeviceReset is how a program recovers from a failed kernel: the reset succeeds, clears the
// sticky error, and destroys the streams, events and modules of the primary context, whose
// limits return to their defaults. Libraries belong to no context (cudart's code is loaded as
// libraries) and stay usable.
std::atomic<int> callbackCalls{0};
std::atomic<int> callbackStatus{0};
void recordCallback(CUstream, CUresult status, void*) {
  callbackStatus = status;
  ++callbackCalls;
}

TEST_F(LibCuda, PrimaryContextResetRecoversFromAFailedKernel) {
  retainPrimary();
  const char* trapPtx = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .entry fail() { trap; }
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, trapPtx), CUDA_SUCCESS);
  CUfunction fail = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&fail, module, "fail"),
            CUDA_SUCCESS);
  using LoadLibrary = CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                   CUlibraryOption*, void**, unsigned);
  CUlibrary library = nullptr;
  ASSERT_EQ(proc<LoadLibrary>("cuLibraryLoadData", 12000)(&library, kPtx, nullptr, nullptr, 0,
                                                          nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel addOne = nullptr;
  ASSERT_EQ(CU(cuLibraryGetKernel, CUkernel*, CUlibrary, const char*)(&addOne, library, "add_one"),
            CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, 0), CUDA_SUCCESS);
  auto setLimit = CU(cuCtxSetLimit, CUlimit, size_t);
  auto getLimit = CU(cuCtxGetLimit, size_t*, CUlimit);
  size_t defaultStack = 0;
  ASSERT_EQ(getLimit(&defaultStack, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  ASSERT_EQ(setLimit(CU_LIMIT_STACK_SIZE, defaultStack * 4), CUDA_SUCCESS);

  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  ASSERT_EQ(launch(fail, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  // A stream callback runs exactly once even after the failure, and learns of it.
  callbackCalls = 0;
  ASSERT_EQ(CU(cuStreamAddCallback, CUstream, CUstreamCallback, void*, unsigned)(
                nullptr, recordCallback, nullptr, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(callbackCalls, 1);
  EXPECT_EQ(callbackStatus, CUDA_ERROR_LAUNCH_FAILED);
  CUdeviceptr data = 0;
  EXPECT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, 256), CUDA_ERROR_LAUNCH_FAILED);
  // Every later piece of work reports it too: event records and waits, host functions, event
  // queries and synchronizations.
  EXPECT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(stream, event, 0),
            CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(
      CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(stream, CUDA_CB_increment, &callbackCalls),
      CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(event), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_ERROR_LAUNCH_FAILED);

  ASSERT_EQ(proc<CUresult (*)(CUdevice)>("cuDevicePrimaryCtxReset", 11000)(0), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&fail, module, "fail"),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuStreamQuery, CUstream)(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(event), CUDA_ERROR_INVALID_HANDLE);
  size_t stack = 0;
  ASSERT_EQ(getLimit(&stack, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(stack, defaultStack);

  constexpr uint32_t kN = 64;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, kN * 4), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data, 7, kN), CUDA_SUCCESS);
  uint32_t n = kN;
  void* params[] = {&data, &n};
  ASSERT_EQ(
      launch(reinterpret_cast<CUfunction>(addOne), 1, 1, 1, kN, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  std::vector<uint32_t> result(kN);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(result.data(), data, kN * 4),
            CUDA_SUCCESS);
  for (uint32_t v : result) ASSERT_EQ(v, 8u);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuLibraryUnload, CUlibrary)(library), CUDA_SUCCESS);
}

// %clock64 advances at the clock rate the device reports (cudaDevAttrClockRate, kHz): cycles
// measured against %globaltimer over a 20 ms spin agree with it within 10%.
TEST_F(LibCuda, ClockRateIsTheRateOfClock64) {
  retainPrimary();
  const char* ptx = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, %globaltimer;
  mov.u64 %rd3, %clock64;
LOOP:
  mov.u64 %rd4, %globaltimer;
  sub.u64 %rd5, %rd4, %rd2;
  setp.lt.u64 %p1, %rd5, 20000000;
  @%p1 bra LOOP;
  mov.u64 %rd6, %clock64;
  sub.u64 %rd7, %rd6, %rd3;
  st.global.u64 [%rd1], %rd5;
  st.global.u64 [%rd1+8], %rd7;
  ret;
}
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  CUfunction spin = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&spin, module, "spin"),
            CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, 16), CUDA_SUCCESS);
  void* params[] = {&out};
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  ASSERT_EQ(
      proc<Launch>("cuLaunchKernel", 7000)(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  uint64_t measured[2] = {};
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(measured, out, 16), CUDA_SUCCESS);
  int rateKHz = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &rateKHz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0),
            CUDA_SUCCESS);
  double measuredKHz = static_cast<double>(measured[1]) / static_cast<double>(measured[0]) * 1e6;
  EXPECT_NEAR(measuredKHz / rateKHz, 1.0, 0.1)
      << measuredKHz << " kHz measured, " << rateKHz << " reported";
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// Launch bounds: .maxntid caps the block's thread count (any shape), .reqntid fixes the shape;
// the function attributes report them and the module's constant memory.
TEST_F(LibCuda, LaunchBoundsAndFunctionAttributes) {
  retainPrimary();
  const char* ptx = R"(
.version 7.0
.target sm_50
.address_size 64
.const .align 4 .b32 table[64];
.const .align 8 .b64 scale;
.visible .entry bounded() .maxntid 128, 1, 1 { ret; }
.visible .entry exact() .reqntid 32, 2, 1 { ret; }
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  CUfunction bounded = nullptr, exact = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&bounded, module,
                                                                         "bounded"),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&exact, module, "exact"),
            CUDA_SUCCESS);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  EXPECT_EQ(launch(bounded, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(launch(bounded, 1, 1, 1, 32, 4, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  // Beyond the function's maximum: "too many resources requested for launch", as NVIDIA's
  // driver answers a block over CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.
  EXPECT_EQ(launch(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch(bounded, 1, 1, 1, 64, 3, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch(exact, 1, 1, 1, 32, 2, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(launch(exact, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  int maxThreads = 0;
  ASSERT_EQ(CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction)(
                &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bounded),
            CUDA_SUCCESS);
  EXPECT_EQ(maxThreads, 128);
  // Constant memory: the .const variables of the kernel's translation unit.
  int constBytes = 0;
  ASSERT_EQ(CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction)(
                &constBytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, exact),
            CUDA_SUCCESS);
  EXPECT_EQ(constBytes, 64 * 4 + 8);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// isspacep tells the windows apart for generic addresses of each space, in a kernel with a
// barrier (its local memory lives in the block's continuation frames or a fiber stack); a
// shared array with .align 256 is 256-byte aligned in the generic space too.
TEST_F(LibCuda, IsspacepTellsTheWindowsApart) {
  retainPrimary();
  // Bit 4 * address + space, for the addresses %rd2..%rd5 (global, shared, local, const) and the
  // spaces in the same order.
  std::string checks;
  const char* spaces[] = {"global", "shared", "local", "const"};
  for (int a = 0; a < 4; ++a)
    for (int sp = 0; sp < 4; ++sp)
      checks += std::string("  isspacep.") + spaces[sp] + " %p1, %rd" + std::to_string(a + 2) +
                ";\n  selp.b32 %r2, " + std::to_string(1u << (4 * a + sp)) +
                ", 0, %p1;\n  or.b32 %r1, %r1, %r2;\n";
  std::string ptx = R"(
.version 7.0
.target sm_50
.address_size 64
.const .align 4 .b32 table[4] = {1, 2, 3, 4};
.visible .entry spaces(.param .u64 out, .param .u64 buf)
{
  .shared .align 256 .b8 tile[64];
  .local .align 8 .b8 scratch[16];
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [buf];
  mov.u64 %rd3, tile;
  cvta.shared.u64 %rd3, %rd3;
  mov.u64 %rd4, scratch;
  cvta.local.u64 %rd4, %rd4;
  mov.u64 %rd5, table;
  cvta.const.u64 %rd5, %rd5;
  mov.u32 %r3, %tid.x;
  st.local.u32 [scratch], %r3;
  bar.sync 0;
  mov.u32 %r1, 0;
)" + checks + R"(
  ld.local.u32 %r3, [scratch];
  mul.wide.u32 %rd6, %r3, 8;
  add.s64 %rd7, %rd1, %rd6;
  st.global.u32 [%rd7], %r1;
  cvt.u32.u64 %r2, %rd3;
  and.b32 %r2, %r2, 255;
  st.global.u32 [%rd7+4], %r2;
  ret;
}
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx.c_str()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module,
                                                                         "spaces"),
            CUDA_SUCCESS);
  constexpr unsigned kThreads = 64;
  CUdeviceptr out = 0, buf = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, kThreads * 8), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&buf, 16), CUDA_SUCCESS);
  void* params[] = {&out, &buf};
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  auto launch = proc<Launch>("cuLaunchKernel", 7000);
  ASSERT_EQ(launch(function, 2, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  std::vector<uint32_t> result(kThreads * 2);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(result.data(), out, kThreads * 8),
            CUDA_SUCCESS);
  // Each address is in its own space only.
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_EQ(result[2 * t], 0x8421u) << "thread " << t;
    EXPECT_EQ(result[2 * t + 1], 0u) << "shared address mod 256, thread " << t;
  }
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(buf), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda
