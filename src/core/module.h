// Code loaded from an application: a CUmodule (bound to a context) or a CUlibrary (cudart's
// per-translation-unit fatbin, loaded for the current device). The image's PTX is compiled for
// the device when it is loaded; kernels and globals are looked up by their PTX names.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/device_backend.h"
#include "core/object.h"
#include "fatbin/fatbin.h"
#include "support/result.h"

namespace rocuda::core {

class Context;
class Module;

class Kernel : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Kernel;
  // ptxArch: the compute_XX the kernel's PTX was generated for (what CUDA reports as the
  // function's PTX version; CUB/Thrust choose their tuning policies by it). constBytes: the
  // .const variables of the kernel's translation unit (CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES).
  Kernel(Module& module, backends::LoadedKernel& loaded, uint32_t ptxArch, uint64_t constBytes);

  Module& module() { return module_; }
  backends::LoadedKernel& loaded() { return loaded_; }
  // This kernel as loaded into `context`: itself, or for a library's kernel used in another
  // context, the same kernel of the library's instance there (Module::instanceFor).
  Result<Kernel*> forContext(Context& context);
  const compiler::KernelInfo& info() const { return loaded_.info(); }
  const std::string& name() const { return info().name; }
  uint32_t ptxArch() const { return ptxArch_; }
  uint64_t constBytes() const { return constBytes_; }
  // The most threads a block of this kernel may have: the device's limit, the PTX's .maxntid /
  // .reqntid, the module's CU_JIT_MAX_THREADS_PER_BLOCK, and the compiled code's own (an AMD
  // code object's flat work-group size).
  int maxThreadsPerBlock() const;
  // The static shared memory its blocks use, as CUDA reports it: the compiled code's figure
  // where the device has one (an AMD code object's LDS), else the PTX's; without sm_80's
  // reserved region, which every block has (reservedSharedBytesPerBlock).
  uint64_t staticSharedBytes() const;

  // The settable attributes (cuFuncSetAttribute's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  // and friends) exist at two levels. Set through cuKernelSetAttribute they are the CUkernel's,
  // which cuKernelGetAttribute "will always return"; set through cuFuncSetAttribute they are the
  // function's and "override the attribute set by" cuKernelSetAttribute for launches and
  // cuFuncGetAttribute, whichever came first. Function-level reads give the effective value.
  enum class Level { Kernel, Function };
  // Until set, CUDA's default: the device's shared memory per block less the static shared memory.
  // A library's kernel loaded into another context keeps the kernel level in the library's.
  int maxDynamicSharedBytes(Level level = Level::Function) const;
  void setMaxDynamicSharedBytes(int bytes, Level level) {
    set(&Kernel::maxDynamicShared_, bytes, level);
  }
  int preferredSharedCarveout(Level level = Level::Function) const {
    return get(&Kernel::carveout_, level, -1);
  }
  void setPreferredSharedCarveout(int percent, Level level) {
    set(&Kernel::carveout_, percent, level);
  }
  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: a permission for cluster launches
  // (which Rocuda refuses beyond one block), kept so that it reads back as set.
  bool nonPortableClusterSizeAllowed(Level level = Level::Function) const {
    return get(&Kernel::nonPortableClusters_, level, 0) != 0;
  }
  void setNonPortableClusterSizeAllowed(bool allowed, Level level) {
    set(&Kernel::nonPortableClusters_, allowed ? 1 : 0, level);
  }
  // CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: a hint for distributing clusters,
  // kept so that it reads back as set (CU_CLUSTER_SCHEDULING_POLICY_DEFAULT, 0, until then).
  int clusterSchedulingPolicy(Level level = Level::Function) const {
    return get(&Kernel::clusterSchedulingPolicy_, level, 0);
  }
  void setClusterSchedulingPolicy(int policy, Level level) {
    set(&Kernel::clusterSchedulingPolicy_, policy, level);
  }
  // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH (dimension 0, 1, 2): the compiled
  // __cluster_dims__ (.reqnctapercluster), else what was set at run time, else 0.
  uint32_t requiredClusterDim(int dimension, Level level = Level::Function) const;
  // Whether the code fixes the cluster shape (then it cannot be set: CUDA_ERROR_NOT_PERMITTED).
  bool clusterDimsCompiled() const;
  void setRequiredClusterDim(int dimension, uint32_t blocks, Level level) {
    set(requiredClusterAttribute(dimension), static_cast<int>(blocks), level);
  }

