// The CPU device's texture sampler and surface access: the device library's (device_library/
// texture_sampler.h), registered as runtime functions of translated kernels.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device_library/texture_sampler.h"

namespace rocuda::backends::cpu {

// The runtime's symbols, for deviceRuntimeSymbols().
std::vector<std::pair<std::string, void*>> textureRuntimeSymbols();

}  // namespace rocuda::backends::cpu
