// One AMD GPU as a Rocuda device: memory, copies and kernels through HIP (HIP's current device is
// per thread, so every call selects it first). Copies, fills and kernels run on HIP streams
// (LanePool): a core stream worker holds one while it has work queued on it (StreamQueue), other
// callers borrow one for a single operation and wait for it, so the work of independent CUDA
// streams, each issued by its own core worker thread, overlaps on the GPU.
// PTX is compiled by the AMD code generator for the device's gcnArchName (through the code
// cache), loaded with hipModuleLoadData and launched with hipModuleLaunchKernel.
#include "backends/hip/hip_device.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backends/hip/hip_printf.h"
#include "compiler/amdgpu/amdgpu_codegen.h"
#include "support/disk_cache.h"
#include "support/env.h"
#include "support/log.h"

namespace rocuda::backends::hip {
namespace {

// Registers, scratch, LDS and the block-size limit from the code object (hipFuncGetAttribute,
// which reads its kernel descriptor and metadata); -1 where the runtime lacks the call.
KernelResources codeObjectResources(const HipApi& api, hipFunction_t function) {
  KernelResources resources;
  resources.registersPerThread = -1;
  if (api.hipFuncGetAttribute == nullptr) return resources;
  auto read = [&](hipFunction_attribute attribute, int& into) {
    int value = 0;
    if (api.hipFuncGetAttribute(&value, attribute, function) == hipSuccess) into = value;
  };
  read(HIP_FUNC_ATTRIBUTE_NUM_REGS, resources.registersPerThread);
  read(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, resources.localBytesPerThread);
  read(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, resources.staticSharedBytes);
  read(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, resources.maxThreadsPerBlock);
  return resources;
}

// A module's grid workspace (amdgpu_codegen.h, kAmdgpuGridWorkspaceSymbol): the symbol's device
// address, the workspace it points at during cooperative launches, and the value it holds now.
// The module's launches take turns (launchMutex): a cooperative launch's workspace must not be
// seen by another kernel, and each launch sets the symbol it reads.
struct GridWorkspace {
  void* symbol = nullptr;
  void* workspace = nullptr;  // hipMalloc'ed, kBytes
  uint64_t current = 0;
  std::mutex launchMutex;
  static constexpr size_t kBytes = 64;
};

// A module's pointer to device malloc's heap (amdgpu_codegen.h, kAmdgpuDeviceHeapSymbol): the
// symbol's device address and the heap it points at now (0 at load).
struct DeviceHeapPointer {
  void* symbol = nullptr;
  uint64_t current = 0;
  std::mutex mutex;
};

// A module's launch buffer for dynamic parallelism (amdgpu_codegen.h,
// kAmdgpuDeviceLaunchesSymbol): device memory for an AmdgpuDeviceLaunchHeader and
// kAmdgpuPendingLaunches records of the module's largest kernel, which the symbol points at.
// Launches of the module's kernels take turns with it (launchMutex) from the header's reset to
// the reading of the grids they launched. Kernels are found by the device address of their name.
struct DeviceLaunches {
  void* buffer = nullptr;
  uint64_t capacity = 0;  // bytes for records
  LoadedModule* module = nullptr;
  std::map<uint64_t, LoadedKernel*> kernelsByName;
  std::mutex launchMutex;
};

// A module's slots for cudaGraphSetConditional (amdgpu_codegen.h, kAmdgpuGraphConditionsSymbol):
// zeroed before each launch of its kernels, which take turns with them (launchMutex), and read
// after it for the graph launch running the kernel.
struct GraphConditionSlots {
  void* buffer = nullptr;
  std::mutex launchMutex;
  static constexpr size_t kBytes =
      compiler::kAmdgpuGraphConditionSlots * sizeof(compiler::AmdgpuGraphConditionSlot);
};

// A grid a kernel launched, read from the launch buffer after the kernel finished.
struct DeviceLaunch {
  LoadedKernel* kernel = nullptr;  // null for a graph launch
  std::array<uint32_t, 3> grid{}, block{};
  uint32_t sharedBytes = 0;
  uint32_t sequence = 0;
  bool tail = false;
  std::vector<uint8_t> params;
  // cudaGraphLaunch from device code: the CUgraphExec and the launch mode's stream.
  uint64_t graph = 0, graphStream = 0;
  // An update of a device-updatable node (amdgpu_codegen.h): the CUgraphDeviceNode, the field
  // (cudaGraphKernelNodeField: 1 grid in `grid`, 2 parameter bytes in `params` at the offset
  // grid[0..1] hold, 3 enabled grid[0]); 0: no update.
  uint64_t node = 0;
  uint32_t nodeField = 0;
};

// Device malloc's heap of one context on one GPU: cudaLimitMallocHeapSize bytes of device
// memory that start with an AmdgpuDeviceHeapHeader; freed with the context's heap
// (DeviceMallocHeap::release).
class HipDeviceHeap final : public DeviceMallocHeap::BackendHeap {
 public:
  HipDeviceHeap(std::shared_ptr<HipLibrary> library, int ordinal, void* memory)
      : library_(std::move(library)), ordinal_(ordinal), memory_(memory) {}
  ~HipDeviceHeap() override {
    const HipApi& api = library_->api();
    if (api.hipSetDevice(ordinal_) != hipSuccess) return;
    hipError_t status = api.hipFree(memory_);
    if (status != hipSuccess)
      log::warning(library_->error(status, "hipFree of a device heap").message);
  }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(memory_); }

 private:
  std::shared_ptr<HipLibrary> library_;
  int ordinal_;
  void* memory_;
};

class HipKernel final : public LoadedKernel {
 public:
  HipKernel(const compiler::KernelInfo& info, hipFunction_t function, PrintfBuffer* printf,
            void* assertFlag, GridWorkspace* gridWorkspace, DeviceHeapPointer* heapPointer,
            DeviceLaunches* deviceLaunches, GraphConditionSlots* graphConditions,
            KernelResources resources)
      : info_(info),
        function_(function),
        printf_(printf),
        assertFlag_(assertFlag),
        gridWorkspace_(gridWorkspace),
        heapPointer_(heapPointer),
        deviceLaunches_(deviceLaunches),
        graphConditions_(graphConditions),
        resources_(resources) {
    if (resources_.registersPerThread < 0) resources_.registersPerThread = 0;  // unknown
  }
  const compiler::KernelInfo& info() const override { return info_; }
  KernelResources resources() const override { return resources_; }
  hipFunction_t function() const { return function_; }
  PrintfBuffer* printfBuffer() const { return printf_; }  // null when the module never prints
  // The module's assert flag (compiler/amdgpu/amdgpu_codegen.h) in device memory; null when no
  // kernel of the module asserts.
  void* assertFlag() const { return assertFlag_; }
  // The module's grid workspace; null when no kernel of the module reads %envreg1/%envreg2.
  GridWorkspace* gridWorkspace() const { return gridWorkspace_; }
  // The module's device heap pointer; null when no kernel of the module calls malloc or free.
  DeviceHeapPointer* heapPointer() const { return heapPointer_; }
  // The module's launch buffer; null when no kernel of the module launches kernels.
  DeviceLaunches* deviceLaunches() const { return deviceLaunches_; }
  // The module's cudaGraphSetConditional slots; null when no kernel of the module calls it.
  GraphConditionSlots* graphConditions() const { return graphConditions_; }

 private:
  const compiler::KernelInfo& info_;  // owned by the module
  hipFunction_t function_;
  PrintfBuffer* printf_;  // owned by the module
  void* assertFlag_;
  GridWorkspace* gridWorkspace_;    // owned by the module
  DeviceHeapPointer* heapPointer_;  // owned by the module
  DeviceLaunches* deviceLaunches_;  // owned by the module
  GraphConditionSlots* graphConditions_;  // owned by the module
  KernelResources resources_;
};

// Which of the module-wide symbols of amdgpu_codegen.h a code object defines.
struct ModuleSymbols {
  bool printfBuffer = false;
  bool assertFlag = false;
  bool gridWorkspace = false;
  bool deviceHeap = false;
  bool deviceLaunches = false;
  bool graphConditions = false;
};

// A code object loaded into one device; unloaded with the module.
class HipModule final : public LoadedModule {
 public:
  HipModule(std::shared_ptr<HipLibrary> library, int ordinal, compiler::ModuleInfo info,
            hipModule_t module)
      : library_(std::move(library)), ordinal_(ordinal), info_(std::move(info)), module_(module) {}

