// CUDA graphs, first slice: stream capture of one stream (cuStreamBeginCapture /
// cuStreamEndCapture), instantiation and launch. Captured operations are recorded by
// Context::enqueue; synchronous calls during a capture fail and invalidate it. Explicit node
// construction (cuGraphCreate, cuGraphAdd*Node), cross-stream capture through events, and graph
// update are not implemented (their entry points answer CUDA_ERROR_NOT_FOUND).
#include "core/graph.h"

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/stream.h"

namespace rocuda::api {
namespace {

using namespace cuda;

struct GraphInstantiateParams {  // CUDA_GRAPH_INSTANTIATE_PARAMS
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out;  // CUgraphInstantiateResult
};

Result<core::Graph*> lookupGraph(CUgraph handle) {
  if (auto* graph = core::lookupHandle<core::Graph>(handle)) return graph;
  return makeError(ErrorCode::InvalidValue, "not a graph");
}

Result<core::GraphExec*> lookupExec(CUgraphExec handle) {
  if (auto* exec = core::lookupHandle<core::GraphExec>(handle)) return exec;
  return makeError(ErrorCode::InvalidValue, "not an executable graph");
}

Outcome beginCapture(CUstream h, CUstreamCaptureMode mode, StreamVariant v) {
  if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return invalidValue("unknown capture mode");
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  if ((*stream)->streamKind() == core::StreamKind::Legacy)
    return {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the legacy stream cannot be captured"};
  if ((*stream)->capture()) return {CUDA_ERROR_ILLEGAL_STATE, "the stream is already capturing"};
  auto capture = std::make_shared<core::CaptureState>();
  capture->graph = core::createGraph();
  capture->mode = static_cast<unsigned>(mode);
  capture->id = core::nextCaptureId();
  (*stream)->setCapture(std::move(capture));
  return {};
}

Outcome beginCaptureV1(CUstream h, StreamVariant v) {
  return beginCapture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, v);
}

Outcome endCapture(CUstream h, CUgraph* phGraph, StreamVariant v) {
  if (phGraph == nullptr) return invalidValue("phGraph is NULL");
  Result<core::Stream*> stream = resolveStream(h, v);
  if (!stream) return stream.error();
  core::CaptureStatePtr capture = (*stream)->setCapture(nullptr);
  if (!capture) return {CUDA_ERROR_ILLEGAL_STATE, "the stream is not capturing"};
  if (capture->invalidated) {
    (void)core::destroyGraph(capture->graph);
    *phGraph = nullptr;
    return {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the capture was invalidated"};
  }
  *phGraph = reinterpret_cast<CUgraph>(capture->graph);
  return {};
}

Outcome instantiate(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  if (phGraphExec == nullptr) return invalidValue("phGraphExec is NULL");
  constexpr unsigned long long kAutoFree = 1, kUpload = 2, kDeviceLaunch = 4, kPriority = 8;
  if ((flags & ~(kAutoFree | kUpload | kDeviceLaunch | kPriority)) != 0)
    return invalidValue("unknown instantiate flags");
  if ((flags & kDeviceLaunch) != 0)
    return {CUDA_ERROR_NOT_SUPPORTED, "device-launchable graphs are not supported"};
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  // Nothing to upload or free ahead of time: operations run from host memory as recorded.
  *phGraphExec = reinterpret_cast<CUgraphExec>(core::instantiateGraph(**graph));
  return {};
}

// cuGraphInstantiate (10.0) and cuGraphInstantiate_v2 (11.0): the error node and log forms.
Outcome instantiateWithLog(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                           char* logBuffer, size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph, 0);
}

Outcome instantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                              GraphInstantiateParams* params, StreamVariant v) {
  if (params == nullptr) return invalidValue("instantiateParams is NULL");
  params->hErrNode_out = nullptr;
  if ((params->flags & 2u) != 0) {  // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD needs a valid stream
    Result<core::Stream*> stream = resolveStream(params->hUploadStream, v);
    if (!stream) return stream.error();
  }
  Outcome outcome = instantiate(phGraphExec, hGraph, params->flags);
  params->result_out = outcome.ok() ? 0 : 1;  // CUDA_GRAPH_INSTANTIATE_SUCCESS / _ERROR
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
  return {};  // nothing to upload: operations run from host memory
}

Outcome getNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return invalidValue("numNodes is NULL");
  Result<core::Graph*> graph = lookupGraph(hGraph);
  if (!graph) return graph.error();
  size_t count = (*graph)->size();
  if (nodes != nullptr) {
    for (size_t i = 0; i < *numNodes; ++i)
      nodes[i] = i < count ? reinterpret_cast<CUgraphNode>((*graph)->nodeHandle(i)) : nullptr;
  }
  *numNodes = count;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_STREAM_PAIR(cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream),
                   api::beginCaptureV1)
ROCUDA_STREAM_PAIR(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
                   (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), api::beginCapture)
ROCUDA_STREAM_PAIR(cuStreamEndCapture, cuStreamEndCapture_ptsz,
                   (CUstream hStream, CUgraph* phGraph), (hStream, phGraph), api::endCapture)
ROCUDA_STREAM_PAIR(cuGraphLaunch, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   (hGraphExec, hStream), api::graphLaunch)
ROCUDA_STREAM_PAIR(cuGraphUpload, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   (hGraphExec, hStream), api::graphUpload)
ROCUDA_STREAM_PAIR(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
                   (CUgraphExec * phGraphExec, CUgraph hGraph,
                    api::GraphInstantiateParams* instantiateParams),
                   (phGraphExec, hGraph, instantiateParams), api::instantiateWithParams)

// An empty graph: nodes are added by stream capture (explicit node APIs come later); an empty
// graph instantiates and launches as a no-op, as in CUDA.
ROCUDA_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  return ROCUDA_API((phGraph, flags), [&]() -> api::Outcome {
    if (phGraph == nullptr || flags != 0) return api::invalidValue("phGraph is NULL or flags != 0");
    *phGraph = reinterpret_cast<CUgraph>(core::createGraph());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  return ROCUDA_API((hGraph), [&]() -> api::Outcome {
    Result<core::Graph*> graph = api::lookupGraph(hGraph);
    if (!graph) return graph.error();
    return core::destroyGraph(*graph);
  });
}

ROCUDA_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return ROCUDA_API((hGraph, nodes, numNodes),
                    [&] { return api::getNodes(hGraph, nodes, numNodes); });
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
