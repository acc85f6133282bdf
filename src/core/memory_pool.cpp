#include "core/memory_pool.h"

#include <algorithm>
#include <string>

#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::core {

MemoryPool::MemoryPool(Device& device, bool isDefault, uint64_t maxSize, PoolMemory memory,
                       MemoryLocation location)
    : Object(ObjectKind::MemoryPool),
      device_(device),
      isDefault_(isDefault),
      maxSize_(maxSize),
      memory_(memory),
      location_(memory == PoolMemory::Device
                    ? MemoryLocation{MemoryLocation::Type::Device, device.ordinal()}
                    : location) {
  device_.addMemPool(this);
}

Result<void*> MemoryPool::allocateBlock(uint64_t bytes) {
  switch (memory_) {
    case PoolMemory::PinnedHost: {
      // A host pool shared between processes takes its blocks as the device's own allocations,
      // which that device (whose memory is host memory) can share in place (shareDevice).
      Result<void*> block = sharedHostBlocks() ? device_.backend().allocateDevice(bytes)
                                               : device_.backend().allocateHost(bytes);
      if (!block || location_.type != MemoryLocation::Type::HostNuma) return block;
      // A pool on one host NUMA node: its blocks' pages there, or no block.
      if (Status placed = platform::placeOnNumaNode(*block, bytes, location_.id); !placed) {
        freeBlock(*block);
        return placed.error();
      }
      return block;
    }
    case PoolMemory::Managed:
      return device_.backend().allocateManaged(bytes);
    case PoolMemory::Device:
      break;
  }
  return device_.backend().allocateDevice(bytes);
}

void MemoryPool::freeBlock(void* block) {
  switch (memory_) {
    case PoolMemory::PinnedHost:
      if (sharedHostBlocks())
        device_.backend().freeDevice(block);
      else
        device_.backend().freeHost(block);
      return;
    case PoolMemory::Managed:
      device_.backend().freeManaged(block);
      return;
    case PoolMemory::Device:
      break;
  }
  device_.backend().freeDevice(block);
}

MemoryPool::~MemoryPool() {
  device_.removeMemPool(this);
  std::lock_guard lock(mutex_);
  trimLocked(0);
}

bool MemoryPool::deviceGranted(int ordinal) const {
  std::lock_guard lock(mutex_);
  return ordinal >= 0 && ordinal < 64 && (grantedDevices_ >> ordinal & 1) != 0;
}

void MemoryPool::grantDevice(int ordinal, bool granted) {
  if (ordinal < 0 || ordinal >= 64) return;
  std::lock_guard lock(mutex_);
  grantedDevices_ = granted ? grantedDevices_ | uint64_t{1} << ordinal
                            : grantedDevices_ & ~(uint64_t{1} << ordinal);
}

uint64_t MemoryPool::blockSize(uint64_t bytes) {
  constexpr uint64_t kSmall = 512, kLarge = uint64_t(2) << 20;
  uint64_t step = bytes < (uint64_t(1) << 20) ? kSmall : kLarge;
  return std::max<uint64_t>((bytes + step - 1) / step * step, step);
}

Result<void*> MemoryPool::allocate(uint64_t bytes) {
  if (imported_)
    return makeError(ErrorCode::InvalidValue, "an imported memory pool cannot allocate");
  uint64_t block = blockSize(bytes);
  std::lock_guard lock(mutex_);
  void* memory = nullptr;
  if (auto kept = kept_.find(block); kept != kept_.end()) {
    memory = kept->second;
    kept_.erase(kept);
  } else {
    if (maxSize_ != 0 && reserved_ + block > maxSize_)
      trimLocked(maxSize_ - std::min(maxSize_, block));
    if (maxSize_ != 0 && reserved_ + block > maxSize_)
      return makeError(ErrorCode::OutOfMemory, "the memory pool's maximum size (" +
                                                   std::to_string(maxSize_) + " bytes) is reached");
    auto fresh = allocateBlock(block);
    if (!fresh.ok() && !kept_.empty()) {
      trimLocked(0);  // the device is short of memory: give back what the pool keeps, and retry
      fresh = allocateBlock(block);
    }
    if (!fresh.ok()) return fresh.takeError();
    memory = *fresh;
    reserved_ += block;
    reservedHigh_ = std::max(reservedHigh_, reserved_);
  }
  used_ += bytes;
  usedHigh_ = std::max(usedHigh_, used_);
  ++live_;
  return memory;
}

