// The CPU device: host memory is device memory, kernels are host code from the compiler, and a
// grid's blocks run on a pool of all cores.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "backends/cpu/execution.h"
#include "backends/cpu/memcheck.h"
#include "backends/cpu/thread_pool.h"
#include "backends/device_backend.h"
#include "support/disk_cache.h"
#include "support/env.h"
#include "support/log.h"
#include "support/platform.h"
#include "support/sha256.h"

namespace rocuda::backends {
namespace cpu {
namespace {

// Device allocations are aligned like cudaMalloc's (256 bytes), so vector loads in kernels and
// alignment assumptions applications make hold.
constexpr size_t kAllocationAlignment = 256;

class CpuKernel final : public LoadedKernel {
 public:
  CpuKernel(const compiler::KernelInfo& info, KernelCode code) : info_(info), code_(code) {}
  const compiler::KernelInfo& info() const override { return info_; }
  const KernelCode& code() const { return code_; }

 private:
  const compiler::KernelInfo& info_;
  KernelCode code_;
};

class CpuModule final : public LoadedModule {
 public:
  CpuModule(compiler::ModuleInfo info, std::unique_ptr<compiler::HostCode> code)
      : info_(std::move(info)), code_(std::move(code)) {
    if (!memcheckEnabled()) return;
    for (const auto& global : info_.globals)
      if (void* address = code_->lookup(global.name)) {
        AllocationMap::instance().add(address, global.size, /*owned=*/false);
        memcheckGlobals_.push_back(address);
      }
  }
  ~CpuModule() override {
    for (void* address : memcheckGlobals_) AllocationMap::instance().remove(address, false);
  }

  Status resolveKernels() {
    for (const auto& kernelInfo : info_.kernels) {
      KernelCode kernelCode;
      kernelCode.execution = kernelInfo.cpuExecution;
      kernelCode.frameBytes = kernelInfo.cpuFrameBytes;
      void* address = code_->lookup(compiler::hostEntrySymbol(kernelInfo));
      switch (kernelInfo.cpuExecution) {
        case compiler::CpuExecution::BlockLoop:
          kernelCode.blockLoop = reinterpret_cast<BlockLoopEntry>(address);
          break;
        case compiler::CpuExecution::Continuation:
          kernelCode.continuation = reinterpret_cast<ContinuationEntry>(address);
          kernelCode.round = reinterpret_cast<RoundEntry>(
              code_->lookup(compiler::roundSymbol(kernelInfo.name)));
          if (kernelCode.round == nullptr) address = nullptr;
          break;
        case compiler::CpuExecution::ThreadEntry:
          kernelCode.threadEntry = reinterpret_cast<KernelEntry>(address);
          if (!kernelInfo.cpuSlowPathReason.empty())
            log::info("kernel '" + kernelInfo.name + "' runs on the slow path (a fiber per " +
                      "thread): " + kernelInfo.cpuSlowPathReason);
          break;
      }
      if (address == nullptr)
        return makeError(ErrorCode::InvalidImage,
                         "compiled code lacks kernel '" + kernelInfo.name + "'");
      kernels_.emplace(kernelInfo.name, std::make_unique<CpuKernel>(kernelInfo, kernelCode));
    }
    return Status::success();
  }

  const compiler::ModuleInfo& info() const override { return info_; }
  LoadedKernel* kernel(std::string_view name) override {
    auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : it->second.get();
  }
  void* globalAddress(std::string_view name) override {
    return info_.findGlobal(name) ? code_->lookup(name) : nullptr;
  }

