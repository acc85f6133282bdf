// What the driver API keeps per context beyond the core's model: cudart's context-local storage
// (export table 5) and the cache/shared-memory preferences, which are hints with no effect on
// the devices Rocuda drives but must read back as set.
#pragma once

#include "rocuda/cuda_abi.h"
#include "support/result.h"

namespace rocuda::core {
class Context;
}

namespace rocuda::api {

// Called when the context goes away with (context, key, value).
using StorageDestructor = void (*)(cuda::CUcontext, void*, void*);

Status storagePut(core::Context* context, void* key, void* value, StorageDestructor destructor);
Status storageDelete(core::Context* context, void* key);      // NotFound on a miss
Result<void*> storageGet(core::Context* context, void* key);  // NotFound on a miss

cuda::CUfunc_cache cacheConfig(core::Context* context);
void setCacheConfig(core::Context* context, cuda::CUfunc_cache config);

// Run the storage destructors and forget the context (before it is destroyed or reset).
void releaseContextState(core::Context* context);

}  // namespace rocuda::api
