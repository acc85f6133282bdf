// The part of AMD's HIP runtime API Rocuda uses, declared by the project itself (ROCm's headers
// are never included) and resolved by name from libamdhip64 at run time, so one build works with
// ROCm 5.x-7.x and loads on machines without ROCm. HIP's own spellings are kept for the foreign
// declarations, so each can be checked against ROCm's hip_runtime_api.h by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/hip/dynamic_library.h"
#include "support/result.h"

namespace rocuda::backends::hip {

// hipError_t: stable numbers since HIP adopted CUDA's values (ROCm 3.5).
using hipError_t = int;
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorInvalidValue = 1;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNotInitialized = 3;
constexpr hipError_t hipErrorDeinitialized = 4;
constexpr hipError_t hipErrorInvalidConfiguration = 9;
constexpr hipError_t hipErrorInvalidPitchValue = 12;
constexpr hipError_t hipErrorInvalidSymbol = 13;
constexpr hipError_t hipErrorInvalidDevicePointer = 17;
constexpr hipError_t hipErrorInvalidMemcpyDirection = 21;
constexpr hipError_t hipErrorInsufficientDriver = 35;
constexpr hipError_t hipErrorPriorLaunchFailure = 53;
constexpr hipError_t hipErrorInvalidDeviceFunction = 98;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorInvalidContext = 201;
constexpr hipError_t hipErrorMapFailed = 205;
constexpr hipError_t hipErrorAlreadyMapped = 208;
constexpr hipError_t hipErrorNoBinaryForGpu = 209;
constexpr hipError_t hipErrorNotMapped = 211;
constexpr hipError_t hipErrorPeerAccessUnsupported = 217;
constexpr hipError_t hipErrorInvalidKernelFile = 218;
constexpr hipError_t hipErrorInvalidGraphicsContext = 219;
constexpr hipError_t hipErrorFileNotFound = 301;
constexpr hipError_t hipErrorSharedObjectSymbolNotFound = 302;
constexpr hipError_t hipErrorOperatingSystem = 304;
constexpr hipError_t hipErrorInvalidHandle = 400;
constexpr hipError_t hipErrorNotFound = 500;
constexpr hipError_t hipErrorNotReady = 600;
constexpr hipError_t hipErrorIllegalAddress = 700;
constexpr hipError_t hipErrorLaunchOutOfResources = 701;
constexpr hipError_t hipErrorLaunchTimeOut = 702;
constexpr hipError_t hipErrorPeerAccessAlreadyEnabled = 704;
constexpr hipError_t hipErrorPeerAccessNotEnabled = 705;
constexpr hipError_t hipErrorContextIsDestroyed = 709;
constexpr hipError_t hipErrorAssert = 710;
constexpr hipError_t hipErrorHostMemoryAlreadyRegistered = 712;
constexpr hipError_t hipErrorLaunchFailure = 719;
constexpr hipError_t hipErrorCooperativeLaunchTooLarge = 720;
constexpr hipError_t hipErrorNotSupported = 801;
constexpr hipError_t hipErrorStreamCaptureUnsupported = 900;
constexpr hipError_t hipErrorStreamCaptureInvalidated = 901;
constexpr hipError_t hipErrorStreamCaptureImplicit = 906;
constexpr hipError_t hipErrorCapturedEvent = 907;
constexpr hipError_t hipErrorUnknown = 999;
constexpr hipError_t hipErrorRuntimeMemory = 1052;

using hipDevice_t = int;
// Opaque handles (pointers to HIP's internal types).
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
// hipFunction_attribute (CUDA's CUfunction_attribute numbering).
using hipFunction_attribute = int;
constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr hipFunction_attribute HIP_FUNC_ATTRIBUTE_NUM_REGS = 4;
using hipDeviceAttribute_t = int;
using hipMemcpyKind = int;
constexpr hipMemcpyKind hipMemcpyDefault = 4;  // direction inferred from the pointers (UVA)
constexpr unsigned hipHostMallocDefault = 0;
constexpr unsigned hipHostRegisterMapped = 0x2;  // mapped into the device: hipHostGetDevicePointer
constexpr unsigned hipMemAttachGlobal = 0x1;     // managed memory any stream may access
constexpr int hipCpuDeviceId = -1;               // the host, as a prefetch or advice target
constexpr unsigned hipStreamNonBlocking = 1;  // no implicit synchronisation with the null stream

struct hipUUID {
  char bytes[16];
};

// An IPC memory handle: 64 opaque bytes, as CUDA's CUipcMemHandle.
struct hipIpcMemHandle_t {
  char reserved[64];
};
// hipIpcOpenMemHandle's one flag, hipIpcMemLazyEnablePeerAccess, changed value: ROCm 5 defines it
// as 0 and refuses any other flags; ROCm 6 and later define it as 1 and refuse anything else.
constexpr unsigned hipIpcMemLazyEnablePeerAccessRocm5 = 0;
constexpr unsigned hipIpcMemLazyEnablePeerAccessRocm6 = 1;

// Virtual memory management: the same layouts and values as CUDA's CUmemLocation,
// CUmemAllocationProp and CUmemAccessDesc from ROCm 5.5 on (ROCm 5.1-5.4 ordered
// hipMemAllocationProp's fields otherwise: the backend offers VMM from 5.5, probeVirtualMemory).
using hipMemGenericAllocationHandle_t = struct ihipMemGenericAllocationHandle*;
struct hipMemLocation {
  int type;  // hipMemLocationTypeDevice
  int id;
};
struct hipMemAllocationProp {
  int type;                 // hipMemAllocationTypePinned
  int requestedHandleType;  // hipMemHandleTypeNone or hipMemHandleTypePosixFileDescriptor
  hipMemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
  } allocFlags;
};
struct hipMemAccessDesc {
  hipMemLocation location;
  int flags;  // hipMemAccessFlagsProt*
};
constexpr int hipMemLocationTypeDevice = 1;
constexpr int hipMemAllocationTypePinned = 1;
constexpr int hipMemHandleTypeNone = 0;
constexpr int hipMemHandleTypePosixFileDescriptor = 1;
constexpr int hipMemAllocationGranularityMinimum = 0;
constexpr int hipMemAllocationGranularityRecommended = 1;
constexpr int hipMemAccessFlagsProtNone = 0, hipMemAccessFlagsProtRead = 1,
              hipMemAccessFlagsProtReadWrite = 3;

