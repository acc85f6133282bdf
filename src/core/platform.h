// The platform: the devices every backend offers, in ROCUDA_DEVICES order, and initialisation.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backends/device_backend.h"
#include "core/memory.h"
#include "support/result.h"

namespace rocuda::core {

class Context;
class MemoryPool;
enum class PoolMemory : uint8_t;

class Device {
 public:
  Device(int ordinal, std::unique_ptr<backends::DeviceBackend> backend);
  ~Device();

  int ordinal() const { return ordinal_; }
  backends::DeviceBackend& backend() { return *backend_; }
  const backends::DeviceDescription& description() const { return backend_->description(); }

  // The primary context (created on first use, active while retained).
  Context& primaryContext();
  Status retainPrimary(Context** out);
  Status releasePrimary();
  Status resetPrimary();
  unsigned primaryFlags() const;
  Status setPrimaryFlags(unsigned flags);
  bool primaryActive() const;

  // Stream-ordered allocation: the device's default pool, and the pool cuMemAllocAsync uses
  // (the default one until cuDeviceSetMemPool).
  MemoryPool& defaultMemPool();
  MemoryPool& currentMemPool();
  void setCurrentMemPool(MemoryPool* pool);  // nullptr: back to the default pool
  // Every pool of the device (pools register themselves); at a stream, event or context
  // synchronisation each gives back the blocks it keeps beyond its release threshold. A pool
  // removed (destroyed) stops being the current one.
  void addMemPool(MemoryPool* pool);
  void removeMemPool(MemoryPool* pool);
  void trimMemPools();
  void emptyMemPools();  // everything kept goes back (a reset)

 private:
  int ordinal_;
  std::unique_ptr<backends::DeviceBackend> backend_;
  mutable std::mutex primaryMutex_;
  std::unique_ptr<Context> primary_;
  int primaryRefs_ = 0;
  unsigned primaryFlags_ = 0;
  std::mutex poolsMutex_;  // before the default pool, which unregisters itself when destroyed
  std::vector<MemoryPool*> pools_;
  MemoryPool* currentPool_ = nullptr;  // before the default pool, which clears it when destroyed
  std::unique_ptr<MemoryPool> defaultPool_;
};

class Platform {
 public:
  static Platform& instance();

  // cuInit: create the devices once. Later calls return the first result.
  Status initialize();
  bool initialized() const;
  // A child of fork() whose parent had initialized: it holds copies of the parent's devices,
  // contexts and memory but none of their threads (the CPU device's workers, the streams'
  // executors), which any launch, copy or synchronization would wait for. As with NVIDIA's
  // driver, every call that needs cuInit, cuInit included, fails with NOT_INITIALIZED there.
  bool forkedAfterInitialize() const { return forkedAfterInitialize_; }

  int deviceCount() const { return static_cast<int>(devices_.size()); }
  Device* device(int ordinal);  // nullptr when out of range

  // The default and current pool (cuMemGetDefaultMemPool, cuMemGetMemPool, cuMemSetMemPool) of
  // a location and kind of memory: a device's pinned memory is its Device's; page-locked host
  // memory has one default pool, managed memory one per preferred location (none, the host, a
  // device), each made on first use, its blocks allocated by device 0. The caller has checked
  // the location. setCurrentPool(nullptr): back to the default.
  MemoryPool& defaultPool(PoolMemory memory, MemoryLocation location);
  MemoryPool& currentPool(PoolMemory memory, MemoryLocation location);
  void setCurrentPool(PoolMemory memory, MemoryLocation location, MemoryPool* pool);
  // A pool being destroyed stops being the current pool of the host and managed locations (a
  // device's forgets it in Device::removeMemPool).
  void forgetCurrentPool(MemoryPool* pool);

 private:
  Platform() = default;
  std::once_flag once_;
  Status initStatus_ = makeError(ErrorCode::NotInitialized, "cuInit has not been called");
  std::atomic<bool> initialized_{false};
  std::atomic<bool> forkedAfterInitialize_{false};
  std::vector<std::unique_ptr<Device>> devices_;
  using PoolKey = std::tuple<PoolMemory, MemoryLocation::Type, int>;
  std::mutex poolsMutex_;
  std::map<PoolKey, std::unique_ptr<MemoryPool>> defaultPools_;  // host and managed memory
  std::map<PoolKey, MemoryPool*> currentPools_;
};

// What a context owned, freed as NVIDIA's primary-context reset and cuCtxDestroy free it: its
// work finishes (its streams and events go), then its modules (and its instances of libraries),
// texture and surface objects, arrays and memory; a stale handle or pointer is unknown
// afterwards. Module variables and the libraries themselves stay.
void releaseContextResources(Context& context);

}  // namespace rocuda::core
