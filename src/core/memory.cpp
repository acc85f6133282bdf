#include "core/memory.h"

#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "core/context.h"
#include "core/memory_pool.h"
#include "core/platform.h"

namespace rocuda::core {
namespace {

struct AllocationTable {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;
  uint64_t lastId = 0;  // Allocation::id of the latest record
};

AllocationTable& table() {
  static AllocationTable* instance = new AllocationTable();  // used from atexit paths
  return *instance;
}

std::optional<Allocation> findLocked(AllocationTable& t, uintptr_t address) {
  auto it = t.byBase.upper_bound(address);
  if (it == t.byBase.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  // A zero-size allocation still owns its base address.
  if (address == a.base || address < a.base + a.size) return a;
  return std::nullopt;
}

void recordLocked(AllocationTable& t, Allocation allocation) {
  allocation.id = ++t.lastId;
  if (allocation.memoryBlock == 0) allocation.memoryBlock = allocation.id;
  t.byBase[allocation.base] = allocation;
}

void insert(const Allocation& allocation) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  recordLocked(t, allocation);
}

Result<Allocation> removeExact(const void* pointer, bool host) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.byBase.find(reinterpret_cast<uintptr_t>(pointer));
  bool matches = it != t.byBase.end() && !it->second.registered && !it->second.moduleVariable &&
                 it->second.mappedFrom != MappedFrom::Ipc &&
                 it->second.mappedFrom != MappedFrom::Graphics &&
                 it->second.mappedFrom != MappedFrom::VirtualMemory &&
                 (host ? it->second.kind == AllocationKind::Host && it->second.pool == nullptr
                       : it->second.kind == AllocationKind::Device ||
                             it->second.kind == AllocationKind::Managed ||
                             (it->second.kind == AllocationKind::Host &&
                              it->second.pool != nullptr));  // a host pool's: cuMemFree(Async)
  if (!matches)
    return makeError(ErrorCode::InvalidValue,
                     std::string(host ? "host" : "device") +
                         " pointer was not returned by a Rocuda allocation (or is already freed)");
  Allocation allocation = it->second;
  t.byBase.erase(it);
  return allocation;
}

// Advice over byte ranges: a piecewise-constant map from each segment's start to its state; a
// segment runs to the next key, and addresses before the first key have the default state.
struct ManagedState {
  bool readMostly = false;
  MemoryLocation preferred;
  MemoryLocation lastPrefetch;
  uint64_t accessedBy = 0;
  bool operator==(const ManagedState&) const = default;
};

struct AdviceTable {
  std::mutex mutex;
  std::map<uintptr_t, ManagedState> segments;
};

AdviceTable& adviceTable() {
  static AdviceTable* instance = new AdviceTable();
  return *instance;
}

ManagedState stateAt(const std::map<uintptr_t, ManagedState>& segments, uintptr_t address) {
  auto it = segments.upper_bound(address);
  if (it == segments.begin()) return {};
  return std::prev(it)->second;
}

// Apply `change` to every segment of [start, end), splitting segments at both ends.
template <class Change>
void updateRange(uintptr_t start, uintptr_t end, Change change) {
  if (end <= start) return;
  AdviceTable& t = adviceTable();
  std::lock_guard lock(t.mutex);
  ManagedState atEnd = stateAt(t.segments, end);
  ManagedState atStart = stateAt(t.segments, start);
  t.segments.try_emplace(end, atEnd);
  t.segments.try_emplace(start, atStart);
  for (auto it = t.segments.find(start); it != t.segments.end() && it->first < end; ++it)
    change(it->second);
}

void clearManagedState(uintptr_t start, size_t size) {
  updateRange(start, start + size, [](ManagedState& state) { state = ManagedState{}; });
}

}  // namespace

