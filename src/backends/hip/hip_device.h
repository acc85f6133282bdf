// The DeviceBackend of one AMD GPU (internal to backends/hip).
#pragma once

#include <memory>

#include "backends/device_backend.h"
#include "backends/hip/hip_api.h"

namespace rocuda::backends::hip {

// hipDefaultStreamPriority: the HIP priority CUDA's priority 0 maps to on this device
// (defaultStreamPriority; DeviceDescription::greatestStreamPriority counts HIP's greater ones
// below it).
std::unique_ptr<DeviceBackend> createHipDevice(std::shared_ptr<HipLibrary> library, int ordinal,
                                               DeviceDescription description,
                                               int hipDefaultStreamPriority);

}  // namespace rocuda::backends::hip
