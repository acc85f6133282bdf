// Virtual memory management through libcuda.so.1, as llama.cpp's pool uses it: a large address
// reservation, physical chunks mapped back to back and made accessible in one call, a kernel
// over the whole range, handles retained from an address and shared as file descriptors, and
// the documented errors.
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

auto reserve() {
  return CU(cuMemAddressReserve, CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
}
auto addressFree() { return CU(cuMemAddressFree, CUdeviceptr, size_t); }
auto create() {
  return CU(cuMemCreate, CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
            unsigned long long);
}
auto release() { return CU(cuMemRelease, CUmemGenericAllocationHandle); }
auto map() {
  return CU(cuMemMap, CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
            unsigned long long);
}
auto unmap() { return CU(cuMemUnmap, CUdeviceptr, size_t); }
auto setAccess() { return CU(cuMemSetAccess, CUdeviceptr, size_t, const CUmemAccessDesc*, size_t); }
auto getAccess() {
  return CU(cuMemGetAccess, unsigned long long*, const CUmemLocation*, CUdeviceptr);
}
auto granularity() {
  return CU(cuMemGetAllocationGranularity, size_t*, const CUmemAllocationProp*,
            CUmemAllocationGranularity_flags);
}

CUmemAllocationProp deviceProp(bool exportable = false) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  if (exportable) prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

CUmemAccessDesc readWrite() {
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 0;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return desc;
}

TEST_F(Driver, VirtualMemoryAttributesAndGranularity) {
  int vmm = -1, fd = -1;
  auto attribute = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  ASSERT_EQ(attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(attribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(vmm, 1);
  EXPECT_EQ(fd, 1);
  CUmemAllocationProp prop = deviceProp();
  size_t minimum = 0, recommended = 0;
  ASSERT_EQ(granularity()(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  ASSERT_EQ(granularity()(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
  EXPECT_EQ(minimum, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(recommended, size_t{2} << 20);
  EXPECT_EQ(granularity()(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(granularity()(&minimum, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);
  prop.location.id = 99;
  EXPECT_EQ(granularity()(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_DEVICE);
  prop = deviceProp();
  prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_EQ(granularity()(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);
  prop = deviceProp();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_EQ(granularity()(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_NOT_SUPPORTED);
  // cuMemCreate's documented refusals: HOST_NUMA_CURRENT as a location, and a handle type asked
  // for host memory ("requestedHandleTypes must be 0").
  CUmemGenericAllocationHandle handle = 0;
  prop = deviceProp();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  EXPECT_EQ(create()(&handle, recommended, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop = deviceProp(/*exportable=*/true);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(create()(&handle, recommended, &prop, 0), CUDA_ERROR_INVALID_VALUE);
}

// The pattern of llama.cpp's VMM pool: a reservation much larger than what is mapped, chunks
// mapped back to back as the pool grows, access set over the whole mapped prefix at once.
// "calling cuMemMap does not make the address accessible": copies and memsets of mapped memory
// without access (or writes with read-only access) fail instead of ending the process.
TEST_F(Driver, CopiesOfMappedMemoryWithoutAccessFail) {
  const size_t chunk = size_t{2} << 20;
  CUdeviceptr base = 0;
  ASSERT_EQ(reserve()(&base, chunk, 0, 0, 0), CUDA_SUCCESS);
  CUmemAllocationProp prop = deviceProp();
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(create()(&handle, chunk, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(map()(base, chunk, 0, handle, 0), CUDA_SUCCESS);
  std::vector<uint32_t> host(1024, 7);
  auto htod = CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t);
  auto dtoh = CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t);
  auto memset32 = CU(cuMemsetD32, CUdeviceptr, unsigned, size_t);
  EXPECT_EQ(htod(base, host.data(), 4096), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(dtoh(host.data(), base, 4096), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(memset32(base, 1, 1024), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUmemAccessDesc readOnly = readWrite();
  readOnly.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  ASSERT_EQ(setAccess()(base, chunk, &readOnly, 1), CUDA_SUCCESS);
  EXPECT_EQ(htod(base, host.data(), 4096), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(dtoh(host.data(), base, 4096), CUDA_SUCCESS);  // reading is allowed
  EXPECT_EQ(host[0], 0u);
  auto pointerAttribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  unsigned flags = 99;
  ASSERT_EQ(pointerAttribute(&flags, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, base), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEM_ACCESS_FLAGS_PROT_READ});
  CUmemAccessDesc access = readWrite();
  ASSERT_EQ(setAccess()(base, chunk, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(pointerAttribute(&flags, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, base), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEM_ACCESS_FLAGS_PROT_READWRITE});
  unsigned long long handleTypes = 99;
  ASSERT_EQ(pointerAttribute(&handleTypes, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, base),
            CUDA_SUCCESS);
  EXPECT_EQ(handleTypes, 0u);  // created without a shareable handle type
  EXPECT_EQ(memset32(base, 5, 1024), CUDA_SUCCESS);
  EXPECT_EQ(dtoh(host.data(), base, 4096), CUDA_SUCCESS);
  EXPECT_EQ(host[1023], 5u);
  EXPECT_EQ(unmap()(base, chunk), CUDA_SUCCESS);
  EXPECT_EQ(release()(handle), CUDA_SUCCESS);
  EXPECT_EQ(addressFree()(base, chunk), CUDA_SUCCESS);
}

// cuMemPoolTrimTo: "the pool will be guaranteed to have at least minBytesToKeep bytes reserved
// after the operation".
TEST_F(Driver, PoolTrimKeepsWhatItIsAskedToKeep) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &props), CUDA_SUCCESS);
  auto setAttribute = CU(cuMemPoolSetAttribute, CUmemoryPool, CUmemPool_attribute, void*);
  auto getAttribute = CU(cuMemPoolGetAttribute, CUmemoryPool, CUmemPool_attribute, void*);
  cuuint64_t threshold = 64 << 20;
  ASSERT_EQ(setAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), CUDA_SUCCESS);
  auto allocate = CU(cuMemAllocFromPoolAsync, CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  auto freeAsync = CU(cuMemFreeAsync, CUdeviceptr, CUstream);
  CUdeviceptr big = 0, small = 0;
  ASSERT_EQ(allocate(&big, 8 << 20, pool, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(allocate(&small, 64 << 10, pool, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(freeAsync(big, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(freeAsync(small, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  cuuint64_t reserved = 0;
  ASSERT_EQ(getAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
  ASSERT_GE(reserved, cuuint64_t{(8 << 20) + (64 << 10)});
  auto trim = CU(cuMemPoolTrimTo, CUmemoryPool, size_t);
  ASSERT_EQ(trim(pool, 1 << 20), CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
  EXPECT_GE(reserved, cuuint64_t{1 << 20});  // the 8 MiB block stays, the small one may go
  ASSERT_EQ(trim(pool, 0), CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
  EXPECT_EQ(reserved, 0u);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
}

TEST_F(Driver, ChunksMappedBackToBackRunAKernelOverTheRange) {
  const size_t chunk = size_t{2} << 20, reserved = 64 * chunk;
  CUdeviceptr base = 0;
  ASSERT_EQ(reserve()(&base, reserved, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(base % 4096, 0u);
  CUmemAllocationProp prop = deviceProp();
  CUmemGenericAllocationHandle handles[2] = {};
  for (auto& h : handles) ASSERT_EQ(create()(&h, chunk, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(map()(base, chunk, 0, handles[0], 0), CUDA_SUCCESS);
  ASSERT_EQ(map()(base + chunk, chunk, 0, handles[1], 0), CUDA_SUCCESS);
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  unsigned long long flags = 99;
  ASSERT_EQ(getAccess()(&flags, &device, base), CUDA_SUCCESS);
  EXPECT_EQ(flags, 0u);  // mapped, not accessible yet
  CUmemAccessDesc access = readWrite();
  ASSERT_EQ(setAccess()(base, 2 * chunk, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(getAccess()(&flags, &device, base + chunk + 4096), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  // The range of a mapped pointer is the reservation ("the mappable address range ptr
  // references"); the mapping is the mapped chunk.
  auto attribute = CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr);
  CUdeviceptr start = 0, mappingBase = 0;
  size_t size = 0, mappingSize = 0;
  ASSERT_EQ(attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, base + chunk + 64),
            CUDA_SUCCESS);
  ASSERT_EQ(attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, base + chunk + 64), CUDA_SUCCESS);
  ASSERT_EQ(attribute(&mappingBase, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, base + chunk + 64),
            CUDA_SUCCESS);
  ASSERT_EQ(attribute(&mappingSize, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, base + chunk + 64),
            CUDA_SUCCESS);
  EXPECT_EQ(start, base);
  EXPECT_EQ(size, reserved);
  EXPECT_EQ(mappingBase, base + chunk);
  EXPECT_EQ(mappingSize, chunk);

  // Device memory like any other: memset, a kernel across the chunk boundary, copies.
  const uint32_t n = static_cast<uint32_t>(2 * chunk / 4);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(base, 41, n), CUDA_SUCCESS);
  CUdeviceptr data = base;
  uint32_t count = n;
  void* params[] = {&data, &count};
  ASSERT_EQ(proc<Launch>("cuLaunchKernel", 7000)(loadAddOne(), (n + 127) / 128, 1, 1, 128, 1, 1, 0,
                                                 nullptr, params, nullptr),
            CUDA_SUCCESS);
  std::vector<uint32_t> out(n);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), base, 2 * chunk),
            CUDA_SUCCESS);
  size_t wrong = 0;
  for (uint32_t v : out) wrong += v != 42;
  EXPECT_EQ(wrong, 0u);
  CUdeviceptr rangeBase = 0;
  size_t rangeSize = 0;
  ASSERT_EQ(CU(cuMemGetAddressRange, CUdeviceptr*, size_t*, CUdeviceptr)(&rangeBase, &rangeSize,
                                                                         base + chunk + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(rangeBase, base + chunk);
  EXPECT_EQ(rangeSize, chunk);

  // The handle behind an address, retained until released once more.
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(CU(cuMemRetainAllocationHandle, CUmemGenericAllocationHandle*, void*)(
                &retained, reinterpret_cast<void*>(base + chunk + 8)),
            CUDA_SUCCESS);
  EXPECT_EQ(retained, handles[1]);
  EXPECT_EQ(release()(retained), CUDA_SUCCESS);
  CUmemAllocationProp back{};
  ASSERT_EQ(CU(cuMemGetAllocationPropertiesFromHandle, CUmemAllocationProp*,
               CUmemGenericAllocationHandle)(&back, handles[0]),
            CUDA_SUCCESS);
  EXPECT_EQ(back.type, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(back.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(back.location.id, 0);

  // Errors: offsets, overlaps, ranges outside the reservation or not whole mappings.
  CUmemGenericAllocationHandle spare = 0;
  ASSERT_EQ(create()(&spare, chunk, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(map()(base + 2 * chunk, chunk, 4096, spare, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(map()(base + chunk, chunk, 0, spare, 0), CUDA_ERROR_INVALID_VALUE);       // mapped
  EXPECT_EQ(map()(base + reserved, chunk, 0, spare, 0), CUDA_ERROR_INVALID_VALUE);    // outside
  EXPECT_EQ(map()(base + 2 * chunk, chunk, 0, 0x1234, 0), CUDA_ERROR_INVALID_VALUE);  // no handle
  EXPECT_EQ(map()(base + 2 * chunk, 2 * chunk, 0, spare, 0), CUDA_ERROR_INVALID_VALUE);  // too big
  EXPECT_EQ(unmap()(base, chunk / 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setAccess()(base, 3 * chunk, &access, 1), CUDA_ERROR_INVALID_VALUE);  // not all mapped
  EXPECT_EQ(addressFree()(base, reserved), CUDA_ERROR_INVALID_VALUE);             // still mapped
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(base), CUDA_ERROR_INVALID_VALUE);          // cuMemUnmap's
  EXPECT_EQ(create()(&spare, 1000, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(release()(spare), CUDA_SUCCESS);
  EXPECT_EQ(release()(spare), CUDA_ERROR_INVALID_VALUE);  // released already

  // Released while mapped: the pages stay until unmapped.
  for (auto h : handles) EXPECT_EQ(release()(h), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), base + chunk, 4),
            CUDA_SUCCESS);
  EXPECT_EQ(out[0], 42u);
  EXPECT_EQ(unmap()(base, 2 * chunk), CUDA_SUCCESS);  // both mappings in one call
  EXPECT_EQ(
      CU(cuMemGetAddressRange, CUdeviceptr*, size_t*, CUdeviceptr)(&rangeBase, &rangeSize, base),
      CUDA_ERROR_NOT_FOUND);  // device memory no more
  EXPECT_EQ(addressFree()(base, reserved / 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(addressFree()(base, reserved), CUDA_SUCCESS);
  EXPECT_EQ(addressFree()(base, reserved), CUDA_ERROR_INVALID_VALUE);
}

// A handle exported as a file descriptor and imported again maps the same pages.
TEST_F(Driver, ExportedPhysicalMemoryMapsTheSamePages) {
  const size_t bytes = 1 << 20;
  CUmemAllocationProp exportable = deviceProp(true), plain = deviceProp();
  CUmemGenericAllocationHandle handle = 0, local = 0, imported = 0;
  ASSERT_EQ(create()(&handle, bytes, &exportable, 0), CUDA_SUCCESS);
  ASSERT_EQ(create()(&local, bytes, &plain, 0), CUDA_SUCCESS);
  auto exportHandle = CU(cuMemExportToShareableHandle, void*, CUmemGenericAllocationHandle,
                         CUmemAllocationHandleType, unsigned long long);
  auto importHandle = CU(cuMemImportFromShareableHandle, CUmemGenericAllocationHandle*, void*,
                         CUmemAllocationHandleType);
  int fd = -1;
  EXPECT_EQ(exportHandle(&fd, local, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);  // not created exportable
  EXPECT_EQ(exportHandle(&fd, handle, CU_MEM_HANDLE_TYPE_WIN32, 0), CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(exportHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(importHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_SUCCESS);
  close(fd);
  EXPECT_NE(imported, handle);
  CUdeviceptr base = 0;
  ASSERT_EQ(reserve()(&base, 2 * bytes, 2 * bytes, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(base % (2 * bytes), 0u);  // the alignment asked for
  ASSERT_EQ(map()(base, bytes, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(map()(base + bytes, bytes, 0, imported, 0), CUDA_SUCCESS);
  CUmemAccessDesc access = readWrite();
  ASSERT_EQ(setAccess()(base, 2 * bytes, &access, 1), CUDA_SUCCESS);
  unsigned long long handleTypes = 0;  // what cuMemExportToShareableHandle may be given
  ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                &handleTypes, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, base),
            CUDA_SUCCESS);
  EXPECT_EQ(handleTypes, static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(base, 0xabcd1234u, bytes / 4),
            CUDA_SUCCESS);
  std::vector<uint32_t> out(bytes / 4);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), base + bytes, bytes),
            CUDA_SUCCESS);
  EXPECT_EQ(out.front(), 0xabcd1234u);
  EXPECT_EQ(out.back(), 0xabcd1234u);
  EXPECT_EQ(unmap()(base, 2 * bytes), CUDA_SUCCESS);
  for (auto h : {handle, local, imported}) EXPECT_EQ(release()(h), CUDA_SUCCESS);
  EXPECT_EQ(addressFree()(base, 2 * bytes), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing

namespace rocuda::cuda::testing {
namespace {

// Host-located physical memory (CU_MEM_LOCATION_TYPE_HOST and HOST_NUMA, node 0 here): made,
// mapped, reachable by the host and by a kernel once access is given to both, its properties
// reported back; host access to device-located memory and an unknown node refused.
TEST_F(Driver, HostLocatedPhysicalMemory) {
  auto attribute = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  int host = -1, hostNuma = -1;
  ASSERT_EQ(attribute(&host, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(
      attribute(&hostNuma, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
      CUDA_SUCCESS);
  EXPECT_EQ(host, 1);
  EXPECT_EQ(hostNuma, 1);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = 4 * page;
  for (CUmemLocationType type : {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA}) {
    SCOPED_TRACE(type);
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = 0;
    size_t minimum = 0;
    ASSERT_EQ(granularity()(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    EXPECT_EQ(minimum, page);
    CUmemGenericAllocationHandle handle = 0;
    ASSERT_EQ(create()(&handle, bytes, &prop, 0), CUDA_SUCCESS);
    CUmemAllocationProp back{};
    ASSERT_EQ(CU(cuMemGetAllocationPropertiesFromHandle, CUmemAllocationProp*,
                 CUmemGenericAllocationHandle)(&back, handle),
              CUDA_SUCCESS);
    EXPECT_EQ(back.location.type, type);
    EXPECT_EQ(back.location.id, 0);
    CUdeviceptr base = 0;
    ASSERT_EQ(reserve()(&base, bytes, 0, 0, 0), CUDA_SUCCESS);
    ASSERT_EQ(map()(base, bytes, 0, handle, 0), CUDA_SUCCESS);
    // The host reads and writes, the device reads and writes.
    CUmemAccessDesc access[2] = {};
    access[0].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;  // id ignored
    access[0].location.id = 7;
    access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access[1] = readWrite();
    ASSERT_EQ(setAccess()(base, bytes, access, 2), CUDA_SUCCESS);
    unsigned long long flags = 0;
    CUmemLocation hostLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
    ASSERT_EQ(getAccess()(&flags, &hostLocation, base), CUDA_SUCCESS);
    EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    auto* values = reinterpret_cast<uint32_t*>(base);
    size_t count = bytes / sizeof(uint32_t);
    for (size_t i = 0; i < count; ++i) values[i] = static_cast<uint32_t>(i);
    CUfunction addOne = loadAddOne();
    unsigned n = static_cast<unsigned>(count);
    void* args[] = {&base, &n};
    auto launch = reinterpret_cast<Launch>(proc<void*>("cuLaunchKernel", 12090));
    ASSERT_EQ(launch(addOne, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(values[i], i + 1) << i;
    ASSERT_EQ(unmap()(base, bytes), CUDA_SUCCESS);
    ASSERT_EQ(addressFree()(base, bytes), CUDA_SUCCESS);
    ASSERT_EQ(release()(handle), CUDA_SUCCESS);
  }
  // A node the host does not have; host access to memory on the device.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 4096;
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(create()(&handle, bytes, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop = deviceProp();
  ASSERT_EQ(create()(&handle, bytes, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  ASSERT_EQ(reserve()(&base, bytes, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(map()(base, bytes, 0, handle, 0), CUDA_SUCCESS);
  CUmemAccessDesc hostAccess{};
  hostAccess.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  hostAccess.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  EXPECT_EQ(setAccess()(base, bytes, &hostAccess, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(unmap()(base, bytes), CUDA_SUCCESS);
  ASSERT_EQ(addressFree()(base, bytes), CUDA_SUCCESS);
  ASSERT_EQ(release()(handle), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