void adviseManaged(const void* pointer, size_t bytes, ManagedAdvice advice,
                   MemoryLocation location) {
  uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  uint64_t bit = 0;
  if (location.type == MemoryLocation::Type::Device && location.id >= 0 && location.id < 63)
    bit = uint64_t{1} << location.id;
  else if (location.type != MemoryLocation::Type::Device)
    bit = uint64_t{1} << kHostAccessBit;
  updateRange(start, start + bytes, [&](ManagedState& state) {
    switch (advice) {
      case ManagedAdvice::SetReadMostly:
        state.readMostly = true;
        break;
      case ManagedAdvice::UnsetReadMostly:
        state.readMostly = false;
        break;
      case ManagedAdvice::SetPreferredLocation:
        state.preferred = location;
        break;
      case ManagedAdvice::UnsetPreferredLocation:
        state.preferred = MemoryLocation{};
        break;
      case ManagedAdvice::SetAccessedBy:
        state.accessedBy |= bit;
        break;
      case ManagedAdvice::UnsetAccessedBy:
        state.accessedBy &= ~bit;
        break;
    }
  });
}

void recordManagedPrefetch(const void* pointer, size_t bytes, MemoryLocation location) {
  uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  updateRange(start, start + bytes, [&](ManagedState& state) { state.lastPrefetch = location; });
}

ManagedRangeSummary managedRangeSummary(const void* pointer, size_t bytes) {
  uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  AdviceTable& t = adviceTable();
  std::lock_guard lock(t.mutex);
  ManagedState first = stateAt(t.segments, start);
  ManagedRangeSummary summary{first.readMostly, first.preferred, first.lastPrefetch,
                              first.accessedBy};
  for (auto it = t.segments.upper_bound(start); it != t.segments.end() && it->first < start + bytes;
       ++it) {
    const ManagedState& s = it->second;
    summary.readMostly = summary.readMostly && s.readMostly;
    if (summary.preferred && !(*summary.preferred == s.preferred)) summary.preferred.reset();
    if (summary.lastPrefetch && !(*summary.lastPrefetch == s.lastPrefetch))
      summary.lastPrefetch.reset();
    summary.accessedBy &= s.accessedBy;
  }
  return summary;
}

std::optional<Allocation> findAllocation(const void* pointer) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  return findLocked(t, reinterpret_cast<uintptr_t>(pointer));
}

bool isInsideAllocation(const void* pointer, size_t bytes) {
  auto allocation = findAllocation(pointer);
  if (!allocation) return false;
  uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  if (start - allocation->base <= allocation->size &&
      bytes <= allocation->size - (start - allocation->base))
    return true;
  // Physical memory mapped back to back (cuMemMap) is one range of device memory: the range
  // may continue into the mapping that starts where this one ends.
  uintptr_t end = start + bytes;
  while (allocation->mappedFrom == MappedFrom::VirtualMemory) {
    uintptr_t next = allocation->base + allocation->size;
    if (end <= next) return true;
    allocation = findAllocation(reinterpret_cast<const void*>(next));
    if (!allocation || allocation->base != next) return false;
  }
  return false;
}

Result<void*> allocateDevice(Context& context, size_t bytes) {
  ROCUDA_TRY(context.stickyError());  // a context with a failed kernel allocates nothing
  auto memory = context.device().backend().allocateDevice(bytes);
  if (!memory.ok()) return memory.takeError();
  insert(Allocation{reinterpret_cast<uintptr_t>(*memory), bytes, AllocationKind::Device, &context, 0});
  return *memory;
}

Result<void*> allocateFromPool(Context& context, MemoryPool& pool, size_t bytes) {
  auto memory = pool.allocate(bytes);
  if (!memory.ok()) return memory.takeError();
  AllocationKind kind = pool.memory() == PoolMemory::PinnedHost ? AllocationKind::Host
                        : pool.memory() == PoolMemory::Managed  ? AllocationKind::Managed
                                                                : AllocationKind::Device;
  Allocation allocation{reinterpret_cast<uintptr_t>(*memory), bytes, kind, &context,
                        kind == AllocationKind::Managed ? 1u : 0};  // CU_MEM_ATTACH_GLOBAL
  allocation.pool = &pool;
  insert(allocation);
  // A managed pool's location is the preferred location of what it allocates.
  if (kind == AllocationKind::Managed && pool.location().type != MemoryLocation::Type::None)
    adviseManaged(*memory, bytes, ManagedAdvice::SetPreferredLocation, pool.location());
  return *memory;
}