 private:
  compiler::ModuleInfo info_;
  std::unique_ptr<compiler::HostCode> code_;
  std::map<std::string, std::unique_ptr<CpuKernel>, std::less<>> kernels_;
  std::vector<void*> memcheckGlobals_;  // registered in the memcheck allocation map
};

unsigned configuredThreads() {
  if (auto value = env::get("ROCUDA_CPU_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(value->c_str(), &end, 10);
    if (end != value->c_str() && *end == '\0' && n > 0 && n <= 4096) return static_cast<unsigned>(n);
    log::warning("ROCUDA_CPU_THREADS='" + *value + "' is not a thread count; using all cores");
  }
  return platform::hardwareThreads();
}

class CpuDevice final : public DeviceBackend {
 public:
  CpuDevice() : pool_(configuredThreads()) { describe(); }

  const DeviceDescription& description() const override { return description_; }

  Result<void*> allocateDevice(size_t bytes) override { return allocate(bytes); }
  void freeDevice(void* pointer) override { release(pointer); }
  Result<void*> allocateHost(size_t bytes) override { return allocate(bytes); }
  void freeHost(void* pointer) override { release(pointer); }
  uint64_t freeMemory() const override { return platform::availablePhysicalMemory(); }
  void hostRangeRegistered(void* base, size_t bytes, bool registered) override {
    if (!memcheckEnabled()) return;
    if (registered)
      AllocationMap::instance().add(base, bytes, /*owned=*/false);
    else
      AllocationMap::instance().remove(base, /*owned=*/false);
  }

  Status copy(void* destination, const void* source, size_t bytes) override {
    if (bytes != 0) std::memmove(destination, source, bytes);
    return Status::success();
  }

  Status fill(void* destination, uint32_t value, size_t elementBytes, size_t count) override {
    auto* out = static_cast<uint8_t*>(destination);
    if (elementBytes == 1) {
      std::memset(out, static_cast<int>(value & 0xff), count);
    } else {
      for (size_t i = 0; i < count; ++i) std::memcpy(out + i * elementBytes, &value, elementBytes);
    }
    return Status::success();
  }

  Status copy2D(void* destination, size_t destinationPitch, const void* source, size_t sourcePitch,
                size_t widthBytes, size_t height) override {
    for (size_t row = 0; row < height; ++row)
      std::memmove(static_cast<uint8_t*>(destination) + row * destinationPitch,
                   static_cast<const uint8_t*>(source) + row * sourcePitch, widthBytes);
    return Status::success();
  }

  Result<std::unique_ptr<LoadedModule>> loadPtx(std::string_view ptx,
                                                std::string_view moduleName) override;
  Status launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) override;

 private:
  void describe();
  // The host object for `ptx`, from the code cache unless `refresh`; `fromCache` tells which.
  Result<compiler::HostObject> compileCached(std::string_view ptx, std::string_view moduleName,
                                             bool refresh, bool* fromCache);

  Result<void*> allocate(size_t bytes) {
    size_t rounded = (std::max<size_t>(bytes, 1) + kAllocationAlignment - 1) /
                     kAllocationAlignment * kAllocationAlignment;
    void* memory = std::aligned_alloc(kAllocationAlignment, rounded);
    if (memory == nullptr)
      return makeError(ErrorCode::OutOfMemory,
                       "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    // Memcheck knows the size asked for: an access into the rounding padding is reported.
    if (memcheckEnabled()) AllocationMap::instance().add(memory, bytes, /*owned=*/true);
    return memory;
  }
  void release(void* pointer) {
    if (!memcheckEnabled()) return std::free(pointer);
    // Freed memory stays in the quarantine (not reused) for a while: see memcheck.h.
    for (void* old : AllocationMap::instance().remove(pointer, /*owned=*/true)) std::free(old);
  }

  DeviceDescription description_;
  std::string hostTarget_;  // triple, CPU and features: code for one CPU may not run on another
  ThreadPool pool_;
  std::atomic<uint32_t> nextGridId_{1};
};

void CpuDevice::describe() {
  DeviceDescription& d = description_;
  d.backendName = "cpu";
  d.name = "Rocuda CPU (" + platform::cpuModelName() + ")";
  hostTarget_ = compiler::hostTargetName();
  d.nativeTarget = hostTarget_.substr(0, hostTarget_.find(" +"));  // without the feature list
  auto [major, minor] = env::computeCapability();
  d.computeCapabilityMajor = major;
  d.computeCapabilityMinor = minor;
  d.totalMemory = platform::totalPhysicalMemory();
  d.multiprocessorCount = static_cast<int>(pool_.workerCount());
  d.integrated = true;
  d.pageableMemoryAccess = true;
  d.hostNativeAtomics = true;
  d.sharedMemPerBlock = 48 * 1024;
  d.sharedMemPerBlockOptin = 96 * 1024;
  d.sharedMemPerMultiprocessor = 100 * 1024;
  d.l2CacheBytes = 4 * 1024 * 1024;
  // A stable identity: the same machine reports the same UUID run after run.
  auto digest = Sha256::digest(d.name.data(), d.name.size());
  std::copy_n(digest.begin(), 16, d.uuid.begin());
}

Result<compiler::HostObject> CpuDevice::compileCached(std::string_view ptx,
                                                      std::string_view moduleName, bool refresh,
                                                      bool* fromCache) {
  *fromCache = false;
  compiler::CompileOptions options;
  options.blockFunctions = env::get("ROCUDA_CPU_BLOCK_FORMS").value_or("1") != "0";
  options.memcheck = memcheckEnabled();
  Sha256 key;
  key.update(compiler::kCompilerVersion);
  key.update(std::string_view("\0", 1));
  key.update(hostTarget_);
  key.update(std::string_view("\0", 1));
  key.update("O" + std::to_string(options.optLevel) + (options.blockFunctions ? "" : " threads") +
             (options.memcheck ? " memcheck" : ""));
  key.update(std::string_view("\0", 1));
  key.update(ptx);
  std::string cacheKey = Sha256::hex(key.finish());

  DiskCache& cache = DiskCache::instance();
  if (auto entry = refresh ? std::nullopt : cache.load(cacheKey)) {
    auto object = compiler::HostObject::deserialize(entry->data(), entry->size());
    *fromCache = object.ok();
    if (object.ok()) return object;
    log::warning("code cache entry for '" + std::string(moduleName) + "' is unreadable (" +
                 object.error().message + "); recompiling");
  }
  log::info("compiling PTX module '" + std::string(moduleName) + "' for the host");
  auto object = compiler::compileForHost(ptx, moduleName, options);
  if (object.ok()) cache.store(cacheKey, object->serialize());
  return object;
}

Result<std::unique_ptr<LoadedModule>> CpuDevice::loadPtx(std::string_view ptx,
                                                         std::string_view moduleName) {
  bool fromCache = false;
  auto object = compileCached(ptx, moduleName, /*refresh=*/false, &fromCache);
  if (!object.ok()) return object.takeError();
  static const compiler::RuntimeSymbols runtime = [] {
    compiler::RuntimeSymbols symbols = deviceRuntimeSymbols();
    for (auto& symbol : memcheckRuntimeSymbols()) symbols.push_back(std::move(symbol));
    return symbols;
  }();
  auto code = compiler::loadHostCode(*object, runtime);
  if (!code.ok() && fromCache) {
    // A cached object this runtime cannot link (left by another build of Rocuda): replace it.
    log::warning("cached code for '" + std::string(moduleName) + "' does not link (" +
                 code.error().message + "); recompiling");
    object = compileCached(ptx, moduleName, /*refresh=*/true, &fromCache);
    if (!object.ok()) return object.takeError();
    code = compiler::loadHostCode(*object, runtime);
  }
  if (!code.ok()) return code.takeError();
  auto module = std::make_unique<CpuModule>(std::move(object->info), std::move(*code));
  ROCUDA_TRY(module->resolveKernels());
  return std::unique_ptr<LoadedModule>(std::move(module));
}

Status CpuDevice::launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) {
  auto& cpuKernel = static_cast<CpuKernel&>(kernel);
  const compiler::KernelInfo& info = cpuKernel.info();
  GridState grid;
  grid.code = cpuKernel.code();
  grid.params = const_cast<void*>(params);
  grid.grid = config.grid;
  grid.block = config.block;
  grid.dynamicSharedBytes = config.dynamicSharedBytes;
  grid.sharedBytes = std::max(info.staticSharedBytes,
                              info.dynamicSharedOffset + config.dynamicSharedBytes);
  grid.usesBarriers = info.usesBarriers;
  grid.usesWarpCollectives = info.usesWarpCollectives;
  grid.kernelName = info.name;
  grid.gridId = nextGridId_++;
  grid.paramBytes = info.paramBufferSize;
  std::atomic<bool> illegalAddress{false};
  grid.illegalAddress = &illegalAddress;

  uint64_t blocks = uint64_t(config.grid[0]) * config.grid[1] * config.grid[2];
  std::atomic<bool> failed{false}, asserted{false};
  pool_.parallelFor(blocks, [&](uint64_t index) {
    if (failed.load(std::memory_order_relaxed)) return;  // the grid is already failing
    BlockOutcome outcome = runBlock(grid, index);
    if (outcome == BlockOutcome::Completed) return;
    if (outcome == BlockOutcome::Asserted) asserted.store(true, std::memory_order_relaxed);
    failed.store(true, std::memory_order_relaxed);
  });
  if (asserted.load())
    return makeError(ErrorCode::Assert, "kernel '" + info.name + "' failed a device-side assert");
  if (illegalAddress.load())
    return makeError(ErrorCode::IllegalAddress,
                     "kernel '" + info.name + "' made an invalid memory access (memcheck)");
  if (failed.load())
    return makeError(ErrorCode::LaunchFailed,
                     "kernel '" + info.name +
                         "' executed trap (or deadlocked at a barrier or warp collective)");
  return Status::success();
}

}  // namespace
}  // namespace cpu

std::unique_ptr<DeviceBackend> createCpuBackend() { return std::make_unique<cpu::CpuDevice>(); }

}  // namespace rocuda::backends
