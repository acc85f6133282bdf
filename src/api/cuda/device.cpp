// Devices: enumeration, names, identifiers, and every CUdevice_attribute answered from the
// backend's DeviceDescription. Features Rocuda does not implement are reported as absent (0), so
// that cudart and applications never take a path that would fail later.
#include <cstdio>
#include <cstring>
#include <optional>

#include "api/cuda/boundary.h"
#include "core/launch.h"
#include "core/platform.h"
#include "core/texture.h"
#include "core/virtual_memory.h"

namespace rocuda::api {
namespace {

using namespace cuda;
using backends::DeviceDescription;

// Sizes, limits and identifiers (nullopt: not one of these).
std::optional<int> limitAttribute(const DeviceDescription& d, int attribute) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return d.maxThreadsPerBlock;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      return d.maxBlockDim[0];
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return d.maxBlockDim[1];
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return d.maxBlockDim[2];
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return d.maxGridDim[0];
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      return d.maxGridDim[1];
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return d.maxGridDim[2];
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return d.sharedMemPerBlock;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      return d.totalConstantMemory;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return d.warpSize;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
      return static_cast<int>(api::kMaxPitch);
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      return d.registersPerBlock;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return d.clockRateKHz;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
      return static_cast<int>(core::kTextureAlignment);
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
      return d.asyncEngineCount > 0 ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return d.multiprocessorCount;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
      return 0;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      return d.integrated ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      return d.canMapHostMemory ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
      return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      return d.concurrentKernels ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return d.pciBus;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      return d.pciDevice;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return d.memoryClockRateKHz;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return d.memoryBusWidthBits;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return d.l2CacheBytes;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return d.maxThreadsPerMultiprocessor;
    default:
      return std::nullopt;
  }
}

}  // namespace

bool concurrentManagedAccess(const DeviceDescription& d) {
  return d.pageableMemoryAccess && d.managedMemory;
}

namespace {

// Capabilities, and what remains of the list.
std::optional<int> capabilityAttribute(const DeviceDescription& d, int attribute) {
  const bool cpuLike = d.pageableMemoryAccess;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      return d.asyncEngineCount;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      return 1;  // one process-wide address table
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      return d.pciDomain;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
      return static_cast<int>(core::kTexturePitchAlignment);
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return d.computeCapabilityMajor;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return d.computeCapabilityMinor;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:  // scheduled by priority
      return d.greatestStreamPriority < 0 ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      return d.sharedMemPerMultiprocessor;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      return d.registersPerMultiprocessor;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      return d.managedMemory ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
      return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
      return d.hostNativeAtomics ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
      return cpuLike ? 2 : 32;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
      return cpuLike ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      return concurrentManagedAccess(d) ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
      return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
      return cpuLike ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return d.sharedMemPerBlockOptin;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
      return cpuLike ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
      return cpuLike || d.integrated ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      return d.maxBlocksPerMultiprocessor;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:  // every block of the grid resident at once
      return d.cooperativeLaunch ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
      return 0;  // cuLaunchCooperativeKernelMultiDevice is gone from CUDA 13's driver API
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:  // stream-ordered allocation (core)
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:  // pools on CU_MEM_LOCATION_TYPE_HOST
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:  // and on one of its NUMA nodes
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:  // cuMemHostRegister (core)
      return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:  // interprocess events (core/ipc.cpp)
      return d.sharesMemoryBetweenProcesses || d.ownIpcMemoryHandles ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:  // shareable pools (core/ipc.cpp)
      return d.sharesMemoryBetweenProcesses ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:  // core/virtual_memory.cpp
      return d.virtualMemoryManagement ? 1 : 0;
    // Host-located physical memory (cuMemCreate on HOST / HOST_NUMA) is the CPU device's:
    // other devices cannot reach its pages.
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      return core::makesHostMemory(d) ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:  // cuMemExport...
      return d.virtualMemoryManagement && d.physicalMemoryAsFileDescriptors ? 1 : 0;
    // sm_80's reserved shared memory (%reserved_smem_offset_*): a kernel that reads those
    // registers has the region in its window (compiler/shared_layout.h).
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      return static_cast<int>(core::reservedSharedBytesPerBlock(d));
    // Tiled tensor maps (api/cuda/tensor_map.cpp), copied by the device library on every device.
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID:
      return -1;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
      return d.hostNumaNode;
    // Stream memory operations (cuStreamWaitValue*/WriteValue*/BatchMemOp) work on every device.
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
      return 1;
    default:
      break;
  }
  // Everything else names a feature Rocuda does not offer (clusters, read-only host
  // registration, GPUDirect RDMA...): absent.
  if (attribute >= 1 && attribute < CU_DEVICE_ATTRIBUTE_MAX) return 0;
  return std::nullopt;
}

