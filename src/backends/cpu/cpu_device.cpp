// The CPU device: host memory is device memory, kernels are host code from the compiler, and a
// grid's blocks run on a pool of all cores.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

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

// ROCUDA_WARP_LOCKSTEP (support/env.cpp), read once.
compiler::WarpLockstep warpLockstepSetting() {
  static const compiler::WarpLockstep setting = [] {
    std::string value = env::get("ROCUDA_WARP_LOCKSTEP").value_or("volatile");
    if (value == "off") return compiler::WarpLockstep::Off;
    if (value == "memory") return compiler::WarpLockstep::AllMemory;
    if (value != "volatile")
      log::warning("ROCUDA_WARP_LOCKSTEP='" + value +
                   "' is not volatile, memory or off; using volatile");
    return compiler::WarpLockstep::VolatileShared;
  }();
  return setting;
}

// How the environment asks for code to be compiled (read when a module is loaded: every unit
// of the module is compiled alike).
struct HostCompileSettings {
  compiler::CompileOptions options;
  std::string variant;  // the options, in the cache key

  static HostCompileSettings current() {
    HostCompileSettings settings;
    compiler::CompileOptions& options = settings.options;
    options.blockFunctions = env::get("ROCUDA_CPU_BLOCK_FORMS").value_or("1") != "0";
    options.memcheck = memcheckEnabled();
    options.warpLockstep = warpLockstepSetting();
    settings.variant =
        "O" + std::to_string(options.optLevel) + (options.blockFunctions ? "" : " threads") +
        (options.memcheck ? " memcheck" : "") +
        (options.warpLockstep == compiler::WarpLockstep::Off         ? " lockstep-off"
         : options.warpLockstep == compiler::WarpLockstep::AllMemory ? " lockstep-memory"
                                                                     : "");
    return settings;
  }
};

// Compiles PTX for this host through the code cache.
class HostCompiler {
 public:
  HostCompiler() : hostTarget_(compiler::hostTargetName()) {}

  const std::string& hostTarget() const { return hostTarget_; }

  // `unit` of the module whose PTX is `ptx` (its SHA-256 `digest`) compiled and handed to
  // `link`. A cached object that does not link (left by another build of Rocuda) is compiled
  // again.
  template <typename Link>
  Status compileAndLink(std::string_view ptx, std::string_view digest, std::string_view moduleName,
                        const HostCompileSettings& settings, const compiler::HostUnit& unit,
                        Link link) {
    bool fromCache = false;
    auto object = compileCached(ptx, digest, moduleName, settings, unit, false, &fromCache);
    if (!object.ok()) return object.takeError();
    Status linked = link(*object);
    if (linked.ok() || !fromCache) return linked;
    log::warning("cached code for '" + std::string(moduleName) + "' does not link (" +
                 linked.error().message + "); recompiling");
    object = compileCached(ptx, digest, moduleName, settings, unit, /*refresh=*/true, &fromCache);
    if (!object.ok()) return object.takeError();
    return link(*object);
  }

 private:
  Result<compiler::HostObject> compileCached(std::string_view ptx, std::string_view digest,
                                             std::string_view moduleName,
                                             const HostCompileSettings& settings,
                                             const compiler::HostUnit& unit, bool refresh,
                                             bool* fromCache) {
    using Kind = compiler::HostUnit::Kind;
    std::string unitKey = unit.kind == Kind::Kernel    ? "kernel " + unit.kernel
                          : unit.kind == Kind::Globals ? "globals"
                                                       : "module";
    std::string key = DiskCache::keyOf(
        {compiler::kCompilerVersion, hostTarget_, settings.variant, digest, unitKey});
    std::string what = std::string(moduleName) +
                       (unit.kind == Kind::Kernel ? ", kernel " + unit.kernel : std::string());
    return DiskCache::instance().loadOrCompile<compiler::HostObject>(
        key, what,
        [&] {
          log::info("compiling PTX module '" + what + "' for the host");
          return compiler::compileForHost(ptx, moduleName, settings.options, unit);
        },
        refresh, fromCache);
  }

  std::string hostTarget_;  // triple, CPU and features: code for one CPU may not run on another
};

// The symbols generated code calls: the device runtime's and memcheck's.
const compiler::RuntimeSymbols& runtimeSymbols() {
  static const compiler::RuntimeSymbols runtime = [] {
    compiler::RuntimeSymbols symbols = deviceRuntimeSymbols();
    for (auto& symbol : memcheckRuntimeSymbols()) symbols.push_back(std::move(symbol));
    return symbols;
  }();
  return runtime;
}

