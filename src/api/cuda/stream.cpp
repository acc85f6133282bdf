// Streams and events.
#include "core/stream.h"

#include <utility>

#include "api/cuda/boundary.h"
#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/green_context.h"
#include "core/ipc.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

Outcome withStream(CUstream handle, StreamVariant variant, const auto& body) {
  Result<core::Stream*> stream = resolveStream(handle, variant);
  if (!stream) return stream.error();
  return body(**stream);
}

Outcome refuseDuringCapture(core::Stream& s);

Outcome createStream(CUstream* phStream, unsigned flags, int priority) {
  if (phStream == nullptr) return invalidValue("phStream is NULL");
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)
    return invalidValue("unknown stream flags");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  int clamped = core::clampStreamPriority(priority, (*context)->device().description());
  // With a green context current, the stream is the green context's.
  core::GreenContext* green = core::currentGreenContext();
  Result<core::Stream*> stream = green != nullptr ? green->createStream(flags, clamped)
                                                  : (*context)->createStream(flags, clamped);
  if (!stream) return stream.error();
  *phStream = reinterpret_cast<CUstream>(*stream);
  return {};
}

Outcome streamSynchronize(CUstream h, StreamVariant v) {
  return withStream(h, v, [](core::Stream& s) -> Outcome {
    if (Outcome refused = refuseDuringCapture(s); !refused.ok()) return refused;
    return s.synchronize();
  });
}

Outcome streamQuery(CUstream h, StreamVariant v) {
  return withStream(h, v, [](core::Stream& s) -> Outcome {
    if (Outcome refused = refuseDuringCapture(s); !refused.ok()) return refused;
    if (!s.idle()) return {CUDA_ERROR_NOT_READY, {}};
    return s.context().stickyError();
  });
}

// The EXTERNAL flags of cuEventRecordWithFlags and cuStreamWaitEvent: an event record or wait
// node of the capture `s` is in; the flags are "invalid when used outside of capture".
Outcome captureExternalEvent(core::Stream& s, CUgraphNodeType type, CUevent event) {
  if (!s.capture()) return invalidValue("an EXTERNAL event flag outside stream capture");
  CUgraphNodeParams params{};
  params.type = type;
  if (type == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
    params.eventRecord.event = event;
  else
    params.eventWait.event = event;
  return appendNodeToCapture(s, params);
}

Outcome streamWaitEvent(CUstream h, CUevent hEvent, unsigned flags, StreamVariant v) {
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
    return invalidValue("unknown flags");
  Result<core::Event*> event = lookupEvent(hEvent);
  if (!event) return event.error();
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    // CU_EVENT_WAIT_EXTERNAL: "when using stream capture, create an event wait node".
    if (flags == CU_EVENT_WAIT_EXTERNAL)
      return captureExternalEvent(s, CU_GRAPH_NODE_TYPE_WAIT_EVENT, hEvent);
    // An event recorded in a capture joins `s` to that capture (fork/join, as CUDA does).
    bool joined = false;
    Outcome captured = captureOutcome(core::joinCaptureThroughEvent(s, **event, &joined));
    if (!captured.ok() || joined) return captured;
    if (Outcome refused = refuseDuringCapture(s); !refused.ok()) return refused;
    // An interprocess event's latest record may be another process's.
    if (auto shared = (*event)->interprocess()) return core::waitInterprocessEvent(s, shared);
    if (Status sticky = s.context().stickyError(); !sticky) return sticky;  // as Context::enqueue
    // The wait is a command of the stream, as on NVIDIA's driver: later work runs after it, and
    // the stream is not idle (cuStreamQuery, cuStreamSynchronize) until the event completes.
    s.enqueueWait((*event)->completion());
    return {};
  });
}

Outcome streamGetFlags(CUstream h, unsigned* flags, StreamVariant v) {
  if (flags == nullptr) return invalidValue("flags is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *flags = s.flags();
    return {};
  });
}

Outcome streamGetPriority(CUstream h, int* priority, StreamVariant v) {
  if (priority == nullptr) return invalidValue("priority is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *priority = s.priority();
    return {};
  });
}

Outcome streamGetCtx(CUstream h, CUcontext* pctx, StreamVariant v) {
  if (pctx == nullptr) return invalidValue("pctx is NULL");
  // A green context's stream answers the green context's CUcontext (cuCtxFromGreenCtx's).
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *pctx = contextHandle({&s.context(), s.greenContext()});
    return {};
  });
}

