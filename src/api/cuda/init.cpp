// cuInit, cuDriverGetVersion and cuGetProcAddress: how cudart finds everything else.
#include <cstring>

#include "api/cuda/boundary.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

Outcome getProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* symbolStatus) {
  if (pfn == nullptr) return invalidValue("pfn is NULL");
  *pfn = nullptr;
  if (symbol == nullptr) return invalidValue("symbol is NULL");
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return invalidValue("unknown flags");
  // "If the specified CUDA version is greater than the driver version, the API will return
  // CUDA_ERROR_INVALID_VALUE" (newer runtimes on this driver ask for at most its version).
  if (cudaVersion > kDriverVersion) return invalidValue("cudaVersion is newer than the driver");
  bool perThread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  ProcLookup lookup = resolveProc(entryPoints(), symbol, cudaVersion, perThread);
  if (symbolStatus != nullptr) {
    *symbolStatus = lookup.status == ProcStatus::Found ? CU_GET_PROC_ADDRESS_SUCCESS
                    : lookup.status == ProcStatus::VersionNotSufficient
                        ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  switch (lookup.status) {
    case ProcStatus::Found:
      *pfn = lookup.entry->function;
      if (log::enabled(log::Level::Trace))
        log::trace(std::string("cuGetProcAddress: ") + symbol + " -> " + lookup.entry->symbol);
      return {};
    case ProcStatus::VersionNotSufficient:
      return {CUDA_ERROR_NOT_FOUND, "no variant for this CUDA version"};
    case ProcStatus::SymbolNotFound:
      break;
  }
  if (lookup.entry != nullptr)
    return {CUDA_ERROR_NOT_FOUND, std::string("not implemented: ") + lookup.entry->symbol};
  return {CUDA_ERROR_NOT_FOUND, "unknown symbol"};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuInit(unsigned int Flags) {
  return ROCUDA_API_NOINIT((Flags), [&]() -> api::Outcome {
    if (Flags != 0) return api::invalidValue("Flags must be 0");
    return core::Platform::instance().initialize();
  });
}

ROCUDA_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  return ROCUDA_API_NOINIT((driverVersion), [&]() -> api::Outcome {
    if (driverVersion == nullptr) return api::invalidValue("driverVersion is NULL");
    *driverVersion = kDriverVersion;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* symbolStatus) {
  return ROCUDA_API_NOINIT((symbol, pfn, cudaVersion, flags, symbolStatus), [&]() {
    return api::getProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus);
  });
}

ROCUDA_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                        cuuint64_t flags) {
  return ROCUDA_API_NOINIT((symbol, pfn, cudaVersion, flags), [&]() {
    return api::getProcAddress(symbol, pfn, cudaVersion, flags, nullptr);
  });
}

// No profiler attaches to Rocuda: starting and stopping collection are valid no-ops, as they are
// on NVIDIA's driver when no profiler is running.
ROCUDA_EXPORT CUresult cuProfilerStart() {
  return ROCUDA_API((), []() -> api::Outcome {
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuProfilerStop() {
  return ROCUDA_API((), []() -> api::Outcome {
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
