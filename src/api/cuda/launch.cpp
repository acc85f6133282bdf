// Kernel launch (cuLaunchKernel with kernelParams or `extra`, cuLaunchCooperativeKernel,
// cuLaunchKernelEx), host functions in stream order, and occupancy.
#include "core/launch.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "api/cuda/boundary.h"
#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/module.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// Reads the {CU_LAUNCH_PARAM_BUFFER_POINTER, p, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
// CU_LAUNCH_PARAM_END} array into the request.
Outcome parseExtra(void** extra, core::LaunchRequest& request) {
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      request.argumentBuffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return invalidValue("unknown entry in the extra array");
    }
  }
  if (request.argumentBuffer == nullptr || size == nullptr)
    return invalidValue("extra needs both CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE");
  request.argumentBufferSize = *size;
  return {};
}

// What launch attributes (cuLaunchKernelEx) change about one launch.
struct LaunchOptions {
  bool cooperative = false;     // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
  std::optional<int> priority;  // CU_LAUNCH_ATTRIBUTE_PRIORITY; the stream's otherwise
  bool explicitCluster = false;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (%is_explicit_cluster)
  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: runs in order all the same; captured,
  // the edges from the kernel nodes before it are programmatic.
  bool programmaticSerialization = false;
  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT and _LAUNCH_COMPLETION_EVENT: recorded on the stream
  // right after the kernel. NVIDIA's GPUs may fire them earlier (as blocks trigger or begin);
  // the kernel's end is the latest they may fire, so whatever waits for them stays correct.
  std::vector<core::Event*> completionEvents;
  // CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE (captured launches only): the node's state
  // (a new one, or the one of a node being rebuilt) and where its handle goes.
  std::shared_ptr<core::DeviceUpdatableKernel> deviceUpdatable;
  CUgraphDeviceNode* deviceNodeOut = nullptr;
};