// A kernel's entry points in loaded host code, for the form `info` says it took.
Result<KernelCode> kernelCode(const compiler::KernelInfo& info, compiler::HostCode& code) {
  KernelCode kernelCode;
  kernelCode.execution = info.cpuExecution;
  kernelCode.frameBytes = info.cpuFrameBytes;
  kernelCode.uniformFrameBytes = info.cpuUniformFrameBytes;
  void* address = code.lookup(compiler::hostEntrySymbol(info));
  switch (info.cpuExecution) {
    case compiler::CpuExecution::BlockLoop:
      kernelCode.blockLoop = reinterpret_cast<BlockLoopEntry>(address);
      if (info.cpuStreamingStoreBytes != 0) {
        kernelCode.streamingBlockLoop = reinterpret_cast<BlockLoopEntry>(
            code.lookup(compiler::streamingBlockLoopSymbol(info.name)));
        kernelCode.streamingStoreBytes = info.cpuStreamingStoreBytes;
        if (kernelCode.streamingBlockLoop == nullptr) address = nullptr;
      }
      break;
    case compiler::CpuExecution::Continuation:
      kernelCode.continuation = reinterpret_cast<ContinuationEntry>(address);
      kernelCode.round =
          reinterpret_cast<RoundEntry>(code.lookup(compiler::roundSymbol(info.name)));
      if (kernelCode.round == nullptr) address = nullptr;
      kernelCode.chainsBlocks = info.cpuChainsBlocks;
      break;
    case compiler::CpuExecution::ThreadEntry:
      kernelCode.threadEntry = reinterpret_cast<KernelEntry>(address);
      if (!info.cpuSlowPathReason.empty())
        log::info("kernel '" + info.name +
                  "' runs on the slow path (a fiber per thread): " + info.cpuSlowPathReason);
      break;
  }
  if (address == nullptr)
    return makeError(ErrorCode::InvalidImage, "compiled code lacks kernel '" + info.name + "'");
  if (info.cpuFlat) {
    kernelCode.flat = reinterpret_cast<FlatEntry>(code.lookup(compiler::flatSymbol(info.name)));
    kernelCode.flatExtent =
        reinterpret_cast<FlatExtentEntry>(code.lookup(compiler::flatExtentSymbol(info.name)));
    if (kernelCode.flat == nullptr || kernelCode.flatExtent == nullptr)
      return makeError(ErrorCode::InvalidImage,
                       "compiled code lacks the flat form of kernel '" + info.name + "'");
  }
  if (info.cpuLockstep) {
    std::string lockstep = compiler::lockstepName(info.name);
    kernelCode.lockstepContinuation =
        reinterpret_cast<ContinuationEntry>(code.lookup(compiler::continuationSymbol(lockstep)));
    kernelCode.lockstepRound =
        reinterpret_cast<RoundEntry>(code.lookup(compiler::roundSymbol(lockstep)));
    kernelCode.lockstepFrameBytes = info.cpuLockstepFrameBytes;
    kernelCode.lockstepUniformFrameBytes = info.cpuLockstepUniformFrameBytes;
    if (kernelCode.lockstepContinuation == nullptr || kernelCode.lockstepRound == nullptr)
      return makeError(ErrorCode::InvalidImage,
                       "compiled code lacks the lockstep form of kernel '" + info.name + "'");
  }
  return kernelCode;
}

// A grid-stride kernel run in its flat form (KernelCode::flat) gives each part of the pool's work
// a range of its threads, at least this many (4 KiB of each float array a pass), a few parts
// per worker.
constexpr uint64_t kFlatThreadsPerPart = 1024;

// The fewest bytes a launch stores for its kernel's streaming form (KernelCode::
// streamingBlockLoop) to run: ROCUDA_CPU_STREAMING_STORES MiB (16 by default: four times the
// L2 caches of a typical two-core VM, where a later kernel would still find the data), or none
// for `off`.
std::optional<uint64_t> streamingStoreMinimum() {
  static const std::optional<uint64_t> minimum = []() -> std::optional<uint64_t> {
    std::string value = env::get("ROCUDA_CPU_STREAMING_STORES").value_or("16");
    if (value == "off") return std::nullopt;
    // from_chars, not strtoull: a sign or spaces are refused, not read as a wrapped number.
    uint64_t mebibytes = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), mebibytes);
    if (error != std::errc() || end != value.data() + value.size() || mebibytes >> 44 != 0) {
      log::warning("ROCUDA_CPU_STREAMING_STORES='" + value +
                   "' is not a number of MiB or `off`; using 16");
      mebibytes = 16;
    }
    return mebibytes << 20;
  }();
  return minimum;
}

// Grids of at most this many threads run a stride-loop kernel in its lockstep form: a grid sized
// to the machine (blocks = a few per multiprocessor, as grid-stride code is launched) loops many
// times per thread, where lockstep wins 10-15 times; a grid covering the data loops about once,
// where the BlockLoop form is faster (1.8 times in bench-like measurements, docs/performance.md).
constexpr uint64_t kLockstepGridThreads = uint64_t{1} << 18;

// The kernel's code for this launch: its lockstep form when it has one and the grid suits it,
// its streaming form when it has one and the launch stores at least streamingStoreMinimum().
KernelCode codeForLaunch(const KernelCode& code, const std::array<uint32_t, 3>& grid,
                         const std::array<uint32_t, 3>& block) {
  uint64_t threads = uint64_t(grid[0]) * grid[1] * grid[2] * block[0] * block[1] * block[2];
  // The race check would see the lockstep form's barriers as the kernel's own.
  if (code.lockstepRound == nullptr || threads > kLockstepGridThreads || memcheckRaceEnabled()) {
    std::optional<uint64_t> minimum = streamingStoreMinimum();
    if (code.streamingBlockLoop == nullptr || !minimum ||
        threads * code.streamingStoreBytes < *minimum)
      return code;
    KernelCode streaming = code;
    streaming.blockLoop = code.streamingBlockLoop;
    streaming.streamingStores = true;
    return streaming;
  }
  KernelCode lockstep = code;
  lockstep.execution = compiler::CpuExecution::Continuation;
  lockstep.continuation = code.lockstepContinuation;
  lockstep.round = code.lockstepRound;
  lockstep.frameBytes = code.lockstepFrameBytes;
  lockstep.uniformFrameBytes = code.lockstepUniformFrameBytes;
  lockstep.warpSites = nullptr;  // it waits only at its own barriers
  lockstep.chainsBlocks = false;
  return lockstep;
}

// A kernel's host code and what compiling it found out (its block form, whether it waits).
struct CompiledKernel {
  compiler::KernelInfo info;
  KernelCode code;
};

class CpuModule;

class CpuKernel final : public LoadedKernel {
 public:
  CpuKernel(CpuModule& module, const compiler::KernelInfo& info) : module_(module), info_(info) {}
  // As compiled once it is, else as translated.
  const compiler::KernelInfo& info() const override {
    return ready_.load(std::memory_order_acquire) ? compiled_.info : info_;
  }