  ~HipModule() override {
    const HipApi& api = library_->api();
    if (api.hipSetDevice(ordinal_) != hipSuccess) return;
    printf_.reset();
    if (gridWorkspace_ && gridWorkspace_->workspace) api.hipFree(gridWorkspace_->workspace);
    if (deviceLaunches_ && deviceLaunches_->buffer) api.hipFree(deviceLaunches_->buffer);
    if (graphConditions_ && graphConditions_->buffer) api.hipFree(graphConditions_->buffer);
    hipError_t status = api.hipModuleUnload(module_);
    if (status != hipSuccess) log::warning(library_->error(status, "hipModuleUnload").message);
  }

  // Look up every kernel and global the compiler reported: a code object that lacks one is
  // refused at load time rather than at first use.
  Status resolve(std::string_view moduleName, const ModuleSymbols& symbols) {
    const HipApi& api = library_->api();
    auto lookUp = [&](const char* name, void** address) -> Status {
      size_t bytes = 0;
      hipError_t status = api.hipModuleGetGlobal(address, &bytes, module_, name);
      if (status != hipSuccess)
        return library_->error(status, std::string("hipModuleGetGlobal(") + name + ") in module '" +
                                           std::string(moduleName) + "'");
      return Status::success();
    };
    if (symbols.printfBuffer) {
      auto buffer = PrintfBuffer::create(library_, module_, moduleName);
      if (!buffer.ok()) return buffer.takeError();
      printf_ = std::move(*buffer);
    }
    void* assertFlag = nullptr;
    if (symbols.assertFlag) ROCUDA_TRY(lookUp(compiler::kAmdgpuAssertFlagSymbol, &assertFlag));
    if (symbols.deviceHeap) {
      heapPointer_ = std::make_unique<DeviceHeapPointer>();
      ROCUDA_TRY(lookUp(compiler::kAmdgpuDeviceHeapSymbol, &heapPointer_->symbol));
    }
    if (symbols.gridWorkspace) {
      auto workspace = std::make_unique<GridWorkspace>();
      ROCUDA_TRY(lookUp(compiler::kAmdgpuGridWorkspaceSymbol, &workspace->symbol));
      hipError_t status = api.hipMalloc(&workspace->workspace, GridWorkspace::kBytes);
      if (status != hipSuccess)
        return library_->error(
            status, "hipMalloc of the grid workspace of module '" + std::string(moduleName) + "'");
      gridWorkspace_ = std::move(workspace);
    }
    if (symbols.deviceLaunches) ROCUDA_TRY(createDeviceLaunches(moduleName, lookUp));
    if (symbols.graphConditions) {
      graphConditions_ = std::make_unique<GraphConditionSlots>();
      auto buffer =
          pointedBuffer(compiler::kAmdgpuGraphConditionsSymbol, GraphConditionSlots::kBytes,
                        "graph condition slots", moduleName, lookUp);
      if (!buffer.ok()) return buffer.error();
      graphConditions_->buffer = *buffer;
    }
    for (const compiler::KernelInfo& k : info_.kernels) {
      hipFunction_t function = nullptr;
      hipError_t status = api.hipModuleGetFunction(&function, module_, k.name.c_str());
      if (status != hipSuccess)
        return library_->error(status, "hipModuleGetFunction('" + k.name + "') in module '" +
                                           std::string(moduleName) + "'");
      kernels_.emplace(k.name, std::make_unique<HipKernel>(
                                   k, function, printf_.get(), assertFlag, gridWorkspace_.get(),
                                   heapPointer_.get(), deviceLaunches_.get(),
                                   graphConditions_.get(), codeObjectResources(api, function)));
    }
    for (const compiler::GlobalInfo& g : info_.globals) {
      void* address = nullptr;
      size_t bytes = 0;
      hipError_t status = api.hipModuleGetGlobal(&address, &bytes, module_, g.name.c_str());
      if (status != hipSuccess)
        return library_->error(status, "hipModuleGetGlobal('" + g.name + "') in module '" +
                                           std::string(moduleName) + "'");
      if (bytes < g.size)
        return makeError(ErrorCode::InvalidImage,
                         "global '" + g.name + "' of module '" + std::string(moduleName) + "' has " +
                             std::to_string(bytes) + " bytes in the code object, the PTX declares " +
                             std::to_string(g.size));
      globals_.emplace(g.name, address);
    }
    return Status::success();
  }

  const compiler::ModuleInfo& info() const override { return info_; }
  LoadedKernel* kernel(std::string_view name) override {
    auto it = kernels_.find(std::string(name));
    return it == kernels_.end() ? nullptr : it->second.get();
  }
  void* globalAddress(std::string_view name) override {
    auto it = globals_.find(std::string(name));
    return it == globals_.end() ? nullptr : it->second;
  }

 private:
  // The launch buffer, sized for kAmdgpuPendingLaunches launches of the largest kernel, and the
  // module's symbol pointed at it.
  template <class LookUp>
  Status createDeviceLaunches(std::string_view moduleName, LookUp& lookUp) {
    deviceLaunches_ = std::make_unique<DeviceLaunches>();
    deviceLaunches_->module = this;
    uint64_t largest = 0;
    for (const compiler::KernelInfo& k : info_.kernels)
      largest = std::max<uint64_t>(largest, k.paramBufferSize);
    deviceLaunches_->capacity =
        compiler::kAmdgpuPendingLaunches * compiler::amdgpuDeviceLaunchRecordBytes(largest);
    auto buffer =
        pointedBuffer(compiler::kAmdgpuDeviceLaunchesSymbol,
                      sizeof(compiler::AmdgpuDeviceLaunchHeader) + deviceLaunches_->capacity,
                      "launch buffer", moduleName, lookUp);
    if (!buffer.ok()) return buffer.error();
    deviceLaunches_->buffer = *buffer;
    return Status::success();
  }

  // `bytes` of device memory that the module's u64 `symbol` is pointed at (freed here on failure;
  // the caller keeps it for the module's life).
  template <class LookUp>
  Result<void*> pointedBuffer(const char* symbol, size_t bytes, const char* what,
                              std::string_view moduleName, LookUp& lookUp) {
    const HipApi& api = library_->api();
    void* address = nullptr;
    ROCUDA_TRY(lookUp(symbol, &address));
    void* buffer = nullptr;
    hipError_t status = api.hipMalloc(&buffer, bytes);
    if (status != hipSuccess)
      return library_->error(status, std::string("hipMalloc of the ") + what + " of module '" +
                                         std::string(moduleName) + "'");
    uint64_t value = reinterpret_cast<uintptr_t>(buffer);
    status = api.hipMemcpy(address, &value, sizeof value, hipMemcpyDefault);
    if (status != hipSuccess) {
      api.hipFree(buffer);
      return library_->error(status,
                             "pointing module '" + std::string(moduleName) + "' at its " + what);
    }
    return buffer;
  }

  std::shared_ptr<HipLibrary> library_;
  int ordinal_;
  compiler::ModuleInfo info_;
  hipModule_t module_;
  std::unique_ptr<PrintfBuffer> printf_;
  std::unique_ptr<GridWorkspace> gridWorkspace_;
  std::unique_ptr<DeviceHeapPointer> heapPointer_;
  std::unique_ptr<DeviceLaunches> deviceLaunches_;
  std::unique_ptr<GraphConditionSlots> graphConditions_;
  std::unordered_map<std::string, std::unique_ptr<HipKernel>> kernels_;
  std::unordered_map<std::string, void*> globals_;
};

// Non-blocking HIP streams, each lent to one user at a time (one operation, or a stream worker's
// queue until it drains) and returned when its work has finished. The null stream would do for
// correctness but waits for all blocking streams of the device, serialising every CUDA stream; a
// lane per concurrent user does not. Lanes are kept by HIP priority so a high-priority CUDA
// stream's kernels are dispatched ahead of others.
class LanePool {
 public:
  LanePool(const HipLibrary& library, int defaultPriority)
      : library_(library), defaultPriority_(defaultPriority) {}
  ~LanePool() {  // the device is selected by the owner; every lane is idle (operations are done)
    for (auto& [priority, lanes] : idle_)
      for (hipStream_t lane : lanes) library_.api().hipStreamDestroy(lane);
  }
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // An idle lane of `priority`, or a new one on the current device.
  Result<hipStream_t> acquire(int priority) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<hipStream_t>& lanes = idle_[priority];
      if (!lanes.empty()) {
        hipStream_t lane = lanes.back();
        lanes.pop_back();
        return lane;
      }
    }
    hipStream_t lane = nullptr;
    hipError_t status =
        library_.api().hipStreamCreateWithPriority(&lane, hipStreamNonBlocking, priority);
    if (status != hipSuccess)
      return library_.error(
          status, "hipStreamCreateWithPriority (priority " + std::to_string(priority) + ")");
    return lane;
  }
  void release(hipStream_t lane, int priority) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_[priority].push_back(lane);
  }
  // The HIP priority of CUDA's 0, where work without a priority of its own goes.
  int defaultPriority() const { return defaultPriority_; }

 private:
  const HipLibrary& library_;
  int defaultPriority_;
  std::mutex mutex_;
  std::map<int, std::vector<hipStream_t>> idle_;
};

