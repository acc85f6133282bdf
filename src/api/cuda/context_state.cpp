#include "api/cuda/context_state.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace rocuda::api {
namespace {

struct StorageEntry {
  void* value = nullptr;
  StorageDestructor destructor = nullptr;
};

struct ContextState {
  std::map<void*, StorageEntry> storage;
  cuda::CUfunc_cache cacheConfig = cuda::CU_FUNC_CACHE_PREFER_NONE;
};

struct States {
  std::mutex mutex;
  std::unordered_map<const core::Context*, ContextState> byContext;
};

States& states() {
  static States* instance = new States();  // used from atexit paths: never destroyed
  return *instance;
}

}  // namespace

Status storagePut(core::Context* context, void* key, void* value, StorageDestructor destructor) {
  States& s = states();
  std::lock_guard lock(s.mutex);
  s.byContext[context].storage[key] = StorageEntry{value, destructor};
  return Status::success();
}

Status storageDelete(core::Context* context, void* key) {
  States& s = states();
  std::lock_guard lock(s.mutex);
  auto it = s.byContext.find(context);
  if (it == s.byContext.end() || it->second.storage.erase(key) == 0)
    return makeError(ErrorCode::NotFound, "no context-local value for this key");
  return Status::success();
}

Result<void*> storageGet(core::Context* context, void* key) {
  States& s = states();
  std::lock_guard lock(s.mutex);
  auto it = s.byContext.find(context);
  if (it == s.byContext.end()) return makeError(ErrorCode::NotFound, "no context-local storage");
  auto entry = it->second.storage.find(key);
  if (entry == it->second.storage.end())
    return makeError(ErrorCode::NotFound, "no context-local value for this key");
  return entry->second.value;
}

cuda::CUfunc_cache cacheConfig(core::Context* context) {
  States& s = states();
  std::lock_guard lock(s.mutex);
  auto it = s.byContext.find(context);
  return it == s.byContext.end() ? cuda::CU_FUNC_CACHE_PREFER_NONE : it->second.cacheConfig;
}

void setCacheConfig(core::Context* context, cuda::CUfunc_cache config) {
  States& s = states();
  std::lock_guard lock(s.mutex);
  s.byContext[context].cacheConfig = config;
}

void releaseContextState(core::Context* context) {
  std::map<void*, StorageEntry> storage;
  {
    States& s = states();
    std::lock_guard lock(s.mutex);
    auto it = s.byContext.find(context);
    if (it == s.byContext.end()) return;
    storage = std::move(it->second.storage);
    s.byContext.erase(it);
  }
  // Outside the lock: a destructor may call back into the driver API.
  for (auto& [key, entry] : storage) {
    if (entry.destructor != nullptr)
      entry.destructor(reinterpret_cast<cuda::CUcontext>(context), key, entry.value);
  }
}

}  // namespace rocuda::api