Result<void*> allocateHost(Context& context, size_t bytes, unsigned flags) {
  ROCUDA_TRY(context.stickyError());  // a context with a failed kernel allocates nothing
  auto memory = context.device().backend().allocateHost(bytes);
  if (!memory.ok()) return memory.takeError();
  insert(Allocation{reinterpret_cast<uintptr_t>(*memory), bytes, AllocationKind::Host, &context, flags});
  return *memory;
}

Result<void*> allocateManaged(Context& context, size_t bytes, unsigned flags) {
  // Managed memory must be reachable from host and device alike: pinned host memory is, on every
  // backend that reports managedMemory.
  ROCUDA_TRY(context.stickyError());
  auto memory = context.device().backend().allocateManaged(bytes);
  if (!memory.ok()) return memory.takeError();
  insert(Allocation{reinterpret_cast<uintptr_t>(*memory), bytes, AllocationKind::Managed, &context,
                    flags});
  return *memory;
}

Status freeDevice(const void* pointer) {
  auto allocation = removeExact(pointer, /*host=*/false);
  if (!allocation.ok()) return allocation.error();
  auto& backend = allocation->context->device().backend();
  if (allocation->kind == AllocationKind::Managed)
    clearManagedState(allocation->base, allocation->size);  // the address may be reused
  // A pool's block goes back to its pool, which lives while it has allocations outstanding (a
  // destroyed one until the last: MemoryPool::release). It is kept for reuse, unless the device
  // checks every access: then a use after the free must find it gone.
  if (allocation->pool != nullptr && allocation->mappedFrom == MappedFrom::None) {
    if (allocation->pool->free(const_cast<void*>(pointer), allocation->size,
                               /*keep=*/!backend.checksEveryAccess()))
      delete allocation->pool;
    return Status::success();
  }
  if (allocation->kind == AllocationKind::Managed) {
    backend.freeManaged(const_cast<void*>(pointer));
  } else if (allocation->kind == AllocationKind::Host) {  // of a host pool destroyed since
    backend.freeHost(const_cast<void*>(pointer));
  } else if (allocation->mappedFrom == MappedFrom::ExternalMemory ||
             allocation->mappedFrom == MappedFrom::PoolImport) {
    backend.unmapShared(const_cast<void*>(pointer), allocation->size);
  } else {
    backend.freeDevice(const_cast<void*>(pointer));
  }
  return Status::success();
}

void releaseContextMemory(Context& context) {
  std::vector<Allocation> owned;
  {
    AllocationTable& t = table();
    std::lock_guard lock(t.mutex);
    for (const auto& [base, allocation] : t.byBase)
      if (allocation.context == &context && !allocation.moduleVariable &&
          allocation.mappedFrom == MappedFrom::None)
        owned.push_back(allocation);
  }
  for (const Allocation& allocation : owned) {
    void* pointer = reinterpret_cast<void*>(allocation.base);
    if (allocation.registered)
      unregisterHostRange(pointer);
    else if (allocation.kind == AllocationKind::Host && allocation.pool == nullptr)
      (void)freeHost(pointer);
    else
      (void)freeDevice(pointer);  // device and managed memory, and any pool's
  }
}

Status freeHost(const void* pointer) {
  auto allocation = removeExact(pointer, /*host=*/true);
  if (!allocation.ok()) return allocation.error();
  allocation->context->device().backend().freeHost(const_cast<void*>(pointer));
  return Status::success();
}

namespace {
// Whether [start, start + size) overlaps a tracked allocation: one containing the start, or one
// starting inside the range.
bool overlapsLocked(AllocationTable& t, uintptr_t start, size_t size) {
  if (findLocked(t, start).has_value()) return true;
  auto next = t.byBase.lower_bound(start);
  return next != t.byBase.end() && next->first < start + size;
}
}  // namespace

