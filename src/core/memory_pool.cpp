#include "core/memory_pool.h"

#include <algorithm>
#include <string>

namespace rocuda::core {

MemoryPool::MemoryPool(Device& device, bool isDefault, uint64_t maxSize)
    : Object(ObjectKind::MemoryPool), device_(device), isDefault_(isDefault), maxSize_(maxSize) {}

Status MemoryPool::reserve(uint64_t bytes) {
  if (imported_)
    return makeError(ErrorCode::InvalidValue, "an imported memory pool cannot allocate");
  std::lock_guard lock(mutex_);
  if (maxSize_ != 0 && used_ + bytes > maxSize_)
    return makeError(ErrorCode::OutOfMemory, "the memory pool's maximum size (" +
                                                 std::to_string(maxSize_) + " bytes) is reached");
  used_ += bytes;
  usedHigh_ = std::max(usedHigh_, used_);
  return Status::success();
}

void MemoryPool::release(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  used_ -= std::min(used_, bytes);
}

Result<uint64_t> MemoryPool::attribute(PoolAttribute which) const {
  std::lock_guard lock(mutex_);
  switch (which) {
    case PoolAttribute::ReuseFollowEventDependencies: return uint64_t{reuseFollowEventDependencies_};
    case PoolAttribute::ReuseAllowOpportunistic: return uint64_t{reuseAllowOpportunistic_};
    case PoolAttribute::ReuseAllowInternalDependencies:
      return uint64_t{reuseAllowInternalDependencies_};
    case PoolAttribute::ReleaseThreshold: return releaseThreshold_;
    // Nothing is cached: the memory the pool holds is exactly what is allocated from it.
    case PoolAttribute::ReservedMemCurrent:
    case PoolAttribute::UsedMemCurrent: return used_;
    case PoolAttribute::ReservedMemHigh:
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
      usedHigh_ = used_;
      return Status::success();
    case PoolAttribute::ReservedMemCurrent:
    case PoolAttribute::UsedMemCurrent:
      return makeError(ErrorCode::InvalidValue, "the attribute is read-only");
  }
  return makeError(ErrorCode::InvalidValue, "unknown memory pool attribute");
}

}  // namespace rocuda::core
