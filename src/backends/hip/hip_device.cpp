// One AMD GPU as a Rocuda device: memory and copies through HIP, each call synchronous on the
// calling thread (HIP's current device is per thread, so every call selects it first).
#include "backends/hip/hip_device.h"

#include <algorithm>

#include "support/log.h"

namespace rocuda::backends::hip {
namespace {

class HipDevice final : public DeviceBackend {
 public:
  HipDevice(std::shared_ptr<HipLibrary> library, int ordinal, DeviceDescription description)
      : library_(std::move(library)),
        api_(library_->api()),
        ordinal_(ordinal),
        description_(std::move(description)) {}

  const DeviceDescription& description() const override { return description_; }

  Result<void*> allocateDevice(size_t bytes) override {
    ROCUDA_TRY(select());
    void* pointer = nullptr;
    // hipMalloc(0) returns a null pointer; the core expects a distinct allocation.
    hipError_t status = api_.hipMalloc(&pointer, std::max<size_t>(bytes, 1));
    if (status != hipSuccess)
      return library_->error(status, "hipMalloc of " + std::to_string(bytes) + " bytes");
    return pointer;
  }

  void freeDevice(void* pointer) override {
    if (pointer == nullptr || !select().ok()) return;
    hipError_t status = api_.hipFree(pointer);
    if (status != hipSuccess) log::warning(library_->error(status, "hipFree").message);
  }

  Result<void*> allocateHost(size_t bytes) override {
    ROCUDA_TRY(select());
    void* pointer = nullptr;
    hipError_t status =
        api_.hipHostMalloc(&pointer, std::max<size_t>(bytes, 1), hipHostMallocDefault);
    if (status != hipSuccess)
      return library_->error(status, "hipHostMalloc of " + std::to_string(bytes) + " bytes");
    return pointer;
  }

  void freeHost(void* pointer) override {
    if (pointer == nullptr || !select().ok()) return;
    hipError_t status = api_.hipHostFree(pointer);
    if (status != hipSuccess) log::warning(library_->error(status, "hipHostFree").message);
  }

  uint64_t freeMemory() const override {
    if (!select().ok()) return 0;
    size_t freeBytes = 0, totalBytes = 0;
    if (api_.hipMemGetInfo(&freeBytes, &totalBytes) != hipSuccess) return 0;
    return freeBytes;
  }

  Status copy(void* destination, const void* source, size_t bytes) override {
    if (bytes == 0) return Status::success();
    ROCUDA_TRY(select());
    hipError_t status = api_.hipMemcpy(destination, source, bytes, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "hipMemcpy of " + std::to_string(bytes) + " bytes");
    return synchronize("hipMemcpy");
  }

  Status fill(void* destination, uint32_t value, size_t elementBytes, size_t count) override {
    if (count == 0) return Status::success();
    ROCUDA_TRY(select());
    hipError_t status = hipSuccess;
    switch (elementBytes) {
      case 1:
        status = api_.hipMemsetD8(destination, static_cast<unsigned char>(value), count);
        break;
      case 2:
        status = api_.hipMemsetD16(destination, static_cast<unsigned short>(value), count);
        break;
      case 4:
        status = api_.hipMemsetD32(destination, static_cast<int>(value), count);
        break;
      default:
        return makeError(ErrorCode::InvalidValue,
                         "fill element size " + std::to_string(elementBytes) + " is not 1, 2 or 4");
    }
    if (status != hipSuccess)
      return library_->error(status, "hipMemsetD" + std::to_string(elementBytes * 8));
    return synchronize("hipMemset");
  }

  Status copy2D(void* destination, size_t destinationPitch, const void* source, size_t sourcePitch,
                size_t widthBytes, size_t height) override {
    if (widthBytes == 0 || height == 0) return Status::success();
    ROCUDA_TRY(select());
    hipError_t status = api_.hipMemcpy2D(destination, destinationPitch, source, sourcePitch,
                                         widthBytes, height, hipMemcpyDefault);
    if (status != hipSuccess) return library_->error(status, "hipMemcpy2D");
    return synchronize("hipMemcpy2D");
  }

  Result<std::unique_ptr<LoadedModule>> loadPtx(std::string_view ptx,
                                                std::string_view moduleName) override {
    std::string message = "cannot load PTX module '" + std::string(moduleName) + "' on " +
                          description_.name + " (" + description_.nativeTarget +
                          "): " + kNoAmdCodegenMessage;
    log::warning(message);
    return makeError(ErrorCode::NotSupported, message);
  }

  Status launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) override {
    std::string message = "cannot launch '" + kernel.info().name + "' on " + description_.name +
                          ": " + kNoAmdCodegenMessage;
    log::warning(message);
    return makeError(ErrorCode::NotSupported, message);
  }

 private:
  Status select() const {
    hipError_t status = api_.hipSetDevice(ordinal_);
    if (status != hipSuccess)
      return library_->error(status, "hipSetDevice(" + std::to_string(ordinal_) + ")");
    return Status::success();
  }

  // Copies between device buffers and memsets may return before the GPU finished; the backend
  // contract is synchronous.
  Status synchronize(std::string_view operation) const {
    hipError_t status = api_.hipDeviceSynchronize();
    if (status != hipSuccess)
      return library_->error(status, "hipDeviceSynchronize after " + std::string(operation));
    return Status::success();
  }

  std::shared_ptr<HipLibrary> library_;  // keeps the runtime loaded while the device lives
  const HipApi& api_;
  int ordinal_;
  DeviceDescription description_;
};

}  // namespace

std::unique_ptr<DeviceBackend> createHipDevice(std::shared_ptr<HipLibrary> library, int ordinal,
                                               DeviceDescription description) {
  return std::make_unique<HipDevice>(std::move(library), ordinal, std::move(description));
}

}  // namespace rocuda::backends::hip
