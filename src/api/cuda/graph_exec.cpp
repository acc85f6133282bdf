// Executable graphs after instantiation: cuGraphExecUpdate, cuGraphExec*NodeSetParams,
// cuGraphNodeSetEnabled, cuGraphExecGetFlags; user objects; graph memory figures.
#include <cstring>

#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// The executable copy of `hNode` (a node of the graph `hGraphExec` was instantiated from).
Outcome execNode(CUgraphExec hGraphExec, CUgraphNode hNode, core::GraphNode** out) {
  Result<core::GraphExec*> exec = lookupExec(hGraphExec);
  if (!exec) return exec.error();
  Result<core::GraphNode*> node = lookupNode(hNode);
  if (!node) return node.error();
  core::GraphNode* copy = (*exec)->execNode(*node);
  if (copy == nullptr) return invalidValue("the node is not part of the executable graph");
  *out = copy;
  return {};
}

template <class Fill>
Outcome execSet(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeType type, Fill fill) {
  std::lock_guard lock(core::graphMutex());
  core::GraphNode* node = nullptr;
  Outcome found = execNode(hGraphExec, hNode, &node);
  if (!found.ok()) return found;
  if (static_cast<int>(node->type()) != type) return invalidValue("the node is of another type");
  CUgraphNodeParams params{};
  params.type = type;
  Outcome filled = fill(params, *node);
  if (!filled.ok()) return filled;
  return setNodeParams(*node, params, *lookupExec(hGraphExec));
}

Outcome update(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* info) {
  std::lock_guard lock(core::graphMutex());
  Result<core::GraphExec*> exec = lookupExec(hGraphExec);
  if (!exec) return exec.error();
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  if ((*graph)->moved())
    return invalidValue("a graph moved into a child graph node cannot update an executable graph");
  const core::GraphNode *errorNode = nullptr, *errorFrom = nullptr;
  bool usesNodePriority = ((*exec)->flags() & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY) != 0;
  core::GraphUpdateResult result = (*exec)->update(
      **graph, &errorNode, &errorFrom,
      [usesNodePriority](const core::GraphNode& instantiated, const core::GraphNode& now) {
        return checkKernelAttributeUpdate(instantiated, now, usesNodePriority);
      });
  info->result = static_cast<CUgraphExecUpdateResult>(result);
  info->errorNode = nodeHandle(errorNode);
  info->errorFromNode = nodeHandle(errorFrom);
  if (result != core::GraphUpdateResult::Success)
    return {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph cannot update the executable graph"};
  return {};
}

Outcome setEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned* read, unsigned write) {
  std::lock_guard lock(core::graphMutex());
  core::GraphNode* node = nullptr;
  Outcome found = execNode(hGraphExec, hNode, &node);
  if (!found.ok()) return found;
  auto type = node->type();
  if (type != core::GraphNodeType::Kernel && type != core::GraphNodeType::Memcpy &&
      type != core::GraphNodeType::Memset)
    return invalidValue("only kernel, memcpy and memset nodes can be disabled");
  if (read != nullptr)
    *read = node->content().enabled ? 1 : 0;
  else
    node->content().enabled = write != 0;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

using api::Outcome;
namespace core = rocuda::core;

ROCUDA_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                            CUgraphExecUpdateResultInfo* resultInfo) {
  return ROCUDA_API((hGraphExec, hGraph, resultInfo), [&]() -> Outcome {
    if (resultInfo == nullptr) return api::invalidValue("resultInfo is NULL");
    return api::update(hGraphExec, hGraph, resultInfo);
  });
}

