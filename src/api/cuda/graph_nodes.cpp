// Explicit graph nodes: cuGraphAdd*Node, cuGraphAddNode (CUgraphNodeParams) and the *GetParams /
// *SetParams of every kind. A kernel, copy or fill node's work is recorded by issuing the very
// call the immediate path would make (cuLaunchKernel, cuMemcpy3DAsync, cuMemsetD2D*Async) on a
// private capturing stream: validation and argument packing are the immediate path's own.
#include <algorithm>
#include <cstring>
#include <map>

#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/module.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::cuda {
extern "C" {
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream,
                        void** kernelParams, void** extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra);
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* copy, CUstream stream);
CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                           size_t height, CUstream stream);
CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                            size_t height, CUstream stream);
CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width,
                            size_t height, CUstream stream);
CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned count,
                               CUstreamBatchMemOpParams* paramArray, unsigned flags);
}
}  // namespace rocuda::cuda

namespace rocuda::api {

using namespace cuda;

// A kernel node's parameters: the argument values are copied (CUDA copies them when the node is
// created), and kernelParams/extra point into this copy.
struct KernelPayload {
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  std::vector<std::vector<uint8_t>> values;
  std::vector<void*> pointers;
  std::vector<uint8_t> buffer;
  size_t bufferSize = 0;
  void* extra[5] = {};
  std::map<int, CUlaunchAttributeValue> attributes;
};

struct MemcpyPayload {
  CUDA_MEMCPY3D copy{};
  CUcontext context = nullptr;
};

struct MemsetPayload {
  CUDA_MEMSET_NODE_PARAMS_v2 params{};
};

// A batch memory-operation node's parameters, its operations owned (paramArray points at them).
struct BatchMemOpPayload {
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 params{};
  std::vector<CUstreamBatchMemOpParams> operations;

