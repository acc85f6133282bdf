// Code: modules (cuModule*), cudart's libraries (cuLibrary*), kernels/functions and their
// attributes. A CUfunction and a CUkernel are the same core::Kernel.
#include "core/module.h"

#include <algorithm>
#include <cstring>

#include "api/cuda/boundary.h"
#include "api/cuda/context_state.h"
#include "core/context.h"
#include "core/platform.h"
#include "support/env.h"
#include "support/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

template <class Handle>
Handle toHandle(void* object) {
  return reinterpret_cast<Handle>(object);
}

Result<core::Module*> lookupLibraryHandle(CUlibrary handle) {
  core::Module* library = core::lookupLibrary(handle);
  if (library == nullptr) return makeError(ErrorCode::InvalidHandle, "not a loaded library");
  return library;
}

// Libraries are context-independent in CUDA; Rocuda loads them for the current context's device,
// or for device 0's primary context when no context is current (cudart sets one first).
Result<core::Context*> libraryContext() {
  if (core::currentContext() != nullptr) return currentContext();
  core::Device* device = core::Platform::instance().device(0);
  if (device == nullptr) return makeError(ErrorCode::NoDevice, "no device");
  return &device->primaryContext();
}

// cuModuleLoadDataEx's outputs: the error message goes to CU_JIT_ERROR_LOG_BUFFER, and the
// *_SIZE_BYTES values are replaced by the bytes written, as CUDA does; CU_JIT_WALL_TIME's value
// becomes the milliseconds the load took (a float in the option's slot).
void writeJitOutputs(unsigned numOptions, const CUjit_option* options, void** values,
                     const std::string& errorLog, float wallMilliseconds) {
  if (options == nullptr || values == nullptr) return;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == CU_JIT_WALL_TIME) writeJitWallTime(&values[i], wallMilliseconds);
    if (options[i] != CU_JIT_ERROR_LOG_BUFFER && options[i] != CU_JIT_INFO_LOG_BUFFER) continue;
    bool isError = options[i] == CU_JIT_ERROR_LOG_BUFFER;
    CUjit_option sizeOption =
        isError ? CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES : CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
    for (unsigned j = 0; j < numOptions; ++j) {
      if (options[j] != sizeOption) continue;
      auto capacity = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[j]));
      auto* buffer = static_cast<char*>(values[i]);
      if (buffer == nullptr || capacity == 0) break;
      const std::string& text = isError ? errorLog : std::string();
      size_t n = std::min(text.size(), capacity - 1);
      std::memcpy(buffer, text.data(), n);
      buffer[n] = '\0';
      values[j] = reinterpret_cast<void*>(static_cast<uintptr_t>(n));
      break;
    }
  }
}

// The JIT options that shape the loaded kernels (core::Module::JitRequests); the others are
// log buffers, optimisation levels and hints that leave the code's behaviour as it is.
core::Module::JitRequests jitRequests(unsigned numOptions, const CUjit_option* options,
                                      void* const* values) {
  core::Module::JitRequests requests;
  if (options == nullptr || values == nullptr) return requests;
  for (unsigned i = 0; i < numOptions; ++i) {
    auto value = static_cast<unsigned>(reinterpret_cast<uintptr_t>(values[i]));
    switch (options[i]) {
      case CU_JIT_MAX_THREADS_PER_BLOCK:
        requests.maxThreadsPerBlock = value;
        break;
      case CU_JIT_OVERRIDE_DIRECTIVE_VALUES:
        requests.overrideDirectives = value != 0;
        break;
      case CU_JIT_CACHE_MODE:
        requests.cacheGlobalLoadsInL1 = value == CU_JIT_CACHE_OPTION_CA;
        break;
      default:
        break;
    }
  }
  return requests;
}

