// The one seam between the core and a kind of device (CPU, HIP). The core owns the CUDA model
// (contexts, streams, ordering, validation); a backend only executes: it allocates, copies, loads
// compiled code and runs a kernel grid, each synchronously on the calling thread unless a stream
// worker lets it queue the work on the device (StreamQueue). The core's stream workers call these
// in stream order.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.h"
#include "support/result.h"
#include "support/texture_view.h"

namespace rocuda::backends {

// Device malloc's heap of one context (cudaLimitMallocHeapSize) where device code's malloc takes
// host memory (the CPU device): the bytes its blocks hold, against the limit, and the blocks
// themselves, which go with the context: a reset or destruction frees them, as CUDA's do. Other
// backends keep their own heap for the context here (BackendHeap), freed at the same time.
class DeviceMallocHeap {
 public:
  DeviceMallocHeap() = default;
  DeviceMallocHeap(const DeviceMallocHeap&) = delete;
  DeviceMallocHeap& operator=(const DeviceMallocHeap&) = delete;
  ~DeviceMallocHeap() { release(); }

  // `bytes` (16-byte aligned), or nullptr when the heap would hold more than `limit` bytes or
  // the host has no memory.
  void* allocate(uint64_t bytes, uint64_t limit) {
    if (bytes > (uint64_t(1) << 62)) return nullptr;
    {
      std::lock_guard lock(mutex_);
      if (used_ + bytes > limit) return nullptr;
      used_ += bytes;
    }
    auto* block = static_cast<Block*>(std::malloc(sizeof(Block) + bytes));
    std::lock_guard lock(mutex_);
    if (block == nullptr) {
      used_ -= bytes;
      return nullptr;
    }
    *block = Block{this, bytes, nullptr, first_};
    if (first_ != nullptr) first_->previous = block;
    first_ = block;
    return block + 1;
  }
  // Gives back a block of allocate(), to the heap it came from.
  static void free(void* memory) {
    Block* block = static_cast<Block*>(memory) - 1;
    DeviceMallocHeap& heap = *block->heap;
    {
      std::lock_guard lock(heap.mutex_);
      (block->previous ? block->previous->next : heap.first_) = block->next;
      if (block->next != nullptr) block->next->previous = block->previous;
      heap.used_ -= block->bytes;
    }
    std::free(block);
  }
  // A backend's own heap for this context where device code's malloc takes the backend's memory
  // (an AMD GPU's: compiler/amdgpu/amdgpu_codegen.h), destroyed with the blocks.
  class BackendHeap {
   public:
    virtual ~BackendHeap() = default;
  };
  // The heap of `backend`, made by `make` at its first use.
  Result<BackendHeap*> backendHeap(
      const void* backend, const std::function<Result<std::unique_ptr<BackendHeap>>()>& make) {
    std::lock_guard lock(mutex_);
    std::unique_ptr<BackendHeap>& heap = backendHeaps_[backend];
    if (heap == nullptr) {
      auto made = make();
      if (!made.ok()) return made.takeError();
      heap = std::move(*made);
    }
    return heap.get();
  }
  // Frees every block and every backend's heap (the context is reset or destroyed).
  void release() {
    std::lock_guard lock(mutex_);
    for (Block* block = first_; block != nullptr;) {
      Block* next = block->next;
      std::free(block);
      block = next;
    }
    first_ = nullptr;
    used_ = 0;
    backendHeaps_.clear();
  }
  uint64_t used() const {
    std::lock_guard lock(mutex_);
    return used_;
  }

