// Virtual memory management: cuMemAddressReserve / cuMemAddressFree, cuMemCreate / cuMemRelease,
// cuMemMap / cuMemUnmap, cuMemSetAccess / cuMemGetAccess, granularity and properties, handles
// retained from an address and shared with other processes as POSIX file descriptors (the
// allocators of llama.cpp and of PyTorch's expandable segments). The state is core's
// (core/virtual_memory.cpp); this file checks CUDA's arguments.
#include "core/virtual_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// Where an allocation property puts the memory, and the device that holds it (for host memory,
// the device whose memory is host memory), checked as cuMemCreate and
// cuMemGetAllocationGranularity check them.
struct Placement {
  core::Device* device = nullptr;
  core::PhysicalLocation location;
};

Result<Placement> placementOfProperties(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return makeError(ErrorCode::InvalidValue, "prop is NULL");
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return makeError(ErrorCode::InvalidValue, "type must be CU_MEM_ALLOCATION_TYPE_PINNED");
  // Documented: HOST_NUMA_CURRENT is invalid here; host memory must not ask for a handle type.
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
    return makeError(ErrorCode::InvalidValue, "CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT is invalid");
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST &&
      prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE)
    return makeError(ErrorCode::InvalidValue, "host memory takes requestedHandleTypes 0");
  Placement placement;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
      prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
    if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA &&
        !platform::isNumaNode(prop->location.id))
      return makeError(ErrorCode::InvalidValue,
                       "no host NUMA node " + std::to_string(prop->location.id));
    placement.device = core::hostMemoryDevice();
    if (placement.device == nullptr)
      return makeError(ErrorCode::NotSupported,
                       "no device here makes host-located physical memory");
    placement.location.kind = prop->location.type == CU_MEM_LOCATION_TYPE_HOST
                                  ? core::PhysicalLocation::Kind::Host
                                  : core::PhysicalLocation::Kind::HostNuma;
    placement.location.numaNode = prop->location.id;
  } else if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    Result<core::Device*> device = lookupDevice(prop->location.id);
    if (!device) return device.error();
    placement.device = *device;
  } else {
    return makeError(ErrorCode::InvalidValue, "unknown CUmemLocationType");
  }
  core::Device* device = placement.device;
  if (!device->description().virtualMemoryManagement)
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
      (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
       !device->description().physicalMemoryAsFileDescriptors))
    return makeError(ErrorCode::NotSupported,
                     "physical memory can be shared as POSIX file descriptors only");
  if (prop->win32HandleMetaData != nullptr)
    return makeError(ErrorCode::InvalidValue, "win32HandleMetaData must be NULL here");
  return placement;
}

