// Allocation: device, pinned host and managed memory, and the questions about pointers
// (cuMemGetAddressRange, cuPointerGetAttribute(s), cuMemHostGetDevicePointer/Flags).
#include "core/memory.h"

#include <cstring>
#include <optional>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/memory_pool.h"
#include "core/platform.h"
#include "core/virtual_memory.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// Pitched rows start at this alignment (what CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT allows).
constexpr size_t kPitchAlignment = 512;

CUdeviceptr toDevicePtr(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }
void* fromDevicePtr(CUdeviceptr pointer) { return reinterpret_cast<void*>(pointer); }

// Freeing waits for the work of the allocation's context first (CUDA's cuMemFree is
// synchronous), so no queued command uses freed memory.
Status drainOwner(const void* pointer) {
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (allocation && allocation->context != nullptr &&
      core::lookupHandle<core::Context>(allocation->context) != nullptr) {
    allocation->context->drain();
    return allocation->context->stickyError();
  }
  return Status::success();
}

Outcome allocateHostMemory(void** pp, size_t bytesize, unsigned flags) {
  if (pp == nullptr) return invalidValue("pp is NULL");
  constexpr unsigned kKnown =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((flags & ~kKnown) != 0) return invalidValue("unknown flags");
  // Zero bytes succeed on NVIDIA's driver; nothing is allocated (cudaMallocHost of 0 bytes gives
  // NULL too), and cuMemFreeHost(NULL) succeeds.
  if (bytesize == 0) {
    *pp = nullptr;
    return {};
  }
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<void*> memory = core::allocateHost(**context, bytesize, flags);
  if (!memory) return memory.error();
  *pp = *memory;
  return {};
}