bool MemoryPool::free(void* block, uint64_t bytes, bool keep) {
  uint64_t size = blockSize(bytes);
  std::lock_guard lock(mutex_);
  used_ -= std::min(used_, bytes);
  live_ -= std::min<uint64_t>(live_, 1);
  if (keep && !released_) {
    kept_.emplace(size, block);
    return false;
  }
  reserved_ -= std::min(reserved_, size);
  freeBlock(block);
  return released_ && live_ == 0;
}

bool MemoryPool::release() {
  std::lock_guard lock(mutex_);
  released_ = true;
  trimLocked(0);
  return live_ == 0;
}

// cuMemPoolTrimTo: "the pool will be guaranteed to have at least minBytesToKeep bytes reserved
// after the operation": only blocks whose release leaves that much go, the largest first.
void MemoryPool::trimTo(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  trimLocked(bytes, /*keepAtLeast=*/true);
}

void MemoryPool::trimToThreshold() {
  std::lock_guard lock(mutex_);
  trimLocked(releaseThreshold_);
}

// Kept blocks go back, the largest first, while the pool reserves more than `bytes`; with
// `keepAtLeast`, only those whose release leaves at least `bytes` reserved.
void MemoryPool::trimLocked(uint64_t bytes, bool keepAtLeast) {
  for (auto it = kept_.end(); it != kept_.begin() && reserved_ > bytes;) {
    --it;
    uint64_t left = reserved_ - std::min(reserved_, it->first);
    if (keepAtLeast && left < bytes) continue;
    freeBlock(it->second);
    reserved_ = left;
    it = kept_.erase(it);
  }
}

Result<uint64_t> MemoryPool::attribute(PoolAttribute which) const {
  std::lock_guard lock(mutex_);
  switch (which) {
    case PoolAttribute::ReuseFollowEventDependencies: return uint64_t{reuseFollowEventDependencies_};
    case PoolAttribute::ReuseAllowOpportunistic: return uint64_t{reuseAllowOpportunistic_};
    case PoolAttribute::ReuseAllowInternalDependencies:
      return uint64_t{reuseAllowInternalDependencies_};
    case PoolAttribute::ReleaseThreshold: return releaseThreshold_;
    case PoolAttribute::ReservedMemCurrent:
      return reserved_;
    case PoolAttribute::UsedMemCurrent: return used_;
    case PoolAttribute::ReservedMemHigh:
      return reservedHigh_;
    case PoolAttribute::UsedMemHigh: return usedHigh_;
  }
  return makeError(ErrorCode::InvalidValue, "unknown memory pool attribute");
}

Status MemoryPool::setAttribute(PoolAttribute which, uint64_t value) {
  std::lock_guard lock(mutex_);
  switch (which) {
    case PoolAttribute::ReuseFollowEventDependencies:
      reuseFollowEventDependencies_ = value != 0;
      return Status::success();
    case PoolAttribute::ReuseAllowOpportunistic:
      reuseAllowOpportunistic_ = value != 0;
      return Status::success();
    case PoolAttribute::ReuseAllowInternalDependencies:
      reuseAllowInternalDependencies_ = value != 0;
      return Status::success();
    case PoolAttribute::ReleaseThreshold:
      releaseThreshold_ = value;
      return Status::success();
    case PoolAttribute::ReservedMemHigh:
    case PoolAttribute::UsedMemHigh:
      if (value != 0)
        return makeError(ErrorCode::InvalidValue, "a high-water mark can only be reset to 0");
      if (which == PoolAttribute::ReservedMemHigh)
        reservedHigh_ = reserved_;
      else
        usedHigh_ = used_;
      return Status::success();
    case PoolAttribute::ReservedMemCurrent:
    case PoolAttribute::UsedMemCurrent:
      return makeError(ErrorCode::InvalidValue, "the attribute is read-only");
  }
  return makeError(ErrorCode::InvalidValue, "unknown memory pool attribute");
}

}  // namespace rocuda::core
