// Every allocation the application can name with a pointer: device memory, pinned host memory,
// managed memory and module globals. One table for the process (addresses are unique), so that
// pointer checks, cuPointerGetAttribute and cuMemGetAddressRange need no backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backends/device_backend.h"
#include "support/result.h"

namespace rocuda::core {

class Context;
class MemoryPool;

enum class AllocationKind : uint8_t { Device, Host, Managed, Global };
// Device memory that is a mapping of shared memory rather than an allocation: opened from
// another process (cuIpcOpenMemHandle, released by cuIpcCloseMemHandle only) or a buffer of
// imported external memory or an allocation imported from another process's memory pool
// (released by cuMemFree, which unmaps it).
// Graphics: an OpenGL buffer mapped by cuGraphicsMapResources (released by unmapping only).
// VirtualMemory: physical memory mapped by cuMemMap (released by cuMemUnmap only).
enum class MappedFrom : uint8_t { None, Ipc, ExternalMemory, PoolImport, Graphics, VirtualMemory };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  AllocationKind kind = AllocationKind::Device;
  Context* context = nullptr;
  unsigned flags = 0;  // cuMemHostAlloc / cuMemAllocManaged flags
  MemoryPool* pool = nullptr;  // set for stream-ordered allocations (cuMemAllocAsync)
  bool registered = false;     // Host kind: the application's memory, page-locked by
                               // cuMemHostRegister rather than allocated by Rocuda
  // Host kind: where kernels reach `base` (cuMemHostGetDevicePointer). The host address itself
  // except for registered memory that the device maps elsewhere (DeviceBackend::registerHost).
  uintptr_t deviceAddress = 0;
  MappedFrom mappedFrom = MappedFrom::None;  // Device kind only
  // A module's variable (Global kind, or Managed for a __managed__ one): it goes with its
  // module, never with cuMemFree.
  bool moduleVariable = false;
  bool syncMemops = false;  // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS as cuPointerSetAttribute set it
  // Process-wide and never reused (CU_POINTER_ATTRIBUTE_BUFFER_ID); set when recorded.
  uint64_t id = 0;
  // The physical memory behind it (CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID): its own id, or for a
  // cuMemMap mapping the cuMemCreate handle, which every mapping of that memory shares.
  uint64_t memoryBlock = 0;
};

// The allocation containing [pointer, pointer+1), if any.
std::optional<Allocation> findAllocation(const void* pointer);
// True when [pointer, pointer+bytes) lies inside one allocation, or inside physical memory
// mapped back to back by cuMemMap (one range of device memory).
bool isInsideAllocation(const void* pointer, size_t bytes);

Result<void*> allocateDevice(Context& context, size_t bytes);
// Device memory from a pool (stream-ordered allocation); freeDevice returns it to the pool.
Result<void*> allocateFromPool(Context& context, MemoryPool& pool, size_t bytes);
Result<void*> allocateHost(Context& context, size_t bytes, unsigned flags);
Result<void*> allocateManaged(Context& context, size_t bytes, unsigned flags);
// Frees an allocation made by the matching allocate call; InvalidValue when `pointer` is not the
// base of a live allocation of that kind.
Status freeDevice(const void* pointer);
Status freeHost(const void* pointer);
// cuDevicePrimaryCtxReset: every allocation `context` made (device, pinned host, managed, pool)
// is freed and every host range it registered unregistered. Mappings of other processes' or
// external memory keep their own release calls; module globals go with their modules.
void releaseContextMemory(Context& context);
// cuMemHostRegister / cuMemHostUnregister: the application's own memory, tracked as page-locked
// host memory and made reachable by the device (DeviceBackend::registerHost). register fails with
// HostMemoryAlreadyRegistered when the range overlaps a tracked one, or with the backend's error;
// unregister is false when `base` starts no registered range.
Status registerHostRange(Context& context, void* base, size_t size, unsigned flags);
bool unregisterHostRange(void* base);
// The address kernels use for host memory at `pointer` inside `allocation` (a Host kind).
uintptr_t hostDeviceAddress(const Allocation& allocation, const void* pointer);
// Shared memory mapped by the backend (mapShared), tracked as device memory of `context`.
// unregisterMapped is false when `base` starts no mapping of that origin. `memoryBlock`: the
// physical memory's identity when it has one of its own (Allocation::memoryBlock).
void registerMapped(Context& context, void* base, size_t size, MappedFrom from,
                    uint64_t memoryBlock = 0);
bool unregisterMapped(void* base, MappedFrom from);

// ---- Managed memory advice (cuMemAdvise, cuMemPrefetchAsync, cuMemRangeGetAttribute) ----
// Rocuda's managed memory is coherent wherever it lives; the hints go to the device that holds
// it (DeviceBackend::prefetchManaged / adviseManaged: an AMD GPU migrates its pages, the CPU
// device has nothing to move) and are kept per byte range, so that range queries report exactly
// what the application set.
struct MemoryLocation {
  enum class Type : uint8_t { None = 0, Device = 1, Host = 2, HostNuma = 3 };
  Type type = Type::None;
  int id = 0;
  bool operator==(const MemoryLocation&) const = default;
};

using ManagedAdvice = backends::ManagedAdvice;

// Accessed-by is a set of locations: bit d for device ordinal d (< 63), bit 63 for the host.
inline constexpr int kHostAccessBit = 63;

struct ManagedRangeSummary {
  bool readMostly = false;                  // on every byte of the range
  std::optional<MemoryLocation> preferred;  // nullopt: not the same everywhere
  std::optional<MemoryLocation> lastPrefetch;
  uint64_t accessedBy = 0;  // set on every byte of the range
};

// `location` matters for the preferred-location and accessed-by advice only.
void adviseManaged(const void* pointer, size_t bytes, ManagedAdvice advice,
                   MemoryLocation location);
void recordManagedPrefetch(const void* pointer, size_t bytes, MemoryLocation location);
ManagedRangeSummary managedRangeSummary(const void* pointer, size_t bytes);

// Module globals are registered so that copies to them validate like any device memory;
// __managed__ variables as managed memory (pointer attributes, advice, prefetches).
void registerGlobal(Context* context, void* base, size_t size, bool managed);
// cuPointerSetAttribute(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) on the allocation containing
// `pointer`; false when there is none.
bool setSyncMemops(const void* pointer, bool sync);
void unregisterGlobal(void* base);

}  // namespace rocuda::core