Outcome loadModule(CUmodule* module, const void* image, unsigned numOptions,
                   const CUjit_option* options, void** optionValues) {
  if (module == nullptr || image == nullptr) return invalidValue("NULL argument");
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr))
    return invalidValue("options missing");
  if (Outcome known = checkJitOptions(numOptions, options); !known.ok()) return known;
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  auto start = std::chrono::steady_clock::now();
  Result<core::Module*> loaded = core::Module::load(**context, image, /*isLibrary=*/false);
  writeJitOutputs(numOptions, options, optionValues,
                  loaded ? std::string() : loaded.error().message, millisecondsSince(start));
  if (!loaded) return loaded.error();
  (*loaded)->setJitRequests(jitRequests(numOptions, options, optionValues));
  *module = toHandle<CUmodule>(*loaded);
  return {};
}

// cuLibraryLoadData / cuLibraryLoadFromFile (`fromFile`); JIT options as cuModuleLoadDataEx's.
Outcome loadLibrary(CUlibrary* library, const void* code, unsigned numJitOptions,
                    const CUjit_option* jitOptions, void** jitValues, unsigned numLibraryOptions,
                    const CUlibraryOption* libraryOptions, void* const* libraryValues,
                    bool fromFile) {
  if (library == nullptr || code == nullptr) return invalidValue("NULL argument");
  if (numJitOptions > 0 && (jitOptions == nullptr || jitValues == nullptr))
    return invalidValue("JIT options missing");
  if (Outcome known = checkJitOptions(numJitOptions, jitOptions); !known.ok()) return known;
  if (numLibraryOptions > 0 && libraryOptions == nullptr) return invalidValue("options missing");
  bool preserved = false;  // the caller keeps `code` until cuLibraryUnload (cudart does)
  for (unsigned i = 0; i < numLibraryOptions; ++i) {
    // "Specifying this option with cuLibraryLoadFromFile() is invalid".
    if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED && fromFile)
      return invalidValue("CU_LIBRARY_BINARY_IS_PRESERVED applies to code in memory only");
    if (libraryOptions[i] != CU_LIBRARY_BINARY_IS_PRESERVED)
      return {CUDA_ERROR_NOT_SUPPORTED, "unsupported library option"};
    preserved = libraryValues != nullptr && libraryValues[i] != nullptr;
  }
  Result<core::Context*> context = libraryContext();
  if (!context) return context.error();
  auto start = std::chrono::steady_clock::now();
  Result<core::Module*> loaded = core::Module::load(**context, code, /*isLibrary=*/true, preserved);
  writeJitOutputs(numJitOptions, jitOptions, jitValues,
                  loaded ? std::string() : loaded.error().message, millisecondsSince(start));
  if (!loaded) return loaded.error();
  (*loaded)->setJitRequests(jitRequests(numJitOptions, jitOptions, jitValues));
  *library = toHandle<CUlibrary>(*loaded);
  return {};
}

Outcome outputGlobal(CUdeviceptr* dptr, size_t* bytes, core::Module& module, const char* name) {
  if (name == nullptr) return invalidValue("name is NULL");
  // "One of the parameters dptr or bytes (not both) can be NULL".
  if (dptr == nullptr && bytes == nullptr) return invalidValue("dptr and bytes are both NULL");
  Result<core::GlobalSymbol> global = module.global(name);
  if (!global) return global.error();
  if (dptr != nullptr) *dptr = reinterpret_cast<uintptr_t>(global->address);
  if (bytes != nullptr) *bytes = global->size;
  return {};
}

using AttributeLevel = core::Kernel::Level;