// Texture and surface limits: those of the CPU device's arrays (core/array.cpp) and sampler.
// Devices that cannot sample yet (AMD GPUs, until their code generator lowers textures) report
// none.
std::optional<int> textureAttribute(const DeviceDescription& d, int attribute) {
  constexpr int kExtent = core::kMaxArrayExtent, kLayers = core::kMaxArrayLayers;
  const bool samples = d.pageableMemoryAccess;  // the CPU device
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH:
      return samples ? kExtent : 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS:
      return samples ? kLayers : 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS:
      return samples ? static_cast<int>(core::kMaxCubemapLayeredDepth) : 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH:
      return samples ? static_cast<int>(core::kMaxLinearTexels) : 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
      return samples ? static_cast<int>(core::kMaxPitch2DExtent) : 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH:
      return samples ? static_cast<int>(core::kMaxPitch2DPitch) : 0;
    default:
      return std::nullopt;
  }
}

// The value of one attribute, or nullopt for a value outside CUdevice_attribute.
std::optional<int> attributeValue(const DeviceDescription& d, int attribute) {
  if (std::optional<int> value = limitAttribute(d, attribute)) return value;
  if (std::optional<int> value = textureAttribute(d, attribute)) return value;
  return capabilityAttribute(d, attribute);
}

Outcome withDevice(CUdevice dev, const auto& body) {
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  return body(**device);
}

// "domain:bus:device.function", "domain:bus:device" or "bus:device.function", all hexadecimal.
std::optional<std::array<unsigned, 3>> parsePciBusId(const char* text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int used = 0;
  if (std::sscanf(text, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &used) == 4 &&
      text[used] == '\0')
    return std::array<unsigned, 3>{domain, bus, device};
  used = 0;
  if (std::sscanf(text, "%x:%x:%x%n", &domain, &bus, &device, &used) == 3 && text[used] == '\0')
    return std::array<unsigned, 3>{domain, bus, device};
  used = 0;
  if (std::sscanf(text, "%x:%x.%x%n", &bus, &device, &function, &used) == 3 && text[used] == '\0')
    return std::array<unsigned, 3>{0u, bus, device};
  return std::nullopt;
}