Outcome launch(const void* f, const std::array<uint32_t, 3>& grid,
               const std::array<uint32_t, 3>& block, unsigned sharedMemBytes, CUstream hStream,
               void** kernelParams, void** extra, StreamVariant variant,
               LaunchOptions options = {}) {
  Result<core::Kernel*> kernel = lookupKernel(f);
  if (!kernel) return kernel.error();
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  core::Context& codeContext = (*kernel)->module().context();
  if (core::lookupHandle<core::Context>(&codeContext) == nullptr)
    return {CUDA_ERROR_CONTEXT_IS_DESTROYED, "the kernel's context was destroyed"};
  // A library's kernel (CUkernel) is context-independent: it runs in the stream's context, on
  // the device the library was loaded for as it is (its variables are that load's, shared by the
  // contexts), on another device as the library's instance there, loaded at its first use as
  // cuKernelGetFunction does (cudart launches every <<<>>> kernel so, on whatever device).
  if (&(*stream)->context() != &codeContext) {
    if (!(*kernel)->module().isLibrary())
      return {CUDA_ERROR_INVALID_HANDLE, "the kernel is not loaded in the stream's context"};
    if (&(*stream)->context().device() != &codeContext.device()) {
      kernel = (*kernel)->forContext((*stream)->context());
      if (!kernel) return kernel.error();
    }
  }
  if (kernelParams != nullptr && extra != nullptr)
    return invalidValue("kernelParams and extra are exclusive");
  core::LaunchRequest request;
  request.grid = grid;
  request.block = block;
  request.sharedBytes = sharedMemBytes;
  request.kernelParams = kernelParams;
  request.cooperative = options.cooperative;
  request.priority = options.priority;
  request.explicitCluster = options.explicitCluster;
  if (options.deviceUpdatable) {
    // "This attribute is graphs-only, and passing it to a launch in a non-capturing stream will
    // result in an error."
    if (!(*stream)->capture())
      return invalidValue("a device-updatable kernel node needs a capturing stream");
    request.deviceUpdatable = options.deviceUpdatable;
  }
  if (extra != nullptr) {
    Outcome parsed = parseExtra(extra, request);
    if (!parsed.ok()) return parsed;
  }
  for (core::Event* event : options.completionEvents)
    if (&event->context() != &(*stream)->context())
      return invalidValue("a launch event of another context than the stream's");
  Status launched = core::launchKernel(**kernel, **stream, request);
  if (!launched.ok()) return launched;
  for (core::Event* event : options.completionEvents)
    if (Status recorded = event->record(**stream); !recorded) return recorded;
  if (!(*stream)->capture()) return launched;
  // Captured: the new node keeps the launch's parameters, as an added kernel node does.
  std::vector<core::GraphNode*> captured = (*stream)->captureDependencies();
  if (captured.size() != 1) return launched;
  if (options.programmaticSerialization) {
    std::lock_guard lock(core::graphMutex());
    core::GraphNode& node = *captured[0];
    for (core::GraphNode* dependency : node.dependencies())
      if (dependency->type() == core::GraphNodeType::Kernel)
        node.graph().setEdgeData(dependency, &node,
                                 core::EdgeData{CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC, 0,
                                                CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC});
  }
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  // A library's kernel (cudart launches CUkernel handles) is reported as `kern`, as NVIDIA's
  // driver does; cudart maps it back to the host function.
  if ((*kernel)->module().isLibrary())
    params.kern = reinterpret_cast<CUkernel>(const_cast<void*>(f));
  else
    params.func = reinterpret_cast<CUfunction>(const_cast<void*>(f));
  params.gridDimX = grid[0], params.gridDimY = grid[1], params.gridDimZ = grid[2];
  params.blockDimX = block[0], params.blockDimY = block[1], params.blockDimZ = block[2];
  params.sharedMemBytes = sharedMemBytes;
  params.kernelParams = kernelParams;
  params.extra = extra;
  std::map<int, CUlaunchAttributeValue> attributes;
  if (options.cooperative) attributes[CU_LAUNCH_ATTRIBUTE_COOPERATIVE].cooperative = 1;
  if (options.explicitCluster)  // of one block: larger clusters are refused
    attributes[CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION].clusterDim = {1, 1, 1};
  if (options.priority) attributes[CU_LAUNCH_ATTRIBUTE_PRIORITY].priority = *options.priority;
  if (request.deviceUpdatable) {
    auto handle = reinterpret_cast<CUgraphDeviceNode>(request.deviceUpdatable->handle());
    attributes[CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE].deviceUpdatableKernelNode = {
        1, handle};
    if (options.deviceNodeOut != nullptr) *options.deviceNodeOut = handle;
    std::lock_guard lock(core::graphMutex());
    captured[0]->content().deviceUpdatable = request.deviceUpdatable;
  }
  return keepCapturedKernelParams(*captured[0], params, attributes);
}

// ---- The pre-CUDA-4.0 execution control (cuFuncSetBlockShape, cuParamSet*, cuLaunchGrid) ----

using LegacyLaunch = core::Kernel::LegacyLaunch;

// Changes the kernel's legacy launch configuration with `change`, which may refuse the request.
template <class F>
Outcome changeLegacyLaunch(CUfunction f, F&& change) {
  Result<core::Kernel*> kernel = lookupKernel(f);
  if (!kernel) return kernel.error();
  return (*kernel)->withLegacyLaunch(change);
}

// cuParamSet*: `bytes` at `offset` of the parameter space.
Outcome setLegacyParameter(CUfunction f, int offset, const void* value, size_t bytes) {
  if (offset < 0 || static_cast<size_t>(offset) + bytes > LegacyLaunch::kParameterCapacity)
    return invalidValue("parameter outside the 4096-byte parameter space");
  if (value == nullptr && bytes != 0) return invalidValue("ptr is NULL");
  return changeLegacyLaunch(f, [&](LegacyLaunch& launch) -> Outcome {
    if (bytes != 0) std::memcpy(launch.parameters.data() + offset, value, bytes);
    return {};
  });
}

