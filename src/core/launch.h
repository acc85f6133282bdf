// Kernel launch: validation of the configuration, packing of the arguments (captured at launch
// time, as CUDA does), and queueing on a stream.
#pragma once

#include <array>
#include <cstddef>
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
  // cuLaunchCooperativeKernel / CU_LAUNCH_ATTRIBUTE_COOPERATIVE: every block resident at once.
  bool cooperative = false;
};

// InvalidConfiguration (bad dimensions, too many threads, shared memory over the limit),
// InvalidValue (missing arguments), NotSupported (a cooperative launch on a device without
// them), CooperativeLaunchTooLarge (more blocks than maxActiveBlocksPerMultiprocessor times the
// multiprocessors), or the context's sticky error.
Status launchKernel(Kernel& kernel, Stream& stream, const LaunchRequest& request);

// Blocks of `blockSize` threads with `dynamicSharedBytes` of dynamic shared memory that one
// multiprocessor of the kernel's device holds at once (limited by threads, blocks and shared
// memory; 0 when such a block cannot run). InvalidValue for a non-positive block size.
Result<int> maxActiveBlocksPerMultiprocessor(Kernel& kernel, int blockSize,
                                             size_t dynamicSharedBytes);

}  // namespace rocuda::core
