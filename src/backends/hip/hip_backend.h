// The AMD GPU backend: devices found through AMD's HIP runtime, loaded at run time. Without
// ROCm or without an AMD GPU, discovery finds nothing and says why; the CPU device serves.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/device_backend.h"

namespace rocuda::backends {

struct HipDiscovery {
  std::vector<std::unique_ptr<DeviceBackend>> devices;
  // Why no AMD device is available (library not found with the paths tried, a missing HIP
  // function, HIP's error, ROCUDA_DEVICES excluding it); empty when devices were found.
  std::string unavailableReason;
};

// Load HIP (from hip::hipLibraryCandidates()), initialise it and describe every device.
// Honours ROCUDA_DEVICES: a list without "hip" skips HIP entirely. Never throws or aborts.
HipDiscovery discoverHipDevices();
// The same with an explicit list of library paths (tests, tools).
HipDiscovery discoverHipDevices(const std::vector<std::string>& libraryCandidates);

namespace hip {

constexpr int kNotReported = -1;

// What HIP reports for one device, before any interpretation: the inputs of describeHipDevice.
// Attributes HIP did not report (an older runtime, an error) stay kNotReported.
struct HipRawDevice {
  int ordinal = 0;
  std::string name;         // hipDeviceGetName
  std::string gcnArchName;  // hipDeviceProp_t::gcnArchName, e.g. "gfx90a:sramecc+:xnack-"
  std::string pciBusId;     // hipDeviceGetPCIBusId, "0000:03:00.0"
  bool hasUuid = false;
  std::array<uint8_t, 16> uuid{};                  // hipDeviceGetUuid
  uint64_t totalMemory = 0;                        // hipDeviceTotalMem
  int multiprocessorCount = kNotReported;          // CUs; WGPs on RDNA (HIP runs it in WGP mode)
  int physicalMultiprocessorCount = kNotReported;  // CUs
  int clockRateKHz = kNotReported;
  int memoryClockRateKHz = kNotReported;
  int memoryBusWidthBits = kNotReported;
  int l2CacheBytes = kNotReported;
  int warpSize = kNotReported;  // the wavefront size: 32 (RDNA) or 64 (GCN/CDNA)
  int maxThreadsPerBlock = kNotReported;
  std::array<int, 3> maxBlockDim{kNotReported, kNotReported, kNotReported};
  std::array<int, 3> maxGridDim{kNotReported, kNotReported, kNotReported};
  int maxSharedMemoryPerBlock = kNotReported;  // LDS a workgroup can use
  int sharedMemPerBlockOptin = kNotReported;
  int maxSharedMemoryPerMultiprocessor = kNotReported;
  int registersPerBlock = kNotReported;
  int registersPerMultiprocessor = kNotReported;
  int maxThreadsPerMultiprocessor = kNotReported;
  int maxBlocksPerMultiprocessor = kNotReported;
  int totalConstantMemory = kNotReported;
  int pciDomain = kNotReported, pciBus = kNotReported, pciDevice = kNotReported;
  int integrated = kNotReported;
  int canMapHostMemory = kNotReported;
  int managedMemory = kNotReported;
  int concurrentKernels = kNotReported;
  int asyncEngineCount = kNotReported;
  int pageableMemoryAccess = kNotReported;
  int hostNativeAtomics = kNotReported;
  int cooperativeLaunch = kNotReported;
  // hipDeviceGetStreamPriorityRange: HIP's numbering, lower is greater as in CUDA's (ROCm 5 and
  // later report [1, -1]); the values are meaningful only when reported.
  bool hasStreamPriorityRange = false;
  int leastStreamPriority = 0, greatestStreamPriority = 0;
};

// The HIP priority CUDA's default priority 0 maps to: HIP's default, 0, where the device's
// range holds it, else its least.
inline int defaultStreamPriority(const HipRawDevice& raw) {
  if (!raw.hasStreamPriorityRange) return 0;
  return raw.greatestStreamPriority <= 0 && 0 <= raw.leastStreamPriority ? 0
                                                                         : raw.leastStreamPriority;
}

// The pure mapping from HIP's values to the backend-neutral description (CUDA's view of the
// device): limits clamped to what CUDA programs may assume, warp size 32 everywhere.
DeviceDescription describeHipDevice(const HipRawDevice& raw, int computeCapabilityMajor,
                                    int computeCapabilityMinor);

// "gfx90a:sramecc+:xnack-" -> "gfx90a"; "" when the name is not a gfx target.
std::string processorOf(std::string_view gcnArchName);
// The native wavefront size of a processor: 64 for gfx9 (GCN5/CDNA), 32 for gfx10-12 (RDNA
// compiled in wave32); 0 when unknown.
int nativeWavefrontSize(std::string_view processor);
// Whether Rocuda's code generation targets this processor (docs/amd.md lists them).
bool isSupportedProcessor(std::string_view processor);
// "0000:03:00.0" -> domain 0, bus 3, device 0; false when malformed.
bool parsePciBusId(std::string_view text, int* domain, int* bus, int* device);
// Whether ROCUDA_DEVICES (unset = every backend) lets the HIP backend in.
bool hipBackendEnabled(std::string* reason);

}  // namespace hip
}  // namespace rocuda::backends
