// Managed memory hints and their queries: cuMemPrefetchAsync (and the CUDA 13 batch forms with
// discards), cuMemAdvise, cuMemRangeGetAttribute(s).
//
// Rocuda's managed memory is coherent for host and device wherever it resides. The hints go to
// the device that holds the memory (DeviceBackend::prefetchManaged / adviseManaged: an AMD GPU
// migrates pages, the CPU device shares the host's memory outright and has nothing to move),
// prefetches in stream order; they are also recorded per byte range in the core, so that range
// queries report what the application set.
#include <cstring>
#include <optional>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::api {

bool isPageableMemoryTheDeviceReads(const void* pointer, size_t bytes) {
  if (bytes == 0 || core::findAllocation(pointer)) return false;
  Result<core::Context*> context = currentContext();
  return context && (*context)->device().description().pageableMemoryAccess &&
         platform::hostRangeMapped(pointer, bytes);
}

namespace {

using namespace cuda;
using core::MemoryLocation;

void* fromDevicePtr(CUdeviceptr pointer) { return reinterpret_cast<void*>(pointer); }

// The range of a hint or a range query: inside managed memory (an allocation or a __managed__
// variable), or where the device reads pageable memory, "system-allocated pageable memory"
// (host memory the process has mapped that no allocation of Rocuda's holds).
Outcome checkManagedRange(CUdeviceptr devPtr, size_t count) {
  const void* pointer = fromDevicePtr(devPtr);
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (count != 0 && allocation && allocation->kind == core::AllocationKind::Managed &&
      core::isInsideAllocation(pointer, count))
    return {};
  if (!allocation && isPageableMemoryTheDeviceReads(pointer, count)) return {};
  return invalidValue(
      "the range is neither managed memory nor pageable host memory the device reads");
}

// Advice and prefetches apply to whole pages: "the start address and end address of the memory
// range will be rounded down and rounded up respectively to be aligned to CPU page size".
std::pair<void*, size_t> wholePages(CUdeviceptr devPtr, size_t count) {
  size_t page = platform::pageBytes();
  uintptr_t start = devPtr / page * page;
  uintptr_t end = (devPtr + count + page - 1) / page * page;
  return {reinterpret_cast<void*>(start), end - start};
}

// A legacy CUdevice target: a device ordinal or CU_DEVICE_CPU.
Result<MemoryLocation> deviceOrCpu(CUdevice device) {
  if (device == CU_DEVICE_CPU) return MemoryLocation{MemoryLocation::Type::Host, 0};
  Result<core::Device*> found = lookupDevice(device);
  if (!found) return found.error();
  return MemoryLocation{MemoryLocation::Type::Device, device};
}

Result<MemoryLocation> fromLocation(const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (location.id == CU_DEVICE_CPU) return MemoryLocation{MemoryLocation::Type::Host, 0};
      return deviceOrCpu(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
      return MemoryLocation{MemoryLocation::Type::Host, 0};
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (!platform::isNumaNode(location.id))
        return makeError(ErrorCode::InvalidValue, "not a NUMA node of this host");
      return MemoryLocation{MemoryLocation::Type::HostNuma, location.id};
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return MemoryLocation{MemoryLocation::Type::HostNuma, 0};  // this host's only node
    default:
      return makeError(ErrorCode::InvalidValue, "unknown memory location type");
  }
}

// Every device must allow concurrent managed access for the batch forms (CUDA 13).
Outcome checkConcurrentManagedAccess() {
  core::Platform& platform = core::Platform::instance();
  for (int i = 0; i < platform.deviceCount(); ++i) {
    const auto& d = platform.device(i)->description();
    if (!(d.pageableMemoryAccess && d.managedMemory))
      return {CUDA_ERROR_NOT_SUPPORTED, "a device lacks concurrent managed access"};
  }
  return {};
}

// The device that acts on a hint about `target`: that device, or for the host the device whose
// managed memory it is (nullptr when its context is gone).
backends::DeviceBackend* hintedBackend(const void* pointer, const MemoryLocation& target) {
  if (target.type == MemoryLocation::Type::Device)
    if (core::Device* device = core::Platform::instance().device(target.id))
      return &device->backend();
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (!allocation || allocation->context == nullptr ||
      core::lookupHandle<core::Context>(allocation->context) == nullptr)
    return nullptr;
  return &allocation->context->device().backend();
}

// The location is recorded at once, as CUDA reports the last *requested* prefetch location; the
// pages move in stream order.
Outcome queuePrefetch(core::Stream& stream, void* pointer, size_t bytes,
                      const MemoryLocation& target) {
  core::recordManagedPrefetch(pointer, bytes, target);
  backends::DeviceBackend* backend = hintedBackend(pointer, target);
  if (backend == nullptr) return {};
  bool toDevice = target.type == MemoryLocation::Type::Device;
  Result<core::CompletionPtr> queued =
      stream.context().enqueue(stream, "prefetch", [backend, pointer, bytes, toDevice] {
        return backend->prefetchManaged(pointer, bytes, toDevice);
      });
  if (!queued) return queued.error();
  return {};
}

Outcome prefetch(CUdeviceptr devPtr, size_t count, const Result<MemoryLocation>& target,
                 CUstream hStream, StreamVariant variant) {
  if (!target) return target.error();
  Outcome range = checkManagedRange(devPtr, count);
  if (!range.ok()) return range;
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  auto [pages, bytes] = wholePages(devPtr, count);
  return queuePrefetch(**stream, pages, bytes, *target);
}

Outcome prefetchV1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream,
                   StreamVariant variant) {
  return prefetch(devPtr, count, deviceOrCpu(dstDevice), hStream, variant);
}