CUmemorytype memoryTypeOf(const core::Allocation& allocation) {
  return allocation.kind == core::AllocationKind::Host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

template <class T>
void store(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

// One attribute of a pointer inside `allocation` (nullopt: a pointer no allocation contains).
Outcome pointerAttribute(void* data, CUpointer_attribute attribute,
                         const std::optional<core::Allocation>& allocation, CUdeviceptr ptr) {
  const bool known = allocation.has_value();
  switch (attribute) {
    // "Since stream ordered allocations are not context associated, querying
    // CU_POINTER_ATTRIBUTE_CONTEXT will succeed but return NULL".
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      store(data, known && allocation->pool == nullptr
                      ? reinterpret_cast<CUcontext>(allocation->context)
                      : CUcontext{});
      return {};
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      store(data, static_cast<unsigned>(known ? memoryTypeOf(*allocation) : CUmemorytype{}));
      return {};
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      store(data, !known ? CUdeviceptr{0}
                  : allocation->kind == core::AllocationKind::Host
                      ? static_cast<CUdeviceptr>(
                            core::hostDeviceAddress(*allocation, reinterpret_cast<void*>(ptr)))
                      : ptr);
      return {};
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      // Device memory has no host address in CUDA's model, even where it is host memory.
      store(data, known && allocation->kind != core::AllocationKind::Device &&
                          allocation->kind != core::AllocationKind::Global
                      ? fromDevicePtr(ptr)
                      : nullptr);
      return {};
    // The boolean attributes are written as 4-byte ints: cudart reads them that wide (a 1-byte
    // store left garbage in the upper bytes and cudaPointerGetAttributes misreported pointers).
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:  // as set (Rocuda's memory operations are
                                            // synchronous either way)
      store(data, static_cast<int>(known && allocation->syncMemops));
      return {};
    case CU_POINTER_ATTRIBUTE_MAPPED:
      store(data, static_cast<int>(known));
      return {};
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      store(data, static_cast<unsigned long long>(known ? allocation->id : 0));
      return {};
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      store(data, static_cast<unsigned long long>(known ? allocation->memoryBlock : 0));
      return {};
    // The mapping a pointer lies in is its allocation (or cuMemMap range) as a whole.
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      store(data, known ? fromDevicePtr(allocation->base) : nullptr);
      return {};
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      store(data, known ? allocation->size : size_t{0});
      return {};
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      store(data, static_cast<int>(known && allocation->kind == core::AllocationKind::Managed));
      return {};
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      store(data, known && allocation->context != nullptr ? allocation->context->device().ordinal()
                                                          : int{CU_DEVICE_INVALID});
      return {};
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:  // cuIpcGetMemHandle accepts it
      store(data,
            static_cast<int>(
                known && allocation->kind == core::AllocationKind::Device &&
                allocation->pool == nullptr && allocation->mappedFrom == core::MappedFrom::None &&
                allocation->context != nullptr &&
                (allocation->context->device().description().sharesMemoryBetweenProcesses ||
                 allocation->context->device().description().ownIpcMemoryHandles)));
      return {};
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      store(data, 0);
      return {};
    // "the address of the mappable address range ptr references (e.g. from
    // cuMemAddressReserve)": the reservation around a cuMemMap mapping, else the allocation.
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
      std::pair<uintptr_t, size_t> range{known ? allocation->base : 0,
                                         known ? allocation->size : 0};
      if (known && allocation->mappedFrom == core::MappedFrom::VirtualMemory)
        range = core::reservationContaining(ptr).value_or(range);
      if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
        store(data, fromDevicePtr(range.first));
      else
        store(data, range.second);
      return {};
    }
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: {
      // Those of a shareable pool (core/ipc.h), or of exportable cuMemCreate memory.
      unsigned long long types = 0;
      if (known && allocation->pool != nullptr &&
          core::lookupHandle<core::MemoryPool>(allocation->pool) != nullptr)
        types = allocation->pool->handleTypes();
      if (known && allocation->mappedFrom == core::MappedFrom::VirtualMemory)
        if (auto physical = core::physicalMemory(allocation->memoryBlock);
            physical && physical->exportable)
          types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      store(data, types);
      return {};
    }
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
      // Read-write, except memory mapped by cuMemMap: what cuMemSetAccess granted.
      unsigned flags = known ? 3 : 0;
      if (known && allocation->mappedFrom == core::MappedFrom::VirtualMemory &&
          allocation->context != nullptr)
        if (auto access =
                core::mappedAccess(static_cast<uintptr_t>(ptr), &allocation->context->device()))
          flags = *access;
      store(data, flags);
      return {};
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:  // the pool of a stream-ordered allocation
      store(data, known && allocation->pool != nullptr &&
                          core::lookupHandle<core::MemoryPool>(allocation->pool) != nullptr
                      ? reinterpret_cast<CUmemoryPool>(allocation->pool)
                      : CUmemoryPool{});
      return {};
    default:
      return {CUDA_ERROR_INVALID_VALUE, "unsupported pointer attribute"};
  }
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return ROCUDA_API((free, total), [&]() -> api::Outcome {
    if (free == nullptr || total == nullptr) return api::invalidValue("NULL argument");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    if (Status sticky = (*context)->stickyError(); !sticky.ok()) return sticky;
    core::Device& device = (*context)->device();
    *total = device.description().totalMemory;
    *free = device.backend().freeMemory();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return ROCUDA_API((dptr, bytesize), [&]() -> api::Outcome {
    if (dptr == nullptr || bytesize == 0) return api::invalidValue("dptr is NULL or bytesize 0");
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<void*> memory = core::allocateDevice(**context, bytesize);
    if (!memory) return memory.error();
    *dptr = api::toDevicePtr(*memory);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                          size_t Height, unsigned int ElementSizeBytes) {
  return ROCUDA_API((dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), [&]() -> api::Outcome {
    if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0)
      return api::invalidValue("NULL argument or empty extent");
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
      return api::invalidValue("ElementSizeBytes must be 4, 8 or 16");
    size_t pitch =
        (WidthInBytes + api::kPitchAlignment - 1) / api::kPitchAlignment * api::kPitchAlignment;
    if (Height > SIZE_MAX / pitch) return {CUDA_ERROR_OUT_OF_MEMORY, "size overflows"};
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<void*> memory = core::allocateDevice(**context, pitch * Height);
    if (!memory) return memory.error();
    *dptr = api::toDevicePtr(*memory);
    *pPitch = pitch;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return ROCUDA_API((dptr), [&]() -> api::Outcome {
    // Unsafe during a capture, even of a null pointer (which is otherwise a no-op): NVIDIA's
    // driver refuses and invalidates the capture all the same.
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;
    if (dptr == 0) return {};  // cudaFree(nullptr) is defined as a no-op and arrives here
    void* pointer = api::fromDevicePtr(dptr);
    if (std::shared_ptr<core::GraphAllocation> graphAllocation =
            core::findGraphAllocation(pointer)) {
      // Released, not freed: its memory stays with the allocation node (cudaFree of a graph
      // allocation is how a program frees what a graph launch left allocated).
      Status drained = api::drainOwner(pointer);
      core::releaseGraphAllocation(*graphAllocation);
      core::markGraphAllocationUse(*graphAllocation, false);
      return drained;
    }
    std::optional<core::Allocation> allocation = core::findAllocation(pointer);
    if (!allocation || allocation->base != dptr ||
        (allocation->kind != core::AllocationKind::Device &&
         allocation->kind != core::AllocationKind::Managed && allocation->pool == nullptr))
      return api::invalidValue("not the start of a device, managed or memory pool allocation");
    Status drained = api::drainOwner(pointer);
    Status freed = core::freeDevice(pointer);
    if (!freed) return freed;
    return drained;
  });
}

ROCUDA_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                               CUdeviceptr dptr) {
  return ROCUDA_API((pbase, psize, dptr), [&]() -> api::Outcome {
    std::optional<core::Allocation> allocation = core::findAllocation(api::fromDevicePtr(dptr));
    if (!allocation) return {CUDA_ERROR_NOT_FOUND, "no allocation contains this address"};
    if (pbase != nullptr) *pbase = allocation->base;
    if (psize != nullptr) *psize = allocation->size;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return ROCUDA_API((pp, bytesize), [&]() -> api::Outcome {
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    return api::allocateHostMemory(pp, bytesize, 0);
  });
}

ROCUDA_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return ROCUDA_API((pp, bytesize, Flags), [&]() -> api::Outcome {
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    return api::allocateHostMemory(pp, bytesize, Flags);
  });
}

ROCUDA_EXPORT CUresult cuMemFreeHost(void* p) {
  return ROCUDA_API((p), [&]() -> api::Outcome {
    // free(NULL) semantics on NVIDIA's driver (cudaFreeHost(nullptr) stops in cudart, but a
    // library calling the driver's entry point gets here): refused during a capture, as
    // cuMemFree(0) is.
    if (p == nullptr) return core::checkUnsafeCall();
    std::optional<core::Allocation> allocation = core::findAllocation(p);
    if (!allocation || allocation->kind != core::AllocationKind::Host ||
        allocation->base != reinterpret_cast<uintptr_t>(p))
      return api::invalidValue("not the start of a host allocation");
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    Status drained = api::drainOwner(p);
    Status freed = core::freeHost(p);
    if (!freed) return freed;
    return drained;
  });
}

ROCUDA_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p,
                                                    unsigned int Flags) {
  return ROCUDA_API((pdptr, p, Flags), [&]() -> api::Outcome {
    if (pdptr == nullptr || p == nullptr || Flags != 0)
      return api::invalidValue("NULL argument or Flags != 0");
    std::optional<core::Allocation> allocation = core::findAllocation(p);
    if (!allocation || allocation->kind != core::AllocationKind::Host)
      return api::invalidValue("not page-locked host memory");
    *pdptr = static_cast<CUdeviceptr>(core::hostDeviceAddress(*allocation, p));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  return ROCUDA_API((pFlags, p), [&]() -> api::Outcome {
    if (pFlags == nullptr) return api::invalidValue("pFlags is NULL");
    std::optional<core::Allocation> allocation = core::findAllocation(p);
    if (!allocation || allocation->kind != core::AllocationKind::Host || allocation->registered)
      return api::invalidValue("not memory of cuMemAllocHost or cuMemHostAlloc");
    // With unified addressing every page-locked allocation is mapped: NVIDIA's driver reports
    // CU_MEMHOSTALLOC_DEVICEMAP for one made with flags 0.
    *pFlags = allocation->flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return {};
  });
}

// Page-locking the application's memory: the backend makes it reachable by the device (the CPU
// device reaches host memory directly; an AMD GPU pins and maps it) and the range is tracked, so
// that async copies from it behave as from pinned memory.
ROCUDA_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return ROCUDA_API((p, bytesize, Flags), [&]() -> api::Outcome {
    constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == nullptr || bytesize == 0 || (Flags & ~kKnown) != 0)
      return api::invalidValue("NULL pointer, zero size or unknown flags");
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
      return {CUDA_ERROR_NOT_SUPPORTED, "registering I/O memory is not supported"};
    // The devices report CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED as 0, for which
    // the flag is documented to fail with CUDA_ERROR_NOT_SUPPORTED.
    if (Flags & CU_MEMHOSTREGISTER_READ_ONLY)
      return {CUDA_ERROR_NOT_SUPPORTED, "read-only host registration is not supported"};
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return core::registerHostRange(**context, p, bytesize, Flags);
  });
}

ROCUDA_EXPORT CUresult cuMemHostUnregister(void* p) {
  return ROCUDA_API((p), [&]() -> api::Outcome {
    if (p == nullptr) return api::invalidValue("p is NULL");
    if (!core::unregisterHostRange(p)) {
      // Inside a registered range but not its start, or memory of cuMemHostAlloc: the wrong
      // pointer (as NVIDIA's driver answers), not unregistered memory.
      std::optional<core::Allocation> within = core::findAllocation(p);
      if (within && within->registered)
        return api::invalidValue("p lies inside a registered range but does not start it");
      if (within && within->kind == core::AllocationKind::Host)
        return api::invalidValue("p is memory of cuMemAllocHost or cuMemHostAlloc");
      return {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "p does not start a registered range"};
    }
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return ROCUDA_API((dptr, bytesize, flags), [&]() -> api::Outcome {
    if (dptr == nullptr || bytesize == 0) return api::invalidValue("dptr is NULL or bytesize 0");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
      return api::invalidValue("flags must be CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST");
    if (Status unsafe = core::checkUnsafeCall(); !unsafe) return unsafe;  // during a capture
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    if (!(*context)->device().description().managedMemory)
      return {CUDA_ERROR_NOT_SUPPORTED, "the device has no managed memory"};
    Result<void*> memory = core::allocateManaged(**context, bytesize, flags);
    if (!memory) return memory.error();
    *dptr = api::toDevicePtr(*memory);
    return {};
  });
}

// "The only attribute that can be set is CU_POINTER_ATTRIBUTE_SYNC_MEMOPS": memory operations
// on Rocuda's allocations are synchronous whatever it asks, so the request is checked and kept
// as the stronger behaviour.
ROCUDA_EXPORT CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute,
                                             CUdeviceptr ptr) {
  return ROCUDA_API((value, attribute, ptr), [&]() -> api::Outcome {
    if (value == nullptr) return api::invalidValue("value is NULL");
    if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
      return api::invalidValue("only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set");
    int sync = 0;
    std::memcpy(&sync, value, sizeof sync);
    if (!core::setSyncMemops(api::fromDevicePtr(ptr), sync != 0))
      return api::invalidValue("not a pointer allocated through CUDA");
    return {};
  });
}

ROCUDA_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                             CUdeviceptr ptr) {
  return ROCUDA_API((data, attribute, ptr), [&]() -> api::Outcome {
    if (data == nullptr) return api::invalidValue("data is NULL");
    std::optional<core::Allocation> allocation = core::findAllocation(api::fromDevicePtr(ptr));
    // Unlike cuPointerGetAttributes, a pointer Rocuda did not allocate is an error here.
    if (!allocation) return api::invalidValue("not a pointer allocated through CUDA");
    // These two are "the pointer value through which ... may access ptr": an error where there
    // is none, and the device pointer is the current context's.
    if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) {
      Result<core::Context*> context = api::currentContext();
      if (!context) return context.error();
    }
    if (attribute == CU_POINTER_ATTRIBUTE_HOST_POINTER &&
        (allocation->kind == core::AllocationKind::Device ||
         allocation->kind == core::AllocationKind::Global))
      return api::invalidValue("device memory has no host pointer");
    return api::pointerAttribute(data, attribute, allocation, ptr);
  });
}

ROCUDA_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                              CUpointer_attribute* attributes, void** data,
                                              CUdeviceptr ptr) {
  return ROCUDA_API((numAttributes, attributes, data, ptr), [&]() -> api::Outcome {
    if (numAttributes == 0 || attributes == nullptr || data == nullptr)
      return api::invalidValue("no attributes");
    std::optional<core::Allocation> allocation = core::findAllocation(api::fromDevicePtr(ptr));
    for (unsigned i = 0; i < numAttributes; ++i) {
      if (data[i] == nullptr) return api::invalidValue("NULL data slot");
      api::Outcome outcome = api::pointerAttribute(data[i], attributes[i], allocation, ptr);
      if (!outcome.ok()) return outcome;
    }
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