  BatchMemOpPayload(const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& in, CUcontext context)
      : params(in), operations(in.paramArray, in.paramArray + in.count) {
    params.ctx = context;
    params.paramArray = operations.data();
  }
};

struct AllocPayload {
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  std::vector<CUmemAccessDesc> access;
};

namespace {

// Run `issue` against a private capturing stream of `context`; the recorded node's work goes to
// `content`. A call that recorded nothing (a zero-size copy) leaves an empty work: a no-op.
Outcome recordWork(core::Context& context, core::GraphNodeContent* content,
                   const std::function<CUresult(CUstream)>& issue) {
  core::Stream stream(context, core::StreamKind::Created, CU_STREAM_NON_BLOCKING, 0);
  core::Graph scratch;
  auto capture = std::make_shared<core::CaptureState>();
  capture->graph = &scratch;
  capture->ownsGraph = false;
  capture->origin = &stream;
  stream.setCapture(capture);
  CUresult result = issue(reinterpret_cast<CUstream>(&stream));
  stream.setCapture(nullptr);
  // A copy that would wait for pageable memory reports the wait as a capture error after
  // recording the copy: the recorded node is what counts.
  if (result != CUDA_SUCCESS &&
      !(result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && scratch.size() == 1))
    return {result, "the node's parameters were refused"};
  content->context = &context;
  if (scratch.size() > 0) {
    content->work = scratch.nodes().front()->content().work;
    content->deviceUpdatable = scratch.nodes().front()->content().deviceUpdatable;
  }
  return {};
}

Result<core::Context*> contextOrCurrent(CUcontext handle) {
  if (handle != nullptr) return lookupContext(handle);
  return currentContext();
}

Outcome copyArguments(const core::Kernel& kernel, const CUDA_KERNEL_NODE_PARAMS_v2& in,
                      KernelPayload& payload) {
  const auto& info = kernel.info();
  if (in.kernelParams != nullptr && in.extra != nullptr)
    return invalidValue("kernelParams and extra are exclusive");
  if (in.kernelParams != nullptr) {
    for (size_t i = 0; i < info.params.size(); ++i) {
      if (in.kernelParams[i] == nullptr) return invalidValue("a kernelParams entry is NULL");
      const auto* bytes = static_cast<const uint8_t*>(in.kernelParams[i]);
      payload.values.emplace_back(bytes, bytes + info.params[i].size);
    }
    for (auto& value : payload.values) payload.pointers.push_back(value.data());
    payload.params.kernelParams = payload.pointers.data();
    if (payload.pointers.empty()) payload.params.kernelParams = nullptr;
  } else if (in.extra != nullptr) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    for (size_t i = 0; in.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (in.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = in.extra[i + 1];
      else if (in.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t*>(in.extra[i + 1]);
      else
        return invalidValue("unknown entry in the extra array");
    }
    if (buffer == nullptr || size == nullptr)
      return invalidValue("extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE");
    const auto* bytes = static_cast<const uint8_t*>(buffer);
    payload.buffer.assign(bytes, bytes + *size);
    payload.bufferSize = *size;
    payload.extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    payload.extra[1] = payload.buffer.data();
    payload.extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    payload.extra[3] = &payload.bufferSize;
    payload.extra[4] = CU_LAUNCH_PARAM_END;
    payload.params.extra = payload.extra;
  } else if (!info.params.empty()) {
    return invalidValue("the kernel takes parameters but none were given");
  }
  return {};
}

// The device runtime's calls a kernel node's kernel makes, which the graph rules check.
core::GraphNodeContent::DeviceRuntimeCalls deviceCallsOf(const compiler::KernelInfo& info) {
  return {info.launchesGrids, info.launchesGraphs, info.updatesGraphNodes};
}

Outcome buildKernel(const CUDA_KERNEL_NODE_PARAMS_v2& in, core::GraphNodeContent* content,
                    const std::map<int, CUlaunchAttributeValue>* attributes,
                    std::shared_ptr<core::DeviceUpdatableKernel> deviceUpdatable = nullptr) {
  const void* function =
      in.func != nullptr ? static_cast<const void*>(in.func) : static_cast<const void*>(in.kern);
  if (function == nullptr) return invalidValue("no kernel (func and kern are NULL)");
  Result<core::Kernel*> kernel = lookupKernel(function);
  if (!kernel) return kernel.error();
  auto payload = std::make_shared<KernelPayload>();
  payload->params = in;
  payload->params.kernelParams = nullptr;
  payload->params.extra = nullptr;
  if (attributes != nullptr) payload->attributes = *attributes;
  Outcome copied = copyArguments(**kernel, in, *payload);
  if (!copied.ok()) return copied;
  core::Context& context = (*kernel)->module().context();
  payload->params.ctx = reinterpret_cast<CUcontext>(&context);
  auto f = reinterpret_cast<CUfunction>(*kernel);
  const KernelPayload& p = *payload;
  auto cooperative = p.attributes.find(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  bool isCooperative = cooperative != p.attributes.end() && cooperative->second.cooperative != 0;
  // A cluster dimension (of one block: larger ones are refused) makes the launch an explicit
  // cluster launch, which the kernel sees (%is_explicit_cluster).
  auto cluster = p.attributes.find(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  bool inCluster = cluster != p.attributes.end() && cluster->second.clusterDim.x != 0 &&
                   cluster->second.clusterDim.y != 0 && cluster->second.clusterDim.z != 0;
  // A device-updatable node keeps its state (and handle) whatever the host changes.
  auto updatable = p.attributes.find(CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE);
  if (updatable != p.attributes.end() &&
      updatable->second.deviceUpdatableKernelNode.deviceUpdatable != 0 && !deviceUpdatable)
    deviceUpdatable = core::makeDeviceUpdatableKernel();
  if (deviceUpdatable)
    payload->attributes[CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE]
        .deviceUpdatableKernelNode = {
        1, reinterpret_cast<CUgraphDeviceNode>(deviceUpdatable->handle())};
  Outcome recorded = recordWork(context, content, [&](CUstream s) {
    return launchKernelNode(f, p.params, s, isCooperative, inCluster, deviceUpdatable).code();
  });
  if (!recorded.ok()) return recorded;
  content->name = "kernel " + (*kernel)->name();
  content->params = std::move(payload);
  content->deviceCalls = deviceCallsOf((*kernel)->info());
  return {};
}

}  // namespace

Outcome appendNodeToCapture(core::Stream& stream, CUgraphNodeParams& params) {
  std::lock_guard lock(core::graphMutex());
  core::GraphNodeContent content;
  Outcome built = buildNodeContent(params, &content);
  if (!built.ok()) return built;
  Result<core::GraphNode*> node = core::appendCapturedNode(
      stream, stream.capture(), static_cast<core::GraphNodeType>(params.type), std::move(content));
  if (!node) return node.error();
  return {};
}

core::GraphUpdateResult checkKernelAttributeUpdate(const core::GraphNode& instantiated,
                                                   const core::GraphNode& now,
                                                   bool usesNodePriority) {
  if (instantiated.type() != core::GraphNodeType::Kernel) return core::GraphUpdateResult::Success;
  auto* before = static_cast<const KernelPayload*>(instantiated.content().params.get());
  auto* after = static_cast<const KernelPayload*>(now.content().params.get());
  if (before == nullptr || after == nullptr) return core::GraphUpdateResult::Success;
  auto cooperative = [](const KernelPayload& p) {
    auto it = p.attributes.find(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    return it != p.attributes.end() && it->second.cooperative != 0;
  };
  auto priority = [](const KernelPayload& p) {  // as requested, before any clamping
    auto it = p.attributes.find(CU_LAUNCH_ATTRIBUTE_PRIORITY);
    return it != p.attributes.end() ? it->second.priority : 0;
  };
  if (cooperative(*before) != cooperative(*after) ||
      (usesNodePriority && priority(*before) != priority(*after)))
    return core::GraphUpdateResult::AttributesChanged;
  return core::GraphUpdateResult::Success;
}

Outcome keepCapturedKernelParams(core::GraphNode& node, const CUDA_KERNEL_NODE_PARAMS_v2& in,
                                 const std::map<int, CUlaunchAttributeValue>& attributes) {
  Result<core::Kernel*> kernel = lookupKernel(
      in.func != nullptr ? static_cast<const void*>(in.func) : static_cast<const void*>(in.kern));
  if (!kernel) return kernel.error();
  auto payload = std::make_shared<KernelPayload>();
  payload->params = in;
  payload->params.kernelParams = nullptr;
  payload->params.extra = nullptr;
  payload->params.ctx = reinterpret_cast<CUcontext>(&(*kernel)->module().context());
  payload->attributes = attributes;
  Outcome copied = copyArguments(**kernel, in, *payload);
  if (!copied.ok()) return copied;
  std::lock_guard lock(core::graphMutex());
  node.content().params = std::move(payload);
  node.content().deviceCalls = deviceCallsOf((*kernel)->info());
  return {};
}

namespace {

// A copy operand's address: its host pointer for host memory (or a unified operand given as
// one), else its device pointer.
const void* operandPointer(CUmemorytype type, CUdeviceptr device, const void* host) {
  bool onHost = type == CU_MEMORYTYPE_HOST || (type == CU_MEMORYTYPE_UNIFIED && device == 0);
  return onHost ? host : reinterpret_cast<const void*>(device);
}

// A copy operand's memory type, CU_MEMORYTYPE_UNIFIED resolved by what the pointer is.
uint8_t resolvedMemoryType(CUmemorytype type, CUdeviceptr device, const void* host) {
  if (type != CU_MEMORYTYPE_UNIFIED) return static_cast<uint8_t>(type);
  std::optional<core::Allocation> allocation =
      core::findAllocation(operandPointer(type, device, host));
  bool onDevice = allocation && (allocation->kind == core::AllocationKind::Device ||
                                 allocation->kind == core::AllocationKind::Global);
  return static_cast<uint8_t>(onDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
}

// The context a copy operand's memory was allocated in (null for memory Rocuda did not
// allocate or register, such as pageable host memory).
const void* owningContext(CUmemorytype type, CUdeviceptr device, const void* host) {
  std::optional<core::Allocation> allocation =
      core::findAllocation(operandPointer(type, device, host));
  return allocation ? allocation->context : nullptr;
}

// What cuGraphExecUpdate compares of a copy (core::transferMayChange): its operands' memory
// types and contexts and its extent.
core::GraphNodeContent::TransferShape copyShape(const CUDA_MEMCPY3D& copy) {
  core::GraphNodeContent::TransferShape shape;
  shape.sourceType = resolvedMemoryType(copy.srcMemoryType, copy.srcDevice, copy.srcHost);
  shape.destinationType = resolvedMemoryType(copy.dstMemoryType, copy.dstDevice, copy.dstHost);
  shape.width = copy.WidthInBytes;
  shape.height = copy.Height * std::max<size_t>(copy.Depth, 1);
  shape.sourceContext = owningContext(copy.srcMemoryType, copy.srcDevice, copy.srcHost);
  shape.destinationContext = owningContext(copy.dstMemoryType, copy.dstDevice, copy.dstHost);
  return shape;
}

// The same of a memset: the kind and context of its destination, its shape and element size.
core::GraphNodeContent::TransferShape memsetShape(const CUDA_MEMSET_NODE_PARAMS_v2& in) {
  core::GraphNodeContent::TransferShape shape;
  std::optional<core::Allocation> destination =
      core::findAllocation(reinterpret_cast<const void*>(in.dst));
  shape.destinationType = destination ? static_cast<uint8_t>(destination->kind) + 1 : 0;
  shape.destinationContext = destination ? destination->context : nullptr;
  shape.width = in.width;
  shape.height = in.height;
  shape.elementSize = in.elementSize;
  shape.pitch = in.height > 1 ? in.pitch : 0;
  return shape;
}

// When `stream` captures and its last operation became a node of `type` that has no parameters
// yet, gives it makeParams()'s, and a copy's or memset's `transfer` shape (which
// cuGraphExecUpdate checks as for nodes made explicitly). Nothing else (no lock taken) when the
// stream does not capture.
template <class MakeParams>
void keepCapturedParams(core::Stream& stream, core::GraphNodeType type, MakeParams makeParams,
                        std::optional<core::GraphNodeContent::TransferShape> transfer = {}) {
  if (stream.capture() == nullptr) return;
  std::lock_guard lock(core::graphMutex());
  std::vector<core::GraphNode*> last = stream.captureDependencies();
  if (last.size() != 1 || last[0]->type() != type || last[0]->content().params) return;
  last[0]->content().params = makeParams();
  if (transfer) last[0]->content().transfer = transfer;
}

}  // namespace

void keepCapturedMemsetParams(core::Stream& stream, const CUDA_MEMSET_NODE_PARAMS_v2& in) {
  if (stream.capture() == nullptr) return;
  keepCapturedParams(
      stream, core::GraphNodeType::Memset,
      [&] {
        auto payload = std::make_shared<MemsetPayload>();
        payload->params = in;
        payload->params.ctx = reinterpret_cast<CUcontext>(&stream.context());
        return payload;
      },
      memsetShape(in));
}

void keepCapturedCopyParams(core::Stream& stream, const CUDA_MEMCPY3D& copy) {
  if (stream.capture() == nullptr) return;
  keepCapturedParams(
      stream, core::GraphNodeType::Memcpy,
      [&] {
        auto payload = std::make_shared<MemcpyPayload>();
        payload->copy = copy;
        payload->context = reinterpret_cast<CUcontext>(&stream.context());
        return payload;
      },
      copyShape(copy));
}

void keepCapturedCopyParams(core::Stream& stream, void* dst, const void* src, size_t bytes) {
  if (stream.capture() == nullptr) return;
  // As NVIDIA reports a captured 1D copy: a 3D copy one row high, each side device memory when
  // it is device or managed memory of Rocuda's, else host memory (pinned and registered host
  // memory too: a copy's update may not turn device memory into either).
  CUDA_MEMCPY3D copy{};
  auto side = [](const void* pointer, CUmemorytype& type, CUdeviceptr& device, auto& host) {
    std::optional<core::Allocation> allocation = core::findAllocation(pointer);
    bool onDevice = allocation && allocation->kind != core::AllocationKind::Host;
    type = onDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (onDevice)
      device = reinterpret_cast<CUdeviceptr>(pointer);
    else
      host = const_cast<std::remove_reference_t<decltype(host)>>(pointer);
  };
  side(src, copy.srcMemoryType, copy.srcDevice, copy.srcHost);
  side(dst, copy.dstMemoryType, copy.dstDevice, copy.dstHost);
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  keepCapturedCopyParams(stream, copy);
}

void keepCapturedHostParams(core::Stream& stream, const CUDA_HOST_NODE_PARAMS& in) {
  keepCapturedParams(stream, core::GraphNodeType::Host,
                     [&] { return std::make_shared<CUDA_HOST_NODE_PARAMS>(in); });
}

void keepCapturedBatchMemOpParams(core::Stream& stream, const CUstreamBatchMemOpParams* ops,
                                  unsigned count) {
  keepCapturedParams(stream, core::GraphNodeType::BatchMemOp, [&] {
    CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 in{};
    in.count = count;
    in.paramArray = const_cast<CUstreamBatchMemOpParams*>(ops);
    return std::make_shared<BatchMemOpPayload>(in, reinterpret_cast<CUcontext>(&stream.context()));
  });
}

namespace {

Outcome buildMemcpy(const CUDA_MEMCPY_NODE_PARAMS& in, core::GraphNodeContent* content) {
  if (in.flags != 0 || in.reserved != 0) return invalidValue("flags and reserved must be 0");
  Result<core::Context*> context = contextOrCurrent(in.copyCtx);
  if (!context) return context.error();
  auto payload = std::make_shared<MemcpyPayload>();
  payload->copy = in.copyParams;
  payload->context = reinterpret_cast<CUcontext>(*context);
  Outcome recorded = recordWork(**context, content,
                                [&](CUstream s) { return cuMemcpy3DAsync_v2(&payload->copy, s); });
  if (!recorded.ok()) return recorded;
  content->name = "memcpy";
  content->transfer = copyShape(in.copyParams);
  content->params = std::move(payload);
  return {};
}

Outcome buildMemset(const CUDA_MEMSET_NODE_PARAMS_v2& in, core::GraphNodeContent* content) {
  if (in.elementSize != 1 && in.elementSize != 2 && in.elementSize != 4)
    return invalidValue("elementSize must be 1, 2 or 4");
  if (in.width == 0 || in.height == 0) return invalidValue("empty memset");
  Result<core::Context*> context = contextOrCurrent(in.ctx);
  if (!context) return context.error();
  auto payload = std::make_shared<MemsetPayload>();
  payload->params = in;
  payload->params.ctx = reinterpret_cast<CUcontext>(*context);
  size_t pitch = in.height == 1 ? in.width * in.elementSize : in.pitch;
  Outcome recorded = recordWork(**context, content, [&](CUstream s) -> CUresult {
    switch (in.elementSize) {
      case 1:
        return cuMemsetD2D8Async(in.dst, pitch, static_cast<unsigned char>(in.value), in.width,
                                 in.height, s);
      case 2:
        return cuMemsetD2D16Async(in.dst, pitch, static_cast<unsigned short>(in.value), in.width,
                                  in.height, s);
      default:
        return cuMemsetD2D32Async(in.dst, pitch, in.value, in.width, in.height, s);
    }
  });
  if (!recorded.ok()) return recorded;
  content->name = "memset";
  content->transfer = memsetShape(in);
  content->params = std::move(payload);
  return {};
}

Outcome buildBatchMemOp(const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& in,
                        core::GraphNodeContent* content) {
  if (in.flags != 0) return invalidValue("flags must be 0");
  if (in.count == 0 || in.paramArray == nullptr) return invalidValue("no operations");
  Result<core::Context*> context = contextOrCurrent(in.ctx);
  if (!context) return context.error();
  Outcome recorded = recordWork(**context, content, [&](CUstream s) {
    return cuStreamBatchMemOp_v2(s, in.count, in.paramArray, 0);
  });
  if (!recorded.ok()) return recorded;
  content->name = "batch_mem_op";
  content->params = std::make_shared<BatchMemOpPayload>(in, reinterpret_cast<CUcontext>(*context));
  return {};
}

// cuGraphExecBatchMemOpNodeSetParams: only the addresses and values of waits and writes, and
// the condition of a wait, may change; the context, the count, the kinds of operation and
// anything of the other kinds may not.
Outcome checkBatchMemOpUpdate(const BatchMemOpPayload& instantiated,
                              const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& now) {
  if (now.count != instantiated.params.count || now.paramArray == nullptr)
    return invalidValue("an executable batch memory-operation node keeps its count");
  for (unsigned i = 0; i < now.count; ++i) {
    const CUstreamBatchMemOpParams& before = instantiated.operations[i];
    const CUstreamBatchMemOpParams& after = now.paramArray[i];
    if (after.operation != before.operation)
      return invalidValue("an executable batch memory-operation node keeps its operations' kinds");
    switch (before.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        if ((after.waitValue.flags & CU_STREAM_WAIT_VALUE_FLUSH) !=
            (before.waitValue.flags & CU_STREAM_WAIT_VALUE_FLUSH))
          return invalidValue("a wait's flush flag cannot change");
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        if (after.writeValue.flags != before.writeValue.flags)
          return invalidValue("a write's flags cannot change");
        break;
      default:
        if (std::memcmp(&after, &before, sizeof after) != 0)
          return invalidValue("only waits and writes can change");
        break;
    }
  }
  return {};
}

Outcome buildHost(const CUDA_HOST_NODE_PARAMS& in, core::GraphNodeContent* content) {
  if (in.fn == nullptr) return invalidValue("fn is NULL");
  auto payload = std::make_shared<CUDA_HOST_NODE_PARAMS>(in);
  content->work = [fn = in.fn, userData = in.userData] {
    fn(userData);
    return Status::success();
  };
  content->name = "host";
  content->params = std::move(payload);
  return {};
}

Outcome buildChild(const CUDA_CHILD_GRAPH_NODE_PARAMS& in, core::GraphNodeContent* content) {
  if (in.ownership != 0 && in.ownership != 1) return invalidValue("unknown ownership");
  Result<core::Graph*> child = lookupGraph(in.graph);
  if (!child) return child.error();
  if ((*child)->moved()) return invalidValue("the graph was moved into another child graph node");
  // "The graph must not contain conditional nodes."
  if ((*child)->hasConditionalNodes())
    return invalidValue("a child graph cannot hold conditional nodes");
  content->name = "graph";
  // MOVE: "The child graph is moved to the parent. The handle to the child graph is owned by the
  // parent and will be destroyed when the parent is destroyed."
  if (in.ownership == 1 && !(*child)->embedded()) {  // CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE
    if (core::graphBeingCaptured(*child))
      return {CUDA_ERROR_NOT_PERMITTED, "the graph is being captured into"};
    content->child = core::disownGraph(*child);
    if (!content->child) return invalidValue("the graph cannot be moved");
    content->child->setMoved();
    return {};
  }
  for (const core::GraphNode* node : (*child)->nodes())
    if (node->type() == core::GraphNodeType::MemAlloc ||
        node->type() == core::GraphNodeType::MemFree)
      return invalidValue("a cloned child graph cannot hold memory nodes");
  content->child = (*child)->clone(nullptr);
  content->child->setEmbedded(true);
  return {};
}

Outcome buildEvent(CUevent handle, core::GraphNodeContent* content) {
  Result<core::Event*> event = lookupEvent(handle);
  if (!event) return event.error();
  content->event = *event;
  content->name = "event";
  return {};
}

Outcome buildAlloc(CUDA_MEM_ALLOC_NODE_PARAMS& in, core::GraphNodeContent* content) {
  const CUmemPoolProps& props = in.poolProps;
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return invalidValue("allocType must be pinned");
  if (props.handleTypes != CU_MEM_HANDLE_TYPE_NONE) return invalidValue("IPC is not supported");
  if (props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) return invalidValue("not a device");
  if (in.bytesize == 0) return invalidValue("bytesize is 0");
  if (in.accessDescCount > 0 && in.accessDescs == nullptr) return invalidValue("accessDescs NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  if (props.location.id != (*context)->device().ordinal())
    return invalidValue("the location is not the current context's device");
  auto allocation = core::createGraphAllocation(**context, in.bytesize);
  if (!allocation) return allocation.error();
  in.dptr = reinterpret_cast<CUdeviceptr>((*allocation)->address);
  auto payload = std::make_shared<AllocPayload>();
  payload->params = in;
  payload->access.assign(in.accessDescs, in.accessDescs + in.accessDescCount);
  payload->params.accessDescs = payload->access.empty() ? nullptr : payload->access.data();
  content->allocation = std::move(*allocation);
  content->context = *context;
  content->name = "mem_alloc";
  content->params = std::move(payload);
  return {};
}

Outcome buildFree(const CUDA_MEM_FREE_NODE_PARAMS& in, core::GraphNodeContent* content) {
  void* address = reinterpret_cast<void*>(in.dptr);
  if (!core::findGraphAllocation(address)) return invalidValue("dptr is not a graph allocation");
  content->freeAddress = address;
  content->name = "mem_free";
  return {};
}

}  // namespace

Outcome buildNodeContent(CUgraphNodeParams& params, core::GraphNodeContent* content) {
  switch (params.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return buildKernel(params.kernel, content, nullptr);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return buildMemcpy(params.memcpy, content);
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return buildMemset(params.memset, content);
    case CU_GRAPH_NODE_TYPE_HOST:
      return buildHost(params.host, content);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return buildChild(params.graph, content);
    case CU_GRAPH_NODE_TYPE_EMPTY:
      content->name = "empty";
      return {};
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return buildEvent(params.eventWait.event, content);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return buildEvent(params.eventRecord.event, content);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return buildAlloc(params.alloc, content);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return buildFree(params.free, content);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return buildBatchMemOp(params.memOp, content);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return {CUDA_ERROR_NOT_SUPPORTED, "this node type is not supported"};
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:  // made by addNode (its bodies are created there)
      return invalidValue("conditional node parameters cannot be changed");
  }
  return invalidValue("unknown node type");
}

Outcome readNodeParams(const core::GraphNode& node, CUgraphNodeParams* params) {
  std::memset(params, 0, sizeof *params);
  params->type = static_cast<CUgraphNodeType>(node.type());
  const core::GraphNodeContent& content = node.content();
  auto missing = [] {
    return Outcome{CUDA_ERROR_NOT_SUPPORTED, "parameters of a captured node are not kept"};
  };
  switch (node.type()) {
    case core::GraphNodeType::Kernel:
      if (!content.params) return missing();
      params->kernel = static_cast<const KernelPayload*>(content.params.get())->params;
      return {};
    case core::GraphNodeType::Memcpy: {
      if (!content.params) return missing();
      const auto* p = static_cast<const MemcpyPayload*>(content.params.get());
      params->memcpy.copyCtx = p->context;
      params->memcpy.copyParams = p->copy;
      return {};
    }
    case core::GraphNodeType::Memset:
      if (!content.params) return missing();
      params->memset = static_cast<const MemsetPayload*>(content.params.get())->params;
      return {};
    case core::GraphNodeType::Host:
      if (!content.params) return missing();
      params->host = *static_cast<const CUDA_HOST_NODE_PARAMS*>(content.params.get());
      return {};
    case core::GraphNodeType::Graph:
      params->graph.graph = reinterpret_cast<CUgraph>(content.child.get());
      return {};
    case core::GraphNodeType::WaitEvent:
    case core::GraphNodeType::EventRecord:
      params->eventWait.event = reinterpret_cast<CUevent>(content.event);
      return {};
    case core::GraphNodeType::MemAlloc:
      params->alloc = static_cast<const AllocPayload*>(content.params.get())->params;
      return {};
    case core::GraphNodeType::MemFree:
      params->free.dptr = reinterpret_cast<CUdeviceptr>(content.freeAddress);
      return {};
    case core::GraphNodeType::BatchMemOp:
      if (!content.params) return missing();
      params->memOp = static_cast<const BatchMemOpPayload*>(content.params.get())->params;
      return {};
    case core::GraphNodeType::Conditional: {
      const core::ConditionalHandle* handle =
          node.graph().findConditionalHandle(content.conditionHandle);
      params->conditional.handle = content.conditionHandle;
      params->conditional.type = static_cast<CUgraphConditionalNodeType>(content.conditionType);
      params->conditional.size = static_cast<unsigned>(content.bodies.size());
      params->conditional.phGraph_out =
          reinterpret_cast<CUgraph*>(const_cast<core::Graph**>(content.bodyList.data()));
      params->conditional.ctx = reinterpret_cast<CUcontext>(handle ? handle->context : nullptr);
      return {};
    }
    default:
      return {};
  }
}

Result<core::GraphNode*> lookupNode(CUgraphNode handle) {
  if (auto* node = core::lookupGraphNode(handle)) return node;
  return makeError(ErrorCode::InvalidValue, "not a graph node");
}

Result<core::EdgeData> edgeDataOf(const CUgraphEdgeData* edge) {
  if (edge == nullptr) return core::EdgeData{};
  for (unsigned char byte : edge->reserved)
    if (byte != 0)
      return makeError(ErrorCode::InvalidValue, "CUgraphEdgeData::reserved must be zero");
  if (edge->to_port != 0)
    return makeError(ErrorCode::InvalidValue, "no node type defines a non-zero to_port");
  if (edge->from_port > CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER ||
      edge->type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC)
    return makeError(ErrorCode::InvalidValue, "unknown edge port or type");
  // The programmatic port "must be used with edge type CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC",
  // which "must be used with either the ..._PROGRAMMATIC or ..._LAUNCH_ORDER outgoing port".
  bool programmatic = edge->type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  if ((edge->from_port == CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC) != programmatic &&
      !(programmatic && edge->from_port == CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER))
    return makeError(ErrorCode::InvalidValue,
                     "a programmatic edge leaves a kernel's programmatic or launch-order port, "
                     "and the programmatic port takes programmatic edges only");
  return core::EdgeData{edge->from_port, edge->to_port, edge->type};
}

Outcome checkEdgeEnds(const core::EdgeData& edge, core::GraphNodeType from,
                      core::GraphNodeType to) {
  if (edge.fromPort != 0 && from != core::GraphNodeType::Kernel)
    return invalidValue("only kernel nodes have non-zero ports");
  if (edge.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC && to != core::GraphNodeType::Kernel)
    return invalidValue("a programmatic edge joins two kernel nodes");
  return {};
}

Outcome requireDefaultEdges(const CUgraphEdgeData* edges, size_t count) {
  for (size_t i = 0; edges != nullptr && i < count; ++i) {
    Result<core::EdgeData> edge = edgeDataOf(&edges[i]);
    if (!edge) return edge.error();
    if (!edge->isDefault())
      return {CUDA_ERROR_NOT_SUPPORTED, "programmatic edges in stream capture are not supported"};
  }
  return {};
}

Outcome collectDependencies(core::Graph& graph, const CUgraphNode* dependencies, size_t count,
                            std::vector<core::GraphNode*>* out) {
  if (count > 0 && dependencies == nullptr) return invalidValue("dependencies is NULL");
  for (size_t i = 0; i < count; ++i) {
    Result<core::GraphNode*> node = lookupNode(dependencies[i]);
    if (!node) return node.error();
    if (!graph.owns(*node)) return invalidValue("a dependency belongs to another graph");
    out->push_back(*node);
  }
  return {};
}

namespace {

// A conditional node: the driver makes its empty bodies and hands them out in phGraph_out.
Outcome addConditional(CUgraphNode* phNode, core::Graph& graph,
                       const std::vector<core::GraphNode*>& dependencies,
                       CUgraphNodeParams& params) {
  CUDA_CONDITIONAL_NODE_PARAMS& in = params.conditional;
  const core::ConditionalHandle* handle = graph.findConditionalHandle(in.handle);
  if (handle == nullptr)
    return invalidValue("the conditional handle was not created on this graph or one enclosing it");
  if (in.ctx != nullptr) {
    Result<core::Context*> context = lookupContext(in.ctx);
    if (!context) return context.error();
    if (*context != handle->context)
      return invalidValue("ctx is not the context the conditional handle was created with");
  }
  if (in.type < CU_GRAPH_COND_TYPE_IF || in.type > CU_GRAPH_COND_TYPE_SWITCH)
    return invalidValue("unknown conditional node type");
  Result<core::GraphNode*> node = core::addConditionalNode(
      graph, dependencies, in.handle, static_cast<core::ConditionalType>(in.type), in.size);
  if (!node) return node.error();
  in.phGraph_out = reinterpret_cast<CUgraph*>((*node)->content().bodyList.data());
  if (in.ctx == nullptr) in.ctx = reinterpret_cast<CUcontext>(handle->context);
  *phNode = nodeHandle(*node);
  return {};
}

}  // namespace

Outcome addNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* dependencies, size_t count,
                CUgraphNodeParams& params, const CUgraphEdgeData* dependencyData) {
  if (phNode == nullptr) return invalidValue("phGraphNode is NULL");
  std::lock_guard lock(core::graphMutex());
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  std::vector<core::GraphNode*> nodes;
  Outcome collected = collectDependencies(**graph, dependencies, count, &nodes);
  if (!collected.ok()) return collected;
  std::vector<core::EdgeData> edges;
  for (size_t i = 0; dependencyData != nullptr && i < count; ++i) {
    Result<core::EdgeData> edge = edgeDataOf(&dependencyData[i]);
    if (!edge) return edge.error();
    if (Outcome ends =
            checkEdgeEnds(*edge, nodes[i]->type(), static_cast<core::GraphNodeType>(params.type));
        !ends.ok())
      return ends;
    edges.push_back(*edge);
  }
  bool defaultEdges = std::all_of(edges.begin(), edges.end(),
                                  [](const core::EdgeData& e) { return e.isDefault(); });
  if (params.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    if (!defaultEdges) return invalidValue("a conditional node's dependencies are default edges");
    return addConditional(phNode, **graph, nodes, params);
  }
  if (params.type == CU_GRAPH_NODE_TYPE_GRAPH && params.graph.graph == hGraph)
    return invalidValue("a graph cannot be its own child");
  // cuGraphChildGraphNodeGetGraph: "Allocation and free nodes cannot be added to the returned
  // graph."
  if ((params.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || params.type == CU_GRAPH_NODE_TYPE_MEM_FREE) &&
      (*graph)->embedded())
    return invalidValue("memory nodes cannot be added to a child graph node's graph");
  core::GraphNodeContent content;
  Outcome built = buildNodeContent(params, &content);
  if (!built.ok()) return built;
  if (params.type == CU_GRAPH_NODE_TYPE_MEM_FREE)
    if (Status single = core::checkFreeNodeGraph(**graph, content.freeAddress); !single)
      return single;
  Result<core::GraphNode*> node = (*graph)->addNode(static_cast<core::GraphNodeType>(params.type),
                                                    nodes, std::move(content), edges);
  if (!node) return node.error();
  *phNode = nodeHandle(*node);
  return {};
}

Outcome setNodeParams(core::GraphNode& node, CUgraphNodeParams& params,
                      const core::GraphExec* exec) {
  bool executable = exec != nullptr;
  if (static_cast<int>(node.type()) != params.type)
    return invalidValue("the parameters are for another node type");
  core::GraphNodeContent& target = node.content();
  // "Modifying parameters is not supported for node types CU_GRAPH_NODE_TYPE_MEM_ALLOC and
  // CU_GRAPH_NODE_TYPE_MEM_FREE".
  if (node.type() == core::GraphNodeType::MemAlloc || node.type() == core::GraphNodeType::MemFree)
    return {CUDA_ERROR_NOT_SUPPORTED, "memory node parameters cannot be changed"};
  // cuGraphExecMemcpyNodeSetParams: "Zero-length operations are not supported."
  if (executable && node.type() == core::GraphNodeType::Memcpy) {
    const CUDA_MEMCPY3D& copy = params.memcpy.copyParams;
    if (copy.WidthInBytes == 0 || copy.Height == 0 || copy.Depth == 0)
      return invalidValue("an executable graph's copy cannot become empty");
  }
  if (executable && node.type() == core::GraphNodeType::BatchMemOp && target.params)
    if (Outcome kept = checkBatchMemOpUpdate(
            *static_cast<const BatchMemOpPayload*>(target.params.get()), params.memOp);
        !kept.ok())
      return kept;
  const std::map<int, CUlaunchAttributeValue>* attributes = nullptr;
  if (node.type() == core::GraphNodeType::Kernel && target.params)
    attributes = &static_cast<const KernelPayload*>(target.params.get())->attributes;
  core::GraphNodeContent content;
  Outcome built = node.type() == core::GraphNodeType::Kernel
                      ? buildKernel(params.kernel, &content, attributes, target.deviceUpdatable)
                      : buildNodeContent(params, &content);
  if (!built.ok()) return built;
  if (executable && target.context != nullptr && content.context != nullptr &&
      target.context != content.context)
    return invalidValue("an executable node cannot move to another context");
  if (executable && node.type() == core::GraphNodeType::Kernel &&
      exec->kernelMayBecome(node, content) != core::GraphUpdateResult::Success)
    return invalidValue(
        "an executable kernel node cannot take up dynamic parallelism, device-side graph "
        "launches or node updates its kernel did not make when instantiated");
  if (executable && target.transfer && content.transfer) {
    if (node.type() == core::GraphNodeType::Memcpy &&
        (target.transfer->height > 1 || content.transfer->height > 1))
      return invalidValue("an executable graph's multidimensional copy cannot be changed");
    if (!core::transferMayChange(node.type(), *target.transfer, *content.transfer))
      return invalidValue(node.type() == core::GraphNodeType::Memcpy
                              ? "the copy's memory types or contexts changed"
                              : "a memset's kind of destination, its context or a 2D memset's "
                                "shape cannot change");
  }
  target.name = std::move(content.name);
  target.work = std::move(content.work);
  target.params = std::move(content.params);
  target.transfer = content.transfer;
  target.deviceCalls = content.deviceCalls;
  if (content.deviceUpdatable) target.deviceUpdatable = std::move(content.deviceUpdatable);
  if (content.context != nullptr) target.context = content.context;
  target.event = content.event;
  if (content.child) target.child = std::move(content.child);
  return {};
}

namespace {

Outcome nodeOfType(CUgraphNode hNode, core::GraphNodeType type, core::GraphNode** out) {
  Result<core::GraphNode*> node = lookupNode(hNode);
  if (!node) return node.error();
  if ((*node)->type() != type) return invalidValue("the node is of another type");
  *out = *node;
  return {};
}

template <class Fill>
Outcome addTyped(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t count,
                 CUgraphNodeType type, Fill fill) {
  CUgraphNodeParams params{};
  params.type = type;
  Outcome filled = fill(params);
  if (!filled.ok()) return filled;
  return addNode(phNode, hGraph, deps, count, params);
}

// Get: read the node's CUgraphNodeParams and hand one member out.
template <class Read>
Outcome getTyped(CUgraphNode hNode, core::GraphNodeType type, Read read) {
  std::lock_guard lock(core::graphMutex());
  core::GraphNode* node = nullptr;
  Outcome found = nodeOfType(hNode, type, &node);
  if (!found.ok()) return found;
  CUgraphNodeParams params{};
  Outcome outcome = readNodeParams(*node, &params);
  if (!outcome.ok()) return outcome;
  read(params);
  return {};
}

template <class Fill>
Outcome setTyped(CUgraphNode hNode, core::GraphNodeType type, Fill fill) {
  std::lock_guard lock(core::graphMutex());
  core::GraphNode* node = nullptr;
  Outcome found = nodeOfType(hNode, type, &node);
  if (!found.ok()) return found;
  CUgraphNodeParams params{};
  params.type = static_cast<CUgraphNodeType>(type);
  Outcome filled = fill(params);
  if (!filled.ok()) return filled;
  return setNodeParams(*node, params, nullptr);
}

CUDA_KERNEL_NODE_PARAMS_v2 widen(const CUDA_KERNEL_NODE_PARAMS_v1& in) {
  CUDA_KERNEL_NODE_PARAMS_v2 out{};
  std::memcpy(&out, &in, sizeof in);
  return out;
}

CUDA_MEMSET_NODE_PARAMS_v2 widen(const CUDA_MEMSET_NODE_PARAMS_v1& in, CUcontext ctx) {
  CUDA_MEMSET_NODE_PARAMS_v2 out{};
  std::memcpy(&out, &in, sizeof in);
  out.ctx = ctx;
  return out;
}

template <class T>
Outcome need(const T* pointer, const char* what) {
  return pointer == nullptr ? invalidValue(what) : Outcome{};
}

// Kernel node attributes: the launch attributes a kernel node may carry.
Outcome checkAttribute(int id, const CUlaunchAttributeValue* value) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return {};
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
      // "Passing a value other than 0 or 1 is not allowed."
      if (value != nullptr && value->deviceUpdatableKernelNode.deviceUpdatable != 0 &&
          value->deviceUpdatableKernelNode.deviceUpdatable != 1)
        return invalidValue("deviceUpdatable is 0 or 1");
      return {};
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:  // buildKernel launches such a node cooperatively
      return {};
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      if (value != nullptr &&
          (value->clusterDim.x > 1 || value->clusterDim.y > 1 || value->clusterDim.z > 1))
        return {CUDA_ERROR_NOT_SUPPORTED, "thread block clusters are not supported"};
      return {};
    default:
      return invalidValue("not a kernel node attribute");
  }
}

Outcome kernelPayload(CUgraphNode hNode, core::GraphNode** node, const KernelPayload** payload) {
  Outcome found = nodeOfType(hNode, core::GraphNodeType::Kernel, node);
  if (!found.ok()) return found;
  if (!(*node)->content().params)
    return {CUDA_ERROR_NOT_SUPPORTED, "attributes of a captured kernel node are not kept"};
  *payload = static_cast<const KernelPayload*>((*node)->content().params.get());
  return {};
}

// A copy of the node's payload with `change` applied (payloads are immutable once shared).
Outcome changeAttributes(core::GraphNode& node, const KernelPayload& from,
                         const std::map<int, CUlaunchAttributeValue>& attributes) {
  // "Once opted-in to this functionality, a node cannot opt out."
  auto updatable = attributes.find(CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE);
  if (node.content().deviceUpdatable && updatable != attributes.end() &&
      updatable->second.deviceUpdatableKernelNode.deviceUpdatable == 0)
    return invalidValue("a device-updatable node cannot stop being one");
  core::GraphNodeContent content;
  Outcome built = buildKernel(from.params, &content, &attributes, node.content().deviceUpdatable);
  if (!built.ok()) return built;
  node.content().params = std::move(content.params);
  node.content().work = std::move(content.work);
  node.content().deviceUpdatable = std::move(content.deviceUpdatable);
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

using api::Outcome;
namespace core = rocuda::core;

#define ROCUDA_ADD_NODE(type, ...)                                        \
  api::addTyped(phGraphNode, hGraph, dependencies, numDependencies, type, \
                [&](CUgraphNodeParams& p) -> Outcome { __VA_ARGS__ })

ROCUDA_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                            const CUgraphNode* dependencies, size_t numDependencies,
                                            const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_KERNEL, {
      if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
      p.kernel = api::widen(*nodeParams);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies,
                                               size_t numDependencies,
                                               const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_KERNEL, {
      if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
      p.kernel = *nodeParams;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                            const CUgraphNode* dependencies, size_t numDependencies,
                                            const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_MEMCPY, {
      if (copyParams == nullptr) return api::invalidValue("copyParams is NULL");
      if (ctx == nullptr) return api::invalidValue("ctx is NULL");
      p.memcpy.copyParams = *copyParams;
      p.memcpy.copyCtx = ctx;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                            const CUgraphNode* dependencies, size_t numDependencies,
                                            const CUDA_MEMSET_NODE_PARAMS_v1* memsetParams,
                                            CUcontext ctx) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_MEMSET, {
      if (memsetParams == nullptr) return api::invalidValue("memsetParams is NULL");
      if (ctx == nullptr) return api::invalidValue("ctx is NULL");
      p.memset = api::widen(*memsetParams, ctx);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                          const CUgraphNode* dependencies, size_t numDependencies,
                                          const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_HOST, {
      if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
      p.host = *nodeParams;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies,
                                                size_t numDependencies, CUgraph childGraph) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, childGraph), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_GRAPH, {
      p.graph.graph = childGraph;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                           const CUgraphNode* dependencies,
                                           size_t numDependencies) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies),
                    [&] { return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_EMPTY, { return {}; }); });
}

ROCUDA_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                 const CUgraphNode* dependencies,
                                                 size_t numDependencies, CUevent event) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, event), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_EVENT_RECORD, {
      p.eventRecord.event = event;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies,
                                               size_t numDependencies, CUevent event) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, event), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_WAIT_EVENT, {
      p.eventWait.event = event;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies,
                                              size_t numDependencies,
                                              CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    p.alloc = *nodeParams;
    Outcome added = api::addNode(phGraphNode, hGraph, dependencies, numDependencies, p);
    if (added.ok()) nodeParams->dptr = p.alloc.dptr;
    return added;
  });
}