Outcome prefetchV2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned flags,
                   CUstream hStream, StreamVariant variant) {
  if (flags != 0) return invalidValue("flags must be 0");
  return prefetch(devPtr, count, fromLocation(location), hStream, variant);
}

Outcome advise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
               const Result<MemoryLocation>& target) {
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return invalidValue("unknown advice");
  bool needsTarget =
      advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY;
  if (needsTarget && !target) return target.error();
  // "The CUmemLocation::type must be either CU_MEM_LOCATION_TYPE_DEVICE ... or
  // CU_MEM_LOCATION_TYPE_HOST ... All other location types are invalid" (accessed-by advice).
  if ((advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY) &&
      target->type == MemoryLocation::Type::HostNuma)
    return invalidValue("accessed-by advice takes a device or the host, not a NUMA node");
  if (Outcome range = checkManagedRange(devPtr, count); !range.ok()) return range;
  auto which = static_cast<core::ManagedAdvice>(advice - CU_MEM_ADVISE_SET_READ_MOSTLY);
  MemoryLocation where = target ? *target : MemoryLocation{};
  auto [pages, bytes] = wholePages(devPtr, count);
  core::adviseManaged(pages, bytes, which, where);
  if (backends::DeviceBackend* backend = hintedBackend(fromDevicePtr(devPtr), where))
    if (Status applied = backend->adviseManaged(pages, bytes, which,
                                                where.type != MemoryLocation::Type::Host &&
                                                    where.type != MemoryLocation::Type::HostNuma);
        !applied)
      return applied;
  return {};
}

// ---- Batch forms (CUDA 13) ----