// The numbers of the hipDeviceAttribute_t values Rocuda reads. ROCm 4.x reordered the enum
// (CUDA-compatible block from 0, AMD-specific block from 10000); ROCm 6.0 retired five slots
// (Name 64, Uuid 86, Arch 10001, GcnArch 10003, GcnArchName 10004 became "Unused1..5") without
// renumbering the rest. Checked against ROCm 5.2's and ROCm 7's hip_runtime_api.h: every value
// below is the same in both (5.0, 5.1 and 6.x are assumed to agree), and none of the retired slots
// is used (the UUID and the target name come from hipDeviceGetUuid and hipGetDeviceProperties).
struct HipAttributeTable {
  const char* generation;  // for the log
  hipDeviceAttribute_t asyncEngineCount, canMapHostMemory, clockRate, concurrentKernels,
      cooperativeLaunch, hostNativeAtomicSupported, integrated, l2CacheSize, managedMemory,
      maxBlocksPerMultiProcessor, maxBlockDimX, maxBlockDimY, maxBlockDimZ, maxGridDimX,
      maxGridDimY, maxGridDimZ, maxThreadsPerBlock, maxThreadsPerMultiProcessor, memoryBusWidth,
      memoryClockRate, multiprocessorCount, pageableMemoryAccess, pciBusId, pciDeviceId,
      pciDomainId, maxRegistersPerBlock, maxRegistersPerMultiprocessor, maxSharedMemoryPerBlock,
      sharedMemPerBlockOptin, sharedMemPerMultiprocessor, totalConstantMemory, warpSize,
      maxSharedMemoryPerMultiprocessor, physicalMultiProcessorCount;
};

