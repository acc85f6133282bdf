// Kernel launch: validation of the configuration, packing of the arguments (captured at launch
// time, as CUDA does), and queueing on a stream.
#pragma once

#include <array>
#include <cstdint>

#include "support/result.h"

namespace rocuda::core {

class Kernel;
class Stream;

struct LaunchRequest {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  void** kernelParams = nullptr;  // one pointer per parameter
  // The `extra` form: a packed buffer already in the kernel's layout, and its size.
  const void* argumentBuffer = nullptr;
  size_t argumentBufferSize = 0;
};

// InvalidConfiguration (bad dimensions, too many threads, shared memory over the limit),
// InvalidValue (missing arguments), or the context's sticky error.
Status launchKernel(Kernel& kernel, Stream& stream, const LaunchRequest& request);

}  // namespace rocuda::core
