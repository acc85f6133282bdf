// CUDA graphs: stream capture (cuStreamBeginCapture[ToGraph], cuStreamEndCapture,
// cuStreamUpdateCaptureDependencies), graph creation and structure (nodes, edges, clone,
// destroy, DOT output), instantiation and launch. Node construction is in graph_nodes.cpp,
// executable-graph updates, user objects and graph memory in graph_exec.cpp.
#include "core/graph.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/stream.h"

namespace rocuda::api {

using namespace cuda;

Result<core::Graph*> lookupGraph(CUgraph handle) {
  if (auto* graph = core::lookupHandle<core::Graph>(handle)) return graph;
  return makeError(ErrorCode::InvalidValue, "not a graph");
}

Result<core::GraphExec*> lookupExec(CUgraphExec handle) {
  if (auto* exec = core::lookupHandle<core::GraphExec>(handle)) return exec;
  return makeError(ErrorCode::InvalidValue, "not an executable graph");
}

Outcome captureOutcome(core::CaptureFailure failure) {
  using F = core::CaptureFailure;
  switch (failure) {
    case F::None:
      return {};
    case F::NotCapturing:
      return {CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"};
    case F::AlreadyCapturing:
      return {CUDA_ERROR_ILLEGAL_STATE, "the stream is already capturing"};
    case F::Unmatched:
      return {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "the capture began on another stream"};
    case F::Unjoined:
      return {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "a forked stream did not join the origin"};
    case F::Invalidated:
      return {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the capture was invalidated"};
    case F::Isolation:
      return {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency across capture boundaries"};
    case F::Implicit:
      return {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the legacy stream cannot join a capture"};
    case F::WrongThread:
      return {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "the capture began in another thread"};
    case F::Unsupported:
      return {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the legacy stream cannot be captured"};
  }
  return {CUDA_ERROR_UNKNOWN, "unknown capture failure"};
}

namespace {

Outcome beginCaptureToGraph(CUstream h, CUgraph hGraph, const CUgraphNode* dependencies,
                            const CUgraphEdgeData* edgeData, size_t count, CUstreamCaptureMode mode,
                            StreamVariant v) {
  if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return invalidValue("unknown capture mode");
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  std::lock_guard lock(core::graphMutex());
  core::Graph* graph = nullptr;
  std::vector<core::GraphNode*> nodes;
  if (hGraph != nullptr) {
    Result<core::Graph*> target = lookupGraph(hGraph);
    if (!target) return target.error();
    graph = *target;
    Outcome collected = collectDependencies(*graph, dependencies, count, &nodes);
    if (!collected.ok()) return collected;
    if (Outcome edges = requireDefaultEdges(edgeData, count); !edges.ok()) return edges;
  }
  return captureOutcome(core::beginCapture(**stream, static_cast<unsigned>(mode), graph, nodes));
}

Outcome beginCapture(CUstream h, CUstreamCaptureMode mode, StreamVariant v) {
  return beginCaptureToGraph(h, nullptr, nullptr, nullptr, 0, mode, v);
}

Outcome beginCaptureV1(CUstream h, StreamVariant v) {
  return beginCapture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, v);
}

Outcome endCapture(CUstream h, CUgraph* phGraph, StreamVariant v) {
  if (phGraph == nullptr) return invalidValue("phGraph is NULL");
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  core::Graph* graph = nullptr;
  Outcome outcome = captureOutcome(core::endCapture(**stream, &graph));
  *phGraph = reinterpret_cast<CUgraph>(graph);
  return outcome;
}

Outcome updateCaptureDependencies(CUstream h, CUgraphNode* dependencies,
                                  const CUgraphEdgeData* edgeData, size_t count, unsigned flags,
                                  StreamVariant v) {
  if (flags > 1) return invalidValue("unknown flags");  // 0 add, 1 set
  if (count > 0 && dependencies == nullptr) return invalidValue("dependencies is NULL");
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  core::CaptureStatePtr capture = (*stream)->capture();
  if (!capture) return {CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"};
  std::lock_guard lock(core::graphMutex());
  std::vector<core::GraphNode*> nodes;
  Outcome collected = collectDependencies(*capture->graph, dependencies, count, &nodes);
  if (!collected.ok()) return collected;
  if (Outcome edges = requireDefaultEdges(edgeData, count); !edges.ok()) return edges;
  return captureOutcome(core::updateCaptureDependencies(**stream, nodes, flags == 1));
}

Outcome updateCaptureDependenciesV1(CUstream h, CUgraphNode* dependencies, size_t count,
                                    unsigned flags, StreamVariant v) {
  return updateCaptureDependencies(h, dependencies, nullptr, count, flags, v);
}

Outcome instantiate(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags,
                    CUgraphNode* errorNode = nullptr, core::InstantiateFailure* failure = nullptr) {
  if (phGraphExec == nullptr) return invalidValue("phGraphExec is NULL");
  constexpr unsigned long long kKnown =
      CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
      CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if ((flags & ~kKnown) != 0) return invalidValue("unknown instantiate flags");
  // DEVICE_LAUNCH "cannot be used in conjunction with AUTO_FREE_ON_LAUNCH".
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0 &&
      (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0)
    return invalidValue("DEVICE_LAUNCH cannot be combined with AUTO_FREE_ON_LAUNCH");
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  if ((*graph)->moved())
    return invalidValue("a graph moved into a child graph node cannot be instantiated on its own");
  // A capture's graph "is not instantiable until the capture sequence is complete".
  if (core::graphBeingCaptured(*graph))
    return {CUDA_ERROR_NOT_PERMITTED, "the graph is being captured into"};
  const core::GraphNode* failed = nullptr;
  Result<core::GraphExec*> exec = core::instantiateGraph(**graph, flags, &failed, failure);
  if (errorNode != nullptr) *errorNode = nodeHandle(failed);
  if (!exec) return exec.error();
  *phGraphExec = reinterpret_cast<CUgraphExec>(*exec);
  return {};
}

// cuGraphInstantiate (10.0) and cuGraphInstantiate_v2 (11.0): the error node and log forms.
Outcome instantiateWithLog(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                           char* logBuffer, size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  Outcome outcome = instantiate(phGraphExec, hGraph, 0, phErrorNode);
  if (!outcome.ok() && logBuffer != nullptr && bufferSize > 0)
    std::snprintf(logBuffer, bufferSize, "%s", outcome.message().c_str());
  return outcome;
}

Outcome instantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                              CUDA_GRAPH_INSTANTIATE_PARAMS* params, StreamVariant v) {
  if (params == nullptr) return invalidValue("instantiateParams is NULL");
  params->hErrNode_out = nullptr;
  if ((params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {  // needs a valid stream
    Result<core::Stream*> stream = resolveStream(params->hUploadStream, v);
    if (!stream) return stream.error();
  }
  core::InstantiateFailure failure = core::InstantiateFailure::Error;
  Outcome outcome =
      instantiate(phGraphExec, hGraph, params->flags, &params->hErrNode_out, &failure);
  params->result_out = outcome.ok() ? 0 : static_cast<int>(failure);  // CUgraphInstantiateResult
  if (outcome.ok() && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0)
    reinterpret_cast<core::GraphExec*>(*phGraphExec)->upload();
  return outcome;
}

Outcome graphLaunch(CUgraphExec hGraphExec, CUstream h, StreamVariant v) {
  Result<core::GraphExec*> exec = lookupExec(hGraphExec);
  if (!exec) return exec.error();
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  if (Status sticky = (*stream)->context().stickyError(); !sticky.ok()) return sticky;
  return (*exec)->launch(**stream);
}

Outcome graphUpload(CUgraphExec hGraphExec, CUstream h, StreamVariant v) {
  Result<core::GraphExec*> exec = lookupExec(hGraphExec);
  if (!exec) return exec.error();
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  // Operations run from host memory: what an upload fixes is what a launch from the device runs.
  (*exec)->upload();
  return {};
}

// The CUDA convention for list queries: with a NULL array only the count; otherwise up to
// *count entries (the rest NULL) and the number filled in ("if numNodes is higher than the
// actual number of nodes, the remaining entries will be set to NULL, and the number of nodes
// actually obtained will be returned"; a smaller *count stays).
template <class T, class Source>
Outcome fillList(T* out, size_t* count, const std::vector<Source>& items, auto convert) {
  if (out == nullptr) {
    *count = items.size();
    return {};
  }
  for (size_t i = 0; i < *count; ++i) out[i] = i < items.size() ? convert(items[i]) : T{};
  *count = std::min(*count, items.size());  // the entries filled in
  return {};
}

Outcome listNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes, bool rootsOnly) {
  if (numNodes == nullptr) return invalidValue("numNodes is NULL");
  std::lock_guard lock(core::graphMutex());
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  auto list = rootsOnly ? (*graph)->rootNodes() : (*graph)->nodes();
  return fillList(nodes, numNodes, list, [](core::GraphNode* n) { return nodeHandle(n); });
}

CUgraphEdgeData edgeDataFor(const core::EdgeData& edge) {
  CUgraphEdgeData data{};
  data.from_port = edge.fromPort;
  data.to_port = edge.toPort;
  data.type = edge.type;
  return data;
}

Outcome getEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                 size_t* numEdges) {
  if (numEdges == nullptr) return invalidValue("numEdges is NULL");
  if ((from == nullptr) != (to == nullptr)) return invalidValue("from and to must both be given");
  if (edgeData != nullptr && from == nullptr) return invalidValue("edgeData without from/to");
  std::lock_guard lock(core::graphMutex());
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  auto edges = (*graph)->edges();
  std::vector<core::EdgeData> data = (*graph)->edgeData();
  if (from != nullptr) {
    size_t filled = std::min(*numEdges, edges.size());
    // "edgeData may alone be NULL, in which case the edges must all have default (zeroed) edge
    // data. Attempting a lossy query via NULL edgeData will result in CUDA_ERROR_LOSSY_QUERY."
    if (edgeData == nullptr && std::any_of(data.begin(), data.begin() + filled,
                                           [](const core::EdgeData& e) { return !e.isDefault(); }))
      return {CUDA_ERROR_LOSSY_QUERY, "an edge has data and edgeData is NULL"};
    for (size_t i = 0; i < *numEdges; ++i) {
      bool present = i < edges.size();
      from[i] = present ? nodeHandle(edges[i].first) : nullptr;
      to[i] = present ? nodeHandle(edges[i].second) : nullptr;
      if (edgeData != nullptr) edgeData[i] = present ? edgeDataFor(data[i]) : CUgraphEdgeData{};
    }
    *numEdges = filled;  // the entries filled in
    return {};
  }
  *numEdges = edges.size();
  return {};
}

Outcome nodeNeighbours(CUgraphNode hNode, CUgraphNode* nodes, CUgraphEdgeData* edgeData,
                       size_t* count, bool dependencies) {
  if (count == nullptr) return invalidValue("count is NULL");
  if (edgeData != nullptr && nodes == nullptr) return invalidValue("edgeData without nodes");
  std::lock_guard lock(core::graphMutex());
  Result<core::GraphNode*> node = lookupNode(hNode);
  if (!node) return node.error();
  const auto& list = dependencies ? (*node)->dependencies() : (*node)->dependents();
  // Each neighbour's edge: a dependency's is kept with this node, a dependent's with it.
  auto edgeWith = [&](size_t i) {
    return dependencies ? (*node)->dependencyEdges()[i] : list[i]->edgeFrom(*node);
  };
  if (nodes != nullptr) {
    size_t filled = std::min(*count, list.size());
    for (size_t i = 0; i < filled; ++i) {
      if (edgeData != nullptr)
        edgeData[i] = edgeDataFor(edgeWith(i));
      else if (!edgeWith(i).isDefault())
        return {CUDA_ERROR_LOSSY_QUERY, "an edge has data and edgeData is NULL"};
    }
    for (size_t i = filled; edgeData != nullptr && i < *count; ++i) edgeData[i] = {};
  }
  return fillList(nodes, count, list, [](core::GraphNode* n) { return nodeHandle(n); });
}

Outcome changeEdges(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                    const CUgraphEdgeData* edgeData, size_t count, bool add) {
  if (count > 0 && (from == nullptr || to == nullptr)) return invalidValue("from/to is NULL");
  std::lock_guard lock(core::graphMutex());
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  if (!add && (*graph)->hasMemoryNodes())
    return invalidValue("edges of a graph with memory nodes cannot be deleted");
  struct Edge {
    core::GraphNode *from, *to;
    core::EdgeData data;
  };
  std::vector<Edge> list;
  for (size_t i = 0; i < count; ++i) {
    Result<core::EdgeData> data = edgeDataOf(edgeData == nullptr ? nullptr : edgeData + i);
    if (!data) return data.error();
    Result<core::GraphNode*> a = lookupNode(from[i]);
    if (!a) return a.error();
    Result<core::GraphNode*> b = lookupNode(to[i]);
    if (!b) return b.error();
    if (Outcome ends = checkEdgeEnds(*data, (*a)->type(), (*b)->type()); add && !ends.ok())
      return ends;
    list.push_back({*a, *b, *data});
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const Edge& e = list[i];
    Status status =
        add ? (*graph)->addEdge(e.from, e.to, e.data) : (*graph)->removeEdge(e.from, e.to, e.data);
    if (!status.ok()) {
      for (size_t j = 0; j < i; ++j)  // all or nothing
        (void)(add ? (*graph)->removeEdge(list[j].from, list[j].to, list[j].data)
                   : (*graph)->addEdge(list[j].from, list[j].to, list[j].data));
      return status;
    }
  }
  return {};
}

// cuGraphDebugDotPrint's flags (cuda.h's CUgraphDebugDot_flags) that add to a node's label.
constexpr unsigned kDotVerbose = 1u << 0, kDotKernelParams = 1u << 2, kDotMemcpyParams = 1u << 3,
                   kDotMemsetParams = 1u << 4, kDotEventParams = 1u << 6, kDotHandles = 1u << 10,
                   kDotMemAllocParams = 1u << 11, kDotMemFreeParams = 1u << 12;

// The copy direction from its operands' memory types (CUmemorytype), "HtoD" and the like.
std::string copyDirection(const core::GraphNodeContent::TransferShape& shape) {
  auto side = [](uint8_t type) {
    return type == CU_MEMORYTYPE_HOST ? "H" : type == CU_MEMORYTYPE_ARRAY ? "A" : "D";
  };
  return std::string(side(shape.sourceType)) + "to" + side(shape.destinationType);
}

std::string pointerText(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

// A node's label: its type and name, a copy's direction, and what `flags` ask for.
std::string dotLabel(const core::GraphNode& node, unsigned flags) {
  const core::GraphNodeContent& c = node.content();
  auto wants = [&](unsigned flag) { return (flags & (flag | kDotVerbose)) != 0; };
  std::string label = std::string(core::graphNodeTypeName(node.type())) + "\\n" + c.name;
  if (node.type() == core::GraphNodeType::Memcpy && c.transfer)
    label += "\\n" + copyDirection(*c.transfer);
  if (c.transfer && ((node.type() == core::GraphNodeType::Memcpy && wants(kDotMemcpyParams)) ||
                     (node.type() == core::GraphNodeType::Memset && wants(kDotMemsetParams)))) {
    label += "\\nwidth " + std::to_string(c.transfer->width) + " height " +
             std::to_string(c.transfer->height);
    if (node.type() == core::GraphNodeType::Memset)
      label += " element " + std::to_string(c.transfer->elementSize);
  }
  // A kernel's launch (and with the handles its function); a memset's destination and value.
  cuda::CUgraphNodeParams params{};
  bool kernel = node.type() == core::GraphNodeType::Kernel;
  bool memset = node.type() == core::GraphNodeType::Memset;
  if (((kernel && (wants(kDotKernelParams) || wants(kDotHandles))) ||
       (memset && wants(kDotMemsetParams))) &&
      readNodeParams(node, &params).ok()) {
    if (kernel && wants(kDotKernelParams)) {
      const CUDA_KERNEL_NODE_PARAMS_v2& k = params.kernel;
      label += "\\ngrid (" + std::to_string(k.gridDimX) + "," + std::to_string(k.gridDimY) + "," +
               std::to_string(k.gridDimZ) + ") block (" + std::to_string(k.blockDimX) + "," +
               std::to_string(k.blockDimY) + "," + std::to_string(k.blockDimZ) + ") shared " +
               std::to_string(k.sharedMemBytes);
    }
    if (kernel && wants(kDotHandles)) label += "\\nfunction " + pointerText(params.kernel.func);
    if (memset && wants(kDotMemsetParams))
      label += "\\ndst " + pointerText(reinterpret_cast<const void*>(params.memset.dst)) +
               " value " + std::to_string(params.memset.value) + " pitch " +
               std::to_string(params.memset.pitch);
  }
  if (c.event != nullptr && wants(kDotEventParams)) label += "\\nevent " + pointerText(c.event);
  if (c.allocation && wants(kDotMemAllocParams))
    label += "\\n" + std::to_string(c.allocation->bytes) + " bytes at " +
             pointerText(c.allocation->address);
  if (node.type() == core::GraphNodeType::MemFree && wants(kDotMemFreeParams))
    label += "\\nfrees " + pointerText(c.freeAddress);
  if (wants(kDotHandles)) label += "\\nnode " + pointerText(nodeHandle(&node));
  return label;
}

// A DOT description of the graph, children as clusters.
void writeDot(std::ostream& out, const core::Graph& graph, const std::string& prefix,
              unsigned flags) {
  for (const core::GraphNode* node : graph.nodes()) {
    std::string id = prefix + "n" + std::to_string(graph.indexOf(node));
    if (node->type() == core::GraphNodeType::Graph && node->content().child) {
      out << "subgraph cluster_" << id << " {\nlabel=\"child graph " << id << "\";\n";
      writeDot(out, *node->content().child, id + "_", flags);
      out << "}\n";
    }
    const auto& bodies = node->content().bodies;
    for (size_t k = 0; k < bodies.size(); ++k) {
      std::string body = id + "_b" + std::to_string(k);
      out << "subgraph cluster_" << body << " {\nlabel=\"" << node->content().name << " body " << k
          << " (handle " << node->content().conditionHandle << ")\";\n";
      writeDot(out, *bodies[k], body + "_", flags);
      out << "}\n";
    }
    out << "\"" << id << "\" [label=\"" << dotLabel(*node, flags) << "\""
        << (node->content().enabled ? "" : " style=dashed") << "];\n";
    for (const core::GraphNode* dependency : node->dependencies())
      out << "\"" << prefix << "n" << graph.indexOf(dependency) << "\" -> \"" << id << "\";\n";
  }
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

namespace core = rocuda::core;

ROCUDA_STREAM_PAIR(cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream),
                   api::beginCaptureV1)
ROCUDA_STREAM_PAIR(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
                   (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), api::beginCapture)
ROCUDA_STREAM_PAIR(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
                   (CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                    const CUgraphEdgeData* dependencyData, size_t numDependencies,
                    CUstreamCaptureMode mode),
                   (hStream, hGraph, dependencies, dependencyData, numDependencies, mode),
                   api::beginCaptureToGraph)
ROCUDA_STREAM_PAIR(cuStreamEndCapture, cuStreamEndCapture_ptsz,
                   (CUstream hStream, CUgraph* phGraph), (hStream, phGraph), api::endCapture)
ROCUDA_STREAM_PAIR(cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz,
                   (CUstream hStream, CUgraphNode* dependencies, size_t numDependencies,
                    unsigned int flags),
                   (hStream, dependencies, numDependencies, flags),
                   api::updateCaptureDependenciesV1)
ROCUDA_STREAM_PAIR(cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz,
                   (CUstream hStream, CUgraphNode* dependencies,
                    const CUgraphEdgeData* dependencyData, size_t numDependencies,
                    unsigned int flags),
                   (hStream, dependencies, dependencyData, numDependencies, flags),
                   api::updateCaptureDependencies)
ROCUDA_STREAM_PAIR(cuGraphLaunch, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   (hGraphExec, hStream), api::graphLaunch)
ROCUDA_STREAM_PAIR(cuGraphUpload, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   (hGraphExec, hStream), api::graphUpload)
ROCUDA_STREAM_PAIR(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
                   (CUgraphExec * phGraphExec, CUgraph hGraph,
                    CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams),
                   (phGraphExec, hGraph, instantiateParams), api::instantiateWithParams)

ROCUDA_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  return ROCUDA_API((phGraph, flags), [&]() -> api::Outcome {
    if (phGraph == nullptr || flags != 0) return api::invalidValue("phGraph is NULL or flags != 0");
    *phGraph = reinterpret_cast<CUgraph>(core::createGraph());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out,
                                                      CUgraph hGraph, CUcontext ctx,
                                                      unsigned int defaultLaunchValue,
                                                      unsigned int flags) {
  return ROCUDA_API((pHandle_out, hGraph, ctx, defaultLaunchValue, flags), [&]() -> api::Outcome {
    if (pHandle_out == nullptr) return api::invalidValue("pHandle_out is NULL");
    if ((flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT) != 0)
      return api::invalidValue("flags must be 0 or CU_GRAPH_COND_ASSIGN_DEFAULT");
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> graph = api::lookupGraph(hGraph);
    if (!graph) return graph.error();
    Result<core::Context*> context =
        ctx != nullptr ? api::lookupContext(ctx) : api::currentContext();
    if (!context) return context.error();
    *pHandle_out = (*graph)->createConditionalHandle(**context, defaultLaunchValue,
                                                     (flags & CU_GRAPH_COND_ASSIGN_DEFAULT) != 0);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  return ROCUDA_API((hGraph), [&]() -> api::Outcome {
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> graph = api::lookupGraph(hGraph);
    if (!graph) return graph.error();
    if ((*graph)->embedded()) return api::invalidValue("the graph belongs to a child graph node");
    // "All operations other than destroy and node removal are permitted on the graph while the
    // capture sequence is in progress."
    if (core::graphBeingCaptured(*graph))
      return {CUDA_ERROR_NOT_PERMITTED, "the graph is being captured into"};
    return core::destroyGraph(*graph);
  });
}

ROCUDA_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return ROCUDA_API((hGraph, nodes, numNodes),
                    [&] { return api::listNodes(hGraph, nodes, numNodes, false); });
}

ROCUDA_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes,
                                           size_t* numRootNodes) {
  return ROCUDA_API((hGraph, rootNodes, numRootNodes),
                    [&] { return api::listNodes(hGraph, rootNodes, numRootNodes, true); });
}

ROCUDA_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to,
                                       size_t* numEdges) {
  return ROCUDA_API((hGraph, from, to, numEdges),
                    [&] { return api::getEdges(hGraph, from, to, nullptr, numEdges); });
}

ROCUDA_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to,
                                          CUgraphEdgeData* edgeData, size_t* numEdges) {
  return ROCUDA_API((hGraph, from, to, edgeData, numEdges),
                    [&] { return api::getEdges(hGraph, from, to, edgeData, numEdges); });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies,
                                                  size_t* numDependencies) {
  return ROCUDA_API((hNode, dependencies, numDependencies), [&] {
    return api::nodeNeighbours(hNode, dependencies, nullptr, numDependencies, true);
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                                     CUgraphEdgeData* edgeData,
                                                     size_t* numDependencies) {
  return ROCUDA_API((hNode, dependencies, edgeData, numDependencies), [&] {
    return api::nodeNeighbours(hNode, dependencies, edgeData, numDependencies, true);
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                    size_t* numDependentNodes) {
  return ROCUDA_API((hNode, dependentNodes, numDependentNodes), [&] {
    return api::nodeNeighbours(hNode, dependentNodes, nullptr, numDependentNodes, false);
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode,
                                                       CUgraphNode* dependentNodes,
                                                       CUgraphEdgeData* edgeData,
                                                       size_t* numDependentNodes) {
  return ROCUDA_API((hNode, dependentNodes, edgeData, numDependentNodes), [&] {
    return api::nodeNeighbours(hNode, dependentNodes, edgeData, numDependentNodes, false);
  });
}

ROCUDA_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from,
                                              const CUgraphNode* to, size_t numDependencies) {
  return ROCUDA_API((hGraph, from, to, numDependencies), [&] {
    return api::changeEdges(hGraph, from, to, nullptr, numDependencies, true);
  });
}

ROCUDA_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from,
                                                 const CUgraphNode* to,
                                                 const CUgraphEdgeData* edgeData,
                                                 size_t numDependencies) {
  return ROCUDA_API((hGraph, from, to, edgeData, numDependencies), [&] {
    return api::changeEdges(hGraph, from, to, edgeData, numDependencies, true);
  });
}

ROCUDA_EXPORT CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from,
                                                 const CUgraphNode* to, size_t numDependencies) {
  return ROCUDA_API((hGraph, from, to, numDependencies), [&] {
    return api::changeEdges(hGraph, from, to, nullptr, numDependencies, false);
  });
}

ROCUDA_EXPORT CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from,
                                                    const CUgraphNode* to,
                                                    const CUgraphEdgeData* edgeData,
                                                    size_t numDependencies) {
  return ROCUDA_API((hGraph, from, to, edgeData, numDependencies), [&] {
    return api::changeEdges(hGraph, from, to, edgeData, numDependencies, false);
  });
}

ROCUDA_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  return ROCUDA_API((hNode), [&]() -> api::Outcome {
    std::lock_guard lock(core::graphMutex());
    Result<core::GraphNode*> node = api::lookupNode(hNode);
    if (!node) return node.error();
    if ((*node)->graph().hasMemoryNodes())
      return api::invalidValue("nodes of a graph with memory nodes cannot be deleted");
    if (core::graphBeingCaptured(&(*node)->graph()))
      return {CUDA_ERROR_NOT_PERMITTED, "the node's graph is being captured into"};
    return (*node)->graph().destroyNode(*node);
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  return ROCUDA_API((hNode, type), [&]() -> api::Outcome {
    if (type == nullptr) return api::invalidValue("type is NULL");
    std::lock_guard lock(core::graphMutex());
    Result<core::GraphNode*> node = api::lookupNode(hNode);
    if (!node) return node.error();
    *type = static_cast<CUgraphNodeType>((*node)->type());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  return ROCUDA_API((phGraphClone, originalGraph), [&]() -> api::Outcome {
    if (phGraphClone == nullptr) return api::invalidValue("phGraphClone is NULL");
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> graph = api::lookupGraph(originalGraph);
    if (!graph) return graph.error();
    // "Cloning is not supported for graphs which contain memory allocation nodes, memory free
    // nodes, or conditional nodes."
    if ((*graph)->hasMemoryNodes())
      return {CUDA_ERROR_NOT_SUPPORTED, "a graph with memory nodes cannot be cloned"};
    if ((*graph)->hasConditionalNodes())
      return {CUDA_ERROR_NOT_SUPPORTED, "a graph with conditional nodes cannot be cloned"};
    *phGraphClone = reinterpret_cast<CUgraph>(core::adoptGraph((*graph)->clone(nullptr)));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode,
                                              CUgraph hClonedGraph) {
  return ROCUDA_API((phNode, hOriginalNode, hClonedGraph), [&]() -> api::Outcome {
    if (phNode == nullptr) return api::invalidValue("phNode is NULL");
    std::lock_guard lock(core::graphMutex());
    Result<core::GraphNode*> original = api::lookupNode(hOriginalNode);
    if (!original) return original.error();
    Result<core::Graph*> clone = api::lookupGraph(hClonedGraph);
    if (!clone) return clone.error();
    core::GraphNode* found = (*clone)->findInClone(*original);
    if (found == nullptr) return api::invalidValue("the graph is not a clone of the node's graph");
    *phNode = api::nodeHandle(found);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  return ROCUDA_API((hGraph, path, flags), [&]() -> api::Outcome {
    if (path == nullptr) return api::invalidValue("path is NULL");
    std::lock_guard lock(core::graphMutex());
    Result<core::Graph*> graph = api::lookupGraph(hGraph);
    if (!graph) return graph.error();
    std::ofstream out(path);
    if (!out) return {CUDA_ERROR_OPERATING_SYSTEM, "cannot open the DOT file"};
    out << "digraph cuda_graph {\n";
    api::writeDot(out, **graph, "", flags);
    out << "}\n";
    if (!out) return {CUDA_ERROR_OPERATING_SYSTEM, "cannot write the DOT file"};
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                          CUgraphNode* phErrorNode, char* logBuffer,
                                          size_t bufferSize) {
  return ROCUDA_API((phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), [&] {
    return api::instantiateWithLog(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}

ROCUDA_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                             CUgraphNode* phErrorNode, char* logBuffer,
                                             size_t bufferSize) {
  return ROCUDA_API((phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), [&] {
    return api::instantiateWithLog(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}

ROCUDA_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                   unsigned long long flags) {
  return ROCUDA_API((phGraphExec, hGraph, flags),
                    [&] { return api::instantiate(phGraphExec, hGraph, flags); });
}

ROCUDA_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return ROCUDA_API((hGraphExec), [&]() -> api::Outcome {
    Result<core::GraphExec*> exec = api::lookupExec(hGraphExec);
    if (!exec) return exec.error();
    return core::destroyGraphExec(*exec);
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