// The device an access descriptor's location names, or nullptr for the host (HOST or HOST_NUMA,
// whose id is ignored).
Result<core::Device*> accessor(const CUmemLocation& location) {
  if (location.type == CU_MEM_LOCATION_TYPE_HOST || location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
    return static_cast<core::Device*>(nullptr);
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return makeError(ErrorCode::InvalidValue, "access is given to a device or the host");
  return lookupDevice(location.id);
}

bool validAccessFlags(CUmemAccess_flags flags) {
  return flags == CU_MEM_ACCESS_FLAGS_PROT_NONE || flags == CU_MEM_ACCESS_FLAGS_PROT_READ ||
         flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

// Work still queued on the mapping's device may use the memory: unmapping waits for it, as
// freeing memory does.
Status drainDevice(core::Device& device) {
  if (!device.primaryActive()) return Status::success();
  return device.primaryContext().synchronize();
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                     const CUmemAllocationProp* prop,
                                                     CUmemAllocationGranularity_flags option) {
  return ROCUDA_API((granularity, prop, option), [&]() -> api::Outcome {
    if (granularity == nullptr) return api::invalidValue("granularity is NULL");
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
      return api::invalidValue("unknown granularity option");
    Result<api::Placement> placement = api::placementOfProperties(prop);
    if (!placement) return placement.error();
    *granularity = core::virtualMemoryGranularity(*placement->device,
                                                  option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                           CUdeviceptr addr, unsigned long long flags) {
  return ROCUDA_API((ptr, size, alignment, addr, flags), [&]() -> api::Outcome {
    if (ptr == nullptr) return api::invalidValue("ptr is NULL");
    if (flags != 0) return api::invalidValue("flags must be 0");
    Result<void*> base = core::reserveAddresses(size, alignment, addr);
    if (!base) return base.error();
    *ptr = reinterpret_cast<uintptr_t>(*base);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return ROCUDA_API((ptr, size), [&]() -> api::Outcome { return core::freeAddresses(ptr, size); });
}

ROCUDA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                   const CUmemAllocationProp* prop, unsigned long long flags) {
  return ROCUDA_API((handle, size, prop, flags), [&]() -> api::Outcome {
    if (handle == nullptr) return api::invalidValue("handle is NULL");
    if (flags != 0) return api::invalidValue("flags must be 0");
    Result<api::Placement> placement = api::placementOfProperties(prop);
    if (!placement) return placement.error();
    Result<uint64_t> created = core::createPhysicalMemory(
        *placement->device, size,
        prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        placement->location);
    if (!created) return created.error();
    *handle = *created;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return ROCUDA_API((handle),
                    [&]() -> api::Outcome { return core::releasePhysicalMemory(handle); });
}

ROCUDA_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return ROCUDA_API((ptr, size, offset, handle, flags), [&]() -> api::Outcome {
    if (flags != 0) return api::invalidValue("flags must be 0");
    return core::mapPhysicalMemory(ptr, size, offset, handle);
  });
}

ROCUDA_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return ROCUDA_API((ptr, size), [&]() -> api::Outcome {
    Result<core::Device*> device = core::mappedDevice(ptr, size);
    if (!device) return device.error();
    if (Status drained = api::drainDevice(**device); !drained.ok()) return drained;
    return core::unmapPhysicalMemory(ptr, size);
  });
}

ROCUDA_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                      size_t count) {
  return ROCUDA_API((ptr, size, desc, count), [&]() -> api::Outcome {
    if (desc == nullptr || count == 0) return api::invalidValue("desc is NULL or count 0");
    // Every descriptor is checked before any access changes.
    std::vector<core::Device*> devices;  // nullptr: the host
    for (size_t i = 0; i < count; ++i) {
      if (!api::validAccessFlags(desc[i].flags)) return api::invalidValue("unknown access flags");
      Result<core::Device*> device = api::accessor(desc[i].location);
      if (!device) return device.error();
      devices.push_back(*device);
    }
    for (size_t i = 0; i < count; ++i) {
      Status set = core::setMappedAccess(ptr, size, devices[i], desc[i].flags);
      if (!set.ok()) return set;
    }
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                      CUdeviceptr ptr) {
  return ROCUDA_API((flags, location, ptr), [&]() -> api::Outcome {
    if (flags == nullptr || location == nullptr) return api::invalidValue("NULL argument");
    Result<core::Device*> device = api::accessor(*location);
    if (!device) return device.error();
    Result<unsigned> access = core::mappedAccess(ptr, *device);
    if (!access) return access.error();
    *flags = *access;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                              CUmemGenericAllocationHandle handle) {
  return ROCUDA_API((prop, handle), [&]() -> api::Outcome {
    if (prop == nullptr) return api::invalidValue("prop is NULL");
    Result<core::PhysicalMemoryInfo> info = core::physicalMemory(handle);
    if (!info) return info.error();
    *prop = CUmemAllocationProp{};
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes =
        info->exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    switch (info->location.kind) {
      case core::PhysicalLocation::Kind::Device:
        prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop->location.id = info->device->ordinal();
        break;
      case core::PhysicalLocation::Kind::Host:
        prop->location.type = CU_MEM_LOCATION_TYPE_HOST;
        break;
      case core::PhysicalLocation::Kind::HostNuma:
        prop->location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        prop->location.id = info->location.numaNode;
        break;
    }
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                   void* addr) {
  return ROCUDA_API((handle, addr), [&]() -> api::Outcome {
    if (handle == nullptr) return api::invalidValue("handle is NULL");
    Result<uint64_t> retained = core::retainPhysicalMemoryAt(reinterpret_cast<uintptr_t>(addr));
    if (!retained) return retained.error();
    *handle = *retained;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemExportToShareableHandle(void* shareableHandle,
                                                    CUmemGenericAllocationHandle handle,
                                                    CUmemAllocationHandleType handleType,
                                                    unsigned long long flags) {
  return ROCUDA_API((shareableHandle, handle, handleType, flags), [&]() -> api::Outcome {
    if (shareableHandle == nullptr) return api::invalidValue("shareableHandle is NULL");
    if (flags != 0) return api::invalidValue("flags must be 0");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
      return {CUDA_ERROR_NOT_SUPPORTED, "only POSIX file descriptors can be exported here"};
    Result<int> fd = core::exportPhysicalMemory(handle);
    if (!fd) return fd.error();
    *static_cast<int*>(shareableHandle) = *fd;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                      void* osHandle,
                                                      CUmemAllocationHandleType shHandleType) {
  return ROCUDA_API((handle, osHandle, shHandleType), [&]() -> api::Outcome {
    if (handle == nullptr) return api::invalidValue("handle is NULL");
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
      return {CUDA_ERROR_NOT_SUPPORTED, "only POSIX file descriptors can be imported here"};
    // For file descriptors, osHandle is the descriptor itself, cast to a pointer.
    int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return api::invalidValue("osHandle is not an open file descriptor");
    Result<uint64_t> imported = core::importPhysicalMemory((*context)->device(), own);
    if (!imported) {
      close(own);
      return imported.error();
    }
    *handle = *imported;
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