// A stream worker's HIP stream (StreamQueue): a lane held from the first operation after a
// drain until the next drain, so that the worker's kernels and copies queue back to back on it.
// A kernel of another priority drains it and takes a lane of its own priority.
class HipStreamQueue final : public StreamQueue {
 public:
  HipStreamQueue(const DeviceBackend& owner, const HipLibrary& library, LanePool& lanes,
                 int ordinal)
      : StreamQueue(owner), library_(library), lanes_(lanes), ordinal_(ordinal) {}
  ~HipStreamQueue() override { (void)drain(); }  // the worker drained it; nothing to wait for

  // The lane to issue on: the held one, unless `hipPriority` (none: any) asks for another.
  Result<hipStream_t> lane(std::optional<int> hipPriority) {
    if (lane_ != nullptr && hipPriority && *hipPriority != lanePriority_) ROCUDA_TRY(drain());
    if (lane_ == nullptr) {
      int priority = hipPriority.value_or(lanes_.defaultPriority());
      auto lane = lanes_.acquire(priority);
      if (!lane.ok()) return lane.error();
      lane_ = *lane;
      lanePriority_ = priority;
    }
    return lane_;
  }
  void noteIssued(const std::string& waitedFor) {
    if (issued_++ == 0) firstIssued_ = waitedFor;
  }

  Status drain() override {
    if (lane_ == nullptr) return Status::success();
    Status result = Status::success();
    hipError_t status = library_.api().hipSetDevice(ordinal_);
    if (status == hipSuccess) status = library_.api().hipStreamSynchronize(lane_);
    if (status != hipSuccess) {
      std::string waitedFor = firstIssued_;
      if (issued_ > 1)
        waitedFor += " and the " + std::to_string(issued_ - 1) + " operations queued after it";
      result = library_.error(status, "hipStreamSynchronize for " + waitedFor);
    }
    lanes_.release(lane_, lanePriority_);
    lane_ = nullptr;
    issued_ = 0;
    return result;
  }

 private:
  const HipLibrary& library_;
  LanePool& lanes_;
  int ordinal_;
  hipStream_t lane_ = nullptr;
  int lanePriority_ = 0;
  size_t issued_ = 0;        // operations issued since the last drain
  std::string firstIssued_;  // the first of them, which names a failure
};

// The code object version to compile for: ROCUDA_AMDGPU_CODE_OBJECT, else 5 on ROCm 6 and later
// and 4 on ROCm 5 (whose loader predates version 5 as the default).
int codeObjectVersionFor(const HipLibrary& library) {
  if (auto value = env::get("ROCUDA_AMDGPU_CODE_OBJECT")) {
    if (*value == "4" || *value == "5") return (*value)[0] - '0';
    log::warning("ROCUDA_AMDGPU_CODE_OBJECT='" + *value + "' is not 4 or 5; using the default");
  }
  return hipVersionMajor(library.runtimeVersion()) < 6 ? 4 : 5;
}

class HipDevice final : public DeviceBackend {
 public:
  HipDevice(std::shared_ptr<HipLibrary> library, int ordinal, DeviceDescription description,
            int hipDefaultStreamPriority)
      : library_(std::move(library)),
        api_(library_->api()),
        ordinal_(ordinal),
        description_(std::move(description)),
        hipDefaultStreamPriority_(hipDefaultStreamPriority),
        lanes_(std::make_unique<LanePool>(*library_, hipDefaultStreamPriority)) {
    probeVirtualMemory();
    // CUDA IPC through HIP's own handles, where the runtime has the calls.
    description_.ownIpcMemoryHandles =
        api_.hipIpcGetMemHandle != nullptr && api_.hipIpcOpenMemHandle != nullptr &&
        api_.hipIpcCloseMemHandle != nullptr && api_.hipMemGetAddressRange != nullptr;
  }

  ~HipDevice() override {
    if (select().ok()) lanes_.reset();  // destroys the lanes on their device
  }

  const DeviceDescription& description() const override { return description_; }

  // GPUs of the same HIP runtime, as HIP reports their link (hipDeviceCanAccessPeer). HIP's
  // setting is per device: enabled with the first context pair, disabled with the last.
  PeerLink peerLink(const DeviceBackend& peer) const override {
    const HipDevice* other = peerDevice(peer);
    if (other == nullptr || api_.hipDeviceCanAccessPeer == nullptr) return {};
    int can = 0;
    if (api_.hipDeviceCanAccessPeer(&can, ordinal_, other->ordinal_) != hipSuccess) return {};
    return {can != 0, false, false};
  }
  Status enablePeerAccess(const DeviceBackend& peer) override {
    const HipDevice* other = peerDevice(peer);
    if (other == nullptr || !peerLink(peer).access || api_.hipDeviceEnablePeerAccess == nullptr)
      return DeviceBackend::enablePeerAccess(peer);
    std::lock_guard lock(peersMutex_);
    if (peerEnables_[other->ordinal_]++ > 0) return Status::success();
    Status selected = select();
    hipError_t status =
        selected.ok() ? api_.hipDeviceEnablePeerAccess(other->ordinal_, 0) : hipSuccess;
    // Already enabled by someone else in the process (another library on HIP): enabled is enabled.
    if (selected.ok() && (status == hipSuccess || status == hipErrorPeerAccessAlreadyEnabled))
      return Status::success();
    --peerEnables_[other->ordinal_];
    if (!selected.ok()) return selected;
    return library_->error(status,
                           "hipDeviceEnablePeerAccess(" + std::to_string(other->ordinal_) + ")");
  }
  void disablePeerAccess(const DeviceBackend& peer) override {
    const HipDevice* other = peerDevice(peer);
    if (other == nullptr || api_.hipDeviceDisablePeerAccess == nullptr) return;
    std::lock_guard lock(peersMutex_);
    auto it = peerEnables_.find(other->ordinal_);
    if (it == peerEnables_.end() || --it->second > 0) return;
    peerEnables_.erase(it);
    if (!select().ok()) return;
    hipError_t status = api_.hipDeviceDisablePeerAccess(other->ordinal_);
    if (status != hipSuccess)
      log::warning(library_->error(status, "hipDeviceDisablePeerAccess").message);
  }

  // CUDA IPC memory handles are HIP's (hipIpcGetMemHandle): the same 64 bytes, opened with
  // hipIpcOpenMemHandle (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is hipIpcMemLazyEnablePeerAccess).
  Result<IpcMemoryHandle> exportIpcMemory(void* base) override {
    ROCUDA_TRY(select());
    hipIpcMemHandle_t handle{};
    hipError_t status = api_.hipIpcGetMemHandle(&handle, base);
    if (status != hipSuccess) return library_->error(status, "hipIpcGetMemHandle");
    IpcMemoryHandle bytes;
    std::memcpy(bytes.data(), handle.reserved, bytes.size());
    return bytes;
  }
  Result<OpenedIpcMemory> openIpcMemory(const IpcMemoryHandle& bytes, unsigned) override {
    ROCUDA_TRY(select());
    hipIpcMemHandle_t handle;
    std::memcpy(handle.reserved, bytes.data(), bytes.size());
    void* pointer = nullptr;
    // CUDA's one flag (lazy peer access) or none: HIP takes only its own lazy flag, whose value
    // depends on the version, and opens the memory for peers either way.
    unsigned hipFlags = hipVersionMajor(library_->runtimeVersion()) >= 6
                            ? hipIpcMemLazyEnablePeerAccessRocm6
                            : hipIpcMemLazyEnablePeerAccessRocm5;
    hipError_t status = api_.hipIpcOpenMemHandle(&pointer, handle, hipFlags);
    if (status != hipSuccess) return library_->error(status, "hipIpcOpenMemHandle");
    void* base = nullptr;
    size_t size = 0;
    status = api_.hipMemGetAddressRange(&base, &size, pointer);
    if (status != hipSuccess) {
      api_.hipIpcCloseMemHandle(pointer);
      return library_->error(status, "hipMemGetAddressRange of memory opened by IPC");
    }
    // The exporter's allocation from the opened pointer on (HIP maps it whole).
    size_t bytesFromPointer =
        size - (reinterpret_cast<uintptr_t>(pointer) - reinterpret_cast<uintptr_t>(base));
    return OpenedIpcMemory{pointer, bytesFromPointer};
  }
  void closeIpcMemory(void* pointer) override {
    if (!select().ok()) return;
    if (hipError_t status = api_.hipIpcCloseMemHandle(pointer); status != hipSuccess)
      log::warning(library_->error(status, "hipIpcCloseMemHandle").message);
  }

