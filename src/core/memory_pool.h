// Memory pools for stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync, cudaMallocAsync).
// Allocations are made in blocks of a size class; a freed block (freed in stream order, so no
// earlier work of its stream still uses it) stays in the pool and serves the next allocation of
// its class from any stream, as CUDA's pools reuse memory. "Reserved" counts the pool's blocks,
// live and kept; the blocks kept beyond the release threshold go back to the device at the next
// stream, event or context synchronisation (trimToThreshold), or at cuMemPoolTrimTo. The
// attributes behave as CUDA documents (settable reuse flags and release threshold, resettable
// high-water marks). A pool holds device memory, page-locked host memory (a pool located on the
// host) or managed memory; the device it names allocates its blocks.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "core/memory.h"
#include "core/object.h"
#include "support/result.h"

namespace rocuda::core {

class Device;

enum class PoolAttribute : uint8_t {
  ReuseFollowEventDependencies = 1,
  ReuseAllowOpportunistic = 2,
  ReuseAllowInternalDependencies = 3,
  ReleaseThreshold = 4,
  ReservedMemCurrent = 5,
  ReservedMemHigh = 6,
  UsedMemCurrent = 7,
  UsedMemHigh = 8,
};

// What a pool's blocks are: CU_MEM_ALLOCATION_TYPE_PINNED on a device or on the host, or
// CU_MEM_ALLOCATION_TYPE_MANAGED.
enum class PoolMemory : uint8_t { Device, PinnedHost, Managed };

class MemoryPool : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::MemoryPool;
  // maxSize 0: no limit but the device's memory.
  // `location`: where CUDA says the pool is (PinnedHost: the host; Managed: its preferred
  // location, None for none); a Device pool's is its device.
  MemoryPool(Device& device, bool isDefault, uint64_t maxSize,
             PoolMemory memory = PoolMemory::Device, MemoryLocation location = {});

  // The device whose backend allocates the blocks: the pool's location for device memory.
  Device& device() { return device_; }
  bool isDefault() const { return isDefault_; }
  PoolMemory memory() const { return memory_; }
  MemoryLocation location() const { return location_; }

  ~MemoryPool() override;  // the kept blocks go back to the device

  // The size of the block an allocation of `bytes` takes: 512-byte steps below 1 MiB, 2 MiB
  // steps from there (CUDA's pool granularity).
  static uint64_t blockSize(uint64_t bytes);
  // A block for an allocation of `bytes`: a kept one of its class, or a new one from the device
  // (OutOfMemory beyond maxSize, after giving back kept blocks to make room).
  Result<void*> allocate(uint64_t bytes);
  // The allocation of `bytes` at `block` is freed: its block is kept (or, with `keep` false or
  // once the pool is released, given back to the device at once). True when the pool is released
  // and this was its last allocation: the caller deletes it.
  [[nodiscard]] bool free(void* block, uint64_t bytes, bool keep);
  // cuMemPoolDestroy: the kept blocks go back to the device and the pool allocates no more. True
  // when no allocation is outstanding (the caller deletes the pool now); otherwise the pool lives
  // on, its handle gone, until the last one is freed ("the resources associated with the pool
  // will be released automatically once there are no more outstanding allocations").
  [[nodiscard]] bool release();
  // Give back kept blocks while the pool still reserves at least `bytes` after each
  // (cuMemPoolTrimTo), or until it reserves at most its release threshold (at synchronisations).
  void trimTo(uint64_t bytes);
  void trimToThreshold();

  Result<uint64_t> attribute(PoolAttribute which) const;
  // InvalidValue for read-only attributes, and for high-water marks set to anything but 0.
  Status setAttribute(PoolAttribute which, uint64_t value);

  // Sharing between processes (core/ipc.h): the CU_MEM_HANDLE_TYPE_* bits the pool was created
  // with, and whether it stands for another process's pool, from which nothing is allocated here
  // (reserve answers InvalidValue).
  unsigned handleTypes() const { return handleTypes_; }

  // Which devices may use a host pool's memory (cuMemPoolSetAccess): none until granted, as
  // CUDA documents; the host always may.
  bool deviceGranted(int ordinal) const;
  void grantDevice(int ordinal, bool granted);

  // Before the pool's first allocation.
  void setHandleTypes(unsigned types) { handleTypes_ = types; }
  bool imported() const { return imported_; }
  void setImported() { imported_ = true; }

 private:
  Device& device_;
  bool isDefault_;
  uint64_t maxSize_;
  mutable std::mutex mutex_;
  bool reuseFollowEventDependencies_ = true;
  bool reuseAllowOpportunistic_ = true;
  bool reuseAllowInternalDependencies_ = true;
  uint64_t releaseThreshold_ = 0;
  uint64_t used_ = 0;  // bytes of live allocations, as requested
  uint64_t live_ = 0;  // live allocations
  bool released_ = false;
  uint64_t usedHigh_ = 0;
  uint64_t reserved_ = 0;  // bytes of the pool's blocks, live and kept
  uint64_t reservedHigh_ = 0;
  std::multimap<uint64_t, void*> kept_;  // freed blocks by size, for reuse

  void trimLocked(uint64_t bytes, bool keepAtLeast = false);
  Result<void*> allocateBlock(uint64_t bytes);
  void freeBlock(void* block);
  bool sharedHostBlocks() const { return memory_ == PoolMemory::PinnedHost && handleTypes_ != 0; }
  PoolMemory memory_;
  MemoryLocation location_;
  uint64_t grantedDevices_ = 0;  // bit d: device ordinal d
  unsigned handleTypes_ = 0;
  bool imported_ = false;
};

}  // namespace rocuda::core