 private:
  struct alignas(16) Block {
    DeviceMallocHeap* heap;
    uint64_t bytes;
    Block* previous;
    Block* next;
  };
  mutable std::mutex mutex_;
  Block* first_ = nullptr;
  uint64_t used_ = 0;
  std::map<const void*, std::unique_ptr<BackendHeap>> backendHeaps_;
};

// cuMemAdvise's advice, in CUmem_advise's order (from 1).
enum class ManagedAdvice : uint8_t {
  SetReadMostly,
  UnsetReadMostly,
  SetPreferredLocation,
  UnsetPreferredLocation,
  SetAccessedBy,
  UnsetAccessedBy
};

// What a device is, in backend-neutral terms; api/cuda maps it onto every CUDA device attribute.
struct DeviceDescription {
  std::string name;
  std::string backendName;   // "cpu", "hip"
  std::string nativeTarget;  // "x86_64 (znver4)", "gfx1100:xnack-"...
  std::array<uint8_t, 16> uuid{};
  uint64_t totalMemory = 0;
  int computeCapabilityMajor = 8, computeCapabilityMinor = 6;
  int multiprocessorCount = 1;
  int clockRateKHz = 1000000;
  int memoryClockRateKHz = 1000000;
  int memoryBusWidthBits = 64;
  int l2CacheBytes = 0;
  // The CPU device's limits, which its generated code relies on (compiler.h).
  int maxThreadsPerBlock = compiler::kMaxThreadsPerBlock;
  std::array<int, 3> maxBlockDim{compiler::kMaxBlockDim[0], compiler::kMaxBlockDim[1],
                                 compiler::kMaxBlockDim[2]};
  std::array<int, 3> maxGridDim{compiler::kMaxGridDim[0], compiler::kMaxGridDim[1],
                                compiler::kMaxGridDim[2]};
  int warpSize = 32;
  int sharedMemPerBlock = 48 * 1024;
  int sharedMemPerBlockOptin = 48 * 1024;
  int sharedMemPerMultiprocessor = 64 * 1024;
  int registersPerBlock = 65536;
  int registersPerMultiprocessor = 65536;
  int maxThreadsPerMultiprocessor = 2048;
  int maxBlocksPerMultiprocessor = 32;
  int totalConstantMemory = 64 * 1024;
  int pciDomain = 0, pciBus = 0, pciDevice = 0;
  int hostNumaNode = -1;           // the host NUMA node nearest the device; -1: not known
  bool integrated = false;         // shares memory with the host
  bool canMapHostMemory = true;
  bool managedMemory = true;
  bool concurrentKernels = true;
  int asyncEngineCount = 1;
  bool pageableMemoryAccess = false;  // device can use any host pointer (true on the CPU device)
  bool hostNativeAtomics = false;
  bool cooperativeLaunch = true;
  // Stream priorities, in CUDA's numbering: 0 is the least, this (<= 0) the greatest. 0 when the
  // device does not schedule by priority.
  int greatestStreamPriority = 0;
  // Device memory can be shared with other processes through file descriptors (CUDA IPC,
  // external memory imported from an fd): DeviceBackend::shareDevice and mapShared work.
  bool sharesMemoryBetweenProcesses = false;
  // CUDA IPC memory handles are the backend's own (a GPU runtime's: DeviceBackend's
  // exportIpcMemory, openIpcMemory, closeIpcMemory) rather than shared file descriptors.
  bool ownIpcMemoryHandles = false;
  // cuMemCreate / cuMemMap and the rest of virtual memory management: DeviceBackend's
  // reserveAddresses, createPhysical, mapPhysical, setAccess and the rest work.
  bool virtualMemoryManagement = false;
  // Physical memory of virtual memory management can be exported and imported as POSIX file
  // descriptors (exportPhysical, importPhysical).
  bool physicalMemoryAsFileDescriptors = false;
};

// A device allocation made shareable: a file descriptor of its pages, owned by the backend
// (closed when the allocation is freed), and the bytes the descriptor covers.
struct SharedAllocation {
  int fd = -1;
  size_t bytes = 0;
};

// The graph launch running a kernel, as its device code reaches it: the launch's conditions
// (cudaGraphSetConditional), device graph launch (cudaGraphLaunch from device code into
// cudaStreamGraphFireAndForget, cudaStreamGraphTailLaunch or
// cudaStreamGraphFireAndForgetAsSibling) and %current_graph_exec. The core implements it (one
// per graph execution environment); calls come from the kernel's threads, concurrently.
class RunningGraph {
 public:
  virtual ~RunningGraph() = default;
  // False when `handle` is not a condition of this launch's graph.
  virtual bool setCondition(uint64_t handle, uint32_t value) = 0;
  // Queues a launch of the executable graph `graphExec` (a CUgraphExec) in the launch mode
  // `stream` names; runs it as CUDA's execution environments order it. A cudaError_t: 0, or why
  // the launch was refused (also logged).
  virtual uint32_t launchGraph(uint64_t graphExec, uint64_t stream) = 0;
  // The running graph's CUgraphExec when it was instantiated for device launch, else 0.
  virtual uint64_t currentGraphExec() const = 0;
};

// Device-updatable kernel nodes (CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE) as device
// code changes them (cudaGraphKernelNodeSetParam, ...SetEnabled, ...SetGridDim, and
// ...UpdatesApply, which the backends split into those): the core's, handed to every launch.
// `node` is a CUgraphDeviceNode; each answers a cudaError_t (1 cudaErrorInvalidValue for an
// unknown node, bytes past the node's parameters or an impossible grid).
class DeviceNodeUpdates {
 public:
  virtual ~DeviceNodeUpdates() = default;
  virtual uint32_t setParam(uint64_t node, uint64_t offset, const void* value,
                            uint64_t size) const = 0;
  virtual uint32_t setEnabled(uint64_t node, bool enabled) const = 0;
  virtual uint32_t setGridDim(uint64_t node, const std::array<uint32_t, 3>& grid) const = 0;
};

// What device code asks of the driver through NVIDIA's device runtime library (libcudadevrt's
// cudaGetDevice, cudaGetDeviceCount, cudaDeviceGetAttribute, cudaDeviceGetLimit,
// cudaDeviceGetCacheConfig / SharedMemConfig, cudaFuncGetAttributes and
// cudaOccupancyMaxActiveBlocksPerMultiprocessor), answered as the host API answers them for the
// launching module's context. Each returns a cudaError_t (0, or 1 cudaErrorInvalidValue for
// an unknown attribute, limit or kernel). `kernel` names a kernel of the launching module.
class DeviceRuntimeQueries {
 public:
  virtual ~DeviceRuntimeQueries() = default;
  virtual uint32_t device(int* ordinal) const = 0;
  virtual uint32_t deviceCount(int* count) const = 0;
  virtual uint32_t deviceAttribute(int* value, int attribute, int device) const = 0;
  virtual uint32_t limit(size_t* value, int limit) const = 0;
  virtual uint32_t cacheConfig(int* config) const = 0;
  virtual uint32_t sharedMemConfig(int* config) const = 0;
  virtual uint32_t functionAttribute(int* value, int attribute, std::string_view kernel) const = 0;
  virtual uint32_t maxActiveBlocksPerMultiprocessor(int* blocks, std::string_view kernel,
                                                    int blockSize, size_t dynamicSharedBytes,
                                                    unsigned flags) const = 0;
};

struct LaunchConfig {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamicSharedBytes = 0;
  // Every block resident at once, with a grid workspace for cooperative groups' grid.sync(); the
  // core has checked the grid against the device's occupancy.
  bool cooperative = false;
  // Kernels of graph launches: the graph launch running them (null outside graphs).
  RunningGraph* graph = nullptr;
  // The priority of the stream (or of the launch attribute), within [greatestStreamPriority, 0].
  int priority = 0;
  // Device malloc's heap (cudaLimitMallocHeapSize): the context's, shared by all its launches,
  // and its limit; malloc returns NULL past it.
  DeviceMallocHeap* mallocHeap = nullptr;
  uint64_t mallocHeapLimit = 0;
  // The context's CU_LIMIT_STACK_SIZE: each thread's stack (local memory and call frames).
  uint64_t stackBytesPerThread = 1024;
  // The context's CU_LIMIT_PRINTF_FIFO_SIZE: room for device printf's records of a launch.
  uint64_t printfFifoBytes = uint64_t(1) << 20;
  // A cluster dimension was given at launch (%is_explicit_cluster; __cluster_dims__ counts too).
  bool explicitCluster = false;
  // The driver's shared memory reserved per block (%aggr_smem_size counts it).
  uint64_t reservedSharedBytes = 0;
  // Blocks of this launch the device holds at once (the occupancy calculator's blocks per
  // multiprocessor times the multiprocessors): how many may wait for one another. 0: unknown.
  uint32_t residentBlocks = 0;
  // The launching module's answers to device code's driver queries (null: every query fails).
  const DeviceRuntimeQueries* queries = nullptr;
  // Device code's updates of device-updatable graph nodes (null: every update fails).
  const DeviceNodeUpdates* nodeUpdates = nullptr;
  // The multiprocessors the grid may occupy at once: a green context's partition of the device
  // (CUDA allows a launch to run on more than it provisions, never on fewer); 0: all of them.
  uint32_t multiprocessors = 0;
};

// What a launch's special registers %dynamic_smem_size, %total_smem_size, %aggr_smem_size and
// %is_explicit_cluster read, for `kernel` (both devices answer alike).
struct LaunchRegisters {
  uint32_t windowBytes = 0;  // the block's shared window (static, dynamic, reserved region)
  uint32_t dynamicSmemSize = 0;
  uint32_t totalSmemSize = 0;      // static and dynamic, without the driver's reserved region
  uint32_t aggrSmemSize = 0;       // with it
  bool isExplicitCluster = false;  // a cluster dimension given at launch or compiled in
};
inline LaunchRegisters launchRegistersOf(const compiler::KernelInfo& kernel,
                                         const LaunchConfig& config) {
  LaunchRegisters r;
  r.dynamicSmemSize = config.dynamicSharedBytes;
  r.windowBytes =
      std::max(kernel.staticSharedBytes, kernel.dynamicSharedOffset + config.dynamicSharedBytes);
  // A kernel that reads %reserved_smem_offset_* has the driver's region in its window.
  r.totalSmemSize =
      r.windowBytes - (kernel.usesReservedShared ? compiler::kReservedSharedBytes : 0);
  r.aggrSmemSize = r.totalSmemSize + static_cast<uint32_t>(config.reservedSharedBytes);
  r.isExplicitCluster = config.explicitCluster || std::any_of(kernel.reqnctapercluster.begin(),
                                                              kernel.reqnctapercluster.end(),
                                                              [](uint32_t n) { return n != 0; });
  return r;
}

// What a kernel's compiled code uses, as cuFuncGetAttribute reports it. A field the backend does
// not know stays -1, and the compiler's description (KernelInfo) answers instead.
struct KernelResources {
  int registersPerThread = 0;     // the CPU device allocates no register file
  int localBytesPerThread = -1;   // private (scratch) memory of each thread
  int staticSharedBytes = -1;     // shared memory (LDS) the code object reserves
  int maxThreadsPerBlock = -1;    // the most threads a block of this code may have
};

// A kernel of a loaded module.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  virtual const compiler::KernelInfo& info() const = 0;
  virtual KernelResources resources() const { return {}; }
  // Make the kernel's code ready before its first launch is queued: a kernel compiled lazily
  // compiles now, so that its failure is the launch's error (as with NVIDIA's lazy loading, at
  // cuLaunchKernel) rather than a failure on the stream that no call reports.
  virtual Status prepare() { return Status::success(); }
  // Whether the code is ready (cuFuncIsLoaded): false until prepare() or the first launch for a
  // kernel compiled lazily.
  virtual bool prepared() const { return true; }
};

