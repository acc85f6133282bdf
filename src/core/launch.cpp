#include "core/launch.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "core/green_context.h"
#include "core/module.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::core {
namespace {

Status validateConfiguration(const Kernel& kernel, const backends::DeviceDescription& device,
                             const LaunchRequest& request) {
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (request.grid[i] == 0 || request.grid[i] > static_cast<uint32_t>(device.maxGridDim[i]))
      return makeError(ErrorCode::InvalidConfiguration,
                       "grid dimension " + std::to_string(i) + " is " +
                           std::to_string(request.grid[i]) + "; the device allows 1.." +
                           std::to_string(device.maxGridDim[i]));
    if (request.block[i] == 0 || request.block[i] > static_cast<uint32_t>(device.maxBlockDim[i]))
      return makeError(ErrorCode::InvalidConfiguration,
                       "block dimension " + std::to_string(i) + " is " +
                           std::to_string(request.block[i]) + "; the device allows 1.." +
                           std::to_string(device.maxBlockDim[i]));
    threads *= request.block[i];
  }
  if (threads > static_cast<uint64_t>(device.maxThreadsPerBlock))
    return makeError(ErrorCode::InvalidConfiguration,
                     std::to_string(threads) + " threads per block; the device allows " +
                         std::to_string(device.maxThreadsPerBlock));
  const auto& info = kernel.info();
  if (!info.unsupported.empty())
    return makeError(ErrorCode::NotSupported,
                     "kernel '" + info.name + "' cannot run: " + info.unsupported);
  for (int i = 0; i < 3; ++i) {
    uint32_t required = info.reqntid[i] != 0 ? info.reqntid[i] : 0;
    if (required != 0 && request.block[i] != required)
      return makeError(ErrorCode::InvalidValue,
                       "kernel '" + info.name + "' requires a block of exactly " +
                           std::to_string(info.reqntid[0]) + "x" + std::to_string(info.reqntid[1]) +
                           "x" + std::to_string(info.reqntid[2]) + " threads (.reqntid)");
  }
  // A kernel compiled for clusters of several blocks (__cluster_dims__), or given that shape with
  // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_*, relies on them (cluster ranks, distributed shared
  // memory); Rocuda's clusters are one block, so it cannot run.
  std::array<uint32_t, 3> cluster{};
  uint64_t clusterBlocks = 1;
  bool clusterShaped = request.explicitCluster;  // a cluster size given, at launch or compiled
  for (int d = 0; d < 3; ++d) {
    cluster[d] = std::max(1u, kernel.requiredClusterDim(d));
    clusterBlocks *= cluster[d];
    clusterShaped = clusterShaped || kernel.requiredClusterDim(d) != 0;
  }
  // CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: "the kernel must launch with a valid cluster
  // size specified".
  if (info.explicitCluster && !clusterShaped)
    return makeError(ErrorCode::InvalidClusterSize,
                     "kernel '" + info.name +
                         "' was compiled with .explicitcluster: it launches with a cluster size "
                         "(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)");
  if (clusterBlocks > 1)
    return makeError(ErrorCode::NotSupported,
                     "kernel '" + info.name + "' requires clusters of " +
                         std::to_string(cluster[0]) + "x" + std::to_string(cluster[1]) + "x" +
                         std::to_string(cluster[2]) +
                         " blocks (__cluster_dims__ or CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_*); "
                         "thread block clusters of more than one block are not supported");
  // .maxntid bounds the block's total thread count (the dimensions only multiply), as ptxas
  // compiles the kernel for at most that many: NVIDIA's driver refuses a larger block as "too
  // many resources requested for launch", as any block beyond the function's
  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK. So do CU_JIT_MAX_THREADS_PER_BLOCK and the compiled
  // code's own limit (Kernel::maxThreadsPerBlock).
  if (uint64_t limit = static_cast<uint64_t>(kernel.maxThreadsPerBlock()); threads > limit)
    return makeError(ErrorCode::LaunchOutOfResources,
                     "kernel '" + info.name + "' is compiled for at most " + std::to_string(limit) +
                         " threads per block (" +
                         (info.maxntid[0] != 0 ? ".maxntid" : "its JIT options or code object") +
                         "); the launch asks for " + std::to_string(threads));
  if (request.sharedBytes > static_cast<uint32_t>(kernel.maxDynamicSharedBytes()) ||
      uint64_t(request.sharedBytes) + kernel.staticSharedBytes() >
          static_cast<uint64_t>(device.sharedMemPerBlockOptin))
    return makeError(ErrorCode::InvalidValue,
                     "kernel '" + info.name + "' asks for " + std::to_string(request.sharedBytes) +
                         " bytes of dynamic shared memory; the limit is " +
                         std::to_string(kernel.maxDynamicSharedBytes()) +
                         " (raise it with cudaFuncSetAttribute) and static plus dynamic may not "
                         "exceed " + std::to_string(device.sharedMemPerBlockOptin));
  return Status::success();
}