// cuLaunchGrid(Async): the kernel's legacy configuration, its parameter space as the `extra`
// buffer.
Outcome launchLegacy(CUfunction f, int gridWidth, int gridHeight, CUstream stream) {
  if (gridWidth <= 0 || gridHeight <= 0) return invalidValue("grid dimensions must be positive");
  Result<core::Kernel*> kernel = lookupKernel(f);
  if (!kernel) return kernel.error();
  auto [block, shared, parameters, bytes] = (*kernel)->withLegacyLaunch([](LegacyLaunch& launch) {
    return std::tuple(launch.block, launch.sharedBytes, launch.parameters, launch.parameterBytes);
  });
  if (block[0] == 0)
    return invalidValue("no block shape: cuFuncSetBlockShape was not called for this function");
  size_t size = bytes;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, parameters.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return launch(f, {static_cast<uint32_t>(gridWidth), static_cast<uint32_t>(gridHeight), 1}, block,
                shared, stream, nullptr, extra, StreamVariant::Legacy);
}

Outcome launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shared, CUstream stream, void** kernelParams,
                     void** extra, StreamVariant variant) {
  return launch(f, {gx, gy, gz}, {bx, by, bz}, shared, stream, kernelParams, extra, variant);
}

// cuLaunchCooperativeKernel: as cuLaunchKernel with kernelParams only, every block resident at
// once (core checks the grid against the occupancy).
Outcome launchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                void** kernelParams, StreamVariant variant) {
  LaunchOptions options;
  options.cooperative = true;
  return launch(f, {gx, gy, gz}, {bx, by, bz}, shared, stream, kernelParams, nullptr, variant,
                std::move(options));
}

// Attributes that change what a launch means must be honoured or refused; the others are
// performance hints.
Outcome checkLaunchAttributes(const CUlaunchConfig& config, LaunchOptions* options) {
  if (config.numAttrs > 0 && config.attrs == nullptr) return invalidValue("attrs is NULL");
  const CUlaunchAttribute* preferredCluster = nullptr;
  std::array<unsigned, 3> cluster{1, 1, 1};
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config.attrs[i];
    switch (attribute.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        // Allowing overlap with the previous kernel; running in order is correct.
        options->programmaticSerialization =
            attribute.value.programmaticStreamSerializationAllowed != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        options->cooperative = attribute.value.cooperative != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: {
        bool programmatic = attribute.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
        CUevent handle = programmatic ? attribute.value.programmaticEvent.event
                                      : attribute.value.launchCompletionEvent.event;
        // "Event record flags, see cuEventRecordWithFlags. Does not accept
        // CU_EVENT_RECORD_EXTERNAL": the default (0) only.
        int flags = programmatic ? attribute.value.programmaticEvent.flags
                                 : attribute.value.launchCompletionEvent.flags;
        if (flags != 0) return invalidValue("a launch event's record flags must be 0");
        Result<core::Event*> event = lookupEvent(handle);
        if (!event) return event.error();
        // "The event supplied must not be an interprocess or interop event. The event must
        // disable timing".
        if (!(*event)->timingDisabled() || ((*event)->flags() & CU_EVENT_INTERPROCESS) != 0)
          return invalidValue("a launch event must disable timing and not be interprocess");
        options->completionEvents.push_back(*event);
        break;
      }
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:  // clamped to the device's range, as for streams
        options->priority = attribute.value.priority;
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
        const auto& dim = attribute.value.clusterDim;
        // Each "must be a divisor of the grid dimension": never 0.
        if (dim.x == 0 || dim.y == 0 || dim.z == 0)
          return invalidValue("a cluster dimension cannot be 0");
        if (dim.x > 1 || dim.y > 1 || dim.z > 1)
          return {CUDA_ERROR_NOT_SUPPORTED, "thread block clusters are not supported"};
        cluster = {dim.x, dim.y, dim.z};
        options->explicitCluster = true;
        break;
      }
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        preferredCluster = &attribute;  // checked against the regular cluster below
        break;
      case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE: {
        int updatable = attribute.value.deviceUpdatableKernelNode.deviceUpdatable;
        if (updatable != 0 && updatable != 1) return invalidValue("deviceUpdatable is 0 or 1");
        if (updatable == 1) options->deviceUpdatable = core::makeDeviceUpdatableKernel();
        // The handle goes back in the caller's attribute (attrs is not const).
        options->deviceNodeOut = &config.attrs[i].value.deviceUpdatableKernelNode.devNode;
        break;
      }
      default:
        // An id CUDA 13 does not define is an invalid value (cuLaunchKernelEx documents no
        // CUDA_ERROR_NOT_SUPPORTED); a defined one not handled above is not supported.
        if (attribute.id < CU_LAUNCH_ATTRIBUTE_IGNORE ||
            attribute.id > CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING || attribute.id == 15)
          return invalidValue("unknown launch attribute");
        return {CUDA_ERROR_NOT_SUPPORTED,
                "unsupported launch attribute " + std::to_string(static_cast<int>(attribute.id))};
    }
  }
  if (preferredCluster != nullptr) {
    // A preferred substitute cluster: x and y multiples of the regular cluster's dividing the
    // grid, z the regular one's. "The device will attempt - on a best-effort basis - to group
    // thread blocks into preferred clusters": Rocuda's devices group them into the regular
    // clusters (of one block) instead.
    const auto& dim = preferredCluster->value.preferredClusterDim;
    std::array<unsigned, 3> preferred{dim.x, dim.y, dim.z};
    std::array<unsigned, 3> grid{config.gridDimX, config.gridDimY, config.gridDimZ};
    for (int d = 0; d < 2; ++d)
      if (preferred[d] == 0 || preferred[d] % cluster[d] != 0 ||
          (grid[d] != 0 && grid[d] % preferred[d] != 0))
        return invalidValue(
            "a preferred cluster dimension must be a multiple of the cluster's "
            "and divide the grid's");
    if (preferred[2] != cluster[2])
      return invalidValue("a preferred cluster's z must be the cluster's");
  }
  return {};
}

}  // namespace