// Code compiled for this device and loaded into it.
class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  virtual const compiler::ModuleInfo& info() const = 0;
  virtual LoadedKernel* kernel(std::string_view name) = 0;  // nullptr when absent
  // Device address of a .global/.const variable; nullptr when absent.
  virtual void* globalAddress(std::string_view name) = 0;
};

class DeviceBackend;

// A stream worker's queue on a device that runs operations asynchronously (a GPU's stream), so
// that a CUDA stream's kernels and copies reach the device back to back instead of one round
// trip to the host each. While a command runs with the queue active on its thread (Activation),
// the backend's copy, fill, copy2D, prefetchManaged and launch may return once the operation is
// queued, in order after the queue's earlier operations; drain() waits for all of them and
// reports the first failure (a kernel's fault surfaces there). Memory an operation reads or
// writes on the host must stay valid until the drain. With no queue active, or another device's,
// every operation finishes before it returns, as the contract above says.
class StreamQueue {
 public:
  explicit StreamQueue(const DeviceBackend& owner) : owner_(owner) {}
  virtual ~StreamQueue() = default;
  StreamQueue(const StreamQueue&) = delete;
  StreamQueue& operator=(const StreamQueue&) = delete;

  const DeviceBackend& owner() const { return owner_; }
  virtual Status drain() = 0;