  // The launch configuration of the pre-CUDA-4.0 execution control (cuFuncSetBlockShape,
  // cuFuncSetSharedSize, cuParamSetSize, cuParamSet*), used by cuLaunch / cuLaunchGrid.
  struct LegacyLaunch {
    static constexpr size_t kParameterCapacity = 4096;  // CUDA's parameter space
    std::array<uint32_t, 3> block{0, 0, 0};             // 0: not set, and the launch fails
    uint32_t sharedBytes = 0;
    std::array<uint8_t, kParameterCapacity> parameters{};  // cuParamSet* write here
    uint32_t parameterBytes = 0;                           // cuParamSetSize: the bytes passed
  };
  // Reads or changes it under the kernel's lock.
  template <class F>
  auto withLegacyLaunch(F&& f) {
    std::lock_guard lock(legacyMutex_);
    return f(legacyLaunch_);
  }

 private:
  Module& module_;
  backends::LoadedKernel& loaded_;
  uint32_t ptxArch_;
  uint64_t constBytes_;
  friend class Module;
  // One settable attribute at both levels; -1: not set at that level.
  struct LeveledAttribute {
    mutable std::atomic<int> kernel{-1}, function{-1};
  };
  // Where the value of `attribute` at `level` lives: this kernel's, or at the kernel level of a
  // library's instance, the library's kernel.
  std::atomic<int>& slot(LeveledAttribute Kernel::*attribute, Level level) const {
    const Kernel& owner = libraryKernel_ ? *libraryKernel_ : *this;
    return level == Level::Function ? (this->*attribute).function : (owner.*attribute).kernel;
  }
  int get(LeveledAttribute Kernel::*attribute, Level level, int fallback) const {
    int f = slot(attribute, Level::Function), k = slot(attribute, Level::Kernel);
    if (level == Level::Function && f >= 0) return f;
    return k >= 0 ? k : fallback;
  }
  void set(LeveledAttribute Kernel::*attribute, int value, Level level) {
    slot(attribute, level) = value;
  }
  Kernel* libraryKernel_ = nullptr;  // an instance's kernel: the library's own
  LeveledAttribute maxDynamicShared_;
  LeveledAttribute carveout_;
  LeveledAttribute nonPortableClusters_;
  LeveledAttribute clusterSchedulingPolicy_;
  LeveledAttribute requiredClusterWidth_, requiredClusterHeight_, requiredClusterDepth_;
  static LeveledAttribute Kernel::*requiredClusterAttribute(int dimension) {
    return dimension == 0   ? &Kernel::requiredClusterWidth_
           : dimension == 1 ? &Kernel::requiredClusterHeight_
                            : &Kernel::requiredClusterDepth_;
  }
  std::mutex legacyMutex_;
  LegacyLaunch legacyLaunch_;
};

struct GlobalSymbol {
  void* address = nullptr;
  size_t size = 0;
};

