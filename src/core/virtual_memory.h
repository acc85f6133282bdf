// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess...):
// address ranges reserved for the process, physical memory of a device named by a handle, and
// the mappings of one into the other. Reservations are made by the first device with virtual
// memory management (the CPU device: inaccessible host pages; an AMD GPU: HIP's addresses);
// physical memory and mappings are the device backend's (DeviceBackend::createPhysical...).
// Every mapping is device memory in the allocation table (core/memory.h) while it exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "support/result.h"

namespace rocuda::backends {
struct DeviceDescription;
}

namespace rocuda::core {

class Device;

// Sizes and addresses must be multiples of the device's minimum granularity (the CPU device's is
// the host page, its recommended one a huge page).
size_t virtualMemoryGranularity(Device& device, bool recommended);

// Where physical memory is (CUmemLocation): a device's, or host memory, on no particular NUMA
// node or bound to one.
struct PhysicalLocation {
  enum class Kind : uint8_t { Device, Host, HostNuma } kind = Kind::Device;
  int numaNode = 0;  // HostNuma's
  bool onHost() const { return kind != Kind::Device; }
};

// A physical allocation: the handle cuMemCreate gives out. Host memory is held by the device
// that serves it (hostMemoryDevice()).
struct PhysicalMemoryInfo {
  Device* device = nullptr;
  size_t bytes = 0;
  bool exportable = false;  // requested with POSIX file descriptors as a handle type
  PhysicalLocation location;
};

// Whether a device's physical memory is host memory the host reaches directly (the CPU
// device's): such a device makes and maps host-located physical memory, and the first one is
// hostMemoryDevice() (nullptr when there is none).
bool makesHostMemory(const backends::DeviceDescription& device);
Device* hostMemoryDevice();

Result<void*> reserveAddresses(size_t bytes, size_t alignment, uintptr_t hint);
// The reservation (base, bytes) that contains `address`; nullopt outside every reservation.
std::optional<std::pair<uintptr_t, size_t>> reservationContaining(uintptr_t address);
// Only a whole reservation, with nothing mapped in it any more.
Status freeAddresses(uintptr_t base, size_t bytes);

// `location` on the host: `device` is hostMemoryDevice(), and a NUMA node's pages are bound to it
// when mapped.
Result<uint64_t> createPhysicalMemory(Device& device, size_t bytes, bool exportable,
                                      PhysicalLocation location = {});
// Takes over `fd` (when it succeeds), a descriptor of pages exported by exportPhysicalMemory.
Result<uint64_t> importPhysicalMemory(Device& device, int fd);
Result<PhysicalMemoryInfo> physicalMemory(uint64_t handle);
// A new descriptor of the handle's pages (the caller closes it).
Result<int> exportPhysicalMemory(uint64_t handle);
// Drops one reference (cuMemCreate's, or a cuMemRetainAllocationHandle's); the pages go when the
// last reference and the last mapping are gone.
Status releasePhysicalMemory(uint64_t handle);
// The handle mapped at `address`, with one more reference.
Result<uint64_t> retainPhysicalMemoryAt(uintptr_t address);

// Maps `bytes` of the handle's memory from `offset` at `address`, inside one reservation and
// over nothing mapped; inaccessible until setMappedAccess.
Status mapPhysicalMemory(uintptr_t address, size_t bytes, size_t offset, uint64_t handle);
// Unmaps whole mappings covering exactly [address, address + bytes).
Status unmapPhysicalMemory(uintptr_t address, size_t bytes);
// The device the mappings covering exactly [address, address + bytes) belong to, or an error
// when the range is not wholly mapped.
Result<Device*> mappedDevice(uintptr_t address, size_t bytes);
// Access of `device` (nullptr: the host, for host-located memory only) to the mapped range: 0
// none, 1 read, 3 read and write (CUmemAccess_flags).
Status setMappedAccess(uintptr_t address, size_t bytes, Device* device, unsigned flags);
Result<unsigned> mappedAccess(uintptr_t address, Device* device);

}  // namespace rocuda::core