Outcome functionAttribute(int* pi, CUfunction_attribute attrib, const void* handle,
                          AttributeLevel level) {
  if (pi == nullptr) return invalidValue("pi is NULL");
  Result<core::Kernel*> found = lookupKernel(handle);
  if (!found) return found.error();
  core::Kernel& kernel = **found;
  const auto& device = kernel.module().context().device().description();
  // The compiled code's own figures where the device has them (an AMD code object's metadata).
  const backends::KernelResources resources = kernel.loaded().resources();
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = kernel.maxThreadsPerBlock();
      return {};
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = static_cast<int>(kernel.staticSharedBytes());
      return {};
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = static_cast<int>(std::min<uint64_t>(kernel.constBytes(), INT32_MAX));
      return {};
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = resources.localBytesPerThread >= 0 ? resources.localBytesPerThread
                                               : static_cast<int>(kernel.info().localBytesPerThread);
      return {};
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      // A device without a register file (the CPU) reports each thread's share of the
      // multiprocessor's at full occupancy, a multiple of 8 as register allocations are: never 0,
      // which NVIDIA does not report and libraries divide by (cuSPARSE), and never a limit below
      // the thread limit, as the occupancy calculator takes no registers there.
      *pi = resources.registersPerThread > 0
                ? resources.registersPerThread
                : std::min(255, device.registersPerMultiprocessor /
                                    std::max(1, device.maxThreadsPerMultiprocessor)) /
                      8 * 8;
      return {};
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      // The arch the PTX was generated for (compute_75 -> 75), as NVIDIA reports for JIT-compiled
      // code: CUB/Thrust pick their tuning policy by it, among those compiled into the binary.
      *pi = static_cast<int>(kernel.ptxArch());
      return {};
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      // The code was translated for this device's reported compute capability.
      *pi = device.computeCapabilityMajor * 10 + device.computeCapabilityMinor;
      return {};
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = kernel.module().jitRequests().cacheGlobalLoadsInL1 ? 1 : 0;
      return {};
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = kernel.maxDynamicSharedBytes(level);
      return {};
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = kernel.preferredSharedCarveout(level);
      return {};
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *pi = kernel.nonPortableClusterSizeAllowed(level) ? 1 : 0;
      return {};
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *pi = static_cast<int>(kernel.requiredClusterDim(
          static_cast<int>(attrib) - static_cast<int>(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH),
          level));
      return {};
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:  // PTX .explicitcluster
      *pi = kernel.info().explicitCluster ? 1 : 0;
      return {};
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *pi = kernel.clusterSchedulingPolicy(level);
      return {};
    default:
      return invalidValue("unknown function attribute");
  }
}

Outcome setFunctionAttribute(const void* handle, CUfunction_attribute attrib, int value,
                             AttributeLevel level) {
  Result<core::Kernel*> found = lookupKernel(handle);
  if (!found) return found.error();
  core::Kernel& kernel = **found;
  const auto& device = kernel.module().context().device().description();
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      long long available =
          1LL * device.sharedMemPerBlockOptin - static_cast<long long>(kernel.staticSharedBytes());
      if (value < 0 || value > available)
        return invalidValue("more dynamic shared memory than the device offers");
      kernel.setMaxDynamicSharedBytes(value, level);
      return {};
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return invalidValue("carveout must be -1..100");
      kernel.setPreferredSharedCarveout(value, level);
      return {};
    // Clusters exist from compute capability 9.0 (cuBLAS sets this at start-up there).
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      if (device.computeCapabilityMajor < 9)
        return invalidValue("thread block clusters need compute capability 9.0");
      if (value != 0 && value != 1) return invalidValue("the value must be 0 or 1");
      kernel.setNonPortableClusterSizeAllowed(value != 0, level);
      return {};
    // "If the value is set during compile time, it cannot be set at runtime. Setting it at
    // runtime will return CUDA_ERROR_NOT_PERMITTED." A shape of more than one block then fails
    // at launch, as the compiled one does.
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      if (kernel.clusterDimsCompiled())
        return {CUDA_ERROR_NOT_PERMITTED, "the kernel's cluster shape is set at compile time"};
      if (device.computeCapabilityMajor < 9)
        return invalidValue("thread block clusters need compute capability 9.0");
      if (value < 0) return invalidValue("a cluster dimension cannot be negative");
      kernel.setRequiredClusterDim(
          static_cast<int>(attrib) - static_cast<int>(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH),
          static_cast<uint32_t>(value), level);
      return {};
    // "The block scheduling policy of a function": a hint (CUclusterSchedulingPolicy).
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
          value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
        return invalidValue("not a CUclusterSchedulingPolicy");
      kernel.setClusterSchedulingPolicy(value, level);
      return {};
    default:
      return invalidValue("attribute cannot be set");
  }
}