// cuStreamGetCtx_v2: the regular context in pCtx (the primary one for a green context's stream)
// and the green context, or NULL, in pGreenCtx.
Outcome streamGetCtxV2(CUstream h, CUcontext* pCtx, CUgreenCtx* pGreenCtx, StreamVariant v) {
  if (pCtx == nullptr || pGreenCtx == nullptr) return invalidValue("pCtx or pGreenCtx is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *pCtx = reinterpret_cast<CUcontext>(&s.context());
    *pGreenCtx = reinterpret_cast<CUgreenCtx>(s.greenContext());
    return {};
  });
}

Outcome streamGetId(CUstream h, unsigned long long* id, StreamVariant v) {
  if (id == nullptr) return invalidValue("streamId is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *id = s.id();
    return {};
  });
}

Outcome streamGetDevice(CUstream h, CUdevice* device, StreamVariant v) {
  if (device == nullptr) return invalidValue("device is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *device = s.context().device().ordinal();
    return {};
  });
}

Outcome streamAddCallback(CUstream h, CUstreamCallback callback, void* userData, unsigned flags,
                          StreamVariant v) {
  if (callback == nullptr) return invalidValue("callback is NULL");
  if (flags != 0) return invalidValue("flags must be 0");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    // "This function is not supported with cuStreamBeginCapture and cuStreamEndCapture, unlike
    // cuLaunchHostFunc": refused, and the capture invalidated, as any unsupported operation.
    if (core::CaptureStatePtr capture = s.capture()) {
      capture->invalidated = true;
      return {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              "cuStreamAddCallback on a capturing stream (use cuLaunchHostFunc)"};
    }
    core::Context* context = &s.context();
    Result<core::CompletionPtr> queued = s.context().enqueue(
        s, "callback",
        [h, callback, userData, context] {
          // Called exactly once, even after a failure, which it learns of.
          Outcome sticky = context->stickyError();
          callback(h, sticky.code(), userData);
          return Status::success();
        },
        /*runsAfterFailure=*/true);
    if (!queued) return queued.error();
    return {};
  });
}

// The capture state of `s`. The legacy stream cannot capture, but while a blocking stream of its
// context is capturing, asking about it is an error (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
Outcome captureStatus(core::Stream& s, CUstreamCaptureStatus* status,
                      core::CaptureStatePtr* capture) {
  if (s.streamKind() == core::StreamKind::Legacy && !s.context().blockingCaptures().empty())
    return {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "a blocking stream is capturing"};
  *capture = s.capture();
  if (!*capture) *status = CU_STREAM_CAPTURE_STATUS_NONE;
  else if ((*capture)->invalidated) *status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  else *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return {};
}

// A prohibited call on a capturing stream: fails and invalidates the capture, as CUDA does.
// The legacy stream fails in the same way while a blocking stream of its context is capturing.
Outcome refuseDuringCapture(core::Stream& s) {
  if (core::CaptureStatePtr capture = s.capture()) {
    capture->invalidated = true;
    return {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when capturing"};
  }
  if (s.streamKind() == core::StreamKind::Legacy && s.context().invalidateBlockingCaptures())
    return {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the legacy stream depends on a capture"};
  return {};
}

Outcome streamIsCapturing(CUstream h, CUstreamCaptureStatus* status, StreamVariant v) {
  if (status == nullptr) return invalidValue("captureStatus is NULL");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    core::CaptureStatePtr capture;
    return captureStatus(s, status, &capture);
  });
}

// cuStreamGetCaptureInfo in its three forms. The dependency set of a single-stream capture is
// its last node (an opaque handle), kept in thread-local storage as CUDA keeps it valid until
// the next call on the stream.
Outcome captureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                    const CUgraphNode** dependencies, const void** edgeData, size_t* count,
                    StreamVariant v) {
  if (status == nullptr) return invalidValue("captureStatus_out is NULL");
  if (edgeData != nullptr && dependencies == nullptr)
    return invalidValue("edgeData_out without dependencies_out");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    core::CaptureStatePtr capture;
    Outcome outcome = captureStatus(s, status, &capture);
    if (!outcome.ok()) return outcome;
    // Valid until the thread's next query, which outlives "the next call on the stream".
    thread_local std::vector<CUgraphNode> nodes;
    thread_local std::vector<CUgraphEdgeData> edges;
    nodes.clear();
    if (capture)
      for (core::GraphNode* node : s.captureDependencies()) nodes.push_back(nodeHandle(node));
    edges.assign(nodes.size(), CUgraphEdgeData{});  // every captured edge is a default edge
    if (id != nullptr) *id = capture ? capture->id : 0;
    if (graph != nullptr) *graph = capture ? reinterpret_cast<CUgraph>(capture->graph) : nullptr;
    if (dependencies != nullptr) *dependencies = nodes.empty() ? nullptr : nodes.data();
    if (edgeData != nullptr) *edgeData = edges.empty() ? nullptr : edges.data();
    if (count != nullptr) *count = nodes.size();
    return {};
  });
}

