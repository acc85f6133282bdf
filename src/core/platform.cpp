#include "core/platform.h"

#include <algorithm>
#include <sstream>

#if !defined(_WIN32)
#include <pthread.h>
#endif

#include "backends/hip/hip_backend.h"
#include "core/array.h"
#include "core/context.h"
#include "core/coredump.h"
#include "core/memory.h"
#include "core/memory_pool.h"
#include "core/module.h"
#include "core/texture.h"
#include "support/env.h"
#include "support/log.h"

namespace rocuda::core {

Device::Device(int ordinal, std::unique_ptr<backends::DeviceBackend> backend)
    : ordinal_(ordinal), backend_(std::move(backend)) {}

Device::~Device() = default;

void Device::addMemPool(MemoryPool* pool) {
  std::lock_guard lock(poolsMutex_);
  pools_.push_back(pool);
}

void Device::removeMemPool(MemoryPool* pool) {
  {
    std::lock_guard lock(primaryMutex_);
    if (currentPool_ == pool) currentPool_ = nullptr;  // a destroyed pool is current nowhere
  }
  std::lock_guard lock(poolsMutex_);
  pools_.erase(std::remove(pools_.begin(), pools_.end(), pool), pools_.end());
}

void Device::trimMemPools() {
  std::lock_guard lock(poolsMutex_);
  for (MemoryPool* pool : pools_) pool->trimToThreshold();
}

void Device::emptyMemPools() {
  std::lock_guard lock(poolsMutex_);
  for (MemoryPool* pool : pools_) pool->trimTo(0);
}

MemoryPool& Device::defaultMemPool() {
  std::lock_guard lock(primaryMutex_);
  if (!defaultPool_) defaultPool_ = std::make_unique<MemoryPool>(*this, /*isDefault=*/true, 0);
  return *defaultPool_;
}

MemoryPool& Device::currentMemPool() {
  {
    std::lock_guard lock(primaryMutex_);
    if (currentPool_ != nullptr) return *currentPool_;
  }
  return defaultMemPool();
}

void Device::setCurrentMemPool(MemoryPool* pool) {
  std::lock_guard lock(primaryMutex_);
  currentPool_ = pool;
}

MemoryPool& Platform::defaultPool(PoolMemory memory, MemoryLocation location) {
  if (memory == PoolMemory::Device) return devices_.at(location.id)->defaultMemPool();
  std::lock_guard lock(poolsMutex_);
  std::unique_ptr<MemoryPool>& pool = defaultPools_[{memory, location.type, location.id}];
  if (!pool)
    pool = std::make_unique<MemoryPool>(*devices_.at(0), /*isDefault=*/true, 0, memory, location);
  return *pool;
}

MemoryPool& Platform::currentPool(PoolMemory memory, MemoryLocation location) {
  if (memory == PoolMemory::Device) return devices_.at(location.id)->currentMemPool();
  {
    std::lock_guard lock(poolsMutex_);
    auto current = currentPools_.find({memory, location.type, location.id});
    if (current != currentPools_.end()) return *current->second;
  }
  return defaultPool(memory, location);
}

void Platform::setCurrentPool(PoolMemory memory, MemoryLocation location, MemoryPool* pool) {
  if (memory == PoolMemory::Device) return devices_.at(location.id)->setCurrentMemPool(pool);
  std::lock_guard lock(poolsMutex_);
  if (pool == nullptr)
    currentPools_.erase({memory, location.type, location.id});
  else
    currentPools_[{memory, location.type, location.id}] = pool;
}

void Platform::forgetCurrentPool(MemoryPool* pool) {
  std::lock_guard lock(poolsMutex_);
  std::erase_if(currentPools_, [&](const auto& entry) { return entry.second == pool; });
}

Context& Device::primaryContext() {
  std::lock_guard lock(primaryMutex_);
  if (!primary_) primary_ = std::make_unique<Context>(*this, primaryFlags_, /*primary=*/true);
  return *primary_;
}

Status Device::retainPrimary(Context** out) {
  Context& context = primaryContext();
  std::lock_guard lock(primaryMutex_);
  ++primaryRefs_;
  *out = &context;
  return Status::success();
}

Status Device::releasePrimary() {
  std::lock_guard lock(primaryMutex_);
  if (primaryRefs_ == 0)
    return makeError(ErrorCode::InvalidContext, "primary context released more often than retained");
  // CUDA destroys the primary context when the last reference goes; keeping the object alive
  // (idle) keeps handles cudart cached valid, which is what applications observe as harmless.
  --primaryRefs_;
  return Status::success();
}

Status Device::resetPrimary() {
  Context* context = nullptr;
  {
    std::lock_guard lock(primaryMutex_);
    context = primary_.get();
  }
  if (context == nullptr) return Status::success();
  // NVIDIA's reset destroys the context's work queues, modules and allocations and clears its
  // sticky error (Context::reset): the reset itself succeeds.
  releaseContextResources(*context);
  Module::reinitializeLibraryGlobals(*context);
  emptyMemPools();
  return Status::success();
}

void releaseContextResources(Context& context) {
  context.reset();
  Coredumps::instance().forget(context);  // its own core dump settings
  Module::unloadContextModules(context);
  destroyContextTextures(context);  // before the arrays they may read
  destroyContextArrays(context);
  releaseContextMemory(context);
}

unsigned Device::primaryFlags() const {
  std::lock_guard lock(primaryMutex_);
  return primaryFlags_;
}

Status Device::setPrimaryFlags(unsigned flags) {
  std::lock_guard lock(primaryMutex_);
  primaryFlags_ = flags;
  if (primary_) primary_->setFlags(flags);
  return Status::success();
}

bool Device::primaryActive() const {
  std::lock_guard lock(primaryMutex_);
  return primaryRefs_ > 0;
}

Platform& Platform::instance() {
  static Platform* platform = [] {
    auto* created = new Platform();  // never destroyed: cudart calls us from atexit
#if !defined(_WIN32)
    pthread_atfork(nullptr, nullptr, [] {
      Platform& p = instance();
      if (p.initialized_) p.forkedAfterInitialize_ = true;
    });
#endif
    return created;
  }();
  return *platform;
}

namespace {

// ROCUDA_DEVICES: backends in order. Unknown names are reported and skipped.
std::vector<std::string> configuredBackends() {
  std::string value = env::get("ROCUDA_DEVICES").value_or("cpu");
  std::vector<std::string> backends;
  std::stringstream list(value);
  for (std::string name; std::getline(list, name, ',');) {
    if (name == "cpu" || name == "hip")
      backends.push_back(name);
    else if (!name.empty())
      log::warning("ROCUDA_DEVICES: unknown backend '" + name + "' ignored (known: hip, cpu)");
  }
  if (backends.empty()) {
    log::warning("ROCUDA_DEVICES='" + value + "' names no backend; using the CPU device");
    backends.push_back("cpu");
  }
  return backends;
}

}  // namespace

Status Platform::initialize() {
  if (forkedAfterInitialize_)
    return makeError(ErrorCode::NotInitialized,
                     "CUDA was initialized before this process was forked: a child of fork() "
                     "cannot use its parent's devices");
  std::call_once(once_, [this] {
    std::vector<std::string> backends = configuredBackends();
    if (std::find(backends.begin(), backends.end(), "hip") == backends.end())
      log::info("AMD GPUs not used: ROCUDA_DEVICES does not include 'hip'");
    int cpuDevices = 0;
    for (const std::string& backend : backends) {
      if (backend == "hip") {
        backends::HipDiscovery hip = backends::discoverHipDevices();  // logs why none, if so
        for (auto& device : hip.devices)
          devices_.push_back(std::make_unique<Device>(deviceCount(), std::move(device)));
      } else {
        devices_.push_back(
            std::make_unique<Device>(deviceCount(), backends::createCpuBackend(cpuDevices++)));
      }
    }
    for (const auto& device : devices_) {
      const auto& d = device->description();
      log::info("device " + std::to_string(device->ordinal()) + ": " + d.name + " (" +
                d.backendName + ", " + d.nativeTarget + ")");
    }
    initStatus_ = devices_.empty() ? Status(makeError(ErrorCode::NoDevice, "no device available"))
                                   : Status::success();
    initialized_ = true;
  });
  return initStatus_;
}

bool Platform::initialized() const { return initialized_ && !forkedAfterInitialize_; }

Device* Platform::device(int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount()) return nullptr;
  return devices_[static_cast<size_t>(ordinal)].get();
}

}  // namespace rocuda::core