Outcome paramInfo(const void* handle, size_t index, size_t* offset, size_t* size) {
  Result<core::Kernel*> found = lookupKernel(handle);
  if (!found) return found.error();
  const auto& params = (*found)->info().params;
  if (index >= params.size()) return invalidValue("parameter index out of range");
  if (offset != nullptr) *offset = params[index].offset;
  if (size != nullptr) *size = params[index].size;
  return {};
}

Outcome kernelName(const char** name, const void* handle) {
  // "If either **name or hfunc is NULL, CUDA_ERROR_INVALID_VALUE is returned."
  if (name == nullptr || handle == nullptr) return invalidValue("name or hfunc is NULL");
  Result<core::Kernel*> found = lookupKernel(handle);
  if (!found) return found.error();
  *name = (*found)->name().c_str();
  return {};
}

// Cache preferences are hints; Rocuda's devices have no configurable L1/shared split.
Outcome checkCacheHint(const void* handle, CUfunc_cache config) {
  Result<core::Kernel*> found = lookupKernel(handle);
  if (!found) return found.error();
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL)
    return invalidValue("unknown cache configuration");
  return {};
}

Outcome readFile(const char* path, std::vector<uint8_t>& data) {
  if (path == nullptr) return invalidValue("file name is NULL");
  Result<std::vector<uint8_t>> bytes = platform::readFile(path);
  if (!bytes) return {CUDA_ERROR_FILE_NOT_FOUND, bytes.error().message};
  data = std::move(*bytes);
  data.push_back(0);  // PTX text files are used as NUL-terminated strings
  return {};
}

// Device code's driver queries (backends::DeviceRuntimeQueries) for one module's launches, as
// the API answers them for the module's context: cudaGetDevice, cudaDeviceGetAttribute and the
// rest called in kernels (through NVIDIA's device runtime library) get what cudaGetDevice,
// cudaDeviceGetAttribute... would on the host.
class ModuleQueries final : public backends::DeviceRuntimeQueries {
 public:
  explicit ModuleQueries(core::Module& module) : module_(module) {}

  uint32_t device(int* ordinal) const override {
    *ordinal = module_.context().device().ordinal();
    return 0;
  }
  uint32_t deviceCount(int* count) const override {
    *count = core::Platform::instance().deviceCount();
    return 0;
  }
  uint32_t deviceAttribute(int* value, int attribute, int device) const override {
    return answer(deviceAttributeOf(value, attribute, device));
  }
  uint32_t limit(size_t* value, int limit) const override {
    // cudaLimit and CUlimit number the limits alike; device code reads those up to
    // cudaLimitPersistingL2CacheSize.
    if (limit < 0 || limit > static_cast<int>(core::ContextLimit::PersistingL2CacheSize))
      return kInvalidValue;
    *value = module_.context().limit(static_cast<core::ContextLimit>(limit));
    return 0;
  }
  uint32_t cacheConfig(int* config) const override {
    *config = static_cast<int>(api::cacheConfig(&module_.context()));
    return 0;
  }
  uint32_t sharedMemConfig(int* config) const override {
    *config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;  // as cuCtxGetSharedMemConfig
    return 0;
  }
  uint32_t functionAttribute(int* value, int attribute, std::string_view name) const override {
    Result<core::Kernel*> kernel = module_.kernel(name);
    if (!kernel) return kInvalidValue;
    return answer(api::functionAttribute(value, static_cast<CUfunction_attribute>(attribute),
                                         *kernel, AttributeLevel::Function));
  }
  uint32_t maxActiveBlocksPerMultiprocessor(int* blocks, std::string_view name, int blockSize,
                                            size_t dynamicSharedBytes,
                                            unsigned flags) const override {
    Result<core::Kernel*> kernel = module_.kernel(name);
    if (!kernel) return kInvalidValue;
    return answer(api::maxActiveBlocks(blocks, reinterpret_cast<CUfunction>(*kernel), blockSize,
                                       dynamicSharedBytes, flags));
  }

