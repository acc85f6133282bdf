#include "core/virtual_memory.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/device_backend.h"
#include "core/memory.h"
#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::core {
namespace {

struct Physical {
  Device* device = nullptr;
  size_t bytes = 0;  // 0: imported memory of unknown size
  uint64_t backendHandle = 0;
  bool exportable = false;
  int references = 1;
  int mappings = 0;
  PhysicalLocation location;
};

struct Reservation {
  size_t bytes = 0;
  backends::DeviceBackend* reserver = nullptr;  // whose addresses they are
};

struct Mapping {
  size_t bytes = 0;
  uint64_t handle = 0;
  // CUmemAccess_flags given to each device, and to the host (nullptr) for host-located memory
  // (none: 0).
  std::map<Device*, unsigned> access;
};

// Handles are counted from a base with high bits set, so that small integers and pointers an
// application passes by mistake are not live handles.
constexpr uint64_t kFirstHandle = 0x5600000000000001ull;

struct State {
  std::mutex mutex;
  std::map<uintptr_t, Reservation> reservations;  // by base
  std::map<uint64_t, Physical> physical;
  std::map<uintptr_t, Mapping> mappings;  // address -> mapping
  uint64_t nextHandle = kFirstHandle;
};

State& state() {
  static State* s = new State;  // used until exit by any thread
  return *s;
}

// The physical memory a handle names while the application holds a reference, or end().
std::map<uint64_t, Physical>::iterator livePhysical(State& s, uint64_t handle) {
  auto it = s.physical.find(handle);
  return it != s.physical.end() && it->second.references > 0 ? it : s.physical.end();
}

Error notLive() { return makeError(ErrorCode::InvalidValue, "not a live allocation handle"); }

// The pages go when nothing references or maps them any more.
void dropIfUnused(State& s, std::map<uint64_t, Physical>::iterator it) {
  if (it->second.references > 0 || it->second.mappings > 0) return;
  it->second.device->backend().releasePhysical(it->second.backendHandle);
  s.physical.erase(it);
}

// The reservation containing [address, address + bytes), or end().
std::map<uintptr_t, Reservation>::iterator reservationOf(State& s, uintptr_t address,
                                                         size_t bytes) {
  auto it = s.reservations.upper_bound(address);
  if (it == s.reservations.begin()) return s.reservations.end();
  --it;
  if (address + bytes > it->first + it->second.bytes) return s.reservations.end();
  return it;
}

// The device whose backend reserves addresses: the first with virtual memory management (a
// reservation belongs to no device in CUDA; here to the address space of that device's kind).
Device* reservingDevice() {
  Platform& platform = Platform::instance();
  for (int i = 0; i < platform.deviceCount(); ++i)
    if (Device* device = platform.device(i); device->description().virtualMemoryManagement)
      return device;
  return nullptr;
}

}  // namespace

bool makesHostMemory(const backends::DeviceDescription& d) {
  return d.integrated && d.pageableMemoryAccess && d.virtualMemoryManagement;
}

Device* hostMemoryDevice() {
  Platform& platform = Platform::instance();
  for (int i = 0; i < platform.deviceCount(); ++i)
    if (Device* device = platform.device(i); makesHostMemory(device->description())) return device;
  return nullptr;
}

namespace {

bool multipleOf(uint64_t value, size_t granularity) {
  return granularity != 0 && value % granularity == 0;
}

// The mappings that exactly cover [address, address + bytes), in order, or an error.
Result<std::vector<std::map<uintptr_t, Mapping>::iterator>> wholeMappings(State& s,
                                                                          uintptr_t address,
                                                                          size_t bytes) {
  std::vector<std::map<uintptr_t, Mapping>::iterator> covering;
  uintptr_t at = address;
  auto it = s.mappings.find(address);
  while (at < address + bytes && it != s.mappings.end() && it->first == at) {
    covering.push_back(it);
    at += it->second.bytes;
    ++it;
  }
  if (covering.empty() || at != address + bytes)
    return makeError(ErrorCode::InvalidValue, "the range is not exactly a set of whole mappings");
  return covering;
}

// The mapping containing `address`, or an error.
Result<std::map<uintptr_t, Mapping>::iterator> mappingAt(State& s, uintptr_t address) {
  auto it = s.mappings.upper_bound(address);
  if (it == s.mappings.begin() || address >= std::prev(it)->first + std::prev(it)->second.bytes)
    return makeError(ErrorCode::InvalidValue, "no physical memory is mapped at this address");
  return std::prev(it);
}

}  // namespace

size_t virtualMemoryGranularity(Device& device, bool recommended) {
  return device.backend().virtualMemoryGranularity(recommended);
}

