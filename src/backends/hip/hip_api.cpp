#include "backends/hip/hip_api.h"

#include <algorithm>

#include "support/env.h"

namespace rocuda::backends::hip {
namespace {

// hipDeviceAttribute_t numbers, identical in ROCm 5.0-7.x (see HipAttributeTable).
constexpr HipAttributeTable kAttributesRocm5To7 = {
    .generation = "ROCm 5.0-7.x attribute numbering",
    .asyncEngineCount = 2,
    .canMapHostMemory = 3,
    .clockRate = 5,
    .concurrentKernels = 8,
    .cooperativeLaunch = 10,
    .hostNativeAtomicSupported = 15,
    .integrated = 16,
    .l2CacheSize = 19,
    .managedMemory = 24,
    .maxBlocksPerMultiProcessor = 25,
    .maxBlockDimX = 26,
    .maxBlockDimY = 27,
    .maxBlockDimZ = 28,
    .maxGridDimX = 29,
    .maxGridDimY = 30,
    .maxGridDimZ = 31,
    .maxThreadsPerBlock = 56,
    .maxThreadsPerMultiProcessor = 57,
    .memoryBusWidth = 59,
    .memoryClockRate = 60,
    .multiprocessorCount = 63,
    .pageableMemoryAccess = 65,
    .pciBusId = 67,
    .pciDeviceId = 68,
    .pciDomainId = 69,
    .maxRegistersPerBlock = 71,
    .maxRegistersPerMultiprocessor = 72,
    .maxSharedMemoryPerBlock = 74,
    .sharedMemPerBlockOptin = 75,
    .sharedMemPerMultiprocessor = 76,
    .totalConstantMemory = 83,
    .warpSize = 87,
    .maxSharedMemoryPerMultiprocessor = 10002,
    .physicalMultiProcessorCount = 10015,
};

#ifdef _WIN32
constexpr const char* kLibraryNames[] = {"amdhip64_7.dll", "amdhip64_6.dll", "amdhip64.dll"};
constexpr const char* kRocmLibraryDirectory = "bin";
constexpr const char* kDefaultRocmPath = nullptr;
#else
constexpr const char* kLibraryNames[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                         "libamdhip64.so.5"};
constexpr const char* kRocmLibraryDirectory = "lib";
constexpr const char* kDefaultRocmPath = "/opt/rocm";
#endif

void addUnique(std::vector<std::string>& list, std::string entry) {
  if (std::find(list.begin(), list.end(), entry) == list.end()) list.push_back(std::move(entry));
}

void addDirectory(std::vector<std::string>& list, std::string directory) {
  while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  for (const char* name : kLibraryNames) addUnique(list, directory + "/" + name);
}

// dlerror's text for a file that is simply absent: not worth repeating for every path tried.
bool isMissingFile(const std::string& message) {
  return message.find("No such file") != std::string::npos ||
         message.find("error 126") != std::string::npos;  // ERROR_MOD_NOT_FOUND
}

}  // namespace

std::string hipVersionString(int version) {
  return std::to_string(hipVersionMajor(version)) + "." + std::to_string(hipVersionMinor(version)) +
         "." + std::to_string(version % 100000);
}

const HipAttributeTable* attributeTableForVersion(int hipVersion) {
  if (hipVersionMajor(hipVersion) < 5) return nullptr;
  return &kAttributesRocm5To7;
}

std::vector<std::string> hipLibraryCandidates(const std::string& explicitLibrary,
                                              const std::string& rocmPath) {
  std::vector<std::string> list;
  if (!explicitLibrary.empty()) {
    addUnique(list, explicitLibrary);     // the library file itself
    addDirectory(list, explicitLibrary);  // or a directory holding it
  }
  if (!rocmPath.empty()) addDirectory(list, rocmPath + "/" + kRocmLibraryDirectory);
  if (kDefaultRocmPath != nullptr)
    addDirectory(list, std::string(kDefaultRocmPath) + "/" + kRocmLibraryDirectory);
  for (const char* name : kLibraryNames) addUnique(list, name);  // the loader's search path
  return list;
}

std::vector<std::string> hipLibraryCandidates() {
#ifdef _WIN32
  const char* rocmVariable = "HIP_PATH";
#else
  const char* rocmVariable = "ROCM_PATH";
#endif
  return hipLibraryCandidates(env::get("ROCUDA_HIP_LIBRARY").value_or(""),
                              env::get(rocmVariable).value_or(""));
}

Result<std::shared_ptr<HipLibrary>> HipLibrary::load(const std::vector<std::string>& candidates) {
  std::string tried, unusable;
  for (const auto& candidate : candidates) {
    auto handle = openLibrary(candidate);
    if (!handle.ok()) {
      tried += (tried.empty() ? "" : ", ") + candidate;
      if (!isMissingFile(handle.error().message)) tried += " (" + handle.error().message + ")";
      continue;
    }
    std::shared_ptr<HipLibrary> library(new HipLibrary(*handle, candidate));
    std::string missing = library->resolve();
    if (missing.empty()) return library;
    // Not a usable runtime (an old or partial libamdhip64): the next candidate may be.
    unusable += (unusable.empty() ? "" : "; ") +
                ("the HIP runtime " + candidate + " does not export " + missing);
  }
  if (!unusable.empty())
    return makeError(ErrorCode::NotSupported, unusable +
                                                  " (not a usable ROCm 5.0-7.x libamdhip64)" +
                                                  (tried.empty() ? "" : "; also tried: " + tried));
  return makeError(ErrorCode::FileNotFound,
                   "the HIP runtime (libamdhip64) was not found (install ROCm 5.0-7.x, or set "
                   "ROCUDA_HIP_LIBRARY to its path); tried: " +
                       tried);
}

std::string HipLibrary::resolve() {
#define ROCUDA_HIP_RESOLVE(name, type, required)                  \
  api_.name = reinterpret_cast<type>(findSymbol(handle_, #name)); \
  if ((required) && api_.name == nullptr) return #name;
  ROCUDA_HIP_FUNCTIONS(ROCUDA_HIP_RESOLVE)
#undef ROCUDA_HIP_RESOLVE
  if (api_.hipGetDevicePropertiesR0000 == nullptr && api_.hipGetDeviceProperties == nullptr)
    return "hipGetDeviceProperties";
  return "";
}

HipLibrary::~HipLibrary() {
  if (!initialized_) closeLibrary(handle_);
}

std::string HipLibrary::describe(hipError_t error) const {
  std::string name = api_.hipGetErrorName != nullptr && api_.hipGetErrorName(error) != nullptr
                         ? api_.hipGetErrorName(error)
                         : "hipError";
  std::string text = "";
  if (api_.hipGetErrorString != nullptr && api_.hipGetErrorString(error) != nullptr)
    text = api_.hipGetErrorString(error);
  std::string result = name + " (" + std::to_string(error) + ")";
  if (!text.empty() && text != name) result += ": " + text;
  return result;
}

Error HipLibrary::error(hipError_t error, std::string_view operation) const {
  return makeError(errorCodeForHip(error), std::string(operation) + " failed: " + describe(error));
}

ErrorCode errorCodeForHip(hipError_t error) {
  switch (error) {
    case hipErrorInvalidValue:
    case hipErrorInvalidPitchValue:
    case hipErrorInvalidDevicePointer:
    case hipErrorInvalidMemcpyDirection:
      return ErrorCode::InvalidValue;
    case hipErrorOutOfMemory:
    case hipErrorRuntimeMemory:
      return ErrorCode::OutOfMemory;
    case hipErrorNotInitialized:
    case hipErrorDeinitialized:
    case hipErrorInsufficientDriver:
      return ErrorCode::NotInitialized;
    case hipErrorInvalidConfiguration:
      return ErrorCode::InvalidConfiguration;
    case hipErrorNoDevice:
      return ErrorCode::NoDevice;
    case hipErrorInvalidDevice:
      return ErrorCode::InvalidDevice;
    case hipErrorInvalidImage:
    case hipErrorInvalidKernelFile:
      return ErrorCode::InvalidImage;
    case hipErrorInvalidContext:
      return ErrorCode::InvalidContext;
    case hipErrorContextIsDestroyed:
      return ErrorCode::ContextIsDestroyed;
    case hipErrorNoBinaryForGpu:
      return ErrorCode::NoBinaryForGpu;
    case hipErrorFileNotFound:
      return ErrorCode::FileNotFound;
    case hipErrorInvalidSymbol:
    case hipErrorInvalidDeviceFunction:
    case hipErrorSharedObjectSymbolNotFound:
    case hipErrorNotFound:
      return ErrorCode::NotFound;
    case hipErrorOperatingSystem:
      return ErrorCode::OperatingSystem;
    case hipErrorInvalidHandle:
      return ErrorCode::InvalidHandle;
    case hipErrorNotReady:
      return ErrorCode::NotReady;
    case hipErrorIllegalAddress:
      return ErrorCode::IllegalAddress;
    case hipErrorLaunchOutOfResources:
      return ErrorCode::LaunchOutOfResources;
    case hipErrorAssert:
      return ErrorCode::Assert;
    case hipErrorLaunchFailure:
    case hipErrorPriorLaunchFailure:
    case hipErrorLaunchTimeOut:
      return ErrorCode::LaunchFailed;
    case hipErrorCooperativeLaunchTooLarge:
      return ErrorCode::CooperativeLaunchTooLarge;
    case hipErrorNotSupported:
    case hipErrorPeerAccessUnsupported:
      return ErrorCode::NotSupported;
    case hipErrorMapFailed:
      return ErrorCode::MapFailed;
    case hipErrorAlreadyMapped:
      return ErrorCode::AlreadyMapped;
    case hipErrorNotMapped:
      return ErrorCode::NotMapped;
    case hipErrorHostMemoryAlreadyRegistered:
      return ErrorCode::HostMemoryAlreadyRegistered;
    case hipErrorInvalidGraphicsContext:
      return ErrorCode::InvalidGraphicsContext;
    case hipErrorStreamCaptureUnsupported:
      return ErrorCode::StreamCaptureUnsupported;
    case hipErrorStreamCaptureInvalidated:
      return ErrorCode::StreamCaptureInvalidated;
    case hipErrorStreamCaptureImplicit:
      return ErrorCode::StreamCaptureImplicit;
    case hipErrorCapturedEvent:
      return ErrorCode::CapturedEvent;
    default:
      return ErrorCode::Internal;
  }
}

}  // namespace rocuda::backends::hip