Status registerHostRange(Context& context, void* base, size_t size, unsigned flags) {
  AllocationTable& t = table();
  uintptr_t start = reinterpret_cast<uintptr_t>(base);
  auto overlapping = [&] {
    return makeError(ErrorCode::HostMemoryAlreadyRegistered,
                     "the range overlaps memory that is already registered or allocated");
  };
  {
    std::lock_guard lock(t.mutex);
    if (overlapsLocked(t, start, size)) return overlapping();
  }
  // The backend may pin pages and map them into the GPU (slow): outside the table's lock, and
  // undone when another thread registered an overlapping range meanwhile.
  backends::DeviceBackend& backend = context.device().backend();
  Result<void*> deviceAddress = backend.registerHost(base, size);
  if (!deviceAddress) return deviceAddress.error();
  std::lock_guard lock(t.mutex);
  if (overlapsLocked(t, start, size)) {
    backend.unregisterHost(base, size);
    return overlapping();
  }
  Allocation allocation{start, size, AllocationKind::Host, &context, flags};
  allocation.registered = true;
  allocation.deviceAddress = reinterpret_cast<uintptr_t>(*deviceAddress);
  recordLocked(t, allocation);
  return Status::success();
}

bool unregisterHostRange(void* base) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.byBase.find(reinterpret_cast<uintptr_t>(base));
  if (it == t.byBase.end() || !it->second.registered) return false;
  if (Context* owner = lookupHandle<Context>(it->second.context))  // may be destroyed already
    owner->device().backend().unregisterHost(base, it->second.size);
  t.byBase.erase(it);
  return true;
}

uintptr_t hostDeviceAddress(const Allocation& allocation, const void* pointer) {
  uintptr_t offset = reinterpret_cast<uintptr_t>(pointer) - allocation.base;
  return (allocation.deviceAddress != 0 ? allocation.deviceAddress : allocation.base) + offset;
}

void registerMapped(Context& context, void* base, size_t size, MappedFrom from,
                    uint64_t memoryBlock) {
  Allocation allocation{reinterpret_cast<uintptr_t>(base), size, AllocationKind::Device, &context,
                        0};
  allocation.mappedFrom = from;
  allocation.memoryBlock = memoryBlock;
  insert(allocation);
  context.device().backend().externalRangeMapped(base, size, true);
}

bool unregisterMapped(void* base, MappedFrom from) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.byBase.find(reinterpret_cast<uintptr_t>(base));
  if (it == t.byBase.end() || it->second.mappedFrom != from) return false;
  if (Context* owner = lookupHandle<Context>(it->second.context))  // may be destroyed already
    owner->device().backend().externalRangeMapped(base, it->second.size, false);
  t.byBase.erase(it);
  return true;
}

void registerGlobal(Context* context, void* base, size_t size, bool managed) {
  Allocation allocation{reinterpret_cast<uintptr_t>(base), size,
                        managed ? AllocationKind::Managed : AllocationKind::Global, context, 0};
  if (managed) allocation.flags = 1;  // CU_MEM_ATTACH_GLOBAL, as __managed__ variables are
  allocation.moduleVariable = true;
  insert(allocation);
}

bool setSyncMemops(const void* pointer, bool sync) {
  AllocationTable& t = table();
  std::lock_guard lock(t.mutex);
  std::optional<Allocation> found = findLocked(t, reinterpret_cast<uintptr_t>(pointer));
  if (!found) return false;
  t.byBase[found->base].syncMemops = sync;
  return true;
}

void unregisterGlobal(void* base) {
  bool managed = false;
  size_t size = 0;
  {
    AllocationTable& t = table();
    std::lock_guard lock(t.mutex);
    auto it = t.byBase.find(reinterpret_cast<uintptr_t>(base));
    if (it == t.byBase.end() || !it->second.moduleVariable) return;
    managed = it->second.kind == AllocationKind::Managed;
    size = it->second.size;
    t.byBase.erase(it);
  }
  if (managed) clearManagedState(reinterpret_cast<uintptr_t>(base), size);
}

}  // namespace rocuda::core