Outcome launchKernelNode(const void* f, const CUDA_KERNEL_NODE_PARAMS_v2& p, CUstream stream,
                         bool cooperative, bool explicitCluster,
                         std::shared_ptr<core::DeviceUpdatableKernel> deviceUpdatable) {
  LaunchOptions options;
  options.cooperative = cooperative;
  options.explicitCluster = explicitCluster;
  options.deviceUpdatable = std::move(deviceUpdatable);
  return launch(f, {p.gridDimX, p.gridDimY, p.gridDimZ}, {p.blockDimX, p.blockDimY, p.blockDimZ},
                p.sharedMemBytes, stream, p.kernelParams, p.extra, StreamVariant::Legacy,
                std::move(options));
}

namespace {

Outcome launchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                       void** extra, StreamVariant variant) {
  if (config == nullptr) return invalidValue("config is NULL");
  LaunchOptions options;
  Outcome attributes = checkLaunchAttributes(*config, &options);
  if (!attributes.ok()) return attributes;
  return launch(f, {config->gridDimX, config->gridDimY, config->gridDimZ},
                {config->blockDimX, config->blockDimY, config->blockDimZ}, config->sharedMemBytes,
                config->hStream, kernelParams, extra, variant, options);
}

Outcome launchHostFunc(CUstream hStream, CUhostFn fn, void* userData, StreamVariant variant) {
  if (fn == nullptr) return invalidValue("fn is NULL");
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  Result<core::CompletionPtr> queued =
      (*stream)->context().enqueue(**stream, "hostFunc", [fn, userData] {
        fn(userData);
        return Status::success();
      });
  if (!queued) return queued.error();
  keepCapturedHostParams(**stream, CUDA_HOST_NODE_PARAMS{fn, userData});
  return {};
}

// Resident blocks per multiprocessor, limited by threads, blocks, shared memory and registers
// (the same count limits cooperative grids).
Result<int> occupancy(core::Kernel& kernel, int blockSize, size_t dynamicShared) {
  return core::maxActiveBlocksPerMultiprocessor(kernel, blockSize, dynamicShared);
}

}  // namespace