// What the device and the host can do atomically to the same memory. On a device with native
// host atomics (the CPU device: the host and the device are the same processor), every CUDA
// atomic operation on 32- and 64-bit words; elsewhere none.
unsigned atomicCapabilities(CUatomicOperation operation) {
  constexpr unsigned kSizes = CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
  constexpr unsigned kInteger = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED;
  switch (operation) {
    case CU_ATOMIC_OPERATION_INTEGER_ADD:
    case CU_ATOMIC_OPERATION_INTEGER_MIN:
    case CU_ATOMIC_OPERATION_INTEGER_MAX:
    case CU_ATOMIC_OPERATION_AND:
    case CU_ATOMIC_OPERATION_OR:
    case CU_ATOMIC_OPERATION_XOR:
      return kInteger | CU_ATOMIC_CAPABILITY_REDUCTION | kSizes;
    case CU_ATOMIC_OPERATION_INTEGER_INCREMENT:
    case CU_ATOMIC_OPERATION_INTEGER_DECREMENT:
      return CU_ATOMIC_CAPABILITY_UNSIGNED | CU_ATOMIC_CAPABILITY_REDUCTION |
             CU_ATOMIC_CAPABILITY_SCALAR_32;
    case CU_ATOMIC_OPERATION_EXCHANGE:
    case CU_ATOMIC_OPERATION_CAS:
      return kInteger | kSizes;
    case CU_ATOMIC_OPERATION_FLOAT_ADD:
    case CU_ATOMIC_OPERATION_FLOAT_MIN:
    case CU_ATOMIC_OPERATION_FLOAT_MAX:
      return CU_ATOMIC_CAPABILITY_REDUCTION | kSizes;
    default:
      return 0;
  }
}

Outcome checkAtomicQuery(unsigned* capabilities, const CUatomicOperation* operations,
                         unsigned count) {
  if (capabilities == nullptr || operations == nullptr || count == 0)
    return invalidValue("NULL array or count 0");
  for (unsigned i = 0; i < count; ++i)
    if (operations[i] < CU_ATOMIC_OPERATION_INTEGER_ADD || operations[i] >= CU_ATOMIC_OPERATION_MAX)
      return invalidValue("unknown atomic operation");
  return {};
}

bool isArrayFormat(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_FLOAT:
      return true;
    default:
      return false;
  }
}

Outcome deviceUuid(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return invalidValue("uuid is NULL");
  return withDevice(dev, [&](core::Device& device) -> Outcome {
    std::memcpy(uuid->bytes, device.description().uuid.data(), sizeof uuid->bytes);
    return {};
  });
}

}  // namespace

Outcome deviceAttributeOf(int* value, int attribute, int device) {
  Result<core::Device*> found = lookupDevice(device);
  if (!found) return found.error();
  std::optional<int> answer = attributeValue((*found)->description(), attribute);
  if (!answer) return invalidValue("unknown device attribute");
  *value = *answer;
  return {};
}
}  // namespace rocuda::api