ROCUDA_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                         CUgraphNode* hErrorNode_out,
                                         CUgraphExecUpdateResult* updateResult_out) {
  return ROCUDA_API((hGraphExec, hGraph, hErrorNode_out, updateResult_out), [&]() -> Outcome {
    if (hErrorNode_out == nullptr || updateResult_out == nullptr)
      return api::invalidValue("hErrorNode_out or updateResult_out is NULL");
    CUgraphExecUpdateResultInfo info{};
    Outcome outcome = api::update(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return outcome;
  });
}

ROCUDA_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  return ROCUDA_API((hGraphExec, flags), [&]() -> Outcome {
    if (flags == nullptr) return api::invalidValue("flags is NULL");
    Result<core::GraphExec*> exec = api::lookupExec(hGraphExec);
    if (!exec) return exec.error();
    // "CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD will not be returned by this API as it does not affect
    // the resulting executable graph."
    *flags = (*exec)->flags() & ~cuuint64_t{CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD};
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                CUgraphNodeParams* nodeParams) {
  return ROCUDA_API((hGraphExec, hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::execSet(hGraphExec, hNode, nodeParams->type,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p = *nodeParams;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  return ROCUDA_API((hGraphExec, hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p.kernel = *nodeParams;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecKernelNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hGraphExec, hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          std::memcpy(&p.kernel, nodeParams, sizeof *nodeParams);
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                      const CUDA_MEMCPY3D* copyParams,
                                                      CUcontext ctx) {
  return ROCUDA_API((hGraphExec, hNode, copyParams, ctx), [&]() -> Outcome {
    if (copyParams == nullptr) return api::invalidValue("copyParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          // setNodeParams keeps the copy one-dimensional and its memory types.
                          p.memcpy.copyParams = *copyParams;
                          p.memcpy.copyCtx = ctx;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecBatchMemOpNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1* nodeParams) {
  return ROCUDA_API((hGraphExec, hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p.memOp = *nodeParams;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult
cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                               const CUDA_MEMSET_NODE_PARAMS_v1* memsetParams, CUcontext ctx) {
  return ROCUDA_API((hGraphExec, hNode, memsetParams, ctx), [&]() -> Outcome {
    if (memsetParams == nullptr) return api::invalidValue("memsetParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          // setNodeParams keeps a 2D memset's dimensions (only address and value
                          // change).
                          std::memcpy(&p.memset, memsetParams, sizeof *memsetParams);
                          p.memset.ctx = ctx;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                    const CUDA_HOST_NODE_PARAMS* nodeParams) {
  return ROCUDA_API((hGraphExec, hNode, nodeParams), [&]() -> Outcome {
    if (nodeParams == nullptr) return api::invalidValue("nodeParams is NULL");
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p.host = *nodeParams;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          CUgraph childGraph) {
  return ROCUDA_API((hGraphExec, hNode, childGraph), [&]() -> Outcome {
    return api::execSet(
        hGraphExec, hNode, CU_GRAPH_NODE_TYPE_GRAPH,
        [&](CUgraphNodeParams& p, core::GraphNode& node) -> Outcome {
          Result<core::Graph*> child = api::lookupGraph(childGraph);
          if (!child) return child.error();
          // The topology must stay the same: only parameters may change.
          if (node.content().child) {
            core::GraphExec current(*node.content().child, 0);
            const core::GraphNode *errorNode = nullptr, *errorFrom = nullptr;
            if (current.update(**child, &errorNode, &errorFrom) != core::GraphUpdateResult::Success)
              return api::invalidValue("the child graph's topology differs");
          }
          p.graph.graph = childGraph;
          return Outcome{};
        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          CUevent event) {
  return ROCUDA_API((hGraphExec, hNode, event), [&]() -> Outcome {
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p.eventRecord.event = event;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        CUevent event) {
  return ROCUDA_API((hGraphExec, hNode, event), [&]() -> Outcome {
    return api::execSet(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT,
                        [&](CUgraphNodeParams& p, core::GraphNode&) {
                          p.eventWait.event = event;
                          return Outcome{};
                        });
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                             unsigned int isEnabled) {
  return ROCUDA_API((hGraphExec, hNode, isEnabled),
                    [&] { return api::setEnabled(hGraphExec, hNode, nullptr, isEnabled); });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                             unsigned int* isEnabled) {
  return ROCUDA_API((hGraphExec, hNode, isEnabled), [&]() -> Outcome {
    if (isEnabled == nullptr) return api::invalidValue("isEnabled is NULL");
    return api::setEnabled(hGraphExec, hNode, isEnabled, 0);
  });
}

// ---- User objects ----

ROCUDA_EXPORT CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                                          unsigned int initialRefcount, unsigned int flags) {
  return ROCUDA_API((object_out, ptr, destroy, initialRefcount, flags), [&]() -> Outcome {
    if (object_out == nullptr || destroy == nullptr) return api::invalidValue("NULL argument");
    if (initialRefcount == 0) return api::invalidValue("initialRefcount is 0");
    if (flags != 1)  // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC is required
      return api::invalidValue("flags must be CU_USER_OBJECT_NO_DESTRUCTOR_SYNC");
    *object_out =
        reinterpret_cast<CUuserObject>(core::createUserObject(ptr, destroy, initialRefcount));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  return ROCUDA_API((object, count), [&]() -> Outcome {
    if (count == 0) return api::invalidValue("count is 0");
    core::UserObject* found = core::lookupUserObject(object);
    if (found == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not a user object"};
    found->retain(count);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  return ROCUDA_API((object, count), [&]() -> Outcome {
    if (count == 0) return api::invalidValue("count is 0");
    core::UserObject* found = core::lookupUserObject(object);
    if (found == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not a user object"};
    return found->release(count);
  });
}

ROCUDA_EXPORT CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object,
                                               unsigned int count, unsigned int flags) {
  return ROCUDA_API((graph, object, count, flags), [&]() -> Outcome {
    if (count == 0) return api::invalidValue("count is 0");
    if (flags > 1) return api::invalidValue("unknown flags");  // CU_GRAPH_USER_OBJECT_MOVE
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> target = api::lookupGraph(graph);
    if (!target) return target.error();
    core::UserObject* found = core::lookupUserObject(object);
    if (found == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not a user object"};
    if (flags == 0) found->retain(count);  // MOVE takes the caller's references over
    (*target)->userObjects()[found] += count;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object,
                                                unsigned int count) {
  return ROCUDA_API((graph, object, count), [&]() -> Outcome {
    if (count == 0) return api::invalidValue("count is 0");
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> target = api::lookupGraph(graph);
    if (!target) return target.error();
    core::UserObject* found = core::lookupUserObject(object);
    if (found == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not a user object"};
    auto& owned = (*target)->userObjects();
    auto it = owned.find(found);
    if (it == owned.end() || it->second < count)
      return api::invalidValue("the graph does not hold that many references");
    it->second -= count;
    if (it->second == 0) owned.erase(it);
    return found->release(count);
  });
}

// ---- Graph memory ----

ROCUDA_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  return ROCUDA_API((device), [&]() -> Outcome {
    // Allocations of alloc nodes keep their addresses with their nodes; the pages of those no
    // launch holds go back to the system (RESERVED_MEM_CURRENT drops by them).
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    core::trimGraphMemory(**found);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                    void* value) {
  return ROCUDA_API((device, attr, value), [&]() -> Outcome {
    if (value == nullptr) return api::invalidValue("value is NULL");
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    core::GraphMemoryFigures f = core::graphMemoryFigures(**found);
    auto* out = static_cast<cuuint64_t*>(value);
    switch (attr) {
      case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        *out = f.usedCurrent;
        return {};
      case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        *out = f.usedHigh;
        return {};
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        *out = f.reservedCurrent;
        return {};
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        *out = f.reservedHigh;
        return {};
    }
    return api::invalidValue("unknown attribute");
  });
}

ROCUDA_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                    void* value) {
  return ROCUDA_API((device, attr, value), [&]() -> Outcome {
    if (value == nullptr) return api::invalidValue("value is NULL");
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    // Only the high watermarks can be reset, and only to 0.
    if (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
      return api::invalidValue("only the high watermarks can be set");
    if (*static_cast<const cuuint64_t*>(value) != 0)
      return api::invalidValue("a high watermark can only be reset to 0");
    core::resetGraphMemoryHigh(**found, attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                               attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