Outcome maxActiveBlocks(int* numBlocks, CUfunction func, int blockSize, size_t dynamicShared,
                        unsigned flags) {
  if (numBlocks == nullptr) return invalidValue("numBlocks is NULL");
  if (flags != CU_OCCUPANCY_DEFAULT && flags != CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
    return invalidValue("unknown flags");
  Result<core::Kernel*> kernel = lookupKernel(func);
  if (!kernel) return kernel.error();
  Result<int> blocks = occupancy(**kernel, blockSize, dynamicShared);
  if (!blocks) return blocks.error();
  *numBlocks = *blocks;
  return {};
}

namespace {

// The block size (a multiple of the warp size, or the limit) whose blocks fill a multiprocessor
// with the most threads, the largest such, and the grid that fills every multiprocessor with
// them; dynamic shared memory per block from `sharedForBlockSize` when given.
Outcome maxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                              CUoccupancyB2DSize sharedForBlockSize, size_t dynamicShared,
                              int blockSizeLimit, unsigned flags) {
  if (minGridSize == nullptr || blockSize == nullptr)
    return invalidValue("minGridSize or blockSize is NULL");
  if (flags != CU_OCCUPANCY_DEFAULT && flags != CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
    return invalidValue("unknown flags");
  if (blockSizeLimit < 0) return invalidValue("blockSizeLimit is negative");
  Result<core::Kernel*> kernel = lookupKernel(func);
  if (!kernel) return kernel.error();
  const auto& device = (*kernel)->module().context().device().description();
  int limit = (*kernel)->maxThreadsPerBlock();
  if (blockSizeLimit > 0) limit = std::min(limit, blockSizeLimit);
  int best = 0, bestBlocks = 0, bestThreads = 0;
  int aligned = (limit + device.warpSize - 1) / device.warpSize * device.warpSize;
  for (int size = aligned; size > 0; size -= device.warpSize) {
    int tried = std::min(size, limit);
    size_t shared = sharedForBlockSize != nullptr ? sharedForBlockSize(tried) : dynamicShared;
    Result<int> blocks = occupancy(**kernel, tried, shared);
    if (!blocks) return blocks.error();
    if (tried * *blocks > bestThreads) {
      best = tried;
      bestBlocks = *blocks;
      bestThreads = tried * *blocks;
    }
    if (bestThreads == device.maxThreadsPerMultiprocessor) break;  // cannot do better
  }
  *blockSize = best;
  *minGridSize = bestBlocks * device.multiprocessorCount;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_STREAM_PAIR(cuLaunchKernel, cuLaunchKernel_ptsz,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                    void** kernelParams, void** extra),
                   (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams, extra),
                   api::launchKernel)
ROCUDA_STREAM_PAIR(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                    void** kernelParams),
                   (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams),
                   api::launchCooperativeKernel)
ROCUDA_STREAM_PAIR(cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
                   (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),
                   (config, f, kernelParams, extra), api::launchKernelEx)
ROCUDA_STREAM_PAIR(cuLaunchHostFunc, cuLaunchHostFunc_ptsz,
                   (CUstream hStream, CUhostFn fn, void* userData), (hStream, fn, userData),
                   api::launchHostFunc)

// The pre-CUDA-4.0 execution control, deprecated but still exported by NVIDIA's driver (PyCUDA
// links it): a function's block shape, dynamic shared memory and parameter space are set apart,
// then cuLaunch / cuLaunchGrid launch it on the NULL stream (cuLaunchGridAsync on a stream).
ROCUDA_EXPORT CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
  return ROCUDA_API((hfunc, x, y, z), [&]() -> api::Outcome {
    if (x <= 0 || y <= 0 || z <= 0) return api::invalidValue("block dimensions must be positive");
    return api::changeLegacyLaunch(hfunc, [&](api::LegacyLaunch& launch) -> api::Outcome {
      launch.block = {static_cast<uint32_t>(x), static_cast<uint32_t>(y), static_cast<uint32_t>(z)};
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
  return ROCUDA_API((hfunc, bytes), [&] {
    return api::changeLegacyLaunch(hfunc, [&](api::LegacyLaunch& launch) -> api::Outcome {
      launch.sharedBytes = bytes;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
  return ROCUDA_API((hfunc, numbytes), [&]() -> api::Outcome {
    if (numbytes > api::LegacyLaunch::kParameterCapacity)
      return api::invalidValue("more than the 4096-byte parameter space");
    return api::changeLegacyLaunch(hfunc, [&](api::LegacyLaunch& launch) -> api::Outcome {
      launch.parameterBytes = numbytes;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
  return ROCUDA_API((hfunc, offset, value),
                    [&] { return api::setLegacyParameter(hfunc, offset, &value, sizeof value); });
}

ROCUDA_EXPORT CUresult cuParamSetf(CUfunction hfunc, int offset, float value) {
  return ROCUDA_API((hfunc, offset, value),
                    [&] { return api::setLegacyParameter(hfunc, offset, &value, sizeof value); });
}

ROCUDA_EXPORT CUresult cuParamSetv(CUfunction hfunc, int offset, void* ptr, unsigned int numbytes) {
  return ROCUDA_API((hfunc, offset, ptr, numbytes),
                    [&] { return api::setLegacyParameter(hfunc, offset, ptr, numbytes); });
}

ROCUDA_EXPORT CUresult cuLaunch(CUfunction f) {
  return ROCUDA_API((f), [&] { return api::launchLegacy(f, 1, 1, nullptr); });
}

ROCUDA_EXPORT CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return ROCUDA_API((f, grid_width, grid_height),
                    [&] { return api::launchLegacy(f, grid_width, grid_height, nullptr); });
}

ROCUDA_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height,
                                         CUstream hStream) {
  return ROCUDA_API((f, grid_width, grid_height, hStream),
                    [&] { return api::launchLegacy(f, grid_width, grid_height, hStream); });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize) {
  return ROCUDA_API((numBlocks, func, blockSize, dynamicSMemSize), [&] {
    return api::maxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, 0);
  });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  return ROCUDA_API((numBlocks, func, blockSize, dynamicSMemSize, flags), [&] {
    return api::maxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
  });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(
    int* minGridSize, int* blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit) {
  return ROCUDA_API(
      (minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit),
      [&] {
        return api::maxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                          dynamicSMemSize, blockSizeLimit, 0);
      });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* minGridSize, int* blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags) {
  return ROCUDA_API((minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                     blockSizeLimit, flags),
                    [&] {
                      return api::maxPotentialBlockSize(minGridSize, blockSize, func,
                                                        blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                        blockSizeLimit, flags);
                    });
}

ROCUDA_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize,
                                                               CUfunction func, int numBlocks,
                                                               int blockSize) {
  return ROCUDA_API((dynamicSmemSize, func, numBlocks, blockSize), [&]() -> api::Outcome {
    if (dynamicSmemSize == nullptr) return api::invalidValue("dynamicSmemSize is NULL");
    if (numBlocks <= 0 || blockSize <= 0) return api::invalidValue("non-positive size");
    Result<core::Kernel*> kernel = api::lookupKernel(func);
    if (!kernel) return kernel.error();
    Result<int> fit = api::occupancy(**kernel, blockSize, 0);
    if (!fit) return fit.error();
    const auto& d = (*kernel)->module().context().device().description();
    size_t staticBytes = (*kernel)->staticSharedBytes();
    // Each block's share of the multiprocessor less what the driver reserves for every block
    // (sm_80+: 1 KB), as the occupancy calculator counts it, and at most the per-block limit.
    size_t share = static_cast<size_t>(d.sharedMemPerMultiprocessor) / numBlocks;
    size_t reserved = core::reservedSharedBytesPerBlock(d);
    size_t perBlock = std::min<size_t>(share > reserved ? share - reserved : 0,
                                       static_cast<size_t>(d.sharedMemPerBlockOptin));
    // At most what the function may use (cuFuncSetAttribute's MAX_DYNAMIC_SHARED_SIZE_BYTES).
    size_t limit = static_cast<size_t>(std::max(0, (*kernel)->maxDynamicSharedBytes()));
    *dynamicSmemSize =
        numBlocks > *fit || perBlock < staticBytes ? 0 : std::min(perBlock - staticBytes, limit);
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