  // The queue the calling thread's current command may leave work on (null outside one).
  static StreamQueue* active() { return active_; }
  class Activation {
   public:
    explicit Activation(StreamQueue* queue) : previous_(active_) { active_ = queue; }
    ~Activation() { active_ = previous_; }
    Activation(const Activation&) = delete;
    Activation& operator=(const Activation&) = delete;

   private:
    StreamQueue* previous_;
  };

 private:
  const DeviceBackend& owner_;
  static inline thread_local StreamQueue* active_ = nullptr;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const DeviceDescription& description() const = 0;

  // Device memory, and page-locked host memory the device can access.
  virtual Result<void*> allocateDevice(size_t bytes) = 0;
  virtual void freeDevice(void* pointer) = 0;
  virtual Result<void*> allocateHost(size_t bytes) = 0;
  virtual void freeHost(void* pointer) = 0;
  // Bytes of device memory free right now.
  virtual uint64_t freeMemory() const = 0;
  // Whether every access of a kernel is checked against live allocations (the CPU device's
  // ROCUDA_MEMCHECK): memory pools then free blocks at once instead of keeping them for reuse,
  // so that an access after cuMemFreeAsync is reported.
  virtual bool checksEveryAccess() const { return false; }
  // Memory kernels may access that the backend did not allocate appeared or went away:
  // cuMemHostRegister'ed ranges, IPC handles opened, external memory and imported pool
  // pointers mapped (the CPU device's memcheck tracks them); nothing to do by default.
  virtual void externalRangeMapped(void* /*base*/, size_t /*bytes*/, bool /*registered*/) {}
  // cuMemHostRegister: the application's memory made reachable by kernels and fast copies. The
  // result is the address kernels use (cuMemHostGetDevicePointer), which a GPU may map elsewhere
  // than the host address. By default the device reaches host memory at its own address.
  virtual Result<void*> registerHost(void* base, size_t bytes) {
    externalRangeMapped(base, bytes, true);
    return base;
  }
  // Undoes registerHost(base, bytes).
  virtual void unregisterHost(void* base, size_t bytes) { externalRangeMapped(base, bytes, false); }
  // Managed memory (cuMemAllocManaged), reachable at the same address from host and device. By
  // default pinned host memory, which every backend reporting managedMemory can access.
  virtual Result<void*> allocateManaged(size_t bytes) { return allocateHost(bytes); }
  virtual void freeManaged(void* pointer) { freeHost(pointer); }
  // cuMemPrefetchAsync / cuMemAdvise on managed memory of allocateManaged: where its pages
  // should be (this device, or the host when `toDevice` is false) and how they are used. Hints
  // only: a device whose managed memory is host memory (the CPU device) has nothing to move.
  virtual Status prefetchManaged(void* /*pointer*/, size_t /*bytes*/, bool /*toDevice*/) {
    return Status::success();
  }
  virtual Status adviseManaged(void* /*pointer*/, size_t /*bytes*/, ManagedAdvice /*advice*/,
                               bool /*forDevice*/) {
    return Status::success();
  }