  // The kernel's code, compiled on the first call when its module compiles kernels separately
  // (a failure is kept and returned again).
  Result<const CompiledKernel*> compiled();
  Status prepare() override {
    auto code = compiled();
    if (!code.ok()) return code.takeError();
    return Status::success();
  }
  bool prepared() const override { return ready_.load(std::memory_order_acquire); }
  CpuModule& module() { return module_; }
  void setCompiled(CompiledKernel compiled) {
    compiled_ = std::move(compiled);
    compiled_.code.warpSites = compiled_.info.cpuWarpSites.data();
    ready_.store(true, std::memory_order_release);
  }

 private:
  CpuModule& module_;
  const compiler::KernelInfo& info_;  // as translated (the module's)
  std::atomic<bool> ready_{false};
  std::mutex mutex_;  // held while compiling
  CompiledKernel compiled_;
  std::optional<Error> failure_;
};

class CpuModule final : public LoadedModule {
 public:
  CpuModule(HostCompiler& compiler, HostCompileSettings settings, std::string_view ptx,
            std::string digest, std::string name, compiler::ModuleInfo info,
            std::unique_ptr<compiler::HostCode> code)
      : compiler_(compiler),
        settings_(std::move(settings)),
        digest_(std::move(digest)),
        name_(std::move(name)),
        info_(std::move(info)),
        code_(std::move(code)) {
    if (info_.kernelsCompiledSeparately) ptx_ = std::string(ptx);  // only then needed again
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

  // Every kernel of the module; those its object holds get their code now.
  Status resolveKernels() {
    for (const auto& kernelInfo : info_.kernels) {
      auto kernel = std::make_unique<CpuKernel>(*this, kernelInfo);
      if (!info_.kernelsCompiledSeparately) {
        auto code = kernelCode(kernelInfo, *code_);
        if (!code.ok()) return code.takeError();
        kernel->setCompiled(CompiledKernel{kernelInfo, *code});
      }
      kernels_.emplace(kernelInfo.name, std::move(kernel));
    }
    pendingKernels_ = info_.kernelsCompiledSeparately ? info_.kernels.size() : 0;
    return Status::success();
  }

  // Compile one kernel of a module that compiles them separately, and link it in.
  Result<CompiledKernel> compileKernel(const compiler::KernelInfo& kernel) {
    compiler::HostUnit unit{compiler::HostUnit::Kind::Kernel, kernel.name};
    CompiledKernel compiled;
    Status status = compiler_.compileAndLink(
        ptx_, digest_, name_, settings_, unit, [&](const compiler::HostObject& object) -> Status {
          if (object.info.kernels.size() != 1 || object.info.kernels[0].name != kernel.name)
            return makeError(ErrorCode::InvalidImage,
                             "compiled code for kernel '" + kernel.name + "' describes others");
          ROCUDA_TRY(code_->add(object));
          auto code = kernelCode(object.info.kernels[0], *code_);
          if (!code.ok()) return code.takeError();
          compiled = CompiledKernel{object.info.kernels[0], *code};
          return Status::success();
        });
    // The PTX is kept until every kernel has been compiled (or has failed to).
    if (--pendingKernels_ == 0) {  // no other compile can be running
      ptx_.clear();
      ptx_.shrink_to_fit();
    }
    if (!status.ok()) return status.error();
    return compiled;
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
  HostCompiler& compiler_;
  HostCompileSettings settings_;
  std::string ptx_;  // kernels compiled separately: the module's PTX, until all are compiled
  std::string digest_;
  std::string name_;
  compiler::ModuleInfo info_;
  std::unique_ptr<compiler::HostCode> code_;
  std::map<std::string, std::unique_ptr<CpuKernel>, std::less<>> kernels_;
  std::atomic<size_t> pendingKernels_{0};
  std::vector<void*> memcheckGlobals_;  // registered in the memcheck allocation map
};

Result<const CompiledKernel*> CpuKernel::compiled() {
  if (ready_.load(std::memory_order_acquire)) return &compiled_;
  std::lock_guard lock(mutex_);
  if (ready_.load(std::memory_order_acquire)) return &compiled_;
  if (failure_) return *failure_;
  auto compiled = module_.compileKernel(info_);
  if (!compiled.ok()) {
    failure_ = compiled.error();
    return compiled.takeError();
  }
  setCompiled(std::move(*compiled));
  return &compiled_;
}

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
  explicit CpuDevice(int instance) : pool_(configuredThreads()) {
    describe(instance);
    installKernelFaultHandler();
  }

  const DeviceDescription& description() const override { return description_; }

  // Every CPU device's memory is the process's: another CPU device's kernels reach it, and
  // atomics on it are the host's.
  PeerLink peerLink(const DeviceBackend& peer) const override {
    bool cpu = &peer != this && dynamic_cast<const CpuDevice*>(&peer) != nullptr;
    return {cpu, cpu, cpu};
  }
  Status enablePeerAccess(const DeviceBackend& peer) override {
    if (!peerLink(peer).access) return DeviceBackend::enablePeerAccess(peer);
    return Status::success();
  }

  Result<void*> allocateDevice(size_t bytes) override;
  // The whole pages of the range go back to the kernel (MADV_DONTNEED): they read as zeros and
  // cost nothing until touched again.
  bool discardPages(void* address, size_t bytes) override {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t start = (reinterpret_cast<uintptr_t>(address) + page - 1) / page * page;
    uintptr_t end = (reinterpret_cast<uintptr_t>(address) + bytes) / page * page;
    if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
    return true;
  }
  void freeDevice(void* pointer) override;
  Result<void*> allocateHost(size_t bytes) override { return allocate(bytes); }
  void freeHost(void* pointer) override { release(pointer); }
  // Whole pages, as NVIDIA's managed allocations are: advice and prefetches apply to whole pages
  // (rounded out, as CUDA documents), which then never reach a neighbouring allocation.
  Result<void*> allocateManaged(size_t bytes) override {
    return allocate(bytes, platform::pageBytes());
  }
  // As on NVIDIA's devices, an allocation counts as used whole at once (cudaMemGetInfo after a
  // cudaMalloc shows it gone), though its pages cost physical memory only once touched: the
  // host's available memory less what the live allocations will still take (mincore), and no
  // more than the device's total less the allocations.
  uint64_t freeMemory() const override;
  bool checksEveryAccess() const override { return memcheckEnabled(); }

  void externalRangeMapped(void* base, size_t bytes, bool registered) override {
    if (!memcheckEnabled()) return;
    if (registered)
      AllocationMap::instance().add(base, bytes, /*owned=*/false);
    else
      AllocationMap::instance().remove(base, /*owned=*/false);
  }

  // Copies and fills fail with IllegalAddress on memory they may not touch (kernel_faults.h).
  Status copy(void* destination, const void* source, size_t bytes) override {
    if (bytes == 0) return Status::success();
    return guardedMemoryOperation("a copy", [&] { std::memmove(destination, source, bytes); });
  }

  Status fill(void* destination, uint32_t value, size_t elementBytes, size_t count) override {
    auto* out = static_cast<uint8_t*>(destination);
    return guardedMemoryOperation("a memset", [&] {
      if (elementBytes == 1) {
        std::memset(out, static_cast<int>(value & 0xff), count);
      } else {
        for (size_t i = 0; i < count; ++i)
          std::memcpy(out + i * elementBytes, &value, elementBytes);
      }
    });
  }

  Status copy2D(void* destination, size_t destinationPitch, const void* source, size_t sourcePitch,
                size_t widthBytes, size_t height) override {
    return guardedMemoryOperation("a 2D copy", [&] {
      for (size_t row = 0; row < height; ++row)
        std::memmove(static_cast<uint8_t*>(destination) + row * destinationPitch,
                     static_cast<const uint8_t*>(source) + row * sourcePitch, widthBytes);
    });
  }

  Result<SharedAllocation> shareDevice(void* base) override;
  Result<void*> mapShared(int fd, uint64_t offset, size_t bytes) override;
  void unmapShared(void* pointer, size_t bytes) override;
  size_t virtualMemoryGranularity(bool recommended) const override;
  Result<void*> reserveAddresses(size_t bytes, size_t alignment, uintptr_t hint) override;
  void freeAddresses(void* base, size_t bytes) override;
  Result<uint64_t> createPhysical(size_t bytes, bool exportable) override;
  void releasePhysical(uint64_t handle) override;
  Result<int> exportPhysical(uint64_t handle) override;
  Result<ImportedPhysical> importPhysical(int fd) override;
  Status mapPhysical(void* address, size_t bytes, uint64_t handle, uint64_t offset) override;
  Status setAccess(void* address, size_t bytes, const std::vector<DeviceAccess>& access) override;
  Status unmapPhysical(void* address, size_t bytes) override;

  Result<std::unique_ptr<LoadedModule>> loadPtx(std::string_view ptx,
                                                std::string_view moduleName) override;
  Status launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) override;