// HIP_VERSION encoding: major * 10000000 + minor * 100000 + patch (hipRuntimeGetVersion).
constexpr int hipVersionMajor(int version) { return version / 10000000; }
constexpr int hipVersionMinor(int version) { return version / 100000 % 100; }
std::string hipVersionString(int version);

// The attribute numbering of the HIP runtime with this hipRuntimeGetVersion value; nullptr for a
// runtime older than ROCm 5.0 (not supported: its numbering was not checked).
const HipAttributeTable* attributeTableForVersion(int hipVersion);

// The leading fields of hipDeviceProp_t as the `hipGetDeviceProperties` symbol (ROCm 5, and
// `hipGetDeviceProperties` / `hipGetDevicePropertiesR0000` kept for compatibility by ROCm 6 and 7)
// fills it: hipDeviceProp_tR0000. Only `name` and `gcnArchName` are read; the rest fixes their
// offsets. ROCm 6's own hipDeviceProp_tR0600 (hipGetDevicePropertiesR0600) is a different layout.
struct HipDevicePropR0000Prefix {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  int computeMode;
  int clockInstructionRate;
  uint32_t arch;  // hipDeviceArch_t: 17 one-bit flags in an unsigned
  int concurrentKernels;
  int pciDomainID;
  int pciBusID;
  int pciDeviceID;
  size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard;
  int canMapHostMemory;
  int gcnArch;
  char gcnArchName[256];
};
// Offsets measured with ROCm 5.2's header (offsetof on x86-64): sizeof(hipDeviceProp_t) 792.
static_assert(offsetof(HipDevicePropR0000Prefix, arch) == 356);
static_assert(offsetof(HipDevicePropR0000Prefix, pciDomainID) == 364);
static_assert(offsetof(HipDevicePropR0000Prefix, gcnArchName) == 396);
// The buffer handed to hipGetDeviceProperties: larger than any layout, so a runtime that writes
// more than the 792 bytes of R0000 cannot overrun it.
constexpr size_t kDevicePropBufferBytes = 4096;