  // A texture or surface object's views (support/texture_view.h) where this device's kernels
  // read them: the handle kernels are given. `view` is the object's view; a mipmapped texture's
  // `levels` (view.mipLevels points at them) follow it. The CPU device reads the core's own copy
  // (the default); a GPU copies them into its memory, `mipLevels` rewritten, until
  // releaseTextureViews.
  virtual Result<uint64_t> placeTextureViews(const support::TextureView& view,
                                             const std::vector<support::TextureView>& /*levels*/) {
    return reinterpret_cast<uint64_t>(&view);
  }
  virtual void releaseTextureViews(uint64_t /*handle*/) {}

  // Sharing memory between processes (backends without it answer NotSupported).
  // shareDevice: the allocation at `base` (from allocateDevice) made shareable in place, its
  // address unchanged; the caller must make sure nothing writes it meanwhile.
  virtual Result<SharedAllocation> shareDevice(void* /*base*/) {
    return makeError(ErrorCode::NotSupported, "this device cannot share memory between processes");
  }
  // `bytes` at `offset` of a file descriptor (not taken over) mapped as device memory.
  virtual Result<void*> mapShared(int /*fd*/, uint64_t /*offset*/, size_t /*bytes*/) {
    return makeError(ErrorCode::NotSupported, "this device cannot map shared memory");
  }
  // Undoes mapShared(_, _, bytes) that returned `pointer`.
  virtual void unmapShared(void* /*pointer*/, size_t /*bytes*/) {}