 private:
  static constexpr uint32_t kInvalidValue = 1;  // cudaErrorInvalidValue
  // cudaError_t of an answer: success, invalid device (101), or invalid value.
  static uint32_t answer(const Outcome& outcome) {
    if (outcome.ok()) return 0;
    return outcome.code() == CUDA_ERROR_INVALID_DEVICE ? 101 : kInvalidValue;
  }

  core::Module& module_;
};

std::unique_ptr<backends::DeviceRuntimeQueries> makeModuleQueries(core::Module& module) {
  return std::make_unique<ModuleQueries>(module);
}
const bool kModuleQueriesRegistered =
    (core::Module::setRuntimeQueriesFactory(&makeModuleQueries), true);

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return ROCUDA_API((module, image),
                    [&] { return api::loadModule(module, image, 0, nullptr, nullptr); });
}

ROCUDA_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                          unsigned int numOptions, CUjit_option* options,
                                          void** optionValues) {
  return ROCUDA_API((module, image, numOptions, options, optionValues), [&] {
    return api::loadModule(module, image, numOptions, options, optionValues);
  });
}

ROCUDA_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return ROCUDA_API((module, fatCubin),
                    [&] { return api::loadModule(module, fatCubin, 0, nullptr, nullptr); });
}

ROCUDA_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  return ROCUDA_API((module, fname), [&]() -> api::Outcome {
    std::vector<uint8_t> data;
    api::Outcome read = api::readFile(fname, data);
    if (!read.ok()) return read;
    return api::loadModule(module, data.data(), 0, nullptr, nullptr);
  });
}

ROCUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  return ROCUDA_API((hmod), [&]() -> api::Outcome {
    Result<core::Module*> module = api::lookupModule(hmod);
    if (!module) return module.error();
    // "Attempting to unload a module which was obtained from the Library Management API such as
    // cuLibraryGetModule will return CUDA_ERROR_NOT_PERMITTED."
    if ((*module)->fromLibrary())
      return {CUDA_ERROR_NOT_PERMITTED, "a library's module is unloaded with the library"};
    return core::Module::unload(*module);
  });
}

ROCUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  return ROCUDA_API((hfunc, hmod, name), [&]() -> api::Outcome {
    if (hfunc == nullptr || name == nullptr) return api::invalidValue("NULL argument");
    Result<core::Module*> module = api::lookupModule(hmod);
    if (!module) return module.error();
    Result<core::Kernel*> kernel = (*module)->kernel(name);
    if (!kernel) return kernel.error();
    *hfunc = api::toHandle<CUfunction>(*kernel);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  return ROCUDA_API((count, mod), [&]() -> api::Outcome {
    if (count == nullptr) return api::invalidValue("count is NULL");
    Result<core::Module*> module = api::lookupModule(mod);
    if (!module) return module.error();
    *count = static_cast<unsigned>((*module)->kernels().size());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions,
                                                  CUmodule mod) {
  return ROCUDA_API((functions, numFunctions, mod), [&]() -> api::Outcome {
    if (functions == nullptr && numFunctions > 0) return api::invalidValue("functions is NULL");
    Result<core::Module*> module = api::lookupModule(mod);
    if (!module) return module.error();
    std::vector<core::Kernel*> all = (*module)->kernels();
    for (size_t i = 0; i < all.size() && i < numFunctions; ++i)
      functions[i] = api::toHandle<CUfunction>(all[i]);
    return {};
  });
}

// Lazy loading made explicit: cuFuncLoad compiles the kernel now (the CPU device compiles each
// kernel at its first launch otherwise), cuFuncIsLoaded says whether that happened.
ROCUDA_EXPORT CUresult cuFuncLoad(CUfunction function) {
  return ROCUDA_API((function), [&]() -> api::Outcome {
    Result<core::Kernel*> kernel = api::lookupKernel(function);
    if (!kernel) return kernel.error();
    return (*kernel)->loaded().prepare();
  });
}

ROCUDA_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  return ROCUDA_API((state, function), [&]() -> api::Outcome {
    if (state == nullptr) return api::invalidValue("state is NULL");
    Result<core::Kernel*> kernel = api::lookupKernel(function);
    if (!kernel) return kernel.error();
    *state = (*kernel)->loaded().prepared() ? CU_FUNCTION_LOADING_STATE_LOADED
                                            : CU_FUNCTION_LOADING_STATE_UNLOADED;
    return {};
  });
}

// Texture and surface references: CUDA 12 removed them from the language and the PTX
// translator declares none, so no module has one by any name (NVIDIA's answer for a name that is
// not a reference of the module).
ROCUDA_EXPORT CUresult cuModuleGetTexRef(CUtexref* pTexRef, CUmodule hmod, const char* name) {
  return ROCUDA_API((pTexRef, hmod, name), [&]() -> api::Outcome {
    if (pTexRef == nullptr || name == nullptr) return api::invalidValue("NULL argument");
    Result<core::Module*> module = api::lookupModule(hmod);
    if (!module) return module.error();
    return {CUDA_ERROR_NOT_FOUND, "no texture reference '" + std::string(name) +
                                      "': texture references in PTX are not supported"};
  });
}

ROCUDA_EXPORT CUresult cuModuleGetSurfRef(CUsurfref* pSurfRef, CUmodule hmod, const char* name) {
  return ROCUDA_API((pSurfRef, hmod, name), [&]() -> api::Outcome {
    if (pSurfRef == nullptr || name == nullptr) return api::invalidValue("NULL argument");
    Result<core::Module*> module = api::lookupModule(hmod);
    if (!module) return module.error();
    return {CUDA_ERROR_NOT_FOUND, "no surface reference '" + std::string(name) +
                                      "': surface references in PTX are not supported"};
  });
}

ROCUDA_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                            const char* name) {
  return ROCUDA_API((dptr, bytes, hmod, name), [&]() -> api::Outcome {
    Result<core::Module*> module = api::lookupModule(hmod);
    if (!module) return module.error();
    return api::outputGlobal(dptr, bytes, **module, name);
  });
}

// Code is compiled when a library or module is loaded, and cudart then loads each library just
// before its first launch: the lazy mode.
ROCUDA_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  return ROCUDA_API((mode), [&]() -> api::Outcome {
    if (mode == nullptr) return api::invalidValue("mode is NULL");
    *mode = env::eagerModuleLoading() ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code,
                                         CUjit_option* jitOptions, void** jitOptionsValues,
                                         unsigned int numJitOptions,
                                         CUlibraryOption* libraryOptions,
                                         void** libraryOptionValues,
                                         unsigned int numLibraryOptions) {
  return ROCUDA_API((library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                     libraryOptionValues, numLibraryOptions),
                    [&] {
                      return api::loadLibrary(library, code, numJitOptions, jitOptions,
                                              jitOptionsValues, numLibraryOptions, libraryOptions,
                                              libraryOptionValues, /*fromFile=*/false);
                    });
}

ROCUDA_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName,
                                             CUjit_option* jitOptions, void** jitOptionsValues,
                                             unsigned int numJitOptions,
                                             CUlibraryOption* libraryOptions,
                                             void** libraryOptionValues,
                                             unsigned int numLibraryOptions) {
  return ROCUDA_API((library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                     libraryOptionValues, numLibraryOptions),
                    [&]() -> api::Outcome {
                      std::vector<uint8_t> data;
                      api::Outcome read = api::readFile(fileName, data);
                      if (!read.ok()) return read;
                      return api::loadLibrary(library, data.data(), numJitOptions, jitOptions,
                                              jitOptionsValues, numLibraryOptions, libraryOptions,
                                              libraryOptionValues, /*fromFile=*/true);
                    });
}

ROCUDA_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  return ROCUDA_API((library), [&]() -> api::Outcome {
    if (library == nullptr) return api::invalidValue("library is NULL");
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    return core::Module::unload(*found);
  });
}