class Module : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Module;

  // Load an image (fatbin wrapper, fatbin container, PTX text; see fatbin::detectImage) into
  // `context`'s device. `isLibrary` marks a CUlibrary handle. Errors: InvalidImage, InvalidPtx,
  // UnsupportedPtx, NoBinaryForGpu (kernels are then reported missing by name on lookup).
  // `imagePreserved`: a library's image stays valid until it is unloaded
  // (CU_LIBRARY_BINARY_IS_PRESERVED), so it is read again for other contexts, not copied.
  static Result<Module*> load(Context& context, const void* image, bool isLibrary,
                              bool imagePreserved = false);
  static Status unload(Module* module);
  // cuDevicePrimaryCtxReset: unload every module loaded into `context`. Libraries stay: on
  // NVIDIA they belong to no context (cudart's code is loaded as libraries, and it keeps their
  // handles across cudaDeviceReset).
  static void unloadContextModules(Context& context);
  // ... and the libraries' __device__ and __constant__ variables get the values of their image
  // again, as in NVIDIA's new context (cudart's next launch loads the library afresh there).
  static void reinitializeLibraryGlobals(Context& context);

  ~Module() override;
  Context& context() { return context_; }
  bool isLibrary() const { return isLibrary_; }

  // NotFound (naming the kernel; explaining a missing PTX when the image had only SASS).
  Result<Kernel*> kernel(std::string_view name);
  Result<GlobalSymbol> global(std::string_view name);
  // A `.global .attribute(.managed)` variable (__managed__); NotFound for any other name.
  Result<GlobalSymbol> managedGlobal(std::string_view name);
  std::vector<Kernel*> kernels();

  // cuLibraryGetModule: a CUmodule for a library, made once and owned by it. It finds the
  // library's kernels and globals, and goes away with the library (unload refuses it alone).
  Module* moduleView();
  bool isView() const { return viewOf_ != nullptr; }

  // A library is context-independent, as in CUDA: it is loaded for the context current at
  // cuLibraryLoadData, and into any other context on first use there (a kernel launched or got
  // as a function there, its module or a global asked for there). The library itself for its
  // first context, else an instance (a module of that context, owned by the library: its own
  // variables, kernels whose CUkernel-level attributes are the library's).
  Result<Module*> instanceFor(Context& context);
  // The library a module belongs to: itself, the library of a view or of an instance, or null.
  Module* library() { return isLibrary_ ? this : viewOf_ ? viewOf_ : instanceOf_; }
  // Obtained from the Library Management API (a view or an instance): cuModuleUnload refuses it.
  bool fromLibrary() const { return viewOf_ != nullptr || instanceOf_ != nullptr; }

  // JIT options of cuModuleLoadDataEx / cuLibraryLoadData that shape the compiled kernels:
  // CU_JIT_MAX_THREADS_PER_BLOCK (0: none), whether it overrides a kernel's own .maxntid
  // (CU_JIT_OVERRIDE_DIRECTIVE_VALUES), and CU_JIT_CACHE_MODE's "ca" (global loads cached in L1,
  // as CU_FUNC_ATTRIBUTE_CACHE_MODE_CA reports; the CPU's caches behave so anyway).
  struct JitRequests {
    uint32_t maxThreadsPerBlock = 0;
    bool overrideDirectives = false;
    bool cacheGlobalLoadsInL1 = false;
  };
  void setJitRequests(const JitRequests& requests) { jit_ = requests; }
  const JitRequests& jitRequests() const { return viewOf_ ? viewOf_->jit_ : jit_; }

  // The answers to device code's driver queries for this module's launches
  // (backends::DeviceRuntimeQueries: cudaGetDevice, cudaDeviceGetAttribute, cudaFuncGetAttributes
  // ... called in kernels), made on first use by the factory the API layer registers, which
  // answers them as the API does; null when none is registered.
  const backends::DeviceRuntimeQueries* runtimeQueries();
  using RuntimeQueriesFactory = std::unique_ptr<backends::DeviceRuntimeQueries> (*)(Module&);
  static void setRuntimeQueriesFactory(RuntimeQueriesFactory factory);

 private:
  Module(Context& context, bool isLibrary);
  Status loadContents(fatbin::ImageContents contents);
  void warnSassOnly() const;
  void dropInstance(Context& context);

  Context& context_;
  bool isLibrary_;
  std::mutex mutex_;
  std::once_flag queriesMade_;
  std::unique_ptr<backends::DeviceRuntimeQueries> queries_;
  std::vector<std::unique_ptr<backends::LoadedModule>> loaded_;  // one per translation unit
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels_;
  std::vector<uint32_t> sassOnlyArchs_;  // non-empty when the image carried no PTX
  std::vector<std::string> sassKernels_;  // a cubin's kernels, when it was one
  std::vector<void*> registeredGlobals_;
  // Libraries: each variable's address and its value as loaded (empty: zero).
  struct InitialValue {
    void* address;
    size_t size;
    std::vector<uint8_t> bytes;
  };
  std::vector<InitialValue> initialValues_;
  static std::optional<InitialValue> initialValue(Context& context, void* address,
                                                  const compiler::GlobalInfo& global);
  std::vector<std::string> managedNames_;
  Module* viewOf_ = nullptr;  // set in a library's module view
  JitRequests jit_;
  // A library's way back to its code for other contexts: its image, or a copy of its PTX.
  const void* image_ = nullptr;
  std::vector<fatbin::PtxProgram> programs_;
  Module* instanceOf_ = nullptr;  // set in an instance: the library it was loaded from
  struct Instance {
    Context* context;  // checked against the key (the context's id) before use
    std::unique_ptr<Module> module;
  };
  std::mutex instancesMutex_;
  std::map<uint64_t, Instance> instances_;  // by context id
  std::unique_ptr<Module> view_;
};

// cuLibrary handles are Modules too; a distinct kind keeps CUmodule/CUlibrary handles apart.
Module* lookupLibrary(const void* handle);

// -rdc=true: the translation units of a program call each other's functions and use each
// other's variables, which nvlink resolves for NVIDIA's GPUs; here their PTX is linked into one
// program (ptx/link.h), compiled as a whole (by module loads, and by `rocuda compile`).
Result<fatbin::PtxProgram> linkRelocatableUnits(const std::vector<fatbin::PtxProgram>& units);

}  // namespace rocuda::core