  // CUDA IPC memory handles made by the backend itself (DeviceDescription::ownIpcMemoryHandles):
  // the 64 bytes of a device allocation's handle; the allocation of another process opened by
  // one (the core opens each handle once per context and counts its users) and its size; and
  // closed.
  using IpcMemoryHandle = std::array<unsigned char, 64>;
  struct OpenedIpcMemory {
    void* pointer = nullptr;
    size_t bytes = 0;
  };
  virtual Result<IpcMemoryHandle> exportIpcMemory(void* /*base*/) {
    return makeError(ErrorCode::NotSupported, "this device makes no IPC handles of its own");
  }
  virtual Result<OpenedIpcMemory> openIpcMemory(const IpcMemoryHandle& /*handle*/,
                                                unsigned /*flags*/) {
    return makeError(ErrorCode::NotSupported, "this device makes no IPC handles of its own");
  }
  virtual void closeIpcMemory(void* /*pointer*/) {}

  // Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap...;
  // core/virtual_memory.cpp keeps the bookkeeping and checks the arguments). A backend reserves
  // address ranges (the CPU device: inaccessible host pages; a GPU: its own virtual addresses),
  // holds physical memory behind a handle of its own (never 0), maps it into a reserved range
  // (inaccessible until setAccess; unmapping makes the range reserved and inaccessible again) and
  // shares it as a file descriptor. Sizes, addresses and offsets are multiples of
  // virtualMemoryGranularity(false). Backends without it answer NotSupported
  // (DeviceDescription::virtualMemoryManagement false).
  virtual size_t virtualMemoryGranularity(bool /*recommended*/) const { return 0; }
  virtual Result<void*> reserveAddresses(size_t /*bytes*/, size_t /*alignment*/,
                                         uintptr_t /*hint*/) {
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  }
  virtual void freeAddresses(void* /*base*/, size_t /*bytes*/) {}
  // `exportable`: exportPhysical will be asked for (some backends must know at creation).
  virtual Result<uint64_t> createPhysical(size_t /*bytes*/, bool /*exportable*/) {
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  }
  virtual void releasePhysical(uint64_t /*handle*/) {}
  // A new file descriptor of the memory (the caller closes it).
  virtual Result<int> exportPhysical(uint64_t /*handle*/) {
    return makeError(ErrorCode::NotSupported, "this device cannot export physical memory");
  }
  // Physical memory from a descriptor of exportPhysical (taken over when this succeeds), and its
  // size in bytes (0 when the backend cannot tell).
  struct ImportedPhysical {
    uint64_t handle = 0;
    size_t bytes = 0;
  };
  virtual Result<ImportedPhysical> importPhysical(int /*fd*/) {
    return makeError(ErrorCode::NotSupported, "this device cannot import physical memory");
  }
  virtual Status mapPhysical(void* /*address*/, size_t /*bytes*/, uint64_t /*handle*/,
                             uint64_t /*offset*/) {
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  }
  // The access each device has to a mapping of this device's memory (cuMemSetAccess): this
  // device's and its peers' (DeviceBackend::peerLink), every one of them each time.
  struct DeviceAccess {
    const DeviceBackend* device = nullptr;
    bool readable = false;
    bool writable = false;
  };
  virtual Status setAccess(void* /*address*/, size_t /*bytes*/,
                           const std::vector<DeviceAccess>& /*access*/) {
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  }
  virtual Status unmapPhysical(void* /*address*/, size_t /*bytes*/) {
    return makeError(ErrorCode::NotSupported, "this device has no virtual memory management");
  }