Result<void*> reserveAddresses(size_t bytes, size_t alignment, uintptr_t hint) {
  Device* device = reservingDevice();
  if (device == nullptr)
    return makeError(ErrorCode::NotSupported, "no device has virtual memory management");
  size_t granularity = device->backend().virtualMemoryGranularity(false);
  if (bytes == 0 || !multipleOf(bytes, granularity) || !multipleOf(hint, granularity))
    return makeError(ErrorCode::InvalidValue,
                     "size and address must be multiples of the granularity (" +
                         std::to_string(granularity) + " bytes)");
  if (alignment & (alignment - 1))
    return makeError(ErrorCode::InvalidValue, "alignment must be a power of two or zero");
  Result<void*> base = device->backend().reserveAddresses(bytes, alignment, hint);
  if (!base) return base;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.reservations[reinterpret_cast<uintptr_t>(*base)] = Reservation{bytes, &device->backend()};
  return base;
}

std::optional<std::pair<uintptr_t, size_t>> reservationContaining(uintptr_t address) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = reservationOf(s, address, 1);
  if (it == s.reservations.end()) return std::nullopt;
  return std::make_pair(it->first, it->second.bytes);
}

Status freeAddresses(uintptr_t base, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.reservations.find(base);
  if (it == s.reservations.end() || it->second.bytes != bytes)
    return makeError(ErrorCode::InvalidValue, "not a reserved address range (address and size)");
  auto mapped = s.mappings.lower_bound(base);
  if (mapped != s.mappings.end() && mapped->first < base + bytes)
    return makeError(ErrorCode::InvalidValue, "the range still has memory mapped in it");
  it->second.reserver->freeAddresses(reinterpret_cast<void*>(base), bytes);
  s.reservations.erase(it);
  return Status::success();
}

Result<uint64_t> createPhysicalMemory(Device& device, size_t bytes, bool exportable,
                                      PhysicalLocation location) {
  if (bytes == 0 || !multipleOf(bytes, device.backend().virtualMemoryGranularity(false)))
    return makeError(ErrorCode::InvalidValue, "size must be a multiple of the granularity");
  Result<uint64_t> created = device.backend().createPhysical(bytes, exportable);
  if (!created) return created.error();
  State& s = state();
  std::lock_guard lock(s.mutex);
  uint64_t handle = s.nextHandle++;
  s.physical[handle] = Physical{&device, bytes, *created, exportable, 1, 0, location};
  return handle;
}

Result<uint64_t> importPhysicalMemory(Device& device, int fd) {
  if (!device.description().virtualMemoryManagement)
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  auto imported = device.backend().importPhysical(fd);
  if (!imported) return imported.error();
  State& s = state();
  std::lock_guard lock(s.mutex);
  uint64_t handle = s.nextHandle++;
  s.physical[handle] = Physical{&device, imported->bytes, imported->handle, true, 1, 0, {}};
  return handle;
}

Result<PhysicalMemoryInfo> physicalMemory(uint64_t handle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = livePhysical(s, handle);
  if (it == s.physical.end()) return notLive();
  return PhysicalMemoryInfo{it->second.device, it->second.bytes, it->second.exportable,
                            it->second.location};
}

Result<int> exportPhysicalMemory(uint64_t handle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = livePhysical(s, handle);
  if (it == s.physical.end()) return notLive();
  if (!it->second.exportable)
    return makeError(ErrorCode::InvalidValue,
                     "the allocation was not created exportable as a file descriptor");
  return it->second.device->backend().exportPhysical(it->second.backendHandle);
}

Status releasePhysicalMemory(uint64_t handle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = livePhysical(s, handle);
  if (it == s.physical.end()) return notLive();
  --it->second.references;
  dropIfUnused(s, it);
  return Status::success();
}

Result<uint64_t> retainPhysicalMemoryAt(uintptr_t address) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Result<std::map<uintptr_t, Mapping>::iterator> found = mappingAt(s, address);
  if (!found) return found.error();
  auto it = *found;
  ++s.physical.at(it->second.handle).references;
  return it->second.handle;
}