  // Virtual memory management through HIP's own (hipMemCreate, hipMemMap...), offered where the
  // runtime has every call and answers a granularity for this GPU (probeVirtualMemory).
  size_t virtualMemoryGranularity(bool recommended) const override {
    return recommended ? recommendedGranularity_ : minimumGranularity_;
  }
  Result<void*> reserveAddresses(size_t bytes, size_t alignment, uintptr_t hint) override {
    ROCUDA_TRY(requireVirtualMemory());
    ROCUDA_TRY(select());
    void* base = nullptr;
    hipError_t status =
        api_.hipMemAddressReserve(&base, bytes, alignment, reinterpret_cast<void*>(hint), 0);
    if (status != hipSuccess)
      return library_->error(status, "hipMemAddressReserve of " + std::to_string(bytes) + " bytes");
    return base;
  }
  void freeAddresses(void* base, size_t bytes) override {
    if (api_.hipMemAddressFree == nullptr || !select().ok()) return;
    if (hipError_t status = api_.hipMemAddressFree(base, bytes); status != hipSuccess)
      log::warning(library_->error(status, "hipMemAddressFree").message);
  }
  Result<uint64_t> createPhysical(size_t bytes, bool exportable) override {
    ROCUDA_TRY(requireVirtualMemory());
    ROCUDA_TRY(select());
    hipMemAllocationProp prop = allocationProperties(exportable);
    hipMemGenericAllocationHandle_t handle = nullptr;
    hipError_t status = api_.hipMemCreate(&handle, bytes, &prop, 0);
    if (status != hipSuccess)
      return library_->error(status, "hipMemCreate of " + std::to_string(bytes) + " bytes");
    return reinterpret_cast<uintptr_t>(handle);
  }
  void releasePhysical(uint64_t handle) override {
    if (api_.hipMemRelease == nullptr || !select().ok()) return;
    if (hipError_t status = api_.hipMemRelease(physical(handle)); status != hipSuccess)
      log::warning(library_->error(status, "hipMemRelease").message);
  }
  Result<int> exportPhysical(uint64_t handle) override {
    ROCUDA_TRY(requireVirtualMemory());
    ROCUDA_TRY(select());
    int fd = -1;
    hipError_t status = api_.hipMemExportToShareableHandle(&fd, physical(handle),
                                                           hipMemHandleTypePosixFileDescriptor, 0);
    if (status != hipSuccess) return library_->error(status, "hipMemExportToShareableHandle");
    return fd;
  }
  // HIP keeps what it needs of the descriptor, which is closed once imported.
  Result<ImportedPhysical> importPhysical(int fd) override {
    ROCUDA_TRY(requireVirtualMemory());
    ROCUDA_TRY(select());
    hipMemGenericAllocationHandle_t handle = nullptr;
    hipError_t status = api_.hipMemImportFromShareableHandle(
        &handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
        hipMemHandleTypePosixFileDescriptor);
    if (status != hipSuccess) return library_->error(status, "hipMemImportFromShareableHandle");
    close(fd);
    return ImportedPhysical{reinterpret_cast<uintptr_t>(handle), 0};
  }
  Status mapPhysical(void* address, size_t bytes, uint64_t handle, uint64_t offset) override {
    ROCUDA_TRY(requireVirtualMemory());
    if (offset != 0) {
      // HIP's hipMemMap takes only offset 0 (it answers hipErrorInvalidValue otherwise).
      std::string message = "cuMemMap at offset " + std::to_string(offset) +
                            " into a physical allocation on " + description_.name +
                            ": HIP maps allocations from their start only";
      log::warning(message);
      return makeError(ErrorCode::NotSupported, message);
    }
    ROCUDA_TRY(select());
    hipError_t status = api_.hipMemMap(address, bytes, offset, physical(handle), 0);
    if (status != hipSuccess)
      return library_->error(status, "hipMemMap of " + std::to_string(bytes) + " bytes");
    return Status::success();
  }
  // One descriptor per GPU: this one and its peers.
  Status setAccess(void* address, size_t bytes, const std::vector<DeviceAccess>& access) override {
    ROCUDA_TRY(requireVirtualMemory());
    std::vector<hipMemAccessDesc> descriptors;
    for (const DeviceAccess& device : access) {
      const HipDevice* gpu = device.device == this ? this : peerDevice(*device.device);
      if (gpu == nullptr)
        return makeError(ErrorCode::NotSupported, "only GPUs of the same HIP runtime can access " +
                                                      description_.name + "'s memory");
      hipMemAccessDesc descriptor{};
      descriptor.location = {hipMemLocationTypeDevice, gpu->ordinal_};
      descriptor.flags = device.writable   ? hipMemAccessFlagsProtReadWrite
                         : device.readable ? hipMemAccessFlagsProtRead
                                           : hipMemAccessFlagsProtNone;
      descriptors.push_back(descriptor);
    }
    ROCUDA_TRY(select());
    hipError_t status =
        api_.hipMemSetAccess(address, bytes, descriptors.data(), descriptors.size());
    if (status != hipSuccess) return library_->error(status, "hipMemSetAccess");
    return Status::success();
  }
  Status unmapPhysical(void* address, size_t bytes) override {
    ROCUDA_TRY(requireVirtualMemory());
    ROCUDA_TRY(select());
    hipError_t status = api_.hipMemUnmap(address, bytes);
    if (status != hipSuccess) return library_->error(status, "hipMemUnmap");
    return Status::success();
  }

  std::unique_ptr<StreamQueue> createStreamQueue() override {
    return std::make_unique<HipStreamQueue>(*this, *library_, *lanes_, ordinal_);
  }
  bool queuesStreamWork() const override { return true; }

  Result<void*> allocateDevice(size_t bytes) override {
    ROCUDA_TRY(select());
    void* pointer = nullptr;
    // hipMalloc(0) returns a null pointer; the core expects a distinct allocation.
    hipError_t status = api_.hipMalloc(&pointer, std::max<size_t>(bytes, 1));
    if (status != hipSuccess)
      return library_->error(status, "hipMalloc of " + std::to_string(bytes) + " bytes");
    return pointer;
  }

  void freeDevice(void* pointer) override {
    if (pointer == nullptr || !select().ok()) return;
    hipError_t status = api_.hipFree(pointer);
    if (status != hipSuccess) log::warning(library_->error(status, "hipFree").message);
  }

  Result<void*> allocateHost(size_t bytes) override {
    ROCUDA_TRY(select());
    void* pointer = nullptr;
    hipError_t status =
        api_.hipHostMalloc(&pointer, std::max<size_t>(bytes, 1), hipHostMallocDefault);
    if (status != hipSuccess)
      return library_->error(status, "hipHostMalloc of " + std::to_string(bytes) + " bytes");
    return pointer;
  }

  void freeHost(void* pointer) override {
    if (pointer == nullptr || !select().ok()) return;
    hipError_t status = api_.hipHostFree(pointer);
    if (status != hipSuccess) log::warning(library_->error(status, "hipHostFree").message);
  }

  // The application's pages pinned and mapped into the GPU's address space, where HIP may give
  // them another address than the host's (hipHostGetDevicePointer).
  Result<void*> registerHost(void* base, size_t bytes) override {
    if (api_.hipHostRegister == nullptr || api_.hipHostUnregister == nullptr ||
        api_.hipHostGetDevicePointer == nullptr) {
      std::string message = "cannot register host memory for " + description_.name + ": " +
                            library_->path() + " lacks hipHostRegister";
      log::warning(message);
      return makeError(ErrorCode::NotSupported, message);
    }
    ROCUDA_TRY(select());
    hipError_t status = api_.hipHostRegister(base, bytes, hipHostRegisterMapped);
    if (status != hipSuccess)
      return library_->error(status, "hipHostRegister of " + std::to_string(bytes) + " bytes");
    void* device = nullptr;
    status = api_.hipHostGetDevicePointer(&device, base, 0);
    if (status != hipSuccess) {
      api_.hipHostUnregister(base);
      return library_->error(status, "hipHostGetDevicePointer of registered memory");
    }
    return device;
  }