  // Peer access (cuCtxEnablePeerAccess): what this device's kernels can do with `peer`'s memory
  // once access is enabled, and enabling and disabling it: called for each pair of contexts,
  // so a backend whose setting is per device counts them.
  struct PeerLink {
    bool access = false;         // kernels can read and write the peer's memory
    bool nativeAtomics = false;  // atomics on it are atomic across both devices
    bool arrays = false;         // CUDA arrays of the peer can be accessed
  };
  virtual PeerLink peerLink(const DeviceBackend& /*peer*/) const { return {}; }
  virtual Status enablePeerAccess(const DeviceBackend& /*peer*/) {
    return makeError(ErrorCode::NotSupported, "this device cannot access another's memory");
  }
  virtual void disablePeerAccess(const DeviceBackend& /*peer*/) {}

  // Give the physical memory behind [address, address + bytes) of a device allocation back to
  // the system, the addresses staying valid (the contents become undefined). False when the
  // backend cannot: the memory then stays as it was.
  virtual bool discardPages(void* /*address*/, size_t /*bytes*/) { return false; }

  // Synchronous copies and fills, any direction (the core resolved the pointers already).
  virtual Status copy(void* destination, const void* source, size_t bytes) = 0;
  virtual Status fill(void* destination, uint32_t value, size_t elementBytes, size_t count) = 0;
  // 2D copy/fill of `height` rows of `widthBytes` each.
  virtual Status copy2D(void* destination, size_t destinationPitch, const void* source,
                        size_t sourcePitch, size_t widthBytes, size_t height) = 0;

  // Compile (through the code cache) and load one PTX module. Errors carry the diagnostics.
  virtual Result<std::unique_ptr<LoadedModule>> loadPtx(std::string_view ptx,
                                                        std::string_view moduleName) = 0;
  // Run a whole grid to completion. `params` is the packed parameter buffer (KernelInfo layout);
  // the backend has copied it when this returns, even with the launch left on a StreamQueue.
  virtual Status launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) = 0;

  // A queue for one stream worker (StreamQueue), or null where every operation runs to
  // completion anyway (the CPU device).
  virtual std::unique_ptr<StreamQueue> createStreamQueue() { return nullptr; }
  // Whether createStreamQueue gives queues (true exactly where it does). Where it does not,
  // device work runs on the thread that issues it, whichever that is: a stream's worker, or a
  // thread synchronising the stream (Stream::finish).
  virtual bool queuesStreamWork() const { return false; }
};

// The CPU device (backends/cpu). Always available. `instance` numbers the CPU devices of the
// process (ROCUDA_DEVICES=cpu,cpu gives two): each has its own UUID and PCI bus id.
std::unique_ptr<DeviceBackend> createCpuBackend(int instance = 0);

}  // namespace rocuda::backends