// The arrays of a batch, checked; `locations` may be absent (discard only).
Outcome checkBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locations,
                   size_t* locationIndices, size_t numLocations, bool needsLocations,
                   unsigned long long flags) {
  if (flags != 0) return invalidValue("flags must be 0");
  if (count == 0 || dptrs == nullptr || sizes == nullptr) return invalidValue("empty batch");
  if (needsLocations) {
    if (numLocations == 0 || numLocations > count || locations == nullptr ||
        locationIndices == nullptr)
      return invalidValue("prefetch locations missing or more than the operations");
    if (locationIndices[0] != 0) return invalidValue("prefetchLocIdxs[0] must be 0");
    for (size_t k = 1; k < numLocations; ++k)
      if (locationIndices[k] <= locationIndices[k - 1] || locationIndices[k] >= count)
        return invalidValue("prefetchLocIdxs must increase and stay below count");
    for (size_t k = 0; k < numLocations; ++k)
      if (Result<MemoryLocation> l = fromLocation(locations[k]); !l) return l.error();
  }
  for (size_t i = 0; i < count; ++i)
    if (Outcome range = checkManagedRange(dptrs[i], sizes[i]); !range.ok()) return range;
  return checkConcurrentManagedAccess();
}

Outcome prefetchBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locations,
                      size_t* locationIndices, size_t numLocations, unsigned long long flags,
                      CUstream hStream, StreamVariant variant) {
  if (Outcome checked =
          checkBatch(dptrs, sizes, count, locations, locationIndices, numLocations, true, flags);
      !checked.ok())
    return checked;
  Result<core::Stream*> stream = resolveBatchStream(hStream, variant);
  if (!stream) return stream.error();
  for (size_t k = 0; k < numLocations; ++k) {
    size_t last = k + 1 < numLocations ? locationIndices[k + 1] : count;
    MemoryLocation location = *fromLocation(locations[k]);
    for (size_t i = locationIndices[k]; i < last; ++i) {
      auto [pages, bytes] = wholePages(dptrs[i], sizes[i]);
      if (Outcome queued = queuePrefetch(**stream, pages, bytes, location); !queued.ok())
        return queued;
    }
  }
  return {};
}

// Discarded contents become indeterminate; keeping them is a valid indeterminate value, so a
// discard only has to be ordered in the stream.
Outcome discardBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                     CUstream hStream, StreamVariant variant) {
  if (Outcome checked = checkBatch(dptrs, sizes, count, nullptr, nullptr, 0, false, flags);
      !checked.ok())
    return checked;
  Result<core::Stream*> stream = resolveBatchStream(hStream, variant);
  if (!stream) return stream.error();
  return {};
}

Outcome discardAndPrefetch(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                           CUmemLocation* locations, size_t* indices, size_t numLocations,
                           unsigned long long flags, CUstream hStream, StreamVariant variant) {
  // A discard followed by a prefetch: the prefetch's checks cover the discard's.
  return prefetchBatch(dptrs, sizes, count, locations, indices, numLocations, flags, hStream,
                       variant);
}

// ---- Range attributes ----

int legacyDevice(const std::optional<MemoryLocation>& location) {
  if (!location) return CU_DEVICE_INVALID;
  switch (location->type) {
    case MemoryLocation::Type::Device:
      return location->id;
    case MemoryLocation::Type::Host:
    case MemoryLocation::Type::HostNuma:
      return CU_DEVICE_CPU;
    case MemoryLocation::Type::None:
      break;
  }
  return CU_DEVICE_INVALID;
}

CUmemLocationType locationType(const std::optional<MemoryLocation>& location) {
  return location ? static_cast<CUmemLocationType>(location->type) : CU_MEM_LOCATION_TYPE_INVALID;
}

int locationId(const std::optional<MemoryLocation>& location) {
  if (location && (location->type == MemoryLocation::Type::Device ||
                   location->type == MemoryLocation::Type::HostNuma))
    return location->id;
  return CU_DEVICE_INVALID;
}

Outcome writeInt(void* data, size_t dataSize, int value) {
  if (dataSize != sizeof(int)) return invalidValue("dataSize must be 4");
  std::memcpy(data, &value, sizeof value);
  return {};
}