ROCUDA_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                             const CUgraphNode* dependencies,
                                             size_t numDependencies, CUdeviceptr dptr) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, dptr), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_MEM_FREE, {
      p.free.dptr = dptr;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                      const CUgraphNode* dependencies, size_t numDependencies,
                                      CUgraphNodeParams* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::addNode(phGraphNode, hGraph, dependencies, numDependencies, *nodeParams);
  });
}

ROCUDA_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                         const CUgraphNode* dependencies,
                                         const CUgraphEdgeData* dependencyData,
                                         size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return ROCUDA_API(
      (phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams), [&] {
        if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
        return api::addNode(phGraphNode, hGraph, dependencies, numDependencies, *nodeParams,
                            dependencyData);
      });
}

ROCUDA_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    std::lock_guard lock(core::graphMutex());
    Result<core::GraphNode*> node = api::lookupNode(hNode);
    if (!node) return node.error();
    return api::setNodeParams(**node, *nodeParams, nullptr);
  });
}

// ---- Per-kind get/set ----

ROCUDA_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                  CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Kernel, [&](const CUgraphNodeParams& p) {
      std::memcpy(nodeParams, &p.kernel, sizeof *nodeParams);
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                     CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Kernel,
                         [&](const CUgraphNodeParams& p) { *nodeParams = p.kernel; });
  });
}