Result<std::shared_ptr<std::vector<uint8_t>>> packArguments(const compiler::KernelInfo& info,
                                                            const LaunchRequest& request) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(info.paramBufferSize);
  if (request.kernelParams != nullptr) {
    for (size_t i = 0; i < info.params.size(); ++i) {
      const void* value = request.kernelParams[i];
      if (value == nullptr)
        return makeError(ErrorCode::InvalidValue,
                         "kernelParams[" + std::to_string(i) + "] of '" + info.name + "' is NULL");
      std::memcpy(buffer->data() + info.params[i].offset, value, info.params[i].size);
    }
  } else if (request.argumentBuffer != nullptr) {
    // The parameters end before the alignment padding of the whole buffer: a packed buffer
    // (PyCUDA's struct.pack of a pointer and an int: 12 bytes, not 16) holds them all.
    size_t end = 0;
    for (const auto& param : info.params) end = std::max<size_t>(end, param.offset + param.size);
    if (request.argumentBufferSize < end)
      return makeError(ErrorCode::InvalidValue,
                       "argument buffer of " + std::to_string(request.argumentBufferSize) +
                           " bytes; kernel '" + info.name + "' needs " + std::to_string(end));
    std::memcpy(buffer->data(), request.argumentBuffer, end);
  } else if (!info.params.empty()) {
    return makeError(ErrorCode::InvalidValue,
                     "kernel '" + info.name + "' takes parameters but none were given");
  }
  return buffer;
}

// NVIDIA's rule for cooperative grids: no more blocks than the occupancy calculator says fit
// on the device at once.
// `multiprocessors`: those the grid may occupy (the device's, or a green context's share).
Status validateCooperative(Kernel& kernel, const backends::DeviceDescription& device,
                           uint32_t multiprocessors, const LaunchRequest& request) {
  if (!device.cooperativeLaunch)
    return makeError(ErrorCode::NotSupported, "the device does not support cooperative launches");
  int threads = static_cast<int>(request.block[0] * request.block[1] * request.block[2]);
  Result<int> perMultiprocessor =
      maxActiveBlocksPerMultiprocessor(kernel, threads, request.sharedBytes);
  if (!perMultiprocessor.ok()) return perMultiprocessor.error();
  uint64_t limit = uint64_t(*perMultiprocessor) * multiprocessors;
  uint64_t blocks = uint64_t(request.grid[0]) * request.grid[1] * request.grid[2];
  if (blocks > limit)
    return makeError(ErrorCode::CooperativeLaunchTooLarge,
                     "cooperative grid of " + std::to_string(blocks) + " blocks for kernel '" +
                         kernel.name() + "'; the device holds at most " + std::to_string(limit) +
                         " such blocks at once (" + std::to_string(*perMultiprocessor) +
                         " per multiprocessor, " + std::to_string(multiprocessors) +
                         " multiprocessors)");
  return Status::success();
}

}  // namespace

