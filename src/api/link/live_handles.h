// The handles a linker API has handed out and not yet destroyed (CUlinkState, nvJitLinkHandle):
// a handle is looked up here before it is used, so a stale or invented one is an error, never a
// dereference. Owns the objects: destroy() deletes.
#pragma once

#include <memory>
#include <mutex>
#include <set>

namespace rocuda::link {

template <class T>
class LiveHandles {
 public:
  // Takes ownership; the raw pointer is the handle.
  T* add(std::unique_ptr<T> object) {
    std::lock_guard lock(mutex_);
    return *live_.insert(object.release()).first;
  }
  // The object, or nullptr when `handle` is not live.
  T* find(const void* handle) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(static_cast<T*>(const_cast<void*>(handle)));
    return it == live_.end() ? nullptr : *it;
  }
  // Deletes the object; false when `handle` is not live.
  bool destroy(const void* handle) {
    T* object = static_cast<T*>(const_cast<void*>(handle));
    {
      std::lock_guard lock(mutex_);
      if (live_.erase(object) == 0) return false;
    }
    delete object;
    return true;
  }

 private:
  std::mutex mutex_;
  std::set<T*> live_;
};

}  // namespace rocuda::link
