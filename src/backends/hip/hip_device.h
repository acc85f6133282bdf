// The DeviceBackend of one AMD GPU (internal to backends/hip).
#pragma once

#include <memory>

#include "backends/device_backend.h"
#include "backends/hip/hip_api.h"

namespace rocuda::backends::hip {

std::unique_ptr<DeviceBackend> createHipDevice(std::shared_ptr<HipLibrary> library, int ordinal,
                                               DeviceDescription description);

}  // namespace rocuda::backends::hip