Outcome accessedBy(void* data, size_t dataSize, uint64_t set) {
  if (dataSize == 0 || dataSize % 4 != 0) return invalidValue("dataSize must be a multiple of 4");
  auto* out = static_cast<int*>(data);
  size_t slots = dataSize / 4, next = 0;
  for (int bit = 0; bit < 64 && next < slots; ++bit) {
    if ((set >> bit & 1) == 0) continue;
    out[next++] = bit == core::kHostAccessBit ? CU_DEVICE_CPU : bit;
  }
  for (; next < slots; ++next) out[next] = CU_DEVICE_INVALID;
  return {};
}

Outcome rangeAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                       const core::ManagedRangeSummary& s) {
  if (data == nullptr) return invalidValue("data is NULL");
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      return writeInt(data, dataSize, s.readMostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return writeInt(data, dataSize, legacyDevice(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
      return accessedBy(data, dataSize, s.accessedBy);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return writeInt(data, dataSize, legacyDevice(s.lastPrefetch));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      return writeInt(data, dataSize, locationType(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      return writeInt(data, dataSize, locationId(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return writeInt(data, dataSize, locationType(s.lastPrefetch));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      return writeInt(data, dataSize, locationId(s.lastPrefetch));
  }
  return invalidValue("unknown range attribute");
}

Outcome rangeAttributes(void** data, size_t* dataSizes, CUmem_range_attribute* attributes,
                        size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  if (numAttributes == 0 || data == nullptr || dataSizes == nullptr || attributes == nullptr)
    return invalidValue("no attributes");
  if (Outcome range = checkManagedRange(devPtr, count); !range.ok()) return range;
  core::ManagedRangeSummary summary = core::managedRangeSummary(fromDevicePtr(devPtr), count);
  for (size_t i = 0; i < numAttributes; ++i)
    if (Outcome o = rangeAttribute(data[i], dataSizes[i], attributes[i], summary); !o.ok())
      return o;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_STREAM_PAIR(cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz,
                   (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream),
                   (devPtr, count, dstDevice, hStream), api::prefetchV1)
ROCUDA_STREAM_PAIR(cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz,
                   (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                    CUstream hStream),
                   (devPtr, count, location, flags, hStream), api::prefetchV2)
ROCUDA_STREAM_PAIR(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz,
                   (CUdeviceptr * dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                    CUstream hStream),
                   (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                    hStream),
                   api::prefetchBatch)
ROCUDA_STREAM_PAIR(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz,
                   (CUdeviceptr * dptrs, size_t* sizes, size_t count, unsigned long long flags,
                    CUstream hStream),
                   (dptrs, sizes, count, flags, hStream), api::discardBatch)

ROCUDA_STREAM_PAIR(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz,
                   (CUdeviceptr * dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                    size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                    CUstream hStream),
                   (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                    hStream),
                   api::discardAndPrefetch)

ROCUDA_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                   CUdevice device) {
  return ROCUDA_API((devPtr, count, advice, device),
                    [&] { return api::advise(devPtr, count, advice, api::deviceOrCpu(device)); });
}

ROCUDA_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                      CUmemLocation location) {
  return ROCUDA_API((devPtr, count, advice, location.type), [&] {
    return api::advise(devPtr, count, advice, api::fromLocation(location));
  });
}

ROCUDA_EXPORT CUresult cuMemRangeGetAttribute(void* data, size_t dataSize,
                                              CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                              size_t count) {
  return ROCUDA_API((data, dataSize, attribute, devPtr, count), [&]() -> api::Outcome {
    void* slots[] = {data};
    size_t sizes[] = {dataSize};
    CUmem_range_attribute attributes[] = {attribute};
    return api::rangeAttributes(slots, sizes, attributes, 1, devPtr, count);
  });
}

ROCUDA_EXPORT CUresult cuMemRangeGetAttributes(void** data, size_t* dataSizes,
                                               CUmem_range_attribute* attributes,
                                               size_t numAttributes, CUdeviceptr devPtr,
                                               size_t count) {
  return ROCUDA_API((data, dataSizes, attributes, numAttributes, devPtr, count), [&] {
    return api::rangeAttributes(data, dataSizes, attributes, numAttributes, devPtr, count);
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
