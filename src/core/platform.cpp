#include "core/platform.h"

#include "core/context.h"
#include "support/log.h"

namespace rocuda::core {

Device::Device(int ordinal, std::unique_ptr<backends::DeviceBackend> backend)
    : ordinal_(ordinal), backend_(std::move(backend)) {}

Device::~Device() = default;

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
  if (context != nullptr) return context->synchronize();
  return Status::success();
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
  static Platform* platform = new Platform();  // never destroyed: cudart calls us from atexit
  return *platform;
}

Status Platform::initialize() {
  std::call_once(once_, [this] {
    // Backends in preference order. The CPU device is always present; the HIP backend will be
    // placed before it when an AMD GPU is found (ROCUDA_DEVICES will choose).
    devices_.push_back(std::make_unique<Device>(0, backends::createCpuBackend()));
    const auto& description = devices_.back()->description();
    log::info("device 0: " + description.name + " (" + description.backendName + ", " +
              description.nativeTarget + ")");
    initStatus_ = Status::success();
    initialized_ = true;
  });
  return initStatus_;
}

bool Platform::initialized() const { return initialized_; }

Device* Platform::device(int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount()) return nullptr;
  return devices_[static_cast<size_t>(ordinal)].get();
}

}  // namespace rocuda::core