Outcome captureInfoV1(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, StreamVariant v) {
  return captureInfo(h, status, id, nullptr, nullptr, nullptr, nullptr, v);
}

Outcome captureInfoV2(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** dependencies, size_t* count, StreamVariant v) {
  return captureInfo(h, status, id, graph, dependencies, nullptr, count, v);
}

Outcome captureInfoV3(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** dependencies, const void** edgeData, size_t* count,
                      StreamVariant v) {
  return captureInfo(h, status, id, graph, dependencies, edgeData, count, v);
}

Outcome eventRecord(CUevent hEvent, CUstream h, unsigned flags, StreamVariant v) {
  if (flags != CU_EVENT_RECORD_DEFAULT && flags != CU_EVENT_RECORD_EXTERNAL)
    return invalidValue("unknown flags");
  Result<core::Event*> event = lookupEvent(hEvent);
  if (!event) return event.error();
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    if (&s.context() != &(*event)->context())
      return {CUDA_ERROR_INVALID_HANDLE, "event and stream belong to different contexts"};
    // CU_EVENT_RECORD_EXTERNAL: "the event is captured in the graph as an external event node".
    if (flags == CU_EVENT_RECORD_EXTERNAL)
      return captureExternalEvent(s, CU_GRAPH_NODE_TYPE_EVENT_RECORD, hEvent);
    // On a capturing stream the record marks a fork/join point of the capture (core::Event).
    if (!s.capture())
      if (Outcome refused = refuseDuringCapture(s); !refused.ok()) return refused;
    return (*event)->record(s);
  });
}

Outcome eventRecordDefault(CUevent hEvent, CUstream h, StreamVariant v) {
  return eventRecord(hEvent, h, CU_EVENT_RECORD_DEFAULT, v);
}

Outcome elapsedTime(float* milliseconds, CUevent start, CUevent end) {
  if (milliseconds == nullptr) return invalidValue("pMilliseconds is NULL");
  Result<core::Event*> first = lookupEvent(start);
  if (!first) return first.error();
  Result<core::Event*> last = lookupEvent(end);
  if (!last) return last.error();
  Result<float> elapsed = core::elapsedMilliseconds(**first, **last);
  if (!elapsed) return elapsed.error();
  *milliseconds = *elapsed;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return ROCUDA_API((phStream, Flags), [&] { return api::createStream(phStream, Flags, 0); });
}

ROCUDA_EXPORT CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags,
                                                  int priority) {
  return ROCUDA_API((phStream, flags, priority),
                    [&] { return api::createStream(phStream, flags, priority); });
}

ROCUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  return ROCUDA_API((hStream), [&]() -> api::Outcome {
    core::Stream* stream = core::lookupHandle<core::Stream>(hStream);
    if (stream == nullptr || stream->streamKind() != core::StreamKind::Created)
      return {CUDA_ERROR_INVALID_HANDLE, "not a created stream"};
    // "Users must explicitly destroy all such streams before invoking cuGreenCtxDestroy": after
    // it they answer CONTEXT_IS_DESTROYED, and stay.
    if (core::GreenContext* green = stream->greenContext(); green && green->destroyed())
      return {CUDA_ERROR_CONTEXT_IS_DESTROYED, "the stream's green context was destroyed"};
    return stream->context().destroyStream(stream);
  });
}

ROCUDA_STREAM_PAIR(cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream hStream), (hStream),
                   api::streamSynchronize)
ROCUDA_STREAM_PAIR(cuStreamQuery, cuStreamQuery_ptsz, (CUstream hStream), (hStream),
                   api::streamQuery)
ROCUDA_STREAM_PAIR(cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
                   (CUstream hStream, CUevent hEvent, unsigned int Flags), (hStream, hEvent, Flags),
                   api::streamWaitEvent)
ROCUDA_STREAM_PAIR(cuStreamGetFlags, cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int* flags),
                   (hStream, flags), api::streamGetFlags)
ROCUDA_STREAM_PAIR(cuStreamGetPriority, cuStreamGetPriority_ptsz, (CUstream hStream, int* priority),
                   (hStream, priority), api::streamGetPriority)
ROCUDA_STREAM_PAIR(cuStreamGetCtx, cuStreamGetCtx_ptsz, (CUstream hStream, CUcontext* pctx),
                   (hStream, pctx), api::streamGetCtx)
ROCUDA_STREAM_PAIR(cuStreamGetCtx_v2, cuStreamGetCtx_v2_ptsz,
                   (CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx),
                   (hStream, pCtx, pGreenCtx), api::streamGetCtxV2)