// Every HIP function Rocuda calls. X(name, type, required): a required one missing disables the
// backend. Of the two R0000-layout property functions at least one must exist (ROCm 5 has only
// the plain name).
#define ROCUDA_HIP_FUNCTIONS(X)                                                                    \
  X(hipRuntimeGetVersion, hipError_t (*)(int*), true)                                              \
  X(hipGetErrorString, const char* (*)(hipError_t), true)                                          \
  X(hipInit, hipError_t (*)(unsigned), true)                                                       \
  X(hipGetDeviceCount, hipError_t (*)(int*), true)                                                 \
  X(hipDeviceGetAttribute, hipError_t (*)(int*, hipDeviceAttribute_t, int), true)                  \
  X(hipDeviceGetName, hipError_t (*)(char*, int, hipDevice_t), true)                               \
  X(hipDeviceTotalMem, hipError_t (*)(size_t*, hipDevice_t), true)                                 \
  X(hipDeviceGetPCIBusId, hipError_t (*)(char*, int, int), true)                                   \
  X(hipSetDevice, hipError_t (*)(int), true)                                                       \
  X(hipMalloc, hipError_t (*)(void**, size_t), true)                                               \
  X(hipFree, hipError_t (*)(void*), true)                                                          \
  X(hipHostMalloc, hipError_t (*)(void**, size_t, unsigned), true)                                 \
  X(hipHostFree, hipError_t (*)(void*), true)                                                      \
  X(hipMemGetInfo, hipError_t (*)(size_t*, size_t*), true)                                         \
  X(hipMemcpy, hipError_t (*)(void*, const void*, size_t, hipMemcpyKind), true)                    \
  X(hipModuleLoadData, hipError_t (*)(hipModule_t*, const void*), true)                            \
  X(hipModuleUnload, hipError_t (*)(hipModule_t), true)                                            \
  X(hipModuleGetFunction, hipError_t (*)(hipFunction_t*, hipModule_t, const char*), true)          \
  X(hipModuleGetGlobal, hipError_t (*)(void**, size_t*, hipModule_t, const char*), true)           \
  X(hipModuleLaunchKernel,                                                                         \
    hipError_t (*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
                   unsigned, hipStream_t, void**, void**),                                         \
    true)                                                                                          \
  X(hipDeviceGetStreamPriorityRange, hipError_t (*)(int*, int*), true)                             \
  X(hipStreamCreateWithPriority, hipError_t (*)(hipStream_t*, unsigned, int), true)                \
  X(hipStreamDestroy, hipError_t (*)(hipStream_t), true)                                           \
  X(hipStreamSynchronize, hipError_t (*)(hipStream_t), true)                                       \
  X(hipMemcpyAsync, hipError_t (*)(void*, const void*, size_t, hipMemcpyKind, hipStream_t), true)  \
  X(hipMemcpy2DAsync,                                                                              \
    hipError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, hipMemcpyKind,              \
                   hipStream_t),                                                                   \
    true)                                                                                          \
  X(hipMemsetD8Async, hipError_t (*)(void*, unsigned char, size_t, hipStream_t), true)             \
  X(hipMemsetD16Async, hipError_t (*)(void*, unsigned short, size_t, hipStream_t), true)           \
  X(hipMemsetD32Async, hipError_t (*)(void*, int, size_t, hipStream_t), true)                      \
  /* Optional (a runtime without them refuses host registration; managed memory is pinned): */     \
  X(hipHostRegister, hipError_t (*)(void*, size_t, unsigned), false)                               \
  X(hipHostUnregister, hipError_t (*)(void*), false)                                               \
  X(hipHostGetDevicePointer, hipError_t (*)(void**, void*, unsigned), false)                       \
  X(hipMallocManaged, hipError_t (*)(void**, size_t, unsigned), false)                             \
  X(hipMemPrefetchAsync, hipError_t (*)(const void*, size_t, int, hipStream_t), false)             \
  X(hipMemAdvise, hipError_t (*)(const void*, size_t, int, int), false)                            \
  /* ROCm 5.5 and later: */                                                                        \
  X(hipModuleLaunchCooperativeKernel,                                                              \
    hipError_t (*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
                   unsigned, hipStream_t, void**),                                                 \
    false)                                                                                         \
  /* Older, but optional here: */                                                                  \
  X(hipFuncGetAttribute, hipError_t (*)(int*, hipFunction_attribute, hipFunction_t), false)        \
  X(hipGetErrorName, const char* (*)(hipError_t), false)                                           \
  X(hipDeviceGetUuid, hipError_t (*)(hipUUID*, hipDevice_t), false)                                \
  X(hipGetDevicePropertiesR0000, hipError_t (*)(void*, int), false)                                \
  X(hipGetDeviceProperties, hipError_t (*)(void*, int), false)                                     \
  X(hipDeviceCanAccessPeer, hipError_t (*)(int*, int, int), false)                                 \
  X(hipDeviceEnablePeerAccess, hipError_t (*)(int, unsigned), false)                               \
  X(hipDeviceDisablePeerAccess, hipError_t (*)(int), false)                                        \
  X(hipMemGetAllocationGranularity, hipError_t (*)(size_t*, const hipMemAllocationProp*, int),     \
    false)                                                                                         \
  X(hipMemAddressReserve, hipError_t (*)(void**, size_t, size_t, void*, unsigned long long),       \
    false)                                                                                         \
  X(hipMemAddressFree, hipError_t (*)(void*, size_t), false)                                       \
  X(hipMemCreate,                                                                                  \
    hipError_t (*)(hipMemGenericAllocationHandle_t*, size_t, const hipMemAllocationProp*,          \
                   unsigned long long),                                                            \
    false)                                                                                         \
  X(hipMemRelease, hipError_t (*)(hipMemGenericAllocationHandle_t), false)                         \
  X(hipMemExportToShareableHandle,                                                                 \
    hipError_t (*)(void*, hipMemGenericAllocationHandle_t, int, unsigned long long), false)        \
  X(hipMemImportFromShareableHandle, hipError_t (*)(hipMemGenericAllocationHandle_t*, void*, int), \
    false)                                                                                         \
  X(hipMemMap,                                                                                     \
    hipError_t (*)(void*, size_t, size_t, hipMemGenericAllocationHandle_t, unsigned long long),    \
    false)                                                                                         \
  X(hipMemUnmap, hipError_t (*)(void*, size_t), false)                                             \
  X(hipMemSetAccess, hipError_t (*)(void*, size_t, const hipMemAccessDesc*, size_t), false)        \
  X(hipIpcGetMemHandle, hipError_t (*)(hipIpcMemHandle_t*, void*), false)                          \
  X(hipIpcOpenMemHandle, hipError_t (*)(void**, hipIpcMemHandle_t, unsigned), false)               \
  X(hipIpcCloseMemHandle, hipError_t (*)(void*), false)                                            \
  X(hipMemGetAddressRange, hipError_t (*)(void**, size_t*, void*), false)

