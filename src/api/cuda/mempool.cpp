// Stream-ordered allocation and memory pools: cuMemAllocAsync / cuMemFreeAsync (cudaMallocAsync,
// cudaFreeAsync), the device's default and current pools, created pools and their attributes.
#include "api/cuda/boundary.h"
#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/ipc.h"
#include "core/memory.h"
#include "core/memory_pool.h"
#include "core/platform.h"
#include "core/stream.h"
#include "core/virtual_memory.h"
#include "support/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

CUmemoryPool toHandle(core::MemoryPool& pool) { return reinterpret_cast<CUmemoryPool>(&pool); }

Result<core::MemoryPool*> lookupPool(CUmemoryPool handle) {
  core::MemoryPool* pool = core::lookupHandle<core::MemoryPool>(handle);
  if (pool == nullptr) return makeError(ErrorCode::InvalidValue, "not a live memory pool");
  return pool;
}

// The pool and arguments of cuMemPoolGet/SetAttribute, checked.
Result<core::MemoryPool*> poolForAttribute(CUmemoryPool handle, CUmemPool_attribute attr,
                                           const void* value) {
  if (value == nullptr) return makeError(ErrorCode::InvalidValue, "value is NULL");
  if (attr < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || attr > CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    return makeError(ErrorCode::InvalidValue, "unknown memory pool attribute");
  return lookupPool(handle);
}

// The reuse flags are ints; the sizes are cuuint64_t.
bool isIntPoolAttribute(CUmemPool_attribute attr) {
  return attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

// The device an access descriptor's location names.
Result<core::Device*> deviceOfLocation(const CUmemLocation& location) {
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return makeError(ErrorCode::NotSupported, "the location is not a device");
  return lookupDevice(location.id);
}

// Whether an access descriptor's location is the host's CPU: the host, or one of its NUMA nodes.
bool namesTheHost(const CUmemLocation& location) {
  return location.type == CU_MEM_LOCATION_TYPE_HOST ||
         (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && platform::isNumaNode(location.id));
}

// What a CUDA 13 location-based pool call names: pinned memory on a device, on the host or on
// one of the host's NUMA nodes, or managed memory preferring none, the host, a host NUMA node or
// a device. Managed pools need concurrent managed access on every device (NOT_SUPPORTED
// otherwise, as NVIDIA documents); a combination CUDA itself rejects is INVALID_VALUE.
struct PoolPlace {
  core::PoolMemory memory;
  core::MemoryLocation location;
};

Result<PoolPlace> poolPlace(const CUmemLocation* location, CUmemAllocationType type) {
  using Type = core::MemoryLocation::Type;
  if (location == nullptr) return makeError(ErrorCode::InvalidValue, "location is NULL");
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
    return makeError(ErrorCode::InvalidValue, "type must be PINNED or MANAGED");
  // Host and managed pools take their memory from device 0.
  if (core::Platform::instance().deviceCount() == 0)
    return makeError(ErrorCode::NoDevice, "no device to allocate pool memory");
  core::MemoryLocation where;
  switch (location->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: {
      Result<core::Device*> device = lookupDevice(location->id);
      if (!device) return device.error();
      where = {Type::Device, location->id};
      break;
    }
    case CU_MEM_LOCATION_TYPE_HOST:  // its id is ignored
      where = {Type::Host, 0};
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (!platform::isNumaNode(location->id))
        return makeError(ErrorCode::InvalidValue, "location id " + std::to_string(location->id) +
                                                      " is not a NUMA node of this host");
      where = {Type::HostNuma, location->id};
      break;
    case CU_MEM_LOCATION_TYPE_NONE:
      if (type != CU_MEM_ALLOCATION_TYPE_MANAGED)
        return makeError(ErrorCode::InvalidValue, "location type NONE needs a managed pool");
      break;
    default:
      return makeError(ErrorCode::InvalidValue, "unknown location type");
  }
  if (type == CU_MEM_ALLOCATION_TYPE_PINNED)
    return PoolPlace{
        where.type == Type::Device ? core::PoolMemory::Device : core::PoolMemory::PinnedHost,
        where};
  core::Platform& platform = core::Platform::instance();
  for (int ordinal = 0; ordinal < platform.deviceCount(); ++ordinal)
    if (!concurrentManagedAccess(platform.device(ordinal)->description()))
      return makeError(ErrorCode::NotSupported,
                       "managed memory pools need concurrent managed access on every device");
  return PoolPlace{core::PoolMemory::Managed, where};
}

// In a capturing stream, stream-ordered allocation becomes a memory alloc node of the capture's
// graph (its address fixed when the node is added, as cuGraphAddMemAllocNode's) and freeing a
// graph allocation a memory free node, as CUDA records them: replaying the graph reuses the
// memory instead of the first launch freeing it.
Outcome captureAllocation(CUdeviceptr* dptr, size_t bytes, core::Stream& stream) {
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  params.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.alloc.poolProps.location.id = stream.context().device().ordinal();
  params.alloc.bytesize = bytes;
  Outcome captured = appendNodeToCapture(stream, params);
  if (captured.ok()) *dptr = params.alloc.dptr;
  return captured;
}

Outcome allocateAsync(CUdeviceptr* dptr, size_t bytes, core::MemoryPool* pool, CUstream hStream,
                      StreamVariant variant) {
  if (dptr == nullptr) return invalidValue("dptr is NULL");
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  core::Context& context = (*stream)->context();
  if (Status sticky = context.stickyError(); !sticky.ok()) return sticky;
  if (pool == nullptr) pool = &context.device().currentMemPool();
  // Host and managed pools serve any device's streams.
  if (pool->memory() == core::PoolMemory::Device && &pool->device() != &context.device())
    return invalidValue("the pool belongs to another device than the stream");
  // Zero bytes are no allocation: NULL, which cuMemFreeAsync takes back (NVIDIA's driver
  // allocates nothing either; unlike cuMemAlloc's, this size is not refused).
  if (bytes == 0) {
    *dptr = 0;
    return {};
  }
  if ((*stream)->capture()) {
    // Graph memory nodes allocate device memory only.
    if (pool->memory() != core::PoolMemory::Device)
      return {CUDA_ERROR_NOT_SUPPORTED,
              "capturing an allocation from a host or managed memory pool is not supported"};
    return captureAllocation(dptr, bytes, **stream);
  }
  // Memory is available at once, so it is valid for all later work in the stream's order.
  Result<void*> memory = core::allocateFromPool(context, *pool, bytes);
  if (!memory) return memory.error();
  *dptr = reinterpret_cast<uintptr_t>(*memory);
  return {};
}

Outcome allocAsync(CUdeviceptr* dptr, size_t bytes, CUstream hStream, StreamVariant variant) {
  return allocateAsync(dptr, bytes, nullptr, hStream, variant);
}

Outcome allocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool handle, CUstream hStream,
                           StreamVariant variant) {
  Result<core::MemoryPool*> pool = lookupPool(handle);
  if (!pool) return pool.error();
  return allocateAsync(dptr, bytes, *pool, hStream, variant);
}

Outcome freeAsync(CUdeviceptr dptr, CUstream hStream, StreamVariant variant) {
  void* pointer = reinterpret_cast<void*>(dptr);
  if (pointer == nullptr) {  // a zero-byte allocation's, as free(NULL)
    Result<core::Stream*> stream = resolveStream(hStream, variant);
    if (!stream) return stream.error();
    return {};
  }
  if (std::shared_ptr<core::GraphAllocation> graphAllocation = core::findGraphAllocation(pointer)) {
    Result<core::Stream*> stream = resolveStream(hStream, variant);
    if (!stream) return stream.error();
    if ((*stream)->capture()) {
      CUgraphNodeParams params{};
      params.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
      params.free.dptr = dptr;
      return appendNodeToCapture(**stream, params);
    }
    core::releaseGraphAllocation(*graphAllocation);
    Result<core::CompletionPtr> queued =
        (*stream)->context().enqueue(**stream, "free graph allocation", [graphAllocation] {
          core::markGraphAllocationUse(*graphAllocation, false);
          return Status::success();
        });
    if (!queued) return queued.error();
    return {};
  }
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (!allocation || allocation->base != dptr ||
      (allocation->kind != core::AllocationKind::Device && allocation->pool == nullptr))
    return invalidValue("not the start of a device or memory pool allocation");
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  // "During stream capture, this function results in the creation of a free node and must
  // therefore be passed the address of a graph allocation."
  if ((*stream)->capture())
    return invalidValue("during a capture only graph allocations can be freed");
  // The memory stays valid for the work queued before this point in the stream. Another
  // process's memory (an imported pool pointer) is unmapped, which would make any access still
  // queued on another stream fault: it waits for all work the context has queued now.
  core::Context& context = (*stream)->context();
  std::vector<core::CompletionPtr> after;
  if (allocation->mappedFrom == core::MappedFrom::PoolImport) after = context.queuedWork();
  Result<core::CompletionPtr> queued = context.enqueue(
      **stream, "free", [pointer] { return core::freeDevice(pointer); }, false, std::move(after));
  if (!queued) return queued.error();
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_STREAM_PAIR(cuMemAllocAsync, cuMemAllocAsync_ptsz,
                   (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
                   (dptr, bytesize, hStream), api::allocAsync)
ROCUDA_STREAM_PAIR(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz,
                   (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
                   (dptr, bytesize, pool, hStream), api::allocFromPoolAsync)
ROCUDA_STREAM_PAIR(cuMemFreeAsync, cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream),
                   (dptr, hStream), api::freeAsync)

ROCUDA_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return ROCUDA_API((pool_out, dev), [&]() -> api::Outcome {
    if (pool_out == nullptr) return api::invalidValue("pool_out is NULL");
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    *pool_out = api::toHandle((*device)->defaultMemPool());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return ROCUDA_API((pool, dev), [&]() -> api::Outcome {
    if (pool == nullptr) return api::invalidValue("pool is NULL");
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    *pool = api::toHandle((*device)->currentMemPool());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  return ROCUDA_API((dev, pool), [&]() -> api::Outcome {
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    Result<core::MemoryPool*> found = api::lookupPool(pool);
    if (!found) return found.error();
    if ((*found)->memory() != core::PoolMemory::Device || &(*found)->device() != *device)
      return api::invalidValue("the pool belongs to another device");
    if ((*found)->imported()) return api::invalidValue("an imported pool cannot allocate");
    (*device)->setCurrentMemPool(*found);
    return {};
  });
}

namespace {
// cuMemGetMemPool and cuMemSetMemPool document INVALID_VALUE, not NOT_SUPPORTED: a location
// with no pool on this platform (host, managed) is an invalid one for them.
api::Outcome noPoolThere(const Error& error) {
  if (error.code == ErrorCode::NotSupported) return {CUDA_ERROR_INVALID_VALUE, error.message};
  return error;
}
}  // namespace

ROCUDA_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                              CUmemAllocationType type) {
  return ROCUDA_API((pool_out, location, type), [&]() -> api::Outcome {
    if (pool_out == nullptr) return api::invalidValue("pool_out is NULL");
    Result<api::PoolPlace> place = api::poolPlace(location, type);
    if (!place) return place.error();
    *pool_out =
        api::toHandle(core::Platform::instance().defaultPool(place->memory, place->location));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                       CUmemAllocationType type) {
  return ROCUDA_API((pool, location, type), [&]() -> api::Outcome {
    if (pool == nullptr) return api::invalidValue("pool is NULL");
    Result<api::PoolPlace> place = api::poolPlace(location, type);
    if (!place) return noPoolThere(place.error());
    *pool = api::toHandle(core::Platform::instance().currentPool(place->memory, place->location));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                       CUmemoryPool pool) {
  return ROCUDA_API((location, type, pool), [&]() -> api::Outcome {
    Result<api::PoolPlace> place = api::poolPlace(location, type);
    if (!place) return noPoolThere(place.error());
    Result<core::MemoryPool*> found = api::lookupPool(pool);
    if (!found) return found.error();
    if ((*found)->memory() != place->memory || !((*found)->location() == place->location))
      return api::invalidValue("the pool's location or type is not the given one");
    if ((*found)->imported()) return api::invalidValue("an imported pool cannot allocate");
    core::Platform::instance().setCurrentPool(place->memory, place->location, *found);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  return ROCUDA_API((pool, poolProps), [&]() -> api::Outcome {
    if (pool == nullptr || poolProps == nullptr) return api::invalidValue("NULL argument");
    const CUmemLocation& location = poolProps->location;
    // A managed pool (CUDA 13's, as cuMemGetDefaultMemPool's MANAGED ones): its location, if
    // any, is the preferred location of what it allocates. It cannot be shared between
    // processes and takes no maximum size ("managed memory does not support maxSize").
    if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
      if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return api::invalidValue("a managed memory pool cannot have handle types");
      if (poolProps->maxSize != 0)
        return api::invalidValue("a managed memory pool takes no maxSize");
      if (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
        return api::invalidValue("CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT cannot locate a pool");
      Result<api::PoolPlace> place = api::poolPlace(&location, CU_MEM_ALLOCATION_TYPE_MANAGED);
      if (!place && place.error().code == ErrorCode::InvalidDevice)
        return api::invalidValue("poolProps->location.id names no device");
      if (!place) return place.error();
      *pool = api::toHandle(*new core::MemoryPool(*core::Platform::instance().device(0), false, 0,
                                                  place->memory, place->location));
      return {};
    }
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
      return api::invalidValue("allocType must be CU_MEM_ALLOCATION_TYPE_PINNED or MANAGED");
    // Combinations the documentation rejects, before what this platform cannot offer.
    if (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
      return api::invalidValue("CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT cannot locate a pool");
    if (location.type == CU_MEM_LOCATION_TYPE_HOST &&
        poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
      return api::invalidValue("a pool located on the host cannot have handle types");
    // Pools on a host NUMA node may be shared between processes (POSIX file descriptors) where
    // device 0, which allocates host pools' blocks, has host memory it can share (the CPU
    // device's).
    if (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA &&
        poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
      const backends::DeviceDescription& first =
          core::Platform::instance().device(0)->description();
      if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
          !core::makesHostMemory(first) || !first.sharesMemoryBetweenProcesses)
        return {CUDA_ERROR_NOT_SUPPORTED,
                "pools on a host NUMA node are shared as POSIX file descriptors, and only where "
                "the CPU device allocates them"};
    }
    if (location.type != CU_MEM_LOCATION_TYPE_DEVICE &&
        location.type != CU_MEM_LOCATION_TYPE_HOST &&
        location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
      return api::invalidValue("unknown location type");
    Result<api::PoolPlace> place = api::poolPlace(&location, CU_MEM_ALLOCATION_TYPE_PINNED);
    // cuMemPoolCreate documents no CUDA_ERROR_INVALID_DEVICE: a location naming no device is an
    // invalid value of poolProps.
    if (!place && place.error().code == ErrorCode::InvalidDevice)
      return api::invalidValue("poolProps->location.id names no device");
    if (!place) return place.error();
    core::Platform& platform = core::Platform::instance();
    if (place->memory == core::PoolMemory::PinnedHost) {
      // Page-locked host memory, which device 0's backend allocates for every device.
      auto* created = new core::MemoryPool(*platform.device(0), false, poolProps->maxSize,
                                           place->memory, place->location);
      created->setHandleTypes(poolProps->handleTypes);
      *pool = api::toHandle(*created);
      return {};
    }
    core::Device& device = *platform.device(location.id);
    // Pools shareable between processes: POSIX file descriptors only (core/ipc.cpp).
    if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
         !device.description().sharesMemoryBetweenProcesses))
      return {CUDA_ERROR_NOT_SUPPORTED, "memory pools cannot be shared with these handle types"};
    auto* created = new core::MemoryPool(device, false, poolProps->maxSize);
    created->setHandleTypes(poolProps->handleTypes);
    *pool = api::toHandle(*created);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return ROCUDA_API((pool), [&]() -> api::Outcome {
    Result<core::MemoryPool*> found = api::lookupPool(pool);
    if (!found) return found.error();
    if ((*found)->isDefault())
      return api::invalidValue("a default memory pool cannot be destroyed");
    core::Platform::instance().forgetCurrentPool(*found);
    core::forgetPool(*found);
    // The handle goes now; the pool itself once its outstanding allocations are freed (a
    // cuMemFreeAsync still queued on a stream among them).
    (*found)->retireHandle();
    if ((*found)->release()) delete *found;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return ROCUDA_API((pool, minBytesToKeep), [&]() -> api::Outcome {
    Result<core::MemoryPool*> found = api::lookupPool(pool);
    if (!found) return found.error();
    (*found)->trimTo(minBytesToKeep);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                             void* value) {
  return ROCUDA_API((pool, attr, value), [&]() -> api::Outcome {
    Result<core::MemoryPool*> found = api::poolForAttribute(pool, attr, value);
    if (!found) return found.error();
    uint64_t v = api::isIntPoolAttribute(attr) ? static_cast<uint64_t>(*static_cast<int*>(value))
                                               : *static_cast<uint64_t*>(value);
    return (*found)->setAttribute(static_cast<core::PoolAttribute>(attr), v);
  });
}

ROCUDA_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                             void* value) {
  return ROCUDA_API((pool, attr, value), [&]() -> api::Outcome {
    Result<core::MemoryPool*> found = api::poolForAttribute(pool, attr, value);
    if (!found) return found.error();
    Result<uint64_t> v = (*found)->attribute(static_cast<core::PoolAttribute>(attr));
    if (!v) return v.error();
    if (api::isIntPoolAttribute(attr))
      *static_cast<int*>(value) = static_cast<int>(*v);
    else
      *static_cast<uint64_t*>(value) = *v;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                          size_t count) {
  return ROCUDA_API((pool, map, count), [&]() -> api::Outcome {
    Result<core::MemoryPool*> found = api::lookupPool(pool);
    if (!found) return found.error();
    if (map == nullptr && count != 0) return api::invalidValue("map is NULL");
    core::MemoryPool& target = **found;
    for (size_t i = 0; i < count; ++i) {
      CUmemAccess_flags flags = map[i].flags;
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
          flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return api::invalidValue("unknown access flags");
      // Host memory is readable and writable wherever it is reachable at all: read-only
      // access cannot be given.
      if (target.memory() != core::PoolMemory::Device && flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
        return {CUDA_ERROR_NOT_SUPPORTED, "read-only access to pool memory is not supported"};
      if (target.memory() != core::PoolMemory::Device && api::namesTheHost(map[i].location)) {
        // Host and managed memory: the host keeps read-write access.
        if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
          return api::invalidValue("the host keeps read-write access to host and managed pools");
        continue;
      }
      Result<core::Device*> device = api::deviceOfLocation(map[i].location);
      if (!device) return device.error();
      bool readWrite = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      switch (target.memory()) {
        case core::PoolMemory::PinnedHost:  // every device reaches page-locked host memory
          target.grantDevice((*device)->ordinal(), readWrite);
          break;
        case core::PoolMemory::Managed:  // managed memory is every device's
          if (!readWrite)
            return api::invalidValue("managed pools are accessible from every device");
          break;
        case core::PoolMemory::Device: {
          // The owning device always has read-write access; other devices would need peer
          // access, which no backend offers yet.
          bool owner = *device == &target.device();
          if (owner && !readWrite)
            return api::invalidValue("the pool's own device must keep read-write access");
          if (!owner && flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return {CUDA_ERROR_NOT_SUPPORTED, "peer access to memory pools is not supported"};
          break;
        }
      }
    }
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                          CUmemLocation* location) {
  return ROCUDA_API((flags, memPool, location), [&]() -> api::Outcome {
    if (flags == nullptr || location == nullptr) return api::invalidValue("NULL argument");
    Result<core::MemoryPool*> found = api::lookupPool(memPool);
    if (!found) return found.error();
    core::MemoryPool& target = **found;
    if (target.memory() != core::PoolMemory::Device && api::namesTheHost(*location)) {
      *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      return {};
    }
    Result<core::Device*> device = api::deviceOfLocation(*location);
    if (!device) return device.error();
    bool readWrite = target.memory() == core::PoolMemory::Managed ||
                     (target.memory() == core::PoolMemory::PinnedHost &&
                      target.deviceGranted((*device)->ordinal())) ||
                     (target.memory() == core::PoolMemory::Device && *device == &target.device());
    *flags = readWrite ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