Status mapPhysicalMemory(uintptr_t address, size_t bytes, size_t offset, uint64_t handle) {
  if (offset != 0) return makeError(ErrorCode::InvalidValue, "offset must be zero");
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto physical = livePhysical(s, handle);
  if (physical == s.physical.end()) return notLive();
  backends::DeviceBackend& backend = physical->second.device->backend();
  size_t granularity = backend.virtualMemoryGranularity(false);
  if (bytes == 0 || !multipleOf(bytes, granularity) || !multipleOf(address, granularity))
    return makeError(ErrorCode::InvalidValue,
                     "address and size must be multiples of the granularity");
  if (physical->second.bytes != 0 && bytes > physical->second.bytes)
    return makeError(ErrorCode::InvalidValue, "size is beyond the allocation");
  auto reservation = reservationOf(s, address, bytes);
  if (reservation == s.reservations.end())
    return makeError(ErrorCode::InvalidValue, "the range is not inside one reserved address range");
  // The reservation's addresses must be ones this device can map: its own kind's (every CPU
  // device's are the process's; GPUs of one runtime share theirs where they are peers).
  backends::DeviceBackend& reserver = *reservation->second.reserver;
  if (&reserver != &backend && !reserver.peerLink(backend).access)
    return makeError(ErrorCode::NotSupported,
                     "the range was reserved in another device's address space");
  auto next = s.mappings.lower_bound(address);
  bool overlaps = (next != s.mappings.end() && next->first < address + bytes) ||
                  (next != s.mappings.begin() &&
                   std::prev(next)->first + std::prev(next)->second.bytes > address);
  if (overlaps) return makeError(ErrorCode::InvalidValue, "the range is already mapped");
  Device& device = *physical->second.device;
  void* at = reinterpret_cast<void*>(address);
  ROCUDA_TRY(device.backend().mapPhysical(at, bytes, physical->second.backendHandle, offset));
  // A NUMA node's memory: its pages bound to the node (where the host has more than one).
  if (physical->second.location.kind == PhysicalLocation::Kind::HostNuma)
    if (Status placed = platform::placeOnNumaNode(at, bytes, physical->second.location.numaNode);
        !placed.ok()) {
      (void)device.backend().unmapPhysical(at, bytes);
      return placed;
    }
  s.mappings[address] = Mapping{bytes, handle, {}};
  ++physical->second.mappings;
  registerMapped(device.primaryContext(), at, bytes, MappedFrom::VirtualMemory, handle);
  return Status::success();
}

Status unmapPhysicalMemory(uintptr_t address, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto covering = wholeMappings(s, address, bytes);
  if (!covering) return covering.error();
  for (auto it : *covering) {
    auto physical = s.physical.find(it->second.handle);
    void* at = reinterpret_cast<void*>(it->first);
    // The backend first: if it fails, the mapping stays recorded and registered as it was.
    ROCUDA_TRY(physical->second.device->backend().unmapPhysical(at, it->second.bytes));
    unregisterMapped(at, MappedFrom::VirtualMemory);
    --physical->second.mappings;
    dropIfUnused(s, physical);
    s.mappings.erase(it);
  }
  return Status::success();
}

Result<Device*> mappedDevice(uintptr_t address, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto covering = wholeMappings(s, address, bytes);
  if (!covering) return covering.error();
  return s.physical.at(covering->front()->second.handle).device;
}

Status setMappedAccess(uintptr_t address, size_t bytes, Device* device, unsigned flags) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto covering = wholeMappings(s, address, bytes);
  if (!covering) return covering.error();
  for (auto it : *covering) {
    const Physical& physical = s.physical.at(it->second.handle);
    Device& owner = *physical.device;
    // The host reaches host-located memory only ("cannot specify HOST_NUMA accessibility for
    // allocations created with other location types").
    if (device == nullptr && !physical.location.onHost())
      return makeError(ErrorCode::InvalidValue, "host access to memory located on a device");
    // Another device than the memory's reaches it only as its peer (cuCtxEnablePeerAccess's link).
    if (device != nullptr && &owner != device &&
        !device->backend().peerLink(owner.backend()).access)
      return makeError(ErrorCode::NotSupported, "device " + std::to_string(device->ordinal()) +
                                                    " cannot access the memory of device " +
                                                    std::to_string(owner.ordinal()));
  }
  for (auto it : *covering) {
    Device& owner = *s.physical.at(it->second.handle).device;
    std::map<Device*, unsigned> access = it->second.access;
    access[device] = flags;
    // The host's access is to the pages of the device that holds them (its memory is host
    // memory: hostMemoryDevice()).
    std::map<backends::DeviceBackend*, unsigned> byBackend;
    for (auto& [who, given] : access)
      byBackend[who != nullptr ? &who->backend() : &owner.backend()] |= given;
    std::vector<backends::DeviceBackend::DeviceAccess> list;
    for (auto& [backend, given] : byBackend)
      list.push_back({backend, given != 0, (given & 2) != 0});
    ROCUDA_TRY(
        owner.backend().setAccess(reinterpret_cast<void*>(it->first), it->second.bytes, list));
    it->second.access = std::move(access);
  }
  return Status::success();
}

Result<unsigned> mappedAccess(uintptr_t address, Device* device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Result<std::map<uintptr_t, Mapping>::iterator> found = mappingAt(s, address);
  if (!found) return found.error();
  auto given = (*found)->second.access.find(device);
  return given == (*found)->second.access.end() ? 0u : given->second;
}

}  // namespace rocuda::core