  void unregisterHost(void* base, size_t /*bytes*/) override {
    if (api_.hipHostUnregister == nullptr || !select().ok()) return;
    hipError_t status = api_.hipHostUnregister(base);
    if (status != hipSuccess) log::warning(library_->error(status, "hipHostUnregister").message);
  }

  // HIP's managed memory (migrated by the driver where the GPU supports it, with XNACK); pinned
  // host memory from a runtime without hipMallocManaged.
  Result<void*> allocateManaged(size_t bytes) override {
    if (api_.hipMallocManaged == nullptr) return allocateHost(bytes);
    ROCUDA_TRY(select());
    void* pointer = nullptr;
    hipError_t status =
        api_.hipMallocManaged(&pointer, std::max<size_t>(bytes, 1), hipMemAttachGlobal);
    if (status != hipSuccess)
      return library_->error(status, "hipMallocManaged of " + std::to_string(bytes) + " bytes");
    return pointer;
  }

  void freeManaged(void* pointer) override {
    if (api_.hipMallocManaged == nullptr) return freeHost(pointer);
    freeDevice(pointer);  // hipFree releases managed memory too
  }

  // HIP's own prefetch and advice, on this device or the host (hipCpuDeviceId); pinned host
  // memory (a runtime without hipMallocManaged) has nowhere else to go.
  Status prefetchManaged(void* pointer, size_t bytes, bool toDevice) override {
    if (api_.hipMallocManaged == nullptr || api_.hipMemPrefetchAsync == nullptr || bytes == 0)
      return Status::success();
    int target = toDevice ? ordinal_ : hipCpuDeviceId;
    std::string what = "hipMemPrefetchAsync of " + std::to_string(bytes) + " bytes";
    return onLane(std::nullopt, what, what, [&](hipStream_t lane) {
      return api_.hipMemPrefetchAsync(pointer, bytes, target, lane);
    });
  }

  Status adviseManaged(void* pointer, size_t bytes, ManagedAdvice advice, bool forDevice) override {
    if (api_.hipMallocManaged == nullptr || api_.hipMemAdvise == nullptr) return Status::success();
    ROCUDA_TRY(select());
    // hipMemoryAdvise numbers the advice as CUmem_advise does, from 1.
    int hipAdvice = static_cast<int>(advice) + 1;
    hipError_t status =
        api_.hipMemAdvise(pointer, bytes, hipAdvice, forDevice ? ordinal_ : hipCpuDeviceId);
    if (status != hipSuccess) return library_->error(status, "hipMemAdvise");
    return Status::success();
  }

  // The views in device memory, where kernels read them: one allocation holds the view and then
  // its mipmap levels, `mipLevels` pointing at the copies. The texels (`data`) are this device's
  // memory already (arrays and linear memory of a context on it).
  Result<uint64_t> placeTextureViews(const support::TextureView& view,
                                     const std::vector<support::TextureView>& levels) override {
    std::vector<support::TextureView> copies;
    copies.reserve(1 + levels.size());
    copies.push_back(view);
    copies.insert(copies.end(), levels.begin(), levels.end());
    ROCUDA_TRY(select());
    void* memory = nullptr;
    size_t bytes = copies.size() * sizeof(support::TextureView);
    hipError_t status = api_.hipMalloc(&memory, bytes);
    if (status != hipSuccess)
      return library_->error(status, "hipMalloc of a texture object's views");
    auto* placed = static_cast<support::TextureView*>(memory);
    for (support::TextureView& copy : copies)
      copy.mipLevels = copy.mipLevels != nullptr && !levels.empty() ? placed + 1 : nullptr;
    status = api_.hipMemcpy(memory, copies.data(), bytes, hipMemcpyDefault);
    if (status != hipSuccess) {
      api_.hipFree(memory);
      return library_->error(status, "copying a texture object's views to the device");
    }
    return reinterpret_cast<uint64_t>(memory);
  }

  void releaseTextureViews(uint64_t handle) override {
    if (!select().ok()) return;
    hipError_t status = api_.hipFree(reinterpret_cast<void*>(handle));
    if (status != hipSuccess)
      log::warning(library_->error(status, "hipFree of a texture object's views").message);
  }

  uint64_t freeMemory() const override {
    if (!select().ok()) return 0;
    size_t freeBytes = 0, totalBytes = 0;
    if (api_.hipMemGetInfo(&freeBytes, &totalBytes) != hipSuccess) return 0;
    return freeBytes;
  }

  Status copy(void* destination, const void* source, size_t bytes) override {
    if (bytes == 0) return Status::success();
    std::string what = "hipMemcpyAsync of " + std::to_string(bytes) + " bytes";
    return onLane(std::nullopt, what, what, [&](hipStream_t lane) {
      return api_.hipMemcpyAsync(destination, source, bytes, hipMemcpyDefault, lane);
    });
  }

