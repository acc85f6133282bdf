// Shared by the graph entry points (graph.cpp, graph_nodes.cpp, graph_exec.cpp): handle lookup
// and the construction of node contents from the driver API's parameter structures.
#pragma once

#include <map>
#include <vector>

#include "api/cuda/boundary.h"
#include "api/cuda/graph_abi.h"
#include "core/graph.h"

namespace rocuda::api {

Result<core::Graph*> lookupGraph(cuda::CUgraph handle);         // InvalidValue
Result<core::GraphExec*> lookupExec(cuda::CUgraphExec handle);  // InvalidValue
Result<core::GraphNode*> lookupNode(cuda::CUgraphNode handle);  // InvalidValue

inline cuda::CUgraphNode nodeHandle(const core::GraphNode* node) {
  return reinterpret_cast<cuda::CUgraphNode>(const_cast<core::GraphNode*>(node));
}

// The dependency list of an add call: every entry a node of `graph`.
// The data of one edge (NULL: a default edge). INVALID_VALUE for malformed data: a to_port, which
// no node type defines, unknown ports, types or reserved bytes, the programmatic port without
// the programmatic type.
Result<core::EdgeData> edgeDataOf(const cuda::CUgraphEdgeData* edge);
// INVALID_VALUE unless an edge with `edge` may join a node of type `from` to one of type `to`:
// only kernel nodes have non-zero ports, and programmatic edges join kernel nodes.
Outcome checkEdgeEnds(const core::EdgeData& edge, core::GraphNodeType from, core::GraphNodeType to);
// Stream capture dependencies carry default edges only: programmatic ones there are
// NOT_SUPPORTED (malformed data INVALID_VALUE).
Outcome requireDefaultEdges(const cuda::CUgraphEdgeData* edges, size_t count);

Outcome collectDependencies(core::Graph& graph, const cuda::CUgraphNode* dependencies, size_t count,
                            std::vector<core::GraphNode*>* out);

// The content of a node of `params.type` (work, parameter copy, context...). `graph` is the graph
// the node goes into (mem alloc/free nodes check it). Fills params.alloc.dptr for alloc nodes.
Outcome buildNodeContent(cuda::CUgraphNodeParams& params, core::GraphNodeContent* content);
// The parameters of `node` in CUgraphNodeParams form.
Outcome readNodeParams(const core::GraphNode& node, cuda::CUgraphNodeParams* params);

// A kernel launched into a capturing stream became `node`, whose work is already recorded: keep
// its parameters (a copy of the arguments) and launch attributes, so that cuGraphKernelNodeGet/
// SetParams, the attribute calls and executable-graph updates work on it as on an added node.
Outcome keepCapturedKernelParams(core::GraphNode& node, const cuda::CUDA_KERNEL_NODE_PARAMS_v2& in,
                                 const std::map<int, cuda::CUlaunchAttributeValue>& attributes);

// A kernel node's launch into `stream` (a capturing one) as cuLaunchKernelEx makes it with
// CU_LAUNCH_ATTRIBUTE_COOPERATIVE, a cluster of one block, and, when `deviceUpdatable` is given,
// as the launch of that device-updatable node (launch.cpp).
Outcome launchKernelNode(const void* f, const cuda::CUDA_KERNEL_NODE_PARAMS_v2& p,
                         cuda::CUstream stream, bool cooperative, bool explicitCluster,
                         std::shared_ptr<core::DeviceUpdatableKernel> deviceUpdatable);

// A memset, a copy or a host function queued on `stream` while it captures became the
// capture's last node, whose work is already recorded: keep its parameters, so that the node's
// GetParams (and SetParams) calls work on it as on an added node. Nothing when not capturing.
void keepCapturedMemsetParams(core::Stream& stream, const cuda::CUDA_MEMSET_NODE_PARAMS_v2& in);
void keepCapturedCopyParams(core::Stream& stream, void* dst, const void* src, size_t bytes);
void keepCapturedCopyParams(core::Stream& stream, const cuda::CUDA_MEMCPY3D& copy);  // 2D, 3D
void keepCapturedHostParams(core::Stream& stream, const cuda::CUDA_HOST_NODE_PARAMS& in);
// The same for stream memory operations (a batch of `count`; a single write or wait is one).
void keepCapturedBatchMemOpParams(core::Stream& stream, const cuda::CUstreamBatchMemOpParams* ops,
                                  unsigned count);

// cuGraphExecUpdate's rules for the launch attributes of a kernel node: cooperative cannot
// change, nor the requested priority when the exec was instantiated with USE_NODE_PRIORITY
// (AttributesChanged). Success for other nodes.
core::GraphUpdateResult checkKernelAttributeUpdate(const core::GraphNode& instantiated,
                                                   const core::GraphNode& now,
                                                   bool usesNodePriority);

// A node of `params.type` made from `params` and appended to the capture of `stream` (which is
// capturing) after its current capture dependencies: what CUDA records for operations that
// become nodes of their own in a capture (stream-ordered allocation, external event records).
Outcome appendNodeToCapture(core::Stream& stream, cuda::CUgraphNodeParams& params);

// Add a node of any kind to `hGraph` after the given dependencies, over edges with
// `dependencyData` (NULL: default edges).
Outcome addNode(cuda::CUgraphNode* phNode, cuda::CUgraph hGraph,
                const cuda::CUgraphNode* dependencies, size_t count,
                cuda::CUgraphNodeParams& params,
                const cuda::CUgraphEdgeData* dependencyData = nullptr);
// Replace the parameters of `node`: a graph's, or `exec`'s copy of one (null for a graph's), whose
// rules for executable nodes it then checks.
Outcome setNodeParams(core::GraphNode& node, cuda::CUgraphNodeParams& params,
                      const core::GraphExec* exec);

// CUDA's capture failures as results.
Outcome captureOutcome(core::CaptureFailure failure);

}  // namespace rocuda::api