template <class T>
using HipFunction = T;  // lets a function pointer type be written before the member's name

struct HipApi {
#define ROCUDA_HIP_MEMBER(name, type, required) HipFunction<type> name = nullptr;
  ROCUDA_HIP_FUNCTIONS(ROCUDA_HIP_MEMBER)
#undef ROCUDA_HIP_MEMBER
};

// Where to look for the HIP runtime, in order: ROCUDA_HIP_LIBRARY (a file, or a directory holding
// one), $ROCM_PATH/lib, /opt/rocm/lib ($HIP_PATH/bin on Windows), then the loader's own path.
std::vector<std::string> hipLibraryCandidates();
// The same list for explicit settings (an empty value is skipped).
std::vector<std::string> hipLibraryCandidates(const std::string& explicitLibrary,
                                              const std::string& rocmPath);

// A loaded HIP runtime with every function resolved.
class HipLibrary {
 public:
  // Try each candidate in order; the error lists every path tried (and why, when the file
  // exists but did not load), or names the first required function the library lacks.
  static Result<std::shared_ptr<HipLibrary>> load(const std::vector<std::string>& candidates);
  ~HipLibrary();
  HipLibrary(const HipLibrary&) = delete;
  HipLibrary& operator=(const HipLibrary&) = delete;

  const HipApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // hipRuntimeGetVersion's answer, as the backend read it when it started the runtime (0 before).
  int runtimeVersion() const { return runtimeVersion_; }
  void setRuntimeVersion(int version) { runtimeVersion_ = version; }
  // Once HIP has been initialised the library is never unloaded: its exit-time teardown runs
  // from its own atexit handlers, which must still find it mapped.
  void markInitialized() { initialized_ = true; }

  // "hipErrorOutOfMemory (2): out of memory", from the runtime's own strings when it has them.
  std::string describe(hipError_t error) const;
  // The rocuda Error for a failed HIP call, naming the operation and HIP's error.
  Error error(hipError_t error, std::string_view operation) const;

 private:
  HipLibrary(LibraryHandle handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  std::string resolve();  // empty, or the name of the missing required function

  LibraryHandle handle_ = nullptr;
  std::string path_;
  HipApi api_;
  int runtimeVersion_ = 0;
  bool initialized_ = false;
};

// The one translation from hipError_t to rocuda's ErrorCode.
ErrorCode errorCodeForHip(hipError_t error);

}  // namespace rocuda::backends::hip