 private:
  void describe(int instance);
  Status runCooperative(GridState& grid, uint64_t blocks,
                        const std::function<void(uint64_t)>& runOne);

  Result<void*> allocate(size_t bytes, size_t alignment = kAllocationAlignment) {
    size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    void* memory = std::aligned_alloc(alignment, rounded);
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

  // Device allocations are whole pages of their own (anonymous memory), so that one can be made
  // shareable in place (shareDevice) without touching its neighbours.
  struct DeviceRegion {
    size_t bytes = 0;  // mapped length, whole pages
    int fd = -1;       // the memfd backing it once shared
  };
  mutable std::mutex regionsMutex_;
  std::unordered_map<void*, DeviceRegion> regions_;
  // Freed regions never shared, kept mapped for reuse: a fresh mapping faults every page in
  // again, which made allocate/free loops (Thrust's temporary storage) 20-40 times slower than
  // the heap. Bounded by kReuseCacheBytes; the cache is given back when mmap fails.
  std::multimap<size_t, void*> reusable_;  // by length
  size_t reusableBytes_ = 0;
  void* takeReusable(size_t length);       // caller holds regionsMutex_
  void releaseRegion(void* pointer);       // unmapped, or kept for reuse
  void releaseReusable();                  // caller holds regionsMutex_

  DeviceDescription description_;
  HostCompiler compiler_;
  ThreadPool pool_;
  CoResidentThreads coResident_;  // cooperative grids: a thread per block
  std::atomic<uint32_t> nextGridId_{1};
};

size_t pageSize() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

size_t roundToPages(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + pageSize() - 1) / pageSize() * pageSize();
}