  Status fill(void* destination, uint32_t value, size_t elementBytes, size_t count) override {
    if (count == 0) return Status::success();
    if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4)
      return makeError(ErrorCode::InvalidValue,
                       "fill element size " + std::to_string(elementBytes) + " is not 1, 2 or 4");
    std::string what = "hipMemsetD" + std::to_string(elementBytes * 8) + "Async";
    return onLane(std::nullopt, what, what, [&](hipStream_t lane) {
      switch (elementBytes) {
        case 1:
          return api_.hipMemsetD8Async(destination, static_cast<unsigned char>(value), count, lane);
        case 2:
          return api_.hipMemsetD16Async(destination, static_cast<unsigned short>(value), count,
                                        lane);
        default:
          return api_.hipMemsetD32Async(destination, static_cast<int>(value), count, lane);
      }
    });
  }

  Status copy2D(void* destination, size_t destinationPitch, const void* source, size_t sourcePitch,
                size_t widthBytes, size_t height) override {
    if (widthBytes == 0 || height == 0) return Status::success();
    return onLane(std::nullopt, "hipMemcpy2DAsync", "hipMemcpy2DAsync", [&](hipStream_t lane) {
      return api_.hipMemcpy2DAsync(destination, destinationPitch, source, sourcePitch, widthBytes,
                                   height, hipMemcpyDefault, lane);
    });
  }

  Result<std::unique_ptr<LoadedModule>> loadPtx(std::string_view ptx,
                                                std::string_view moduleName) override {
    auto target = compiler::parseGcnArchName(description_.nativeTarget);
    if (!target.ok()) {
      std::string message = "cannot load PTX module '" + std::string(moduleName) + "' on " +
                            description_.name + ": " + target.error().message +
                            " (docs/amd.md lists the supported GPUs)";
      log::warning(message);
      return makeError(ErrorCode::NotSupported, message);
    }
    target->codeObjectVersion = codeObjectVersionFor(*library_);
    auto compiled = compileCached(ptx, moduleName, *target);
    if (!compiled.ok()) return compiled.takeError();
    ROCUDA_TRY(select());
    hipModule_t module = nullptr;
    hipError_t status = api_.hipModuleLoadData(&module, compiled->output.data());
    if (status != hipSuccess)
      return library_->error(status, "hipModuleLoadData of module '" + std::string(moduleName) +
                                         "' (" + compiler::amdgpuTargetName(*target) + ")");
    auto loaded =
        std::make_unique<HipModule>(library_, ordinal_, std::move(compiled->info), module);
    ModuleSymbols symbols;
    symbols.printfBuffer = codeObjectDefines(compiled->output, compiler::kAmdgpuPrintfBufferSymbol);
    symbols.assertFlag = codeObjectDefines(compiled->output, compiler::kAmdgpuAssertFlagSymbol);
    symbols.gridWorkspace =
        codeObjectDefines(compiled->output, compiler::kAmdgpuGridWorkspaceSymbol);
    symbols.deviceHeap = codeObjectDefines(compiled->output, compiler::kAmdgpuDeviceHeapSymbol);
    symbols.deviceLaunches =
        codeObjectDefines(compiled->output, compiler::kAmdgpuDeviceLaunchesSymbol);
    symbols.graphConditions =
        codeObjectDefines(compiled->output, compiler::kAmdgpuGraphConditionsSymbol);
    ROCUDA_TRY(loaded->resolve(moduleName, symbols));
    return std::unique_ptr<LoadedModule>(std::move(loaded));
  }

  Status launch(LoadedKernel& kernel, const LaunchConfig& config, const void* params) override {
    // A green context's partition is not enforced here: HIP's CU masks
    // (hipExtStreamCreateWithCUMask) number compute units, which on RDNA need not be the
    // multiprocessors HIP reports (WGPs), and a mask too narrow would give the grid fewer than
    // it was provisioned, which CUDA never does; running on more is what CUDA allows.
    if (config.multiprocessors != 0 &&
        config.multiprocessors < static_cast<uint32_t>(description_.multiprocessorCount)) {
      static std::once_flag logged;
      std::call_once(logged, [&] {
        log::info(description_.name +
                  ": green context partitions are not enforced on HIP "
                  "devices; their kernels may use every compute unit");
      });
    }
    return launchWithChildren(static_cast<HipKernel&>(kernel), config, params, 0);
  }

 private:
  // A grid, then each grid its threads launched (dynamic parallelism) with the grids those
  // launch in turn, depth first: launch order, tail launches last (amdgpu_codegen.h). A failed
  // child fails its parent's launch, as on NVIDIA's device runtime.
  Status launchWithChildren(HipKernel& kernel, const LaunchConfig& config, const void* params,
                            uint32_t depth) {
    std::vector<DeviceLaunch> children;
    ROCUDA_TRY(launchGrid(kernel, config, params, depth, children));
    for (DeviceLaunch& child : children) {
      if (child.nodeField != 0) {
        applyNodeUpdate(child, config);
        continue;
      }
      if (child.kernel == nullptr) {
        // A graph: the graph launch running this grid queues it (the device has answered
        // cudaSuccess; a refusal the host makes is logged there).
        if (config.graph != nullptr) config.graph->launchGraph(child.graph, child.graphStream);
        continue;
      }
      LaunchConfig childConfig = config;
      childConfig.grid = child.grid;
      childConfig.block = child.block;
      childConfig.dynamicSharedBytes = child.sharedBytes;
      childConfig.cooperative = false;
      childConfig.graph = nullptr;
      childConfig.explicitCluster = false;
      ROCUDA_TRY(launchWithChildren(static_cast<HipKernel&>(*child.kernel), childConfig,
                                    child.params.data(), depth + 1));
    }
    return Status::success();
  }

  // A device-updatable node's update that a grid recorded (the device answered cudaSuccess; a
  // refusal here, an unknown node or bytes past its parameters, is logged).
  void applyNodeUpdate(const DeviceLaunch& update, const LaunchConfig& config) {
    uint32_t error = 1;
    if (config.nodeUpdates != nullptr) {
      if (update.nodeField == 1) error = config.nodeUpdates->setGridDim(update.node, update.grid);
      if (update.nodeField == 2)
        error = config.nodeUpdates->setParam(update.node,
                                             update.grid[0] | uint64_t(update.grid[1]) << 32,
                                             update.params.data(), update.params.size());
      if (update.nodeField == 3)
        error = config.nodeUpdates->setEnabled(update.node, update.grid[0]);
    }
    if (error != 0)
      log::warning(
          "an update of a device-updatable graph node from device code was refused "
          "(cudaError_t " +
          std::to_string(error) +
          "): an unknown node, or values "
          "out of range");
  }

  // One grid at nesting depth `depth`; `children` receives the grids it launched.
  Status launchGrid(HipKernel& hipKernel, const LaunchConfig& config, const void* params,
                    uint32_t depth, std::vector<DeviceLaunch>& children) {
    const compiler::KernelInfo& info = hipKernel.info();
    if (config.cooperative && api_.hipModuleLaunchCooperativeKernel == nullptr) {
      std::string message = "cooperative launch of '" + info.name + "' on " + description_.name +
                            ": this HIP runtime has no hipModuleLaunchCooperativeKernel (ROCm 5.5 "
                            "or later has)";
      log::warning(message);
      return makeError(ErrorCode::NotSupported, message);
    }
    // HIP dispatches take 32-bit sizes in threads per dimension (CUDA's in blocks): a grid of
    // more threads than that in one dimension would wrap to a smaller one.
    for (int axis = 0; axis < 3; ++axis)
      if (uint64_t(config.grid[axis]) * config.block[axis] > UINT32_MAX) {
        std::string message = "launch of '" + info.name + "' on " + description_.name + ": " +
                              std::to_string(config.grid[axis]) + " blocks of " +
                              std::to_string(config.block[axis]) + " threads in " + "xyz"[axis] +
                              " are more than HIP's 2^32 - 1 threads per dimension";
        log::warning(message);
        return makeError(ErrorCode::NotSupported, message);
      }
    // A module's printf buffer is emptied after each of its kernels: one at a time. So are the
    // launches of a module with a grid workspace (GridWorkspace).
    if (DeviceHeapPointer* heap = hipKernel.heapPointer())
      ROCUDA_TRY(pointDeviceHeap(*heap, config, info.name));
    std::unique_lock<std::mutex> printing, workspaceTurn;
    if (PrintfBuffer* buffer = hipKernel.printfBuffer()) {
      printing = std::unique_lock<std::mutex>(buffer->launchMutex());
      ROCUDA_TRY(buffer->fit(config.printfFifoBytes));
    }
    GridWorkspace* workspace = hipKernel.gridWorkspace();
    if (workspace != nullptr) workspaceTurn = std::unique_lock<std::mutex>(workspace->launchMutex);
    DeviceLaunches* launches = hipKernel.deviceLaunches();
    std::unique_lock<std::mutex> launchesTurn;
    if (launches != nullptr) {
      launchesTurn = std::unique_lock<std::mutex>(launches->launchMutex);
      ROCUDA_TRY(resetDeviceLaunches(*launches, depth, config.graph != nullptr, info.name));
    }
    GraphConditionSlots* conditions = hipKernel.graphConditions();
    std::unique_lock<std::mutex> conditionsTurn;
    if (conditions != nullptr) {
      conditionsTurn = std::unique_lock<std::mutex>(conditions->launchMutex);
      ROCUDA_TRY(select());
      static const compiler::AmdgpuGraphConditionSlot empty[compiler::kAmdgpuGraphConditionSlots] =
          {};
      hipError_t status = api_.hipMemcpy(conditions->buffer, empty, sizeof empty, hipMemcpyDefault);
      if (status != hipSuccess)
        return library_->error(status,
                               "clearing the graph condition slots for kernel '" + info.name + "'");
    }
    // kernelParams[i] points at parameter i inside CUDA's packed buffer: the code object's
    // kernel arguments have the same offsets, so HIP copies each into place.
    std::vector<void*> arguments;
    arguments.reserve(info.params.size());
    auto* base = static_cast<uint8_t*>(const_cast<void*>(params));
    for (const compiler::KernelParamInfo& p : info.params) arguments.push_back(base + p.offset);
    // The launch's special registers, the hidden last argument of kernels that read them.
    compiler::AmdgpuLaunchRegisters registers;
    if (info.readsLaunchRegisters) {
      LaunchRegisters values = launchRegistersOf(info, config);
      registers.dynamicSmemSize = values.dynamicSmemSize;
      registers.totalSmemSize = values.totalSmemSize;
      registers.aggrSmemSize = values.aggrSmemSize;
      registers.isExplicitCluster = values.isExplicitCluster ? 1 : 0;
      registers.currentGraphExec = config.graph != nullptr ? config.graph->currentGraphExec() : 0;
      arguments.push_back(&registers);
    }
    // Faults in the kernel surface where the lane is waited for: here, or at the drain of the
    // stream worker's queue. A kernel whose module is read or reset after it (its printf
    // buffer, assert flag or grid workspace) is always waited for here; what it printed before
    // a fault is still shown.
    const char* call =
        config.cooperative ? "hipModuleLaunchCooperativeKernel" : "hipModuleLaunchKernel";
    bool readAfter = hipKernel.printfBuffer() != nullptr || hipKernel.assertFlag() != nullptr ||
                     workspace != nullptr || launches != nullptr || conditions != nullptr;
    Status finished =
        onLane(config.priority, std::string(call) + " of '" + info.name + "'",
               "kernel '" + info.name + "'", readAfter ? Finish::Always : Finish::UnlessQueued,
               [&](hipStream_t lane) {
                 if (workspace != nullptr) {
                   hipError_t status = pointGridWorkspace(*workspace, config.cooperative, lane);
                   if (status != hipSuccess) return status;
                 }
                 void** kernelParams = arguments.empty() ? nullptr : arguments.data();
                 if (config.cooperative)
                   return api_.hipModuleLaunchCooperativeKernel(
                       hipKernel.function(), config.grid[0], config.grid[1], config.grid[2],
                       config.block[0], config.block[1], config.block[2], config.dynamicSharedBytes,
                       lane, kernelParams);
                 return api_.hipModuleLaunchKernel(
                     hipKernel.function(), config.grid[0], config.grid[1], config.grid[2],
                     config.block[0], config.block[1], config.block[2], config.dynamicSharedBytes,
                     lane, kernelParams, nullptr);
               });
    if (PrintfBuffer* buffer = hipKernel.printfBuffer()) {
      Status drained = buffer->drain(info.name);  // an assert's message too
      if (finished.ok()) finished = std::move(drained);
    }
    if (void* flag = hipKernel.assertFlag(); flag != nullptr && finished.ok())
      finished = checkAssertFlag(flag, info.name);
    if (launches != nullptr && finished.ok())
      finished = readDeviceLaunches(*launches, info.name, children);
    if (conditions != nullptr && finished.ok())
      finished = applyGraphConditions(*conditions, config.graph, info.name);
    return finished;
  }

  // The conditions the kernel set (cudaGraphSetConditional), for the graph launch running it.
  // NVIDIA leaves a call outside a graph, or with another graph's handle, undefined: it is
  // reported (once) and ignored, as on the CPU device.
  Status applyGraphConditions(GraphConditionSlots& slots, RunningGraph* graph,
                              const std::string& kernelName) {
    compiler::AmdgpuGraphConditionSlot set[compiler::kAmdgpuGraphConditionSlots];
    hipError_t status = api_.hipMemcpy(set, slots.buffer, sizeof set, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status,
                             "reading the graph conditions kernel '" + kernelName + "' set");
    for (const auto& slot : set) {
      if (slot.handle == 0) break;  // slots are claimed in order
      if (graph != nullptr && graph->setCondition(slot.handle, slot.value)) continue;
      static std::atomic<bool> reported{false};
      if (!reported.exchange(true))
        log::warning("cudaGraphSetConditional in kernel '" + kernelName +
                     (graph == nullptr ? "' launched outside a graph: ignored"
                                       : "' with a handle not of its graph: ignored"));
    }
    return Status::success();
  }

  // Before a launch of a kernel of a launching module: no records, the grid's nesting depth,
  // whether it runs in a graph launch.
  Status resetDeviceLaunches(DeviceLaunches& launches, uint32_t depth, bool inGraph,
                             const std::string& kernelName) {
    ROCUDA_TRY(select());
    compiler::AmdgpuDeviceLaunchHeader header;
    header.capacity = launches.capacity;
    header.depth = depth;
    header.inGraph = inGraph ? 1 : 0;
    hipError_t status = api_.hipMemcpy(launches.buffer, &header, sizeof header, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "resetting the launch buffer for kernel '" + kernelName + "'");
    return Status::success();
  }

  // The grids the kernel's threads launched, in the order they run.
  Status readDeviceLaunches(DeviceLaunches& launches, const std::string& kernelName,
                            std::vector<DeviceLaunch>& children) {
    using Record = compiler::AmdgpuDeviceLaunchRecord;
    compiler::AmdgpuDeviceLaunchHeader header;
    hipError_t status = api_.hipMemcpy(&header, launches.buffer, sizeof header, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "reading the launches of kernel '" + kernelName + "'");
    if (header.used > launches.capacity)
      log::warning("kernel '" + kernelName + "' asked for more parameter buffers than the " +
                   std::to_string(compiler::kAmdgpuPendingLaunches) +
                   " pending launches the device runtime holds; those launches failed with "
                   "cudaErrorLaunchPendingCountExceeded");
    if (header.launched == 0) return Status::success();
    uint64_t used = std::min(header.used, launches.capacity);
    std::vector<uint8_t> records(used);
    status = api_.hipMemcpy(records.data(), static_cast<uint8_t*>(launches.buffer) + sizeof header,
                            used, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "reading the launches of kernel '" + kernelName + "'");
    for (uint64_t offset = 0; offset + sizeof(Record) <= used;) {
      Record record;
      std::memcpy(&record, records.data() + offset, sizeof record);
      uint64_t size = compiler::amdgpuDeviceLaunchRecordBytes(record.paramBytes);
      if (offset + size > used) break;
      if (record.sequence != 0 && record.mode > compiler::kAmdgpuNodeUpdateMode) {
        DeviceLaunch update;
        update.node = record.kernelName;
        update.nodeField = record.mode - compiler::kAmdgpuNodeUpdateMode;
        std::copy(std::begin(record.grid), std::end(record.grid), update.grid.begin());
        const uint8_t* bytes = records.data() + offset + sizeof(Record);
        update.params.assign(bytes, bytes + record.paramBytes);
        update.sequence = record.sequence;
        children.push_back(std::move(update));
      } else if (record.sequence != 0 && record.mode >= compiler::kAmdgpuGraphLaunchMode) {
        DeviceLaunch launch;
        launch.graph = record.kernelName;
        launch.graphStream = uint64_t(record.mode - compiler::kAmdgpuGraphLaunchMode) << 56;
        launch.sequence = record.sequence;
        children.push_back(std::move(launch));
      } else if (record.sequence != 0) {
        LoadedKernel*& child = launches.kernelsByName[record.kernelName];
        if (child == nullptr)
          child = launches.module->kernel(readDeviceString(api_, record.kernelName));
        if (child == nullptr || record.paramBytes < child->info().parametersEnd())
          return makeError(ErrorCode::LaunchFailed,
                           "kernel '" + kernelName +
                               "' launched a grid of a function that is not a kernel of its "
                               "module (or with too few parameter bytes)");
        DeviceLaunch launch;
        launch.kernel = child;
        std::copy(std::begin(record.grid), std::end(record.grid), launch.grid.begin());
        std::copy(std::begin(record.block), std::end(record.block), launch.block.begin());
        launch.sharedBytes = record.sharedBytes;
        launch.sequence = record.sequence;
        launch.tail = record.mode != 0;
        const uint8_t* bytes = records.data() + offset + sizeof(Record);
        launch.params.assign(bytes, bytes + record.paramBytes);
        // A cudaGetParameterBuffer record may end at the last parameter, before the padding.
        if (launch.params.size() < child->info().paramBufferSize)
          launch.params.resize(child->info().paramBufferSize);
        children.push_back(std::move(launch));
      }
      offset += size;
    }
    std::sort(children.begin(), children.end(), [](const DeviceLaunch& a, const DeviceLaunch& b) {
      return std::make_pair(a.tail, a.sequence) < std::make_pair(b.tail, b.sequence);
    });
    return Status::success();
  }

  // A kernel whose thread failed an assert raised its module's flag (and ended that wavefront):
  // the launch fails as on NVIDIA, and the flag is cleared for the next launch. The module's
  // printf lock is held (asserting modules print their message), so no other launch races.
  Status checkAssertFlag(void* flag, const std::string& kernelName) {
    uint32_t raised = 0;
    hipError_t status = api_.hipMemcpy(&raised, flag, sizeof raised, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "reading the assert flag of kernel '" + kernelName + "'");
    if (raised == 0) return Status::success();
    uint32_t cleared = 0;
    status = api_.hipMemcpy(flag, &cleared, sizeof cleared, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "clearing the assert flag of kernel '" + kernelName + "'");
    return makeError(ErrorCode::Assert, "kernel '" + kernelName + "' failed a device-side assert");
  }

  // The code object for `ptx` on `target`, from the code cache when it has it.
  Result<compiler::AmdgpuCompilation> compileCached(std::string_view ptx,
                                                    std::string_view moduleName,
                                                    const compiler::AmdgpuTarget& target) {
    std::string key = DiskCache::keyOf(
        {compiler::kCompilerVersion, compiler::amdgpuTargetName(target), ptx});
    return DiskCache::instance().loadOrCompile<compiler::AmdgpuCompilation>(
        key, moduleName, [&] {
          log::info("compiling PTX module '" + std::string(moduleName) + "' for " +
                    compiler::amdgpuTargetName(target));
          return compiler::compileForAmdgpu(ptx, moduleName, target);
        });
  }

  Status select() const {
    hipError_t status = api_.hipSetDevice(ordinal_);
    if (status != hipSuccess)
      return library_->error(status, "hipSetDevice(" + std::to_string(ordinal_) + ")");
    return Status::success();
  }

  // Before a launch of a module whose kernels call malloc or free: the module's heap pointer
  // names the launching context's heap on this GPU, made at the context's first such launch
  // (cudaLimitMallocHeapSize bytes, at most what 32-bit block indexes address). Written
  // synchronously, and only when it changes (a module belongs to one context), so that no launch
  // on another lane can read it half way; a launch without a context heap leaves it 0 and malloc
  // returns NULL.
  Status pointDeviceHeap(DeviceHeapPointer& pointer, const LaunchConfig& config,
                         const std::string& kernelName) {
    uint64_t address = 0;
    if (config.mallocHeap != nullptr) {
      auto heap = config.mallocHeap->backendHeap(
          this, [&]() -> Result<std::unique_ptr<DeviceMallocHeap::BackendHeap>> {
            compiler::AmdgpuDeviceHeapHeader header;
            header.size = std::clamp<uint64_t>(config.mallocHeapLimit, sizeof header,
                                               compiler::kAmdgpuDeviceHeapMaxBytes);
            header.top = sizeof header;
            ROCUDA_TRY(select());
            void* memory = nullptr;
            hipError_t status = api_.hipMalloc(&memory, header.size);
            if (status != hipSuccess)
              return library_->error(status, "hipMalloc of a " + std::to_string(header.size) +
                                                 "-byte device heap for kernel '" + kernelName +
                                                 "'");
            auto made = std::make_unique<HipDeviceHeap>(library_, ordinal_, memory);
            status = api_.hipMemcpy(memory, &header, sizeof header, hipMemcpyDefault);
            if (status != hipSuccess)
              return library_->error(status, "writing the device heap's header");
            return std::unique_ptr<DeviceMallocHeap::BackendHeap>(std::move(made));
          });
      if (!heap.ok()) return heap.takeError();
      address = static_cast<HipDeviceHeap*>(*heap)->address();
    }
    std::lock_guard lock(pointer.mutex);
    if (pointer.current == address) return Status::success();
    ROCUDA_TRY(select());
    hipError_t status = api_.hipMemcpy(pointer.symbol, &address, sizeof address, hipMemcpyDefault);
    if (status != hipSuccess)
      return library_->error(status, "pointing kernel '" + kernelName + "' at its device heap");
    pointer.current = address;
    return Status::success();
  }

  // Before a launch of a module with a grid workspace, on its lane: a cooperative launch gets a
  // fresh workspace (CUDA's layout: its size, then a zero arrival counter) and the symbol points
  // at it; any other launch finds the symbol 0. The host values are copied before the lane is
  // waited for, which onLane does before they go out of scope.
  hipError_t pointGridWorkspace(GridWorkspace& workspace, bool cooperative, hipStream_t lane) {
    static const uint32_t fresh[2] = {8, 0};
    if (cooperative) {
      hipError_t status =
          api_.hipMemcpyAsync(workspace.workspace, fresh, sizeof fresh, hipMemcpyDefault, lane);
      if (status != hipSuccess) return status;
    }
    uint64_t wanted = cooperative ? reinterpret_cast<uintptr_t>(workspace.workspace) : 0;
    if (wanted == workspace.current) return hipSuccess;
    workspace.current = wanted;  // the copy's source, alive while the lane is waited for
    hipError_t status = api_.hipMemcpyAsync(workspace.symbol, &workspace.current,
                                            sizeof workspace.current, hipMemcpyDefault, lane);
    if (status != hipSuccess) workspace.current = ~uint64_t(0);  // unknown: rewrite next time
    return status;
  }

  // Whether an operation issued while a stream worker's queue is active may stay queued.
  enum class Finish : uint8_t { UnlessQueued, Always };

  // Issue one asynchronous operation on a lane of CUDA priority `priority` (none: any lane, for
  // copies) and wait for it, as the backend contract says; on the calling stream worker's queue
  // (StreamQueue) it stays queued there unless `finish` is Always. An error names the call, or
  // what was waited for (where a kernel's fault surfaces).
  template <class Issue>
  Status onLane(std::optional<int> priority, const std::string& call, const std::string& waitedFor,
                Issue issue) {
    return onLane(priority, call, waitedFor, Finish::UnlessQueued, issue);
  }
  template <class Issue>
  Status onLane(std::optional<int> priority, const std::string& call, const std::string& waitedFor,
                Finish finish, Issue issue) {
    ROCUDA_TRY(select());
    // CUDA's priorities (the core clamped them to [greatestStreamPriority, 0]) onto HIP's,
    // counted down from the level of CUDA's 0.
    std::optional<int> wanted;
    if (priority) wanted = hipDefaultStreamPriority_ + *priority;
    if (StreamQueue* active = StreamQueue::active();
        active != nullptr && &active->owner() == this) {
      auto& queue = static_cast<HipStreamQueue&>(*active);
      auto lane = queue.lane(wanted);
      if (!lane.ok()) return lane.error();
      if (hipError_t status = issue(*lane); status != hipSuccess)
        return library_->error(status, call);
      queue.noteIssued(waitedFor);
      return finish == Finish::Always ? queue.drain() : Status::success();
    }
    int hipPriority = wanted.value_or(hipDefaultStreamPriority_);
    auto lane = lanes_->acquire(hipPriority);
    if (!lane.ok()) return lane.error();
    hipError_t status = issue(*lane);
    Status result = Status::success();
    if (status != hipSuccess) {
      result = library_->error(status, call);
    } else if ((status = api_.hipStreamSynchronize(*lane)) != hipSuccess) {
      result = library_->error(status, "hipStreamSynchronize for " + waitedFor);
    }
    lanes_->release(*lane, hipPriority);
    return result;
  }

  // Virtual memory management where the runtime has every call of it with CUDA's layouts (ROCm
  // 5.5+: hip_api.h) and answers this GPU's granularity (GPUs without it refuse the query).
  void probeVirtualMemory() {
    int version = library_->runtimeVersion();
    if (hipVersionMajor(version) < 5 ||
        (hipVersionMajor(version) == 5 && hipVersionMinor(version) < 5))
      return;
    if (api_.hipMemGetAllocationGranularity == nullptr || api_.hipMemAddressReserve == nullptr ||
        api_.hipMemAddressFree == nullptr || api_.hipMemCreate == nullptr ||
        api_.hipMemRelease == nullptr || api_.hipMemExportToShareableHandle == nullptr ||
        api_.hipMemImportFromShareableHandle == nullptr || api_.hipMemMap == nullptr ||
        api_.hipMemUnmap == nullptr || api_.hipMemSetAccess == nullptr)
      return;
    hipMemAllocationProp prop = allocationProperties(false);
    size_t minimum = 0, recommended = 0;
    if (api_.hipMemGetAllocationGranularity(&minimum, &prop, hipMemAllocationGranularityMinimum) !=
            hipSuccess ||
        api_.hipMemGetAllocationGranularity(&recommended, &prop,
                                            hipMemAllocationGranularityRecommended) != hipSuccess ||
        minimum == 0)
      return;
    minimumGranularity_ = minimum;
    recommendedGranularity_ = std::max(recommended, minimum);
    description_.virtualMemoryManagement = true;
    description_.physicalMemoryAsFileDescriptors = true;
  }
  Status requireVirtualMemory() const {
    if (description_.virtualMemoryManagement) return Status::success();
    return makeError(
        ErrorCode::NotSupported,
        description_.name + " has no virtual memory management (" + library_->path() + ")");
  }
  hipMemAllocationProp allocationProperties(bool exportable) const {
    hipMemAllocationProp prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.requestedHandleType =
        exportable ? hipMemHandleTypePosixFileDescriptor : hipMemHandleTypeNone;
    prop.location = {hipMemLocationTypeDevice, ordinal_};
    return prop;
  }
  static hipMemGenericAllocationHandle_t physical(uint64_t handle) {
    return reinterpret_cast<hipMemGenericAllocationHandle_t>(static_cast<uintptr_t>(handle));
  }

  // `peer` as another GPU of this HIP runtime, or null.
  const HipDevice* peerDevice(const DeviceBackend& peer) const {
    const auto* other = dynamic_cast<const HipDevice*>(&peer);
    return other != nullptr && other != this && other->library_ == library_ ? other : nullptr;
  }

  std::shared_ptr<HipLibrary> library_;  // keeps the runtime loaded while the device lives
  const HipApi& api_;
  int ordinal_;
  size_t minimumGranularity_ = 0, recommendedGranularity_ = 0;  // 0: no virtual memory
  std::mutex peersMutex_;
  std::map<int, int> peerEnables_;  // peer ordinal -> context pairs that enabled access
  DeviceDescription description_;
  int hipDefaultStreamPriority_;
  std::unique_ptr<LanePool> lanes_;
};

}  // namespace

std::unique_ptr<DeviceBackend> createHipDevice(std::shared_ptr<HipLibrary> library, int ordinal,
                                               DeviceDescription description,
                                               int hipDefaultStreamPriority) {
  return std::make_unique<HipDevice>(std::move(library), ordinal, std::move(description),
                                     hipDefaultStreamPriority);
}

}  // namespace rocuda::backends::hip
