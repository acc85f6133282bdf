// The CPU device's share of the device library (src/device_library): the texture sampler,
// surface access and tensor copies, registered as runtime functions of translated kernels.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device_library/tensor_copies.h"
#include "device_library/texture_sampler.h"

namespace rocuda::backends::cpu {

// The runtime's symbols, for deviceRuntimeSymbols().
std::vector<std::pair<std::string, void*>> deviceLibrarySymbols();

}  // namespace rocuda::backends::cpu