namespace rocuda::cuda {
namespace {
// What kernels of device `from` can do with the memory of device `to` (both valid ordinals).
backends::DeviceBackend::PeerLink peerLinkOf(CUdevice from, CUdevice to) {
  Result<core::Device*> source = api::lookupDevice(from);
  Result<core::Device*> destination = api::lookupDevice(to);
  if (!source || !destination || *source == *destination) return {};
  return (*source)->backend().peerLink((*destination)->backend());
}
}  // namespace

extern "C" {

ROCUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return ROCUDA_API((device, ordinal), [&]() -> api::Outcome {
    if (device == nullptr) return api::invalidValue("device is NULL");
    Result<core::Device*> found = api::lookupDevice(ordinal);
    if (!found) return found.error();
    *device = ordinal;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
  return ROCUDA_API((count), [&]() -> api::Outcome {
    if (count == nullptr) return api::invalidValue("count is NULL");
    *count = core::Platform::instance().deviceCount();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return ROCUDA_API((name, len, dev), [&]() -> api::Outcome {
    if (name == nullptr || len <= 0) return api::invalidValue("name is NULL or len <= 0");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      const std::string& text = device.description().name;
      size_t n = std::min(text.size(), static_cast<size_t>(len) - 1);
      std::memcpy(name, text.data(), n);
      name[n] = '\0';
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return ROCUDA_API((bytes, dev), [&]() -> api::Outcome {
    if (bytes == nullptr) return api::invalidValue("bytes is NULL");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      *bytes = device.description().totalMemory;
      return {};
    });
  });
}

// Execution affinity (limiting a context to some SMs, with MPS) exists on no Rocuda device.
ROCUDA_EXPORT CUresult cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type,
                                                      CUdevice dev) {
  return ROCUDA_API((pi, type, dev), [&]() -> api::Outcome {
    if (pi == nullptr) return api::invalidValue("pi is NULL");
    if (type < CU_EXEC_AFFINITY_TYPE_SM_COUNT || type >= CU_EXEC_AFFINITY_TYPE_MAX)
      return api::invalidValue("unknown affinity type");
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    *pi = 0;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  return ROCUDA_API((pi, attrib, dev), [&]() -> api::Outcome {
    if (pi == nullptr) return api::invalidValue("pi is NULL");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      std::optional<int> value = api::attributeValue(device.description(), attrib);
      if (!value) return api::invalidValue("unknown device attribute");
      *pi = *value;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return ROCUDA_API((uuid, dev), [&] { return api::deviceUuid(uuid, dev); });
}

// The same answer: Rocuda has no MIG instances whose UUIDs would differ.
ROCUDA_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return ROCUDA_API((uuid, dev), [&] { return api::deviceUuid(uuid, dev); });
}

ROCUDA_EXPORT CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  return ROCUDA_API((pciBusId, len, dev), [&]() -> api::Outcome {
    if (pciBusId == nullptr || len <= 0) return api::invalidValue("pciBusId is NULL");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      const auto& d = device.description();
      char text[32];
      std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", d.pciDomain, d.pciBus, d.pciDevice);
      size_t n = std::min(std::strlen(text), static_cast<size_t>(len) - 1);
      std::memcpy(pciBusId, text, n);
      pciBusId[n] = '\0';
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  return ROCUDA_API((dev, pciBusId), [&]() -> api::Outcome {
    if (dev == nullptr || pciBusId == nullptr) return api::invalidValue("NULL argument");
    auto wanted = api::parsePciBusId(pciBusId);
    if (!wanted) return api::invalidValue("malformed PCI bus id");
    core::Platform& platform = core::Platform::instance();
    for (int i = 0; i < platform.deviceCount(); ++i) {
      const auto& d = platform.device(i)->description();
      if (static_cast<unsigned>(d.pciDomain) == (*wanted)[0] &&
          static_cast<unsigned>(d.pciBus) == (*wanted)[1] &&
          static_cast<unsigned>(d.pciDevice) == (*wanted)[2]) {
        *dev = i;
        return {};
      }
    }
    return {CUDA_ERROR_INVALID_DEVICE, "no device at that PCI address"};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib,
                                               CUdevice srcDevice, CUdevice dstDevice) {
  return ROCUDA_API((value, attrib, srcDevice, dstDevice), [&]() -> api::Outcome {
    if (value == nullptr) return api::invalidValue("value is NULL");
    if (!api::lookupDevice(srcDevice) || !api::lookupDevice(dstDevice) || srcDevice == dstDevice)
      return {CUDA_ERROR_INVALID_DEVICE, "needs two distinct valid devices"};
    if (attrib < CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK ||
        attrib > CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED)
      return api::invalidValue("unknown P2P attribute");
    backends::DeviceBackend::PeerLink link = peerLinkOf(srcDevice, dstDevice);
    switch (attrib) {
      case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
        *value = link.access ? 1 : 0;
        break;
      case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
        *value = link.access && link.nativeAtomics ? 1 : 0;
        break;
      case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
        *value = link.access && link.arrays ? 1 : 0;
        break;
      default:  // the performance rank (one link, rank 0) and partial atomics
        *value = 0;
    }
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  return ROCUDA_API((canAccessPeer, dev, peerDev), [&]() -> api::Outcome {
    if (canAccessPeer == nullptr) return api::invalidValue("canAccessPeer is NULL");
    if (!api::lookupDevice(dev) || !api::lookupDevice(peerDev))
      return {CUDA_ERROR_INVALID_DEVICE, "invalid device"};
    *canAccessPeer = dev != peerDev && peerLinkOf(dev, peerDev).access ? 1 : 0;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  return ROCUDA_API((major, minor, dev), [&]() -> api::Outcome {
    if (major == nullptr || minor == nullptr) return api::invalidValue("NULL argument");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      *major = device.description().computeCapabilityMajor;
      *minor = device.description().computeCapabilityMinor;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  return ROCUDA_API((prop, dev), [&]() -> api::Outcome {
    if (prop == nullptr) return api::invalidValue("prop is NULL");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      const auto& d = device.description();
      *prop = CUdevprop{};
      prop->maxThreadsPerBlock = d.maxThreadsPerBlock;
      for (int i = 0; i < 3; ++i) {
        prop->maxThreadsDim[i] = d.maxBlockDim[i];
        prop->maxGridSize[i] = d.maxGridDim[i];
      }
      prop->sharedMemPerBlock = d.sharedMemPerBlock;
      prop->totalConstantMemory = d.totalConstantMemory;
      prop->SIMDWidth = d.warpSize;
      prop->memPitch = 2147483647;
      prop->regsPerBlock = d.registersPerBlock;
      prop->clockRate = d.clockRateKHz;
      prop->textureAlign = 512;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities,
                                                         const CUatomicOperation* operations,
                                                         unsigned int count, CUdevice dev) {
  return ROCUDA_API((capabilities, operations, count, dev), [&]() -> api::Outcome {
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      api::Outcome checked = api::checkAtomicQuery(capabilities, operations, count);
      if (!checked.ok()) return checked;
      bool native = device.description().hostNativeAtomics;
      for (unsigned i = 0; i < count; ++i)
        capabilities[i] = native ? api::atomicCapabilities(operations[i]) : 0;
      return {};
    });
  });
}

// Over a link with native atomics (two CPU devices), every operation is native.
ROCUDA_EXPORT CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                                        const CUatomicOperation* operations,
                                                        unsigned int count, CUdevice srcDevice,
                                                        CUdevice dstDevice) {
  return ROCUDA_API((capabilities, operations, count, srcDevice, dstDevice), [&]() -> api::Outcome {
    if (!api::lookupDevice(srcDevice) || !api::lookupDevice(dstDevice) || srcDevice == dstDevice)
      return {CUDA_ERROR_INVALID_DEVICE, "needs two distinct valid devices"};
    api::Outcome checked = api::checkAtomicQuery(capabilities, operations, count);
    if (!checked.ok()) return checked;
    backends::DeviceBackend::PeerLink link = peerLinkOf(srcDevice, dstDevice);
    bool native = link.access && link.nativeAtomics;
    for (unsigned i = 0; i < count; ++i)
      capabilities[i] = native ? api::atomicCapabilities(operations[i]) : 0;
    return {};
  });
}

// The same limit as CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, for every element type.
ROCUDA_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                          CUarray_format format,
                                                          unsigned numChannels, CUdevice dev) {
  return ROCUDA_API((maxWidthInElements, format, numChannels, dev), [&]() -> api::Outcome {
    if (maxWidthInElements == nullptr) return api::invalidValue("maxWidthInElements is NULL");
    if (!api::isArrayFormat(format)) return api::invalidValue("unknown format");
    if (numChannels != 1 && numChannels != 2 && numChannels != 4)
      return api::invalidValue("numChannels must be 1, 2 or 4");
    return api::withDevice(dev, [&](core::Device& device) -> api::Outcome {
      std::optional<int> width = api::attributeValue(
          device.description(), CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
      *maxWidthInElements = static_cast<size_t>(width.value_or(0));
      return {};
    });
  });
}

// No device can receive GPUDirect RDMA writes (the attributes say so), so none are pending.
ROCUDA_EXPORT CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                                  CUflushGPUDirectRDMAWritesScope scope) {
  return ROCUDA_API((target, scope), [&]() -> api::Outcome {
    if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX)
      return api::invalidValue("unknown target");
    if (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
        scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)
      return api::invalidValue("unknown scope");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