Status launchKernel(Kernel& requested, Stream& stream, const LaunchRequest& request) {
  Context& context = stream.context();
  ROCUDA_TRY(context.stickyError());
  // A library's kernel (a CUkernel, or its function in another context) runs as loaded into
  // the stream's context.
  Result<Kernel*> resolved = requested.forContext(context);
  if (!resolved) return resolved.error();
  Kernel& kernel = **resolved;
  if (&kernel.module().context().device() != &context.device())
    return makeError(ErrorCode::InvalidHandle,
                     "kernel '" + kernel.name() + "' was loaded for another device");
  ROCUDA_TRY(validateConfiguration(kernel, context.device().description(), request));
  // A green context's stream runs the grid on its share of the multiprocessors.
  GreenContext* green = stream.greenContext();
  uint32_t multiprocessors =
      green != nullptr ? green->multiprocessors()
                       : static_cast<uint32_t>(context.device().description().multiprocessorCount);
  if (request.cooperative)
    ROCUDA_TRY(
        validateCooperative(kernel, context.device().description(), multiprocessors, request));
  ROCUDA_TRY(kernel.loaded().prepare());
  auto arguments = packArguments(kernel.info(), request);
  if (!arguments.ok()) return arguments.error();
  context.noteLaunch(kernel.info());

  backends::LaunchConfig config{request.grid, request.block, request.sharedBytes,
                                request.cooperative};
  config.priority = clampStreamPriority(request.priority.value_or(stream.priority()),
                                        context.device().description());
  config.stackBytesPerThread = context.limit(ContextLimit::StackSize);
  config.printfFifoBytes = context.limit(ContextLimit::PrintfFifoSize);
  config.explicitCluster = request.explicitCluster;
  config.reservedSharedBytes = reservedSharedBytesPerBlock(context.device().description());
  int threads = static_cast<int>(request.block[0] * request.block[1] * request.block[2]);
  if (Result<int> perMultiprocessor =
          maxActiveBlocksPerMultiprocessor(kernel, threads, request.sharedBytes);
      perMultiprocessor.ok())
    config.residentBlocks = static_cast<uint32_t>(
        std::min<uint64_t>(UINT32_MAX, uint64_t(*perMultiprocessor) * multiprocessors));
  if (green != nullptr) config.multiprocessors = multiprocessors;
  // Every launch carries the heap: kernels it launches from the device may call malloc.
  config.mallocHeap = &context.mallocHeap();
  config.mallocHeapLimit = context.limit(ContextLimit::MallocHeapSize);
  config.queries = kernel.module().runtimeQueries();
  config.nodeUpdates = &deviceNodeUpdates();
  auto* backend = &context.device().backend();
  auto* loaded = &kernel.loaded();
  Context* owner = &context;
  std::shared_ptr<DeviceUpdatableKernel> node = request.deviceUpdatable;
  if (node) node->reset({**arguments, request.grid, true});
  Result<CompletionPtr> queued = context.enqueueDeviceWork(
      stream, "kernel " + kernel.name(),
      [backend, loaded, config, owner, buffer = std::move(*arguments), node]() -> Status {
        backends::LaunchConfig run = config;
        run.graph = activeRunningGraph();  // set inside graph launches
        const void* params = buffer->data();
        DeviceUpdatableKernel::State now;
        if (node) {  // what device code made of the node by now
          now = node->state();
          if (!now.enabled) return Status::success();  // "disabled nodes act as a NOP"
          run.grid = now.grid;
          params = now.params.data();
        }
        Status status = backend->launch(*loaded, run, params);
        // A launch that fails on the stream is reported by the context's later calls, whatever
        // the cause: dropped, it would look like success.
        if (!status.ok()) owner->noteDeviceFailure(status.error());
        return status;
      });
  if (!queued.ok()) return queued.error();
  return Status::success();
}

uint64_t reservedSharedBytesPerBlock(const backends::DeviceDescription& device) {
  return device.computeCapabilityMajor >= 8 ? compiler::kReservedSharedBytes : 0;
}

int blocksPerMultiprocessor(const backends::DeviceDescription& device,
                            const KernelFootprint& kernel, int blockSize,
                            size_t dynamicSharedBytes) {
  if (blockSize <= 0 || blockSize > kernel.maxThreadsPerBlock) return 0;
  int warps = (blockSize + device.warpSize - 1) / device.warpSize;
  int threadsPerBlock = warps * device.warpSize;
  long long blocks = std::min(device.maxBlocksPerMultiprocessor,
                              device.maxThreadsPerMultiprocessor / threadsPerBlock);
  if (dynamicSharedBytes > kernel.maxDynamicSharedBytes) return 0;  // as cuLaunchKernel refuses
  uint64_t shared = kernel.staticSharedBytes + dynamicSharedBytes;
  if (shared > static_cast<uint64_t>(device.sharedMemPerBlockOptin)) return 0;
  shared += reservedSharedBytesPerBlock(device);
  if (shared > 0) blocks = std::min<long long>(blocks, device.sharedMemPerMultiprocessor / shared);
  if (kernel.registersPerThread > 0) {
    long long registers = 1LL * kernel.registersPerThread * threadsPerBlock;
    if (registers > device.registersPerBlock) return 0;
    blocks = std::min(blocks, device.registersPerMultiprocessor / registers);
  }
  return static_cast<int>(std::max(blocks, 0LL));
}

Result<int> maxActiveBlocksPerMultiprocessor(Kernel& kernel, int blockSize,
                                             size_t dynamicSharedBytes) {
  if (blockSize <= 0) return makeError(ErrorCode::InvalidValue, "blockSize must be positive");
  KernelFootprint footprint;
  footprint.maxThreadsPerBlock = kernel.maxThreadsPerBlock();
  footprint.staticSharedBytes = kernel.staticSharedBytes();
  footprint.registersPerThread = std::max(0, kernel.loaded().resources().registersPerThread);
  footprint.maxDynamicSharedBytes =
      static_cast<uint64_t>(std::max(0, kernel.maxDynamicSharedBytes()));
  return blocksPerMultiprocessor(kernel.module().context().device().description(), footprint,
                                 blockSize, dynamicSharedBytes);
}

}  // namespace rocuda::core
