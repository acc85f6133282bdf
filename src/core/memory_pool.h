// Memory pools for stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync, cudaMallocAsync).
// Rocuda allocates at once and frees in stream order, returning memory to the system: nothing is
// cached, so trimming has nothing to do and "reserved" equals "used". The attributes behave as
// CUDA documents (settable reuse flags and release threshold, resettable high-water marks).
#pragma once

#include <cstdint>
#include <mutex>

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

class MemoryPool : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::MemoryPool;
  // maxSize 0: no limit but the device's memory.
  MemoryPool(Device& device, bool isDefault, uint64_t maxSize);

  Device& device() { return device_; }
  bool isDefault() const { return isDefault_; }

  // Account for an allocation of `bytes` (OutOfMemory beyond maxSize) and its release.
  Status reserve(uint64_t bytes);
  void release(uint64_t bytes);

  Result<uint64_t> attribute(PoolAttribute which) const;
  // InvalidValue for read-only attributes, and for high-water marks set to anything but 0.
  Status setAttribute(PoolAttribute which, uint64_t value);

  // Sharing between processes (core/ipc.h): the CU_MEM_HANDLE_TYPE_* bits the pool was created
  // with, and whether it stands for another process's pool, from which nothing is allocated here
  // (reserve answers InvalidValue).
  unsigned handleTypes() const { return handleTypes_; }
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
  uint64_t used_ = 0;
  uint64_t usedHigh_ = 0;
  unsigned handleTypes_ = 0;
  bool imported_ = false;
};

}  // namespace rocuda::core