ROCUDA_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::setTyped(hNode, core::GraphNodeType::Kernel, [&](CUgraphNodeParams& p) {
      p.kernel = api::widen(*nodeParams);
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                                     const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::setTyped(hNode, core::GraphNodeType::Kernel, [&](CUgraphNodeParams& p) {
      p.kernel = *nodeParams;
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Memcpy,
                         [&](const CUgraphNodeParams& p) { *nodeParams = p.memcpy.copyParams; });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode,
                                                  const CUDA_MEMCPY3D* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    core::GraphNode* node = core::lookupGraphNode(hNode);
    CUcontext ctx = node ? reinterpret_cast<CUcontext>(node->content().context) : nullptr;
    return api::setTyped(hNode, core::GraphNodeType::Memcpy, [&](CUgraphNodeParams& p) {
      p.memcpy.copyParams = *nodeParams;
      p.memcpy.copyCtx = ctx;
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode,
                                                  CUDA_MEMSET_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Memset, [&](const CUgraphNodeParams& p) {
      std::memcpy(nodeParams, &p.memset, sizeof *nodeParams);
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                                  const CUDA_MEMSET_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    core::GraphNode* node = core::lookupGraphNode(hNode);
    CUcontext ctx = node ? reinterpret_cast<CUcontext>(node->content().context) : nullptr;
    return api::setTyped(hNode, core::GraphNodeType::Memset, [&](CUgraphNodeParams& p) {
      p.memset = api::widen(*nodeParams, ctx);
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode,
                                                CUDA_HOST_NODE_PARAMS* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Host,
                         [&](const CUgraphNodeParams& p) { *nodeParams = p.host; });
  });
}

ROCUDA_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode,
                                                const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::setTyped(hNode, core::GraphNodeType::Host, [&](CUgraphNodeParams& p) {
      p.host = *nodeParams;
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  return ROCUDA_API((hNode, phGraph), [&]() -> Outcome {
    if (phGraph == nullptr) return api::invalidValue("phGraph is NULL");
    return api::getTyped(hNode, core::GraphNodeType::Graph,
                         [&](const CUgraphNodeParams& p) { *phGraph = p.graph.graph; });
  });
}

ROCUDA_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return ROCUDA_API((hNode, event_out), [&]() -> Outcome {
    if (event_out == nullptr) return api::invalidValue("event_out is NULL");
    return api::getTyped(hNode, core::GraphNodeType::EventRecord,
                         [&](const CUgraphNodeParams& p) { *event_out = p.eventRecord.event; });
  });
}

ROCUDA_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return ROCUDA_API((hNode, event), [&]() -> Outcome {
    return api::setTyped(hNode, core::GraphNodeType::EventRecord, [&](CUgraphNodeParams& p) {
      p.eventRecord.event = event;
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return ROCUDA_API((hNode, event_out), [&]() -> Outcome {
    if (event_out == nullptr) return api::invalidValue("event_out is NULL");
    return api::getTyped(hNode, core::GraphNodeType::WaitEvent,
                         [&](const CUgraphNodeParams& p) { *event_out = p.eventWait.event; });
  });
}

ROCUDA_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return ROCUDA_API((hNode, event), [&]() -> Outcome {
    return api::setTyped(hNode, core::GraphNodeType::WaitEvent, [&](CUgraphNodeParams& p) {
      p.eventWait.event = event;
      return Outcome{};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                    CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  return ROCUDA_API((hNode, params_out), [&]() -> Outcome {
    if (params_out == nullptr) return api::invalidValue("params_out is NULL");
    return api::getTyped(hNode, core::GraphNodeType::MemAlloc,
                         [&](const CUgraphNodeParams& p) { *params_out = p.alloc; });
  });
}

ROCUDA_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  return ROCUDA_API((hNode, dptr_out), [&]() -> Outcome {
    if (dptr_out == nullptr) return api::invalidValue("dptr_out is NULL");
    return api::getTyped(hNode, core::GraphNodeType::MemFree,
                         [&](const CUgraphNodeParams& p) { *dptr_out = p.free.dptr; });
  });
}

ROCUDA_EXPORT CUresult cuGraphAddBatchMemOpNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((phGraphNode, hGraph, dependencies, numDependencies, nodeParams), [&] {
    return ROCUDA_ADD_NODE(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, {
      if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
      p.memOp = *nodeParams;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuGraphBatchMemOpNodeGetParams(
    CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS_v1* nodeParams_out) {
  return ROCUDA_API((hNode, nodeParams_out), [&]() -> Outcome {
    if (nodeParams_out == nullptr) return api::invalidValue("nodeParams_out is NULL");
    return api::getTyped(hNode, core::GraphNodeType::BatchMemOp,
                         [&](const CUgraphNodeParams& p) { *nodeParams_out = p.memOp; });
  });
}

ROCUDA_EXPORT CUresult cuGraphBatchMemOpNodeSetParams(
    CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::setTyped(hNode, core::GraphNodeType::BatchMemOp, [&](CUgraphNodeParams& p) {
      p.memOp = *nodeParams;
      return Outcome{};
    });
  });
}

// ---- Kernel node attributes ----

ROCUDA_EXPORT CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                     CUkernelNodeAttrValue* value_out) {
  return ROCUDA_API((hNode, attr, value_out), [&]() -> Outcome {
    if (value_out == nullptr) return api::invalidValue("value_out is NULL");
    Outcome known = api::checkAttribute(attr, nullptr);
    if (!known.ok()) return known;
    std::lock_guard lock(core::graphMutex());
    core::GraphNode* node = nullptr;
    const api::KernelPayload* payload = nullptr;
    Outcome found = api::kernelPayload(hNode, &node, &payload);
    if (!found.ok()) return found;
    auto it = payload->attributes.find(attr);
    std::memset(value_out, 0, sizeof *value_out);
    if (it != payload->attributes.end()) *value_out = it->second;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                     const CUkernelNodeAttrValue* value) {
  return ROCUDA_API((hNode, attr, value), [&]() -> Outcome {
    if (value == nullptr) return api::invalidValue("value is NULL");
    Outcome allowed = api::checkAttribute(attr, value);
    if (!allowed.ok()) return allowed;
    std::lock_guard lock(core::graphMutex());
    core::GraphNode* node = nullptr;
    const api::KernelPayload* payload = nullptr;
    Outcome found = api::kernelPayload(hNode, &node, &payload);
    if (!found.ok()) return found;
    auto attributes = payload->attributes;
    attributes[attr] = *value;
    return api::changeAttributes(*node, *payload, attributes);
  });
}

ROCUDA_EXPORT CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  return ROCUDA_API((dst, src), [&]() -> Outcome {
    std::lock_guard lock(core::graphMutex());
    core::GraphNode *to = nullptr, *from = nullptr;
    const api::KernelPayload *target = nullptr, *source = nullptr;
    Outcome found = api::kernelPayload(src, &from, &source);
    if (!found.ok()) return found;
    found = api::kernelPayload(dst, &to, &target);
    if (!found.ok()) return found;
    if (to->content().context != from->content().context)
      return api::invalidValue("the nodes run in different contexts");
    // Device-updatable nodes "cannot have their attributes copied to/from another kernel node".
    if (to->content().deviceUpdatable || from->content().deviceUpdatable)
      return api::invalidValue("a device-updatable node's attributes are not copied");
    return api::changeAttributes(*to, *target, source->attributes);
  });
}

#undef ROCUDA_ADD_NODE

}  // extern "C"
}  // namespace rocuda::cuda