std::string osError(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

constexpr size_t kReuseCacheBytes = size_t{256} << 20;

// Large device allocations are backed by 2 MiB pages where the kernel allows them (as GPU memory
// is): a kernel walking a 2D array touches many rows at once, one 4 KiB page each, and TLB misses
// made a 32x32-thread block copy three times slower than a 256x1 one.
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t roundDeviceLength(size_t bytes) {
  size_t length = roundToPages(bytes);
  if (length >= kHugePageBytes)
    length = (length + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  return length;
}

// `length` bytes of anonymous memory (MAP_FAILED when there is none), aligned to a huge page and
// advised to use them when `length` is a multiple of one.
void* mapAnonymous(size_t length) {
  if (length % kHugePageBytes != 0)
    return mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  size_t padded = length + kHugePageBytes;
  void* raw = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  size_t tail = start + padded - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* memory = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(memory, length, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
  return memory;
}

// A cached region at least `length` long and at most twice that, or nullptr.
void* CpuDevice::takeReusable(size_t length) {
  auto it = reusable_.lower_bound(length);
  if (it == reusable_.end() || it->first > 2 * length) return nullptr;
  void* memory = it->second;
  regions_[memory] = DeviceRegion{it->first, -1};
  reusableBytes_ -= it->first;
  reusable_.erase(it);
  return memory;
}

void CpuDevice::releaseReusable() {
  for (const auto& [length, memory] : reusable_) munmap(memory, length);
  reusable_.clear();
  reusableBytes_ = 0;
}

uint64_t CpuDevice::freeMemory() const {
  uint64_t total = description_.totalMemory, used = 0, untouched = 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident;
  {
    std::lock_guard lock(regionsMutex_);
    for (const auto& [base, region] : regions_) {
      used += region.bytes;
      resident.assign((region.bytes + page - 1) / page, 0);
      if (mincore(base, region.bytes, resident.data()) != 0) continue;
      for (unsigned char pageState : resident)
        if ((pageState & 1) == 0) untouched += page;
    }
  }
  uint64_t available = platform::availablePhysicalMemory();
  available = available > untouched ? available - untouched : 0;
  return std::min<uint64_t>(available, used < total ? total - used : 0);
}

Result<void*> CpuDevice::allocateDevice(size_t bytes) {
  size_t length = roundDeviceLength(bytes);
  if (length < bytes)
    return makeError(ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes");
  std::lock_guard lock(regionsMutex_);
  void* memory = takeReusable(length);
  if (memory != nullptr) {
    if (memcheckEnabled()) AllocationMap::instance().add(memory, bytes, /*owned=*/true);
    return memory;
  }
  memory = mapAnonymous(length);
  if (memory == MAP_FAILED && !reusable_.empty()) {
    releaseReusable();
    memory = mapAnonymous(length);
  }
  if (memory == MAP_FAILED)
    return makeError(ErrorCode::OutOfMemory,
                     "cannot allocate " + std::to_string(bytes) + " bytes of device memory");
  regions_[memory] = DeviceRegion{length, -1};
  // Memcheck knows the size asked for: an access into the page's rest is reported.
  if (memcheckEnabled()) AllocationMap::instance().add(memory, bytes, /*owned=*/true);
  return memory;
}

void CpuDevice::freeDevice(void* pointer) {
  if (!memcheckEnabled()) return releaseRegion(pointer);
  // Freed memory stays in the quarantine (neither reused nor unmapped) for a while, so that a
  // late access reads as a use after free: see memcheck.h.
  for (void* old : AllocationMap::instance().remove(pointer, /*owned=*/true)) releaseRegion(old);
}

void CpuDevice::releaseRegion(void* pointer) {
  DeviceRegion region;
  {
    std::lock_guard lock(regionsMutex_);
    auto it = regions_.find(pointer);
    if (it == regions_.end()) return;  // the core frees only what it allocated here
    region = it->second;
    regions_.erase(it);
    // Shared regions are not reused: other processes may still map their memfd.
    if (region.fd < 0 && reusableBytes_ + region.bytes <= kReuseCacheBytes) {
      reusable_.emplace(region.bytes, pointer);
      reusableBytes_ += region.bytes;
      return;
    }
  }
  munmap(pointer, region.bytes);
  if (region.fd >= 0) close(region.fd);  // importers' mappings keep the pages alive
}

// Copies the anonymous pages at `base` into a memfd and maps the memfd over them (MAP_FIXED
// replaces the mapping atomically), so the allocation keeps its address and its contents while
// other processes can map the same pages. Pages still all zero are not copied: the memfd's
// unwritten pages read as zero, and copying would commit memory the allocation never used.
Result<SharedAllocation> CpuDevice::shareDevice(void* base) {
  std::lock_guard lock(regionsMutex_);
  auto it = regions_.find(base);
  if (it == regions_.end())
    return makeError(ErrorCode::InvalidValue, "not the base of a device allocation");
  DeviceRegion& region = it->second;
  if (region.fd >= 0) return SharedAllocation{region.fd, region.bytes};
  int fd = memfd_create("rocuda-device-memory", MFD_CLOEXEC);
  if (fd < 0) return makeError(ErrorCode::OutOfMemory, osError("memfd_create"));
  auto fail = [fd](ErrorCode code, const char* what) {
    Error error = makeError(code, osError(what));
    close(fd);
    return error;
  };
  if (ftruncate(fd, static_cast<off_t>(region.bytes)) != 0)
    return fail(ErrorCode::OutOfMemory, "ftruncate");
  void* staging = mmap(nullptr, region.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (staging == MAP_FAILED) return fail(ErrorCode::OutOfMemory, "mmap");
  static const std::vector<uint8_t> zeros(pageSize(), 0);
  for (size_t at = 0; at < region.bytes; at += pageSize()) {
    const uint8_t* page = static_cast<const uint8_t*>(base) + at;
    if (std::memcmp(page, zeros.data(), pageSize()) != 0)
      std::memcpy(static_cast<uint8_t*>(staging) + at, page, pageSize());
  }
  munmap(staging, region.bytes);
  void* mapped =
      mmap(base, region.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (mapped == MAP_FAILED) return fail(ErrorCode::OutOfMemory, "mmap (MAP_FIXED)");
  region.fd = fd;
  return SharedAllocation{fd, region.bytes};
}

Result<void*> CpuDevice::mapShared(int fd, uint64_t offset, size_t bytes) {
  uint64_t pageOffset = offset / pageSize() * pageSize();
  size_t delta = static_cast<size_t>(offset - pageOffset);
  size_t length = roundToPages(bytes + delta);
  void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(pageOffset));
  if (mapped == MAP_FAILED) return makeError(ErrorCode::MapFailed, osError("mmap"));
  return static_cast<uint8_t*>(mapped) + delta;
}

void CpuDevice::unmapShared(void* pointer, size_t bytes) {
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  uintptr_t start = address / pageSize() * pageSize();
  munmap(reinterpret_cast<void*>(start), roundToPages(bytes + (address - start)));
}

// Virtual memory management on host pages. A reservation is inaccessible, uncommitted pages;
// physical memory is a memfd (its unwritten pages cost nothing), so that the same pages can be
// mapped at several reserved addresses and exported to other processes as a file descriptor. The
// handle is the descriptor + 1 (handles are never 0). Every CPU device's reservations are the
// process's, so one device's memory maps into another's reservation.
size_t CpuDevice::virtualMemoryGranularity(bool recommended) const {
  return recommended ? size_t{2} << 20 : pageSize();  // a huge page, or the host page
}

Result<void*> CpuDevice::reserveAddresses(size_t bytes, size_t alignment, uintptr_t hint) {
  alignment = std::max(alignment, pageSize());
  size_t extra = alignment - pageSize();
  void* mapped = mmap(reinterpret_cast<void*>(hint), bytes + extra, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) return makeError(ErrorCode::OutOfMemory, osError("mmap"));
  uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  uintptr_t base = (start + alignment - 1) / alignment * alignment;
  if (base > start) munmap(mapped, base - start);
  if (uintptr_t end = start + bytes + extra; end > base + bytes)
    munmap(reinterpret_cast<void*>(base + bytes), end - (base + bytes));
  return reinterpret_cast<void*>(base);
}

void CpuDevice::freeAddresses(void* base, size_t bytes) { munmap(base, bytes); }

Result<uint64_t> CpuDevice::createPhysical(size_t bytes, bool /*exportable*/) {
  int fd = memfd_create("rocuda-physical-memory", MFD_CLOEXEC);
  if (fd < 0) return makeError(ErrorCode::OutOfMemory, osError("memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Error error = makeError(ErrorCode::OutOfMemory, osError("ftruncate"));
    close(fd);
    return error;
  }
  return static_cast<uint64_t>(fd) + 1;
}

void CpuDevice::releasePhysical(uint64_t handle) { close(static_cast<int>(handle - 1)); }

Result<int> CpuDevice::exportPhysical(uint64_t handle) {
  int fd = fcntl(static_cast<int>(handle - 1), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return makeError(ErrorCode::OperatingSystem, osError("fcntl"));
  return fd;
}

Result<DeviceBackend::ImportedPhysical> CpuDevice::importPhysical(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0 || info.st_size <= 0 ||
      static_cast<uint64_t>(info.st_size) % pageSize() != 0)
    return makeError(ErrorCode::InvalidValue, "not a descriptor of exported physical memory");
  return ImportedPhysical{static_cast<uint64_t>(fd) + 1, static_cast<size_t>(info.st_size)};
}

Status CpuDevice::mapPhysical(void* address, size_t bytes, uint64_t handle, uint64_t offset) {
  void* mapped = mmap(address, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED,
                      static_cast<int>(handle - 1), static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) return makeError(ErrorCode::OutOfMemory, osError("mmap"));
  return Status::success();
}

// The pages are every CPU device's: their protection is the union of what the devices were given.
Status CpuDevice::setAccess(void* address, size_t bytes, const std::vector<DeviceAccess>& access) {
  bool readable = false, writable = false;
  for (const DeviceAccess& device : access) {
    readable |= device.readable;
    writable |= device.writable;
  }
  int protection = (readable ? PROT_READ : 0) | (writable ? PROT_WRITE : 0);
  if (mprotect(address, bytes, protection) != 0)
    return makeError(ErrorCode::InvalidValue, osError("mprotect"));
  return Status::success();
}

// The pages go back to being a reservation: inaccessible and committing nothing.
Status CpuDevice::unmapPhysical(void* address, size_t bytes) {
  void* reserved = mmap(address, bytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) return makeError(ErrorCode::OutOfMemory, osError("mmap"));
  return Status::success();
}

void CpuDevice::describe(int instance) {
  DeviceDescription& d = description_;
  d.backendName = "cpu";
  d.name = "Rocuda CPU (" + platform::cpuModelName() + ")";
  const std::string& hostTarget = compiler_.hostTarget();
  d.nativeTarget = hostTarget.substr(0, hostTarget.find(" +"));  // without the feature list
  auto [major, minor] = env::computeCapability();
  d.computeCapabilityMajor = major;
  d.computeCapabilityMinor = minor;
  d.totalMemory = platform::totalPhysicalMemory();
  d.multiprocessorCount = static_cast<int>(pool_.workerCount());
  d.clockRateKHz = cycleCounterRateKHz();
  d.hostNumaNode = 0;  // its memory is the host's, first touched on any node: the first node's
  d.integrated = true;
  d.pageableMemoryAccess = true;
  d.hostNativeAtomics = true;
  d.sharesMemoryBetweenProcesses = true;
  d.virtualMemoryManagement = true;
  d.physicalMemoryAsFileDescriptors = true;
  // NVIDIA's range on current GPUs: a pool thread looking for blocks to run takes the grid of the
  // greatest priority first (ThreadPool; running blocks are not preempted).
  d.greatestStreamPriority = -5;
  d.sharedMemPerBlock = 48 * 1024;
  d.sharedMemPerBlockOptin = 96 * 1024;
  d.sharedMemPerMultiprocessor = 100 * 1024;
  d.l2CacheBytes = 4 * 1024 * 1024;
  // A stable identity: the same machine reports the same UUID run after run, and each CPU device
  // of the process its own UUID and bus (cuDeviceGetByPCIBusId finds it by its bus id).
  std::string identity = instance == 0 ? d.name : d.name + "#" + std::to_string(instance);
  auto digest = Sha256::digest(identity.data(), identity.size());
  std::copy_n(digest.begin(), 16, d.uuid.begin());
  d.pciBus = instance;
}

// The module's globals are compiled now, its kernels on their first launch (HostUnit), unless
// CUDA_MODULE_LOADING=EAGER asks for every kernel at load, as it does of NVIDIA's driver.
Result<std::unique_ptr<LoadedModule>> CpuDevice::loadPtx(std::string_view ptx,
                                                         std::string_view moduleName) {
  std::string digest = Sha256::hex(Sha256::digest(ptx.data(), ptx.size()));
  HostCompileSettings settings = HostCompileSettings::current();
  std::unique_ptr<CpuModule> module;
  ROCUDA_TRY(compiler_.compileAndLink(
      ptx, digest, moduleName, settings, compiler::HostUnit{compiler::HostUnit::Kind::Globals, {}},
      [&](const compiler::HostObject& object) -> Status {
        auto code = compiler::loadHostCode(object, runtimeSymbols());
        if (!code.ok()) return code.takeError();
        module =
            std::make_unique<CpuModule>(compiler_, settings, ptx, digest, std::string(moduleName),
                                        object.info, std::move(*code));
        return module->resolveKernels();
      }));
  if (env::eagerModuleLoading())
    for (const auto& kernel : module->info().kernels) {
      auto compiled = static_cast<CpuKernel*>(module->kernel(kernel.name))->compiled();
      if (!compiled.ok()) return compiled.takeError();
    }
  return std::unique_ptr<LoadedModule>(std::move(module));
}

// A cooperative grid runs every block at once, each on a host thread of its own: its blocks
// wait for one another (grid.sync()), so none may wait for a worker another holds. The core has
// capped the grid at the device's occupancy; blocks that spin yield their host threads
// (__rocuda_spin_poll), so that the blocks they wait for get the cores. A failing block makes the
// others give up their waits instead of hanging.
Status CpuDevice::runCooperative(GridState& grid, uint64_t blocks,
                                 const std::function<void(uint64_t)>& runOne) {
  CooperativeGrid cooperative;
  cooperative.running.store(static_cast<uint32_t>(blocks));
  grid.cooperative = &cooperative;
  grid.waiting = &cooperative;
  // grid.sync() reaches the workspace through a pointer: memcheck must know it.
  if (memcheckEnabled())
    AllocationMap::instance().add(&cooperative.workspace, sizeof cooperative.workspace, false);
  // runOne tells grid.waiting when a block fails, so that the others stop waiting.
  Status status = coResident_.run(blocks, [&](uint64_t index) {
    runOne(index);
    cooperative.running.fetch_sub(1, std::memory_order_acq_rel);
  });
  grid.cooperative = nullptr;
  grid.waiting = nullptr;
  if (memcheckEnabled()) AllocationMap::instance().remove(&cooperative.workspace, false);
  return status;
}

// A wild access the fault handler caught (kernel_faults.h), as the launch's error.
static Error faultError(const std::string& kernel, const KernelFault& fault) {
  char where[200];
  if (fault.blockKnown)
    std::snprintf(where, sizeof where, "%s at address 0x%llx in block (%u,%u,%u)",
                  fault.signal == SIGBUS ? "SIGBUS" : "SIGSEGV",
                  static_cast<unsigned long long>(fault.address), fault.ctaid[0], fault.ctaid[1],
                  fault.ctaid[2]);
  else
    std::snprintf(where, sizeof where,
                  "%s at address 0x%llx in its grid-stride loop, run over the loop's index "
                  "rather than block by block",
                  fault.signal == SIGBUS ? "SIGBUS" : "SIGSEGV",
                  static_cast<unsigned long long>(fault.address));
  std::string thread = fault.threadKnown ? " thread (" + std::to_string(fault.tid[0]) + "," +
                                               std::to_string(fault.tid[1]) + "," +
                                               std::to_string(fault.tid[2]) + ")"
                                         : "";
  return makeError(ErrorCode::IllegalAddress,
                   "kernel '" + kernel + "' made an invalid memory access: " + where + thread +
                       " (ROCUDA_MEMCHECK=1 names the thread, the PTX line and the allocation)");
}

// Nesting of the grid being launched on this host thread: the grids a grid launched from the
// device run on the thread that ran it (see the end of launch).
thread_local uint32_t launchNesting = 0;

Status CpuDevice::launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) {
  auto compiled = static_cast<CpuKernel&>(kernel).compiled();
  if (!compiled.ok()) return compiled.takeError();
  const compiler::KernelInfo& info = (*compiled)->info;
  GridState grid;
  grid.code = codeForLaunch((*compiled)->code, config.grid, config.block);
  grid.params = const_cast<void*>(params);
  grid.grid = config.grid;
  grid.block = config.block;
  LaunchRegisters registers = launchRegistersOf(info, config);
  grid.dynamicSharedBytes = registers.dynamicSmemSize;
  grid.sharedBytes = registers.windowBytes;
  grid.kernelSharedBytes = registers.totalSmemSize;
  grid.aggregateSharedBytes = registers.aggrSmemSize;
  grid.explicitCluster = registers.isExplicitCluster;
  grid.usesBarriers = info.usesBarriers;
  grid.usesWarpCollectives = info.usesWarpCollectives;
  grid.spinWaits = info.spinWaits;
  grid.kernelName = info.name;
  grid.gridId = nextGridId_++;
  grid.paramBytes = info.paramBufferSize;
  grid.graph = config.graph;
  grid.mallocHeap = config.mallocHeap;
  grid.mallocHeapLimit = config.mallocHeapLimit;
  grid.stackBytesPerThread = config.stackBytesPerThread;
  grid.queries = config.queries;
  grid.nodeUpdates = config.nodeUpdates;
  grid.module = &static_cast<CpuKernel&>(kernel).module();
  DeviceLaunches deviceLaunches;
  grid.deviceLaunches = &deviceLaunches;
  grid.nesting = launchNesting;
  std::atomic<bool> illegalAddress{false};
  grid.illegalAddress = &illegalAddress;
  std::atomic<bool> misalignedAddress{false};
  grid.misalignedAddress = &misalignedAddress;
  KernelFault fault;
  grid.fault = &fault;

  uint64_t blocks = uint64_t(config.grid[0]) * config.grid[1] * config.grid[2];
  std::atomic<bool> failed{false}, asserted{false};
  auto runOne = [&](uint64_t index) {
    if (failed.load(std::memory_order_relaxed)) return;  // the grid is already failing
    BlockOutcome outcome = runBlock(grid, index);
    if (outcome == BlockOutcome::Completed) return;
    if (outcome == BlockOutcome::Asserted) asserted.store(true, std::memory_order_relaxed);
    failed.store(true, std::memory_order_relaxed);
    // Blocks waiting for this one stop waiting.
    if (grid.waiting != nullptr) grid.waiting->failed.store(true, std::memory_order_relaxed);
  };
  // The pool threads the grid may occupy at once (a green context's multiprocessors).
  unsigned workers = config.multiprocessors == 0
                         ? pool_.workerCount()
                         : std::min(config.multiprocessors, pool_.workerCount());
  std::optional<uint64_t> flat = config.cooperative ? std::nullopt : flatIterations(grid);
  if (flat) {
    // Each part a range of consecutive threads, whose iterations it runs pass by pass.
    uint64_t threads = uint64_t{config.grid[0]} * config.block[0];
    uint64_t parts = std::clamp<uint64_t>(threads / kFlatThreadsPerPart, 1, 4 * uint64_t{workers});
    uint64_t perPart = (threads + parts - 1) / parts;
    pool_.parallelFor(
        parts,
        [&](uint64_t part) {
          uint64_t first = part * perPart;
          if (failed.load(std::memory_order_relaxed) || first >= threads) return;
          if (runFlatThreads(grid, *flat, first, std::min(threads, first + perPart)) !=
              BlockOutcome::Completed)
            failed.store(true, std::memory_order_relaxed);
        },
        workers, config.priority);
  } else if (config.cooperative) {
    ROCUDA_TRY(runCooperative(grid, blocks, runOne));
  } else if (grid.spinWaits) {
    // A grid that spin-waits may wait for an earlier block (decoupled look-back), or for a later
    // one, which a GPU would run at the same time: OrderedGrid.
    uint32_t resident = config.residentBlocks != 0
                            ? config.residentBlocks
                            : static_cast<uint32_t>(std::min<uint64_t>(blocks, UINT32_MAX));
    unsigned claimers = static_cast<unsigned>(std::min<uint64_t>(blocks, workers));
    OrderedGrid ordered(blocks, resident, claimers, runOne);
    grid.waiting = &ordered;
    pool_.parallelFor(
        claimers, [&](uint64_t) { ordered.claimBlocks(); }, workers, config.priority);
    ordered.finish();  // the threads it added may still run the last blocks
    if (ordered.failed.load(std::memory_order_relaxed)) failed.store(true);
    grid.waiting = nullptr;
  } else {
    pool_.parallelForRanges(
        blocks,
        [&](uint64_t first, uint64_t last) {
          BlockOutcome outcome = runBlocks(grid, first, last, failed);
          if (outcome == BlockOutcome::Completed) return;
          if (outcome == BlockOutcome::Asserted) asserted.store(true, std::memory_order_relaxed);
          failed.store(true, std::memory_order_relaxed);
        },
        workers, config.priority);
  }
  if (memcheckEnabled())  // parameter buffers handed out and never launched
    for (auto& buffer : deviceLaunches.filling)
      AllocationMap::instance().remove(buffer->params.data(), false);
  if (asserted.load())
    return makeError(ErrorCode::Assert, "kernel '" + info.name + "' failed a device-side assert");
  if (misalignedAddress.load())
    return makeError(ErrorCode::MisalignedAddress,
                     "kernel '" + info.name + "' made a misaligned memory access (memcheck)");
  if (illegalAddress.load())
    return makeError(ErrorCode::IllegalAddress,
                     "kernel '" + info.name + "' made an invalid memory access (memcheck)");
  if (fault.taken.load()) return faultError(info.name, fault);
  if (failed.load())
    return makeError(ErrorCode::LaunchFailed,
                     "kernel '" + info.name +
                         "' executed trap (or deadlocked at a barrier or warp collective)");
  // The grids its threads launched, in launch order, each followed by its own; tail launches
  // after all of those.
  for (bool tail : {false, true})
    for (const auto& child : deviceLaunches.queued) {
      if (child->tail != tail) continue;
      LaunchConfig childConfig;
      childConfig.grid = child->grid;
      childConfig.block = child->block;
      childConfig.dynamicSharedBytes = child->sharedBytes;
      // The launching grid's context: its heap, stack size and reserved shared memory.
      childConfig.mallocHeap = config.mallocHeap;
      childConfig.mallocHeapLimit = config.mallocHeapLimit;
      childConfig.stackBytesPerThread = config.stackBytesPerThread;
      childConfig.reservedSharedBytes = config.reservedSharedBytes;
      childConfig.queries = config.queries;  // the same module's
      childConfig.nodeUpdates = config.nodeUpdates;
      childConfig.multiprocessors = config.multiprocessors;
      childConfig.priority = config.priority;
      ++launchNesting;
      Status status = launch(*child->kernel, childConfig, child->params.data());
      --launchNesting;
      if (!status) return status;
    }
  return Status::success();
}

}  // namespace
}  // namespace cpu

std::unique_ptr<DeviceBackend> createCpuBackend(int instance) {
  return std::make_unique<cpu::CpuDevice>(instance);
}

}  // namespace rocuda::backends