ROCUDA_STREAM_PAIR(cuStreamGetId, cuStreamGetId_ptsz,
                   (CUstream hStream, unsigned long long* streamId), (hStream, streamId),
                   api::streamGetId)
ROCUDA_STREAM_PAIR(cuStreamGetDevice, cuStreamGetDevice_ptsz, (CUstream hStream, CUdevice* device),
                   (hStream, device), api::streamGetDevice)
ROCUDA_STREAM_PAIR(cuStreamAddCallback, cuStreamAddCallback_ptsz,
                   (CUstream hStream, CUstreamCallback callback, void* userData,
                    unsigned int flags),
                   (hStream, callback, userData, flags), api::streamAddCallback)
ROCUDA_STREAM_PAIR(cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus* captureStatus),
                   (hStream, captureStatus), api::streamIsCapturing)

ROCUDA_STREAM_PAIR(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out),
                   (hStream, captureStatus_out, id_out), api::captureInfoV1)
ROCUDA_STREAM_PAIR(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                    CUgraph* graph_out, const CUgraphNode** dependencies_out,
                    size_t* numDependencies_out),
                   (hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                    numDependencies_out),
                   api::captureInfoV2)
ROCUDA_STREAM_PAIR(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                    CUgraph* graph_out, const CUgraphNode** dependencies_out,
                    const void** edgeData_out, size_t* numDependencies_out),
                   (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                    numDependencies_out),
                   api::captureInfoV3)

// The calling thread's capture interaction mode: kept and exchanged as CUDA does (captures record
// their own mode; the distinctions between modes are not enforced yet).
ROCUDA_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return ROCUDA_API((mode), [&]() -> api::Outcome {
    if (mode == nullptr) return api::invalidValue("mode is NULL");
    if (*mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
      return api::invalidValue("unknown capture mode");
    *mode = static_cast<CUstreamCaptureMode>(
        core::exchangeThreadCaptureMode(static_cast<unsigned>(*mode)));
    return {};
  });
}

ROCUDA_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  return ROCUDA_API((phEvent, Flags), [&]() -> api::Outcome {
    if (phEvent == nullptr) return api::invalidValue("phEvent is NULL");
    constexpr unsigned kKnown =
        CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if ((Flags & ~kKnown) != 0) return api::invalidValue("unknown flags");
    if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0)
      return api::invalidValue("interprocess events need CU_EVENT_DISABLE_TIMING");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    const backends::DeviceDescription& device = (*context)->device().description();
    if ((Flags & CU_EVENT_INTERPROCESS) != 0 &&
        !(device.sharesMemoryBetweenProcesses || device.ownIpcMemoryHandles))
      return {CUDA_ERROR_NOT_SUPPORTED, "this device cannot share events between processes"};
    Result<core::Event*> event = (*context)->createEvent(Flags);
    if (!event) return event.error();
    *phEvent = reinterpret_cast<CUevent>(*event);
    return {};
  });
}

ROCUDA_STREAM_PAIR(cuEventRecord, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream),
                   (hEvent, hStream), api::eventRecordDefault)
ROCUDA_STREAM_PAIR(cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz,
                   (CUevent hEvent, CUstream hStream, unsigned int flags), (hEvent, hStream, flags),
                   api::eventRecord)

ROCUDA_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  return ROCUDA_API((hEvent), [&]() -> api::Outcome {
    Result<core::Event*> event = api::lookupEvent(hEvent);
    if (!event) return event.error();
    Result<bool> done = (*event)->query();
    if (!done.ok()) return done.error();
    if (!*done) return {CUDA_ERROR_NOT_READY, {}};
    return (*event)->context().stickyError();  // a failed kernel's error, as every call reports
  });
}

ROCUDA_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  return ROCUDA_API((hEvent), [&]() -> api::Outcome {
    Result<core::Event*> event = api::lookupEvent(hEvent);
    if (!event) return event.error();
    if (Status done = (*event)->synchronize(); !done) return done;
    return (*event)->context().stickyError();
  });
}

ROCUDA_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  return ROCUDA_API((hEvent), [&]() -> api::Outcome {
    Result<core::Event*> event = api::lookupEvent(hEvent);
    if (!event) return event.error();
    return (*event)->context().destroyEvent(*event);
  });
}

ROCUDA_EXPORT CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return ROCUDA_API((pMilliseconds, hStart, hEnd),
                    [&] { return api::elapsedTime(pMilliseconds, hStart, hEnd); });
}

ROCUDA_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return ROCUDA_API((pMilliseconds, hStart, hEnd),
                    [&] { return api::elapsedTime(pMilliseconds, hStart, hEnd); });
}

}  // extern "C"
}  // namespace rocuda::cuda
