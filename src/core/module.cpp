#include "core/module.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <tuple>

#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "fatbin/fatbin.h"
#include "ptx/link.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "support/log.h"

namespace rocuda::core {
namespace {

// Modules are owned here rather than by their context: cudart may unload a library after the
// context it was loaded for is gone (at exit), and must still find it valid.
std::mutex& modulesMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

std::set<Module*>& modules() {
  static std::set<Module*>* all = new std::set<Module*>();
  return *all;
}

// The __managed__ variables of a PTX program. Parsing again costs time, so only programs that
// mention the attribute at all are parsed.
std::vector<std::string> managedVariables(const std::string& text, const std::string& name) {
  std::vector<std::string> names;
  if (text.find(".managed") == std::string::npos) return names;
  ptx::ParseResult parsed = ptx::parseModule(text, name);
  for (const ptx::Variable& variable : parsed.module.globals)
    if (variable.managed) names.push_back(variable.name);
  return names;
}

}  // namespace

Result<fatbin::PtxProgram> linkRelocatableUnits(const std::vector<fatbin::PtxProgram>& units) {
  std::vector<ptx::Module> parsed;
  fatbin::PtxProgram linked;
  for (const fatbin::PtxProgram& unit : units) {
    ptx::ParseResult result = ptx::parseModule(unit.text, unit.name);
    if (result.hasErrors()) return makeError(ErrorCode::InvalidPtx, result.formatDiagnostics());
    parsed.push_back(std::move(result.module));
    linked.arch = std::max(linked.arch, unit.arch);
    if (std::tie(unit.isaMajor, unit.isaMinor) > std::tie(linked.isaMajor, linked.isaMinor)) {
      linked.isaMajor = unit.isaMajor;
      linked.isaMinor = unit.isaMinor;
    }
  }
  ptx::LinkResult result = ptx::linkModules(std::move(parsed));
  if (!result.ok()) {
    std::string message =
        "linking the " + std::to_string(units.size()) + " translation units of an -rdc program:";
    for (const std::string& e : result.errors) message += "\n  " + e;
    return makeError(ErrorCode::InvalidPtx, message);
  }
  linked.text = ptx::printModule(result.module);
  linked.name = units.front().name.substr(0, units.front().name.find(" (unit ")) + " (" +
                std::to_string(units.size()) + " units linked)";
  return linked;
}

Kernel::Kernel(Module& module, backends::LoadedKernel& loaded, uint32_t ptxArch,
               uint64_t constBytes)
    : Object(ObjectKind::Kernel),
      module_(module),
      loaded_(loaded),
      ptxArch_(ptxArch),
      constBytes_(constBytes) {}

int Kernel::maxThreadsPerBlock() const {
  int limit = module_.context().device().description().maxThreadsPerBlock;
  // ptxas's --maxntid (CU_JIT_MAX_THREADS_PER_BLOCK) is "ignored for kernels with .maxntid"
  // unless the directives are overridden (CU_JIT_OVERRIDE_DIRECTIVE_VALUES).
  const Module::JitRequests& jit = module_.jitRequests();
  bool jitLimit = jit.maxThreadsPerBlock != 0 && (info().maxntid[0] == 0 || jit.overrideDirectives);
  if (jitLimit) limit = std::min<int>(limit, static_cast<int>(jit.maxThreadsPerBlock));
  auto bound = [&limit](const std::array<uint32_t, 3>& dims) {
    if (dims[0] == 0) return;
    long long product = 1LL * dims[0] * std::max(1u, dims[1]) * std::max(1u, dims[2]);
    limit = static_cast<int>(std::min<long long>(limit, product));
  };
  if (!jitLimit || !jit.overrideDirectives) bound(info().maxntid);
  bound(info().reqntid);
  int compiled = loaded_.resources().maxThreadsPerBlock;
  return compiled > 0 ? std::min(limit, compiled) : limit;
}

int Kernel::maxDynamicSharedBytes(Level level) const {
  long long available = 1LL * module_.context().device().description().sharedMemPerBlock -
                        static_cast<long long>(staticSharedBytes());
  return get(&Kernel::maxDynamicShared_, level, static_cast<int>(std::max(0LL, available)));
}

bool Kernel::clusterDimsCompiled() const {
  const auto& dims = info().reqnctapercluster;
  return dims[0] != 0 || dims[1] != 0 || dims[2] != 0;
}

uint32_t Kernel::requiredClusterDim(int dimension, Level level) const {
  if (clusterDimsCompiled()) return info().reqnctapercluster[dimension];
  return static_cast<uint32_t>(get(requiredClusterAttribute(dimension), level, 0));
}

uint64_t Kernel::staticSharedBytes() const {
  int compiled = loaded_.resources().staticSharedBytes;
  uint64_t bytes = compiled >= 0 ? static_cast<uint64_t>(compiled) : info().staticSharedBytes;
  // The reserved region is the driver's, not the kernel's (reservedSharedBytesPerBlock).
  if (info().usesReservedShared && bytes >= compiler::kReservedSharedBytes)
    bytes -= compiler::kReservedSharedBytes;
  return bytes;
}

Module::Module(Context& context, bool isLibrary)
    : Object(isLibrary ? ObjectKind::Library : ObjectKind::Module), context_(context),
      isLibrary_(isLibrary) {}

namespace {
std::atomic<Module::RuntimeQueriesFactory> runtimeQueriesFactory{nullptr};
}  // namespace

void Module::setRuntimeQueriesFactory(RuntimeQueriesFactory factory) {
  runtimeQueriesFactory.store(factory, std::memory_order_release);
}

const backends::DeviceRuntimeQueries* Module::runtimeQueries() {
  std::call_once(queriesMade_, [this] {
    if (RuntimeQueriesFactory make = runtimeQueriesFactory.load(std::memory_order_acquire))
      queries_ = make(*this);
  });
  return queries_.get();
}

Module::~Module() {
  instances_.clear();  // their kernels refer to this library's
  view_.reset();
  for (void* base : registeredGlobals_) unregisterGlobal(base);
  kernels_.clear();  // kernels refer into loaded_
}

// What a variable holds right after loading (kept only when not all zero).
// What a variable holds right after loading: its initializer's bytes, read back from the device
// (a variable without one is zero and costs nothing to keep).
std::optional<Module::InitialValue> Module::initialValue(Context& context, void* address,
                                                         const compiler::GlobalInfo& global) {
  InitialValue value{address, global.size, {}};
  if (!global.initialized) return value;
  value.bytes.resize(global.size);
  Status read = context.device().backend().copy(value.bytes.data(), address, global.size);
  if (!read.ok()) {
    log::warning("library variable '" + global.name +
                 "' will keep its values at a context reset: " + read.error().message);
    return std::nullopt;
  }
  return value;
}

// An image's PTX for `context`'s device (the best arch for its compute capability), the units of
// an -rdc program linked into one.
Result<fatbin::ImageContents> readContents(Context& context, const void* image) {
  const auto& description = context.device().description();
  uint32_t arch = static_cast<uint32_t>(description.computeCapabilityMajor * 10 +
                                        description.computeCapabilityMinor);
  auto contents = fatbin::readImage(image, arch);
  if (!contents.ok()) return contents.takeError();
  if (contents->relocatable && contents->ptx.size() > 1) {
    Result<fatbin::PtxProgram> linked = linkRelocatableUnits(contents->ptx);
    if (!linked) return linked.takeError();
    contents->ptx = {std::move(*linked)};
  }
  return std::move(*contents);
}

Result<Module*> Module::load(Context& context, const void* image, bool isLibrary,
                             bool imagePreserved) {
  if (image == nullptr) return makeError(ErrorCode::InvalidValue, "image is NULL");
  ROCUDA_TRY(context.stickyError());  // nothing loads into a context with a failed kernel
  Result<fatbin::ImageContents> contents = readContents(context, image);
  if (!contents) return contents.takeError();
  std::unique_ptr<Module> module(new Module(context, isLibrary));
  // A library is loaded again into each other context that uses it (instanceFor): from its
  // image when the caller keeps it (cudart does, CU_LIBRARY_BINARY_IS_PRESERVED), else from a
  // copy of its PTX.
  if (isLibrary && imagePreserved) module->image_ = image;
  if (isLibrary && !imagePreserved) module->programs_ = contents->ptx;
  ROCUDA_TRY(module->loadContents(std::move(*contents)));
  Module* raw = module.release();
  std::lock_guard lock(modulesMutex());
  modules().insert(raw);
  return raw;
}

Status Module::loadContents(fatbin::ImageContents contents) {
  if (contents.ptx.empty()) {
    sassOnlyArchs_ = contents.sassArchs;
    sassKernels_ = std::move(contents.sassKernels);
    if (!sassOnlyArchs_.empty()) warnSassOnly();
  }
  for (const auto& program : contents.ptx) {
    auto loaded = context_.device().backend().loadPtx(program.text, program.name);
    if (!loaded.ok()) return loaded.takeError();
    backends::LoadedModule& code = **loaded;
    // Constant memory is per translation unit: every kernel of it reports the unit's total.
    uint64_t constBytes = 0;
    for (const auto& global : code.info().globals)
      if (global.space == ptx::StateSpace::Const) constBytes += global.size;
    for (const auto& kernelInfo : code.info().kernels) {
      backends::LoadedKernel* kernel = code.kernel(kernelInfo.name);
      if (kernel != nullptr && !kernels_.count(kernelInfo.name))
        kernels_.emplace(kernelInfo.name,
                         std::make_unique<Kernel>(*this, *kernel, program.arch, constBytes));
    }
    for (const auto& global : code.info().globals) {
      if (void* address = code.globalAddress(global.name)) {
        registerGlobal(&context_, address, global.size, global.managed);
        registeredGlobals_.push_back(address);
        if (isLibrary_)
          if (auto value = initialValue(context_, address, global))
            initialValues_.push_back(std::move(*value));
      }
    }
    for (std::string& managed : managedVariables(program.text, program.name))
      managedNames_.push_back(std::move(managed));
    loaded_.push_back(std::move(*loaded));
  }
  log::info("loaded " + std::string(isLibrary_ ? "library" : "module") + " with " +
            std::to_string(kernels_.size()) + " kernel(s) from " +
            std::to_string(contents.ptx.size()) + " PTX program(s)");
  return Status::success();
}

// A module of machine code only loads, as on NVIDIA's driver, but none of its kernels can run
// here, and a library that loads its own (cuFFT does, for some sizes) then fails without saying
// why: say it once per process. Not for libraries (and their instances in other contexts), the
// images cudart registers for every translation unit (PyTorch's hold SASS-only ones by the
// hundred): their kernels fail by name when launched.
void Module::warnSassOnly() const {
  std::string message = "a module loaded carries only machine code (SASS for " +
                        fatbin::sassArchList(sassOnlyArchs_) +
                        "), no PTX: none of its kernels can run on Rocuda";
  static std::atomic<bool> warned{false};
  if (isLibrary_ || instanceOf_ != nullptr || warned.exchange(true)) {
    log::info(message);
    return;
  }
  log::warning(message +
               " (a library that loads its own kernels, such as cuFFT, fails the "
               "operations that need them; given once per process, ROCUDA_LOG=1 logs "
               "each such module)");
}

Result<Module*> Module::instanceFor(Context& context) {
  if (viewOf_ != nullptr) return viewOf_->instanceFor(context);
  if (instanceOf_ != nullptr) return instanceOf_->instanceFor(context);
  if (!isLibrary_ || &context == &context_) return this;
  std::lock_guard lock(instancesMutex_);
  // Instances of destroyed contexts go (a new context may reuse the address, never the id).
  for (auto it = instances_.begin(); it != instances_.end();) {
    Context* owner = lookupHandle<Context>(it->second.context);
    it = owner == nullptr || owner->id() != it->first ? instances_.erase(it) : std::next(it);
  }
  if (auto it = instances_.find(context.id()); it != instances_.end())
    return it->second.module.get();
  fatbin::ImageContents contents;
  if (image_ != nullptr) {
    Result<fatbin::ImageContents> read = readContents(context, image_);
    if (!read) return read.takeError();
    contents = std::move(*read);
  } else {
    contents.ptx = programs_;
    contents.sassArchs = sassOnlyArchs_;
    contents.sassKernels = sassKernels_;
  }
  std::unique_ptr<Module> instance(new Module(context, /*isLibrary=*/false));
  instance->instanceOf_ = this;
  instance->jit_ = jit_;
  ROCUDA_TRY(instance->loadContents(std::move(contents)));
  for (auto& [name, kernel] : instance->kernels_)
    if (auto own = kernels_.find(name); own != kernels_.end())
      kernel->libraryKernel_ = own->second.get();
  log::info("library loaded into context " + std::to_string(context.id()) +
            " besides its first (context " + std::to_string(context_.id()) + ")");
  Module* raw = instance.get();
  instances_.emplace(context.id(), Instance{&context, std::move(instance)});
  return raw;
}

void Module::dropInstance(Context& context) {
  std::unique_ptr<Module> dropped;
  {
    std::lock_guard lock(instancesMutex_);
    auto it = instances_.find(context.id());
    if (it == instances_.end()) return;
    dropped = std::move(it->second.module);
    instances_.erase(it);
  }
}

Result<Kernel*> Kernel::forContext(Context& context) {
  Module* library = module_.library();
  if (library == nullptr || &module_.context() == &context) return this;
  Result<Module*> instance = library->instanceFor(context);
  if (!instance) return instance.takeError();
  return (*instance)->kernel(name());
}

Status Module::unload(Module* module) {
  if (module->fromLibrary())
    return makeError(ErrorCode::InvalidHandle, "a library's module is unloaded with the library");
  {
    std::lock_guard lock(modulesMutex());
    if (modules().erase(module) == 0)
      return makeError(ErrorCode::InvalidHandle, "module is not loaded");
  }
  // Kernels of the module may still run on the context's streams (a launch returns at once):
  // its code goes only once they are done. Their errors stay the context's, for later calls.
  // So may a library's kernels in the other contexts it was loaded into.
  if (lookupHandle<Context>(&module->context()) != nullptr) (void)module->context().synchronize();
  {
    std::lock_guard lock(module->instancesMutex_);
    for (auto& [id, instance] : module->instances_)
      if (Context* owner = lookupHandle<Context>(instance.context); owner && owner->id() == id)
        (void)owner->synchronize();
  }
  delete module;
  return Status::success();
}

void Module::unloadContextModules(Context& context) {
  std::vector<Module*> owned;
  {
    std::lock_guard lock(modulesMutex());
    for (auto it = modules().begin(); it != modules().end();) {
      if (&(*it)->context() == &context && !(*it)->isLibrary()) {
        owned.push_back(*it);
        it = modules().erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Module* module : owned) delete module;
  // The libraries loaded into it besides their first context are loaded afresh on next use.
  std::vector<Module*> libraries;
  {
    std::lock_guard lock(modulesMutex());
    for (Module* module : modules())
      if (module->isLibrary()) libraries.push_back(module);
  }
  for (Module* library : libraries) library->dropInstance(context);
}

void Module::reinitializeLibraryGlobals(Context& context) {
  std::vector<Module*> libraries;
  {
    std::lock_guard lock(modulesMutex());
    for (Module* module : modules())
      if (&module->context() == &context && module->isLibrary()) libraries.push_back(module);
  }
  backends::DeviceBackend& backend = context.device().backend();
  for (Module* library : libraries)
    for (const InitialValue& value : library->initialValues_) {
      Status restored = value.bytes.empty()
                            ? backend.fill(value.address, 0, 1, value.size)
                            : backend.copy(value.address, value.bytes.data(), value.size);
      if (!restored.ok())
        log::warning("cannot restore a library variable at reset: " + restored.error().message);
    }
}

Module* Module::moduleView() {
  std::lock_guard lock(mutex_);
  if (!view_) {
    view_.reset(new Module(context_, /*isLibrary=*/false));
    view_->viewOf_ = this;
  }
  return view_.get();
}

Result<GlobalSymbol> Module::managedGlobal(std::string_view name) {
  if (viewOf_ != nullptr) return viewOf_->managedGlobal(name);
  bool managed = false;
  {
    std::lock_guard lock(mutex_);
    for (const std::string& m : managedNames_) managed = managed || m == name;
  }
  if (!managed)
    return makeError(ErrorCode::NotFound,
                     "no managed variable named '" + std::string(name) + "' in this library");
  return global(name);
}

Result<Kernel*> Module::kernel(std::string_view name) {
  if (viewOf_ != nullptr) return viewOf_->kernel(name);
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(name);
  if (it != kernels_.end()) return it->second.get();
  // A cubin tells its kernels apart: only those are "there, but without PTX".
  bool inCubin = std::find(sassKernels_.begin(), sassKernels_.end(), name) != sassKernels_.end();
  if (!sassOnlyArchs_.empty() && (sassKernels_.empty() || inCubin))
    return makeError(ErrorCode::NoBinaryForGpu, fatbin::noPtxMessage(name, sassOnlyArchs_));
  return makeError(ErrorCode::NotFound, "no kernel named '" + std::string(name) + "' in this module");
}

Result<GlobalSymbol> Module::global(std::string_view name) {
  if (viewOf_ != nullptr) return viewOf_->global(name);
  std::lock_guard lock(mutex_);
  for (auto& code : loaded_) {
    const compiler::GlobalInfo* info = code->info().findGlobal(name);
    if (info == nullptr) continue;
    if (void* address = code->globalAddress(name)) return GlobalSymbol{address, info->size};
  }
  return makeError(ErrorCode::NotFound, "no global named '" + std::string(name) + "' in this module");
}

std::vector<Kernel*> Module::kernels() {
  if (viewOf_ != nullptr) return viewOf_->kernels();
  std::lock_guard lock(mutex_);
  std::vector<Kernel*> all;
  for (auto& [name, kernel] : kernels_) all.push_back(kernel.get());
  return all;
}

Module* lookupLibrary(const void* handle) {
  return static_cast<Module*>(findObject(handle, ObjectKind::Library));
}

}  // namespace rocuda::core
