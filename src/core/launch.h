// Kernel launch: validation of the configuration, packing of the arguments (captured at launch
// time, as CUDA does), and queueing on a stream.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "backends/device_backend.h"
#include "support/result.h"

namespace rocuda::core {

class DeviceUpdatableKernel;
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
  // CU_LAUNCH_ATTRIBUTE_PRIORITY; the stream's priority when absent. Clamped to the device's range.
  std::optional<int> priority;
  bool explicitCluster = false;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION was given
  // A device-updatable node's launch (recorded into a capture): the node takes this request's
  // parameters and grid, and each run launches with what the node holds then.
  std::shared_ptr<DeviceUpdatableKernel> deviceUpdatable;
};

// InvalidConfiguration (bad dimensions, too many threads, shared memory over the limit),
// InvalidValue (missing arguments), NotSupported (a cooperative launch on a device without
// them), CooperativeLaunchTooLarge (more blocks than maxActiveBlocksPerMultiprocessor times the
// multiprocessors), or the context's sticky error.
Status launchKernel(Kernel& kernel, Stream& stream, const LaunchRequest& request);

// What of a kernel's compiled code limits how many of its blocks a multiprocessor holds.
struct KernelFootprint {
  int maxThreadsPerBlock = 0;
  uint64_t staticSharedBytes = 0;
  int registersPerThread = 0;  // 0: the device has no register file to share (the CPU)
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: a block asking for more cannot launch.
  uint64_t maxDynamicSharedBytes = UINT64_MAX;
};

// Shared memory the driver reserves for every block besides the kernel's own (1 KB from compute
// capability 8.0, where %reserved_smem_offset_* name it): it counts against a multiprocessor's
// shared memory but not against the per-block limit, as in NVIDIA's occupancy calculator.
uint64_t reservedSharedBytesPerBlock(const backends::DeviceDescription& device);

// Blocks of `blockSize` (> 0) threads with `dynamicSharedBytes` of dynamic shared memory that one
// multiprocessor of `device` holds at once: limited by its threads, blocks, shared memory and
// registers (each block's threads rounded up to whole warps); 0 when such a block cannot run.
int blocksPerMultiprocessor(const backends::DeviceDescription& device,
                            const KernelFootprint& kernel, int blockSize,
                            size_t dynamicSharedBytes);

// The same for `kernel` on its device, from its compiled code's resources. InvalidValue for a
// non-positive block size.
Result<int> maxActiveBlocksPerMultiprocessor(Kernel& kernel, int blockSize,
                                             size_t dynamicSharedBytes);

}  // namespace rocuda::core
