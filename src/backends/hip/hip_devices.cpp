// Finding AMD GPUs: load HIP, initialise it, read each device's attributes, and map them onto
// the backend-neutral description (a pure function, tested with recorded data of real GPUs).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstring>

#include "backends/hip/hip_api.h"
#include "backends/hip/hip_backend.h"
#include "backends/hip/hip_device.h"
#include "compiler/amdgpu/amdgpu_codegen.h"
#include "support/env.h"
#include "support/log.h"
#include "support/platform.h"
#include "support/sha256.h"

namespace rocuda::backends {
namespace hip {
namespace {

int reportedOr(int value, int fallback) { return value > 0 ? value : fallback; }
bool flagOr(int value, bool fallback) { return value >= 0 ? value != 0 : fallback; }

// CUDA's limits: what PTX and CUDA programs assume, whatever larger value HIP reports.
constexpr std::array<int, 3> kCudaMaxBlockDim{1024, 1024, 64};
constexpr std::array<int, 3> kCudaMaxGridDim{INT_MAX, 65535, 65535};
constexpr int kCudaStaticSharedLimit = 48 * 1024;
constexpr int kCudaConstantBank = 64 * 1024;
constexpr int kDefaultLds = 64 * 1024;

// A UUID that stays the same for this board in this slot, for a GPU without one of its own.
std::array<uint8_t, 16> derivedUuid(const HipRawDevice& raw) {
  std::string identity = "hip:" + raw.name + ":" + raw.gcnArchName + ":" +
                         (raw.pciBusId.empty() ? std::to_string(raw.ordinal) : raw.pciBusId);
  auto digest = Sha256::digest(identity.data(), identity.size());
  std::array<uint8_t, 16> uuid{};
  std::copy_n(digest.begin(), 16, uuid.begin());
  return uuid;
}

std::array<uint8_t, 16> stableUuid(const HipRawDevice& raw) {
  bool present = raw.hasUuid && std::any_of(raw.uuid.begin(), raw.uuid.end(),
                                            [](uint8_t byte) { return byte != 0; });
  return present ? raw.uuid : derivedUuid(raw);
}

void describeLimits(const HipRawDevice& raw, DeviceDescription& d) {
  d.maxThreadsPerBlock = std::min(reportedOr(raw.maxThreadsPerBlock, 1024), 1024);
  for (int i = 0; i < 3; ++i) {
    d.maxBlockDim[i] =
        std::min(reportedOr(raw.maxBlockDim[i], kCudaMaxBlockDim[i]), kCudaMaxBlockDim[i]);
    d.maxGridDim[i] =
        std::min(reportedOr(raw.maxGridDim[i], kCudaMaxGridDim[i]), kCudaMaxGridDim[i]);
  }
  // LDS is CUDA's shared memory: the first 48 KiB without opt-in, as on NVIDIA; all of it with.
  int lds = reportedOr(raw.maxSharedMemoryPerBlock, kDefaultLds);
  d.sharedMemPerBlock = std::min(lds, kCudaStaticSharedLimit);
  d.sharedMemPerBlockOptin = std::max(reportedOr(raw.sharedMemPerBlockOptin, lds), lds);
  d.sharedMemPerMultiprocessor =
      std::max(reportedOr(raw.maxSharedMemoryPerMultiprocessor, lds), d.sharedMemPerBlockOptin);
  d.registersPerBlock = reportedOr(raw.registersPerBlock, 65536);
  d.registersPerMultiprocessor = std::max(
      reportedOr(raw.registersPerMultiprocessor, d.registersPerBlock), d.registersPerBlock);
  d.maxThreadsPerMultiprocessor =
      std::max(reportedOr(raw.maxThreadsPerMultiprocessor, 2048), d.maxThreadsPerBlock);
  d.maxBlocksPerMultiprocessor = reportedOr(raw.maxBlocksPerMultiprocessor, 32);
  d.totalConstantMemory =
      std::min(reportedOr(raw.totalConstantMemory, kCudaConstantBank), kCudaConstantBank);
}

}  // namespace

std::string processorOf(std::string_view gcnArchName) {
  std::string_view processor = gcnArchName.substr(0, gcnArchName.find(':'));
  if (processor.size() < 4 || processor.substr(0, 3) != "gfx") return "";
  return std::string(processor);
}

int nativeWavefrontSize(std::string_view processor) {
  if (processor.size() < 4 || processor.substr(0, 3) != "gfx") return 0;
  std::string_view version = processor.substr(3);
  if (version.size() == 3 && version[0] >= '6' && version[0] <= '9') return 64;  // gfx6xx-gfx9xx
  if (version.size() == 4 && version[0] == '1' && version[1] >= '0' && version[1] <= '2')
    return 32;  // gfx10xx-gfx12xx: RDNA, which Rocuda compiles in wave32
  return 0;
}

bool isSupportedProcessor(std::string_view processor) {
  return compiler::amdgpuWavefrontSize(processor) != 0;  // the code generator's own table
}

bool parsePciBusId(std::string_view text, int* domain, int* bus, int* device) {
  unsigned d = 0, b = 0, s = 0, f = 0;
  int consumed = 0;
  std::string copy(text);
  if (std::sscanf(copy.c_str(), "%x:%x:%x.%x%n", &d, &b, &s, &f, &consumed) != 4 ||
      consumed != static_cast<int>(copy.size()) || b > 0xff || s > 0x1f)
    return false;
  *domain = static_cast<int>(d);
  *bus = static_cast<int>(b);
  *device = static_cast<int>(s);
  return true;
}

DeviceDescription describeHipDevice(const HipRawDevice& raw, int computeCapabilityMajor,
                                    int computeCapabilityMinor) {
  DeviceDescription d;
  d.backendName = "hip";
  d.nativeTarget = raw.gcnArchName;
  std::string processor = processorOf(raw.gcnArchName);
  d.name = !raw.name.empty() ? raw.name
                             : "AMD GPU (" + (processor.empty() ? "unknown" : processor) + ")";
  d.uuid = stableUuid(raw);
  d.totalMemory = raw.totalMemory;
  d.computeCapabilityMajor = computeCapabilityMajor;
  d.computeCapabilityMinor = computeCapabilityMinor;
  d.multiprocessorCount =
      reportedOr(raw.multiprocessorCount, reportedOr(raw.physicalMultiprocessorCount, 1));
  d.clockRateKHz = reportedOr(raw.clockRateKHz, 1000000);
  d.memoryClockRateKHz = reportedOr(raw.memoryClockRateKHz, 1000000);
  d.memoryBusWidthBits = reportedOr(raw.memoryBusWidthBits, 64);
  d.l2CacheBytes = std::max(raw.l2CacheBytes, 0);
  // CUDA's warp is 32 lanes on every AMD target: RDNA runs wave32, CDNA's wave64 holds two warps.
  d.warpSize = 32;
  describeLimits(raw, d);
  if (raw.pciBus >= 0 && raw.pciDevice >= 0) {
    d.pciDomain = std::max(raw.pciDomain, 0);
    d.pciBus = raw.pciBus;
    d.pciDevice = raw.pciDevice;
  } else {
    int domain = 0, bus = 0, device = 0;
    if (parsePciBusId(raw.pciBusId, &domain, &bus, &device)) {
      d.pciDomain = domain;
      d.pciBus = bus;
      d.pciDevice = device;
    }
  }
  d.hostNumaNode = platform::pciNumaNode(d.pciDomain, d.pciBus, d.pciDevice);
  d.integrated = flagOr(raw.integrated, false);
  d.canMapHostMemory = flagOr(raw.canMapHostMemory, true);
  d.managedMemory = flagOr(raw.managedMemory, false);
  d.concurrentKernels = flagOr(raw.concurrentKernels, true);
  d.asyncEngineCount = raw.asyncEngineCount >= 0 ? raw.asyncEngineCount : 1;
  d.pageableMemoryAccess = flagOr(raw.pageableMemoryAccess, false);
  d.hostNativeAtomics = flagOr(raw.hostNativeAtomics, false);
  d.cooperativeLaunch = flagOr(raw.cooperativeLaunch, false);
  // CUDA's range ends at 0, its default and least priority, which maps to HIP's default level
  // (hipStreamPriorityDefault's 0, where the range holds it: other processes' default work runs
  // there too); HIP's levels above it are counted down from there (createHipDevice).
  if (raw.hasStreamPriorityRange && raw.greatestStreamPriority < raw.leastStreamPriority)
    d.greatestStreamPriority = raw.greatestStreamPriority - defaultStreamPriority(raw);
  return d;
}

bool hipBackendEnabled(std::string* reason) {
  auto value = env::get("ROCUDA_DEVICES");
  if (!value) return true;
  std::string list = *value;
  for (char& c : list) c = (c == ',' || c == ';') ? ' ' : static_cast<char>(std::tolower(c));
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(' ', start);
    if (end == std::string::npos) end = list.size();
    if (list.compare(start, end - start, "hip") == 0) return true;
    start = end + 1;
  }
  if (reason != nullptr)
    *reason = "ROCUDA_DEVICES=" + *value + " does not include 'hip'; AMD GPUs are not used";
  return false;
}

namespace {

std::string nulTerminated(const char* text, size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

// The target name (and the name HIP's property struct carries): hipDeviceGetAttribute has no
// string attributes from ROCm 6 on, so it comes from the R0000-layout hipGetDeviceProperties,
// the one property function every ROCm 5.0-7.x exports with one layout.
Status readTargetName(const HipLibrary& library, int ordinal, HipRawDevice& raw) {
  const HipApi& api = library.api();
  std::vector<uint64_t> buffer(kDevicePropBufferBytes / sizeof(uint64_t), 0);
  auto* getProperties = api.hipGetDevicePropertiesR0000 != nullptr ? api.hipGetDevicePropertiesR0000
                                                                   : api.hipGetDeviceProperties;
  hipError_t status = getProperties(buffer.data(), ordinal);
  if (status != hipSuccess) return library.error(status, "hipGetDeviceProperties");
  HipDevicePropR0000Prefix properties;
  std::memcpy(&properties, buffer.data(), sizeof properties);
  raw.gcnArchName = nulTerminated(properties.gcnArchName, sizeof properties.gcnArchName);
  if (raw.gcnArchName.empty() && properties.gcnArch > 0)  // runtimes predating gcnArchName
    raw.gcnArchName = "gfx" + std::to_string(properties.gcnArch);
  if (processorOf(raw.gcnArchName).empty())
    return makeError(ErrorCode::NotSupported,
                     "hipGetDeviceProperties gave no gfx target name for device " +
                         std::to_string(ordinal) + " (got '" + raw.gcnArchName +
                         "'; an unexpected hipDeviceProp_t layout?)");
  if (raw.name.empty()) raw.name = nulTerminated(properties.name, sizeof properties.name);
  return Status::success();
}

void readAttributes(const HipApi& api, const HipAttributeTable& table, int ordinal,
                    HipRawDevice& raw) {
  auto get = [&](hipDeviceAttribute_t attribute) {
    int value = 0;
    return api.hipDeviceGetAttribute(&value, attribute, ordinal) == hipSuccess ? value
                                                                               : kNotReported;
  };
  raw.multiprocessorCount = get(table.multiprocessorCount);
  raw.physicalMultiprocessorCount = get(table.physicalMultiProcessorCount);
  raw.clockRateKHz = get(table.clockRate);
  raw.memoryClockRateKHz = get(table.memoryClockRate);
  raw.memoryBusWidthBits = get(table.memoryBusWidth);
  raw.l2CacheBytes = get(table.l2CacheSize);
  raw.warpSize = get(table.warpSize);
  raw.maxThreadsPerBlock = get(table.maxThreadsPerBlock);
  raw.maxBlockDim = {get(table.maxBlockDimX), get(table.maxBlockDimY), get(table.maxBlockDimZ)};
  raw.maxGridDim = {get(table.maxGridDimX), get(table.maxGridDimY), get(table.maxGridDimZ)};
  raw.maxSharedMemoryPerBlock = get(table.maxSharedMemoryPerBlock);
  raw.sharedMemPerBlockOptin = get(table.sharedMemPerBlockOptin);
  raw.maxSharedMemoryPerMultiprocessor = get(table.maxSharedMemoryPerMultiprocessor);
  raw.registersPerBlock = get(table.maxRegistersPerBlock);
  raw.registersPerMultiprocessor = get(table.maxRegistersPerMultiprocessor);
  raw.maxThreadsPerMultiprocessor = get(table.maxThreadsPerMultiProcessor);
  raw.maxBlocksPerMultiprocessor = get(table.maxBlocksPerMultiProcessor);
  raw.totalConstantMemory = get(table.totalConstantMemory);
  raw.pciDomain = get(table.pciDomainId);
  raw.pciBus = get(table.pciBusId);
  raw.pciDevice = get(table.pciDeviceId);
  raw.integrated = get(table.integrated);
  raw.canMapHostMemory = get(table.canMapHostMemory);
  raw.managedMemory = get(table.managedMemory);
  raw.concurrentKernels = get(table.concurrentKernels);
  raw.asyncEngineCount = get(table.asyncEngineCount);
  raw.pageableMemoryAccess = get(table.pageableMemoryAccess);
  raw.hostNativeAtomics = get(table.hostNativeAtomicSupported);
  raw.cooperativeLaunch = get(table.cooperativeLaunch);
}

Result<HipRawDevice> readDevice(const HipLibrary& library, const HipAttributeTable& table,
                                int ordinal) {
  const HipApi& api = library.api();
  HipRawDevice raw;
  raw.ordinal = ordinal;
  char text[256] = {};
  hipError_t status = api.hipDeviceGetName(text, sizeof text, ordinal);
  if (status != hipSuccess) return library.error(status, "hipDeviceGetName");
  raw.name = nulTerminated(text, sizeof text);
  size_t totalMemory = 0;
  status = api.hipDeviceTotalMem(&totalMemory, ordinal);
  if (status != hipSuccess) return library.error(status, "hipDeviceTotalMem");
  raw.totalMemory = totalMemory;
  ROCUDA_TRY(readTargetName(library, ordinal, raw));
  char busId[64] = {};
  if (api.hipDeviceGetPCIBusId(busId, sizeof busId, ordinal) == hipSuccess)
    raw.pciBusId = nulTerminated(busId, sizeof busId);
  hipUUID uuid{};
  if (api.hipDeviceGetUuid != nullptr && api.hipDeviceGetUuid(&uuid, ordinal) == hipSuccess) {
    raw.hasUuid = true;
    std::memcpy(raw.uuid.data(), uuid.bytes, raw.uuid.size());
  }
  readAttributes(api, table, ordinal, raw);
  // The priority range is the current device's.
  int least = 0, greatest = 0;
  if (api.hipSetDevice(ordinal) == hipSuccess &&
      api.hipDeviceGetStreamPriorityRange(&least, &greatest) == hipSuccess) {
    raw.hasStreamPriorityRange = true;
    raw.leastStreamPriority = least;
    raw.greatestStreamPriority = greatest;
  }
  return raw;
}

// hipInit's failure, with hipGetDeviceCount's view of it (ROCm answers a machine without a GPU
// with hipErrorInvalidDevice from hipInit and hipErrorNoDevice from hipGetDeviceCount).
std::string initFailure(const HipLibrary& library, hipError_t initStatus) {
  std::string reason = library.error(initStatus, "hipInit").message;
  int count = 0;
  hipError_t countStatus = library.api().hipGetDeviceCount(&count);
  if (countStatus != hipSuccess) reason += "; hipGetDeviceCount: " + library.describe(countStatus);
  return reason + " (no AMD GPU, or the amdgpu driver's /dev/kfd is not accessible)";
}

// Load, check the version, initialise: the runtime and its attribute numbering, or why not.
Result<const HipAttributeTable*> startRuntime(HipLibrary& library) {
  const HipApi& api = library.api();
  int version = 0;
  hipError_t status = api.hipRuntimeGetVersion(&version);
  if (status != hipSuccess) return library.error(status, "hipRuntimeGetVersion");
  const HipAttributeTable* table = attributeTableForVersion(version);
  if (table == nullptr)
    return makeError(ErrorCode::NotSupported, "the HIP runtime " + library.path() + " is version " +
                                                  hipVersionString(version) +
                                                  "; Rocuda needs ROCm 5.0 or newer");
  library.setRuntimeVersion(version);
  log::info("HIP runtime " + library.path() + ", version " + hipVersionString(version) + " (" +
            table->generation + ")");
  if (hipVersionMajor(version) > 7)
    log::warning("HIP runtime version " + hipVersionString(version) +
                 " is newer than the ROCm 5-7 Rocuda was checked against; assuming ROCm 7's "
                 "device attribute numbering");
  library.markInitialized();  // even a failed hipInit may have registered exit handlers
  status = api.hipInit(0);
  if (status != hipSuccess) return makeError(errorCodeForHip(status), initFailure(library, status));
  return table;
}

}  // namespace
}  // namespace hip

HipDiscovery discoverHipDevices(const std::vector<std::string>& libraryCandidates) {
  using namespace hip;
  HipDiscovery result;
  auto library = HipLibrary::load(libraryCandidates);
  if (!library.ok()) {
    result.unavailableReason = library.error().message;
    return result;
  }
  std::shared_ptr<HipLibrary> runtime = std::move(*library);
  auto table = startRuntime(*runtime);
  if (!table.ok()) {
    result.unavailableReason = table.error().message;
    return result;
  }
  int count = 0;
  hipError_t status = runtime->api().hipGetDeviceCount(&count);
  if (status != hipSuccess) {
    result.unavailableReason = runtime->error(status, "hipGetDeviceCount").message;
    return result;
  }
  if (count <= 0) {
    result.unavailableReason = "HIP found no AMD GPU (hipGetDeviceCount returned 0)";
    return result;
  }
  auto [major, minor] = env::computeCapability();
  std::string skipped;
  std::vector<std::array<uint8_t, 16>> uuids;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto raw = readDevice(*runtime, **table, ordinal);
    if (!raw.ok()) {
      skipped += (skipped.empty() ? "" : "; ") + ("HIP device " + std::to_string(ordinal) + ": ") +
                 raw.error().message;
      log::warning("HIP device " + std::to_string(ordinal) + " skipped: " + raw.error().message);
      continue;
    }
    DeviceDescription description = describeHipDevice(*raw, major, minor);
    // GPUs without a unique id all answer ROCr's placeholder: CUDA's UUIDs must tell them apart.
    if (std::find(uuids.begin(), uuids.end(), description.uuid) != uuids.end()) {
      log::info("HIP device " + std::to_string(ordinal) +
                " shares its UUID with an earlier one (no unique id); using one derived from "
                "its PCI slot");
      description.uuid = derivedUuid(*raw);
    }
    uuids.push_back(description.uuid);
    std::string processor = processorOf(description.nativeTarget);
    log::info("HIP device " + std::to_string(ordinal) + ": " + description.name + " (" +
              description.nativeTarget + ", wave" + std::to_string(raw->warpSize) + ", " +
              std::to_string(description.totalMemory >> 20) + " MiB, " +
              std::to_string(description.multiprocessorCount) + " multiprocessors)" +
              (isSupportedProcessor(processor) ? "" : "; not a target Rocuda compiles for"));
    result.devices.push_back(
        createHipDevice(runtime, ordinal, std::move(description), defaultStreamPriority(*raw)));
  }
  if (result.devices.empty()) result.unavailableReason = "no HIP device could be used: " + skipped;
  return result;
}

HipDiscovery discoverHipDevices() {
  HipDiscovery result;
  if (!hip::hipBackendEnabled(&result.unavailableReason)) {
    log::info(result.unavailableReason);
    return result;
  }
  result = discoverHipDevices(hip::hipLibraryCandidates());
  if (!result.unavailableReason.empty()) {
    std::string message = "no AMD GPU available: " + result.unavailableReason;
    // A library the user named explicitly that does not work is worth a warning; a machine
    // without ROCm is normal (the CPU device serves).
    if (env::get("ROCUDA_HIP_LIBRARY"))
      log::warning(message);
    else
      log::info(message);
  }
  return result;
}

}  // namespace rocuda::backends