ROCUDA_EXPORT CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  return ROCUDA_API((pKernel, library, name), [&]() -> api::Outcome {
    if (pKernel == nullptr || name == nullptr) return api::invalidValue("NULL argument");
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    Result<core::Kernel*> kernel = (*found)->kernel(name);
    if (!kernel) return kernel.error();
    *pKernel = api::toHandle<CUkernel>(*kernel);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  return ROCUDA_API((pFunc, kernel), [&]() -> api::Outcome {
    if (pFunc == nullptr) return api::invalidValue("pFunc is NULL");
    Result<core::Kernel*> found = api::lookupKernel(kernel);
    if (!found) return found.error();
    // "the function handle for the requested kernel and the current context".
    Result<core::Context*> current = api::currentContext();
    if (!current) return current.error();
    Result<core::Kernel*> function = (*found)->forContext(**current);
    if (!function) return function.error();
    *pFunc = api::toHandle<CUfunction>(*function);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                                          const char* name) {
  return ROCUDA_API((dptr, bytes, library, name), [&]() -> api::Outcome {
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    // "the global with name name for the requested library library and the current context".
    Result<core::Module*> instance =
        core::currentContext() ? (*found)->instanceFor(*core::currentContext()) : *found;
    if (!instance) return instance.error();
    return api::outputGlobal(dptr, bytes, **instance, name);
  });
}

// "the module handle associated with the current context": the library loaded there (into a
// context other than its first on this call, as with lazy loading).
ROCUDA_EXPORT CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  return ROCUDA_API((pMod, library), [&]() -> api::Outcome {
    if (pMod == nullptr) return api::invalidValue("pMod is NULL");
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<core::Module*> instance = (*found)->instanceFor(**context);
    if (!instance) return instance.error();
    *pMod = api::toHandle<CUmodule>(*instance == *found ? (*found)->moduleView() : *instance);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                                           const char* name) {
  return ROCUDA_API((dptr, bytes, library, name), [&]() -> api::Outcome {
    if (name == nullptr || (dptr == nullptr && bytes == nullptr))
      return api::invalidValue("name is NULL, or both dptr and bytes are");
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    Result<core::GlobalSymbol> managed = (*found)->managedGlobal(name);
    if (!managed) return managed.error();
    if (dptr != nullptr) *dptr = reinterpret_cast<uintptr_t>(managed->address);
    if (bytes != nullptr) *bytes = managed->size;
    return {};
  });
}

// Unified functions need CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, which no device here has;
// CUDA then answers NOT_FOUND.
ROCUDA_EXPORT CUresult cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library,
                                                   const char* symbol) {
  return ROCUDA_API((fptr, library, symbol), [&]() -> api::Outcome {
    if (fptr == nullptr || symbol == nullptr) return api::invalidValue("NULL argument");
    Result<core::Module*> found = api::lookupLibraryHandle(library);
    if (!found) return found.error();
    return {CUDA_ERROR_NOT_FOUND, "no device supports unified function pointers"};
  });
}

ROCUDA_EXPORT CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  return ROCUDA_API((count, lib), [&]() -> api::Outcome {
    if (count == nullptr) return api::invalidValue("count is NULL");
    Result<core::Module*> found = api::lookupLibraryHandle(lib);
    if (!found) return found.error();
    *count = static_cast<unsigned>((*found)->kernels().size());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels,
                                                 CUlibrary lib) {
  return ROCUDA_API((kernels, numKernels, lib), [&]() -> api::Outcome {
    if (kernels == nullptr && numKernels > 0) return api::invalidValue("kernels is NULL");
    Result<core::Module*> found = api::lookupLibraryHandle(lib);
    if (!found) return found.error();
    std::vector<core::Kernel*> all = (*found)->kernels();
    for (size_t i = 0; i < all.size() && i < numKernels; ++i)
      kernels[i] = api::toHandle<CUkernel>(all[i]);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  return ROCUDA_API((pLib, kernel), [&]() -> api::Outcome {
    if (pLib == nullptr) return api::invalidValue("pLib is NULL");
    Result<core::Kernel*> found = api::lookupKernel(kernel);
    if (!found) return found.error();
    if (!(*found)->module().isLibrary())
      return {CUDA_ERROR_INVALID_HANDLE, "the function belongs to a module, not a library"};
    *pLib = api::toHandle<CUlibrary>(&(*found)->module());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  return ROCUDA_API((hmod, hfunc), [&]() -> api::Outcome {
    if (hmod == nullptr) return api::invalidValue("hmod is NULL");
    Result<core::Kernel*> found = api::lookupKernel(hfunc);
    if (!found) return found.error();
    // A library's function (cuKernelGetFunction, the runtime's kernels) answers the library's
    // module, the one cuLibraryGetModule gives (cuModuleUnload refuses it).
    core::Module& owner = (*found)->module();
    *hmod = api::toHandle<CUmodule>(owner.isLibrary() ? owner.moduleView() : &owner);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel,
                                            CUdevice dev) {
  return ROCUDA_API((pi, attrib, kernel, dev), [&]() -> api::Outcome {
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    return api::functionAttribute(pi, attrib, kernel, api::AttributeLevel::Kernel);
  });
}

ROCUDA_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                            CUdevice dev) {
  return ROCUDA_API((attrib, val, kernel, dev), [&]() -> api::Outcome {
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    return api::setFunctionAttribute(kernel, attrib, val, api::AttributeLevel::Kernel);
  });
}

ROCUDA_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  return ROCUDA_API((kernel, config, dev), [&]() -> api::Outcome {
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    return api::checkCacheHint(kernel, config);
  });
}

ROCUDA_EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return ROCUDA_API((name, hfunc), [&] { return api::kernelName(name, hfunc); });
}

ROCUDA_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                                            size_t* paramSize) {
  return ROCUDA_API((kernel, paramIndex, paramOffset, paramSize), [&]() -> api::Outcome {
    // A CUkernel is read through the current context, as NVIDIA's driver does: none is
    // INVALID_CONTEXT (cuda.core's tests count on it).
    if (Result<core::Context*> current = api::currentContext(); !current) return current.error();
    return api::paramInfo(kernel, paramIndex, paramOffset, paramSize);
  });
}

ROCUDA_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return ROCUDA_API((pi, attrib, hfunc), [&] {
    return api::functionAttribute(pi, attrib, hfunc, api::AttributeLevel::Function);
  });
}

ROCUDA_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                          int value) {
  return ROCUDA_API((hfunc, attrib, value), [&] {
    return api::setFunctionAttribute(hfunc, attrib, value, api::AttributeLevel::Function);
  });
}

ROCUDA_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  return ROCUDA_API((hfunc, config), [&] { return api::checkCacheHint(hfunc, config); });
}

ROCUDA_EXPORT CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  return ROCUDA_API((hfunc, config), [&]() -> api::Outcome {
    Result<core::Kernel*> found = api::lookupKernel(hfunc);
    if (!found) return found.error();
    if (config < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
        config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
      return api::invalidValue("unknown shared memory configuration");
    return {};  // a bank-size hint; Rocuda's shared memory has no banks
  });
}

ROCUDA_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return ROCUDA_API((name, hfunc), [&] { return api::kernelName(name, hfunc); });
}

ROCUDA_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                                          size_t* paramSize) {
  return ROCUDA_API((func, paramIndex, paramOffset, paramSize),
                    [&] { return api::paramInfo(func, paramIndex, paramOffset, paramSize); });
}

}  // extern "C"
}  // namespace rocuda::cuda
