// Stream capture: operations queued on capturing streams become graph nodes after each stream's
// dependency set; events recorded during a capture fork it into other streams (cuStreamWaitEvent)
// and join them back; capture modes decide which threads' unsafe calls a capture prohibits.
#include <algorithm>

#include "core/context.h"
#include "core/graph.h"
#include "core/stream.h"
#include "support/thread_identity.h"

namespace rocuda::core {
namespace {

constexpr unsigned kModeGlobal = 0, kModeThreadLocal = 1, kModeRelaxed = 2;

// Captures in progress anywhere in the process (for the capture-mode checks).
struct ActiveCaptures {
  std::mutex mutex;
  std::vector<std::weak_ptr<CaptureState>> captures;
};

ActiveCaptures& activeCaptures() {
  static ActiveCaptures* instance = new ActiveCaptures();
  return *instance;
}

void trackCapture(const CaptureStatePtr& capture, bool active) {
  ActiveCaptures& a = activeCaptures();
  std::lock_guard lock(a.mutex);
  std::erase_if(a.captures, [&](const std::weak_ptr<CaptureState>& c) {
    auto held = c.lock();
    return !held || held == capture;
  });
  if (active) a.captures.push_back(capture);
}

thread_local unsigned threadCaptureMode = kModeGlobal;

// Stream capture records what the immediate path would queue; the kind of node follows from the
// operation's name (kernel launches are named "kernel <function>").
GraphNodeType capturedType(const std::string& name) {
  if (name.starts_with("kernel")) return GraphNodeType::Kernel;
  if (name.starts_with("memcpy")) return GraphNodeType::Memcpy;
  if (name.starts_with("memset")) return GraphNodeType::Memset;
  if (name == "hostFunc" || name == "callback") return GraphNodeType::Host;
  if (name == kMemoryOperationsName) return GraphNodeType::BatchMemOp;
  return GraphNodeType::Empty;  // other work (a nested graph launch...) runs as recorded
}

// Every node of `forked` is `joined`'s node or an ancestor of one.
bool joinedBack(const Graph& graph, const std::vector<GraphNode*>& forked,
                const std::vector<GraphNode*>& joined) {
  for (const GraphNode* node : forked) {
    bool reached = std::any_of(joined.begin(), joined.end(), [&](const GraphNode* target) {
      return node == target || graph.reaches(node, target);
    });
    if (!reached) return false;
  }
  return true;
}

void stopCapture(const CaptureStatePtr& capture) {
  for (Stream* stream : capture->joined)
    if (stream->capture() == capture) stream->setCapture(nullptr);
  capture->joined.clear();
  if (capture->origin != nullptr) capture->origin->setCapture(nullptr);
  trackCapture(capture, false);
}

}  // namespace

bool graphBeingCaptured(const Graph* graph) {
  ActiveCaptures& a = activeCaptures();
  std::lock_guard lock(a.mutex);
  for (const std::weak_ptr<CaptureState>& c : a.captures)
    if (auto held = c.lock(); held && held->graph == graph) return true;
  return false;
}

void leaveCapture(Stream& stream) {
  CaptureStatePtr capture = stream.capture();
  if (!capture) return;
  std::lock_guard lock(graphMutex());
  if (capture->origin == &stream) {
    // The capture can no longer end: it stops, invalidated, and its graph (if its own) goes.
    capture->invalidated = true;
    stopCapture(capture);
    capture->origin = nullptr;
    if (capture->ownsGraph) (void)destroyGraph(capture->graph);
    return;
  }
  // A joined stream's work must still have joined the origin when the capture ends.
  capture->departed.push_back(stream.captureDependencies());
  std::erase(capture->joined, &stream);
  stream.setCapture(nullptr);
}

Result<GraphNode*> recordCapturedNode(Stream& stream, const CaptureStatePtr& capture,
                                      std::string name, std::function<Status()> work) {
  std::lock_guard lock(graphMutex());
  GraphNodeContent content;
  content.context = &stream.context();
  content.work = std::move(work);
  GraphNodeType type = capturedType(name);
  content.name = std::move(name);
  return appendCapturedNode(stream, capture, type, std::move(content));
}

Result<GraphNode*> appendCapturedNode(Stream& stream, const CaptureStatePtr& capture,
                                      GraphNodeType type, GraphNodeContent content) {
  if (capture->invalidated)
    return makeError(ErrorCode::StreamCaptureInvalidated,
                     "the stream's capture was invalidated by an earlier error");
  Result<GraphNode*> node =
      capture->graph->addNode(type, stream.captureDependencies(), std::move(content));
  if (!node.ok()) return node.error();
  stream.setCaptureDependencies({*node});
  return *node;
}

CaptureFailure beginCapture(Stream& stream, unsigned mode, Graph* graph,
                            const std::vector<GraphNode*>& dependencies) {
  if (stream.streamKind() == StreamKind::Legacy) return CaptureFailure::Unsupported;
  if (stream.capture()) return CaptureFailure::AlreadyCapturing;
  auto capture = std::make_shared<CaptureState>();
  capture->ownsGraph = graph == nullptr;
  capture->graph = graph != nullptr ? graph : createGraph();
  capture->mode = mode;
  capture->id = nextCaptureId();
  capture->origin = &stream;
  capture->thread = support::currentThread().serial;
  stream.setCapture(capture);
  stream.setCaptureDependencies(dependencies);
  trackCapture(capture, true);
  return CaptureFailure::None;
}

CaptureFailure endCapture(Stream& stream, Graph** graph) {
  *graph = nullptr;
  CaptureStatePtr capture = stream.capture();
  if (!capture) return CaptureFailure::NotCapturing;
  if (capture->mode != kModeRelaxed && capture->thread != support::currentThread().serial)
    return CaptureFailure::WrongThread;
  if (capture->origin != &stream) {
    capture->invalidated = true;  // CUDA invalidates a capture ended on the wrong stream
    return CaptureFailure::Unmatched;
  }
  std::lock_guard lock(graphMutex());
  std::vector<GraphNode*> joined = stream.captureDependencies();
  bool unjoined = false;
  for (Stream* other : capture->joined)
    if (other->capture() == capture &&
        !joinedBack(*capture->graph, other->captureDependencies(), joined))
      unjoined = true;
  for (const std::vector<GraphNode*>& departed : capture->departed)
    if (!joinedBack(*capture->graph, departed, joined)) unjoined = true;
  stopCapture(capture);
  if (unjoined || capture->invalidated) {
    if (capture->ownsGraph) (void)destroyGraph(capture->graph);
    return unjoined ? CaptureFailure::Unjoined : CaptureFailure::Invalidated;
  }
  *graph = capture->graph;
  return CaptureFailure::None;
}

CaptureFailure joinCaptureThroughEvent(Stream& stream, Event& event, bool* joined) {
  *joined = false;
  std::vector<GraphNode*> nodes;
  CaptureStatePtr recorded = event.captureRecord(&nodes);
  CaptureStatePtr mine = stream.capture();
  if (!recorded || recorded->origin == nullptr || recorded->origin->capture() != recorded) {
    // An event recorded outside any (live) capture: a capturing stream cannot wait on it.
    if (mine) {
      mine->invalidated = true;
      return CaptureFailure::Isolation;
    }
    return CaptureFailure::None;
  }
  if (mine && mine != recorded) {
    mine->invalidated = true;
    recorded->invalidated = true;
    return CaptureFailure::Isolation;
  }
  if (stream.streamKind() == StreamKind::Legacy) {
    recorded->invalidated = true;
    return CaptureFailure::Implicit;
  }
  std::lock_guard lock(graphMutex());
  *joined = true;
  if (!mine) {
    stream.setCapture(recorded);
    recorded->joined.push_back(&stream);
    stream.setCaptureDependencies(nodes);
    return CaptureFailure::None;
  }
  std::vector<GraphNode*> merged = stream.captureDependencies();
  for (GraphNode* node : nodes)
    if (std::find(merged.begin(), merged.end(), node) == merged.end()) merged.push_back(node);
  stream.setCaptureDependencies(std::move(merged));
  return CaptureFailure::None;
}

CaptureFailure updateCaptureDependencies(Stream& stream, const std::vector<GraphNode*>& nodes,
                                         bool replace) {
  CaptureStatePtr capture = stream.capture();
  if (!capture) return CaptureFailure::NotCapturing;
  std::lock_guard lock(graphMutex());
  std::vector<GraphNode*> merged =
      replace ? std::vector<GraphNode*>{} : stream.captureDependencies();
  for (GraphNode* node : nodes)
    if (std::find(merged.begin(), merged.end(), node) == merged.end()) merged.push_back(node);
  stream.setCaptureDependencies(std::move(merged));
  return CaptureFailure::None;
}

unsigned exchangeThreadCaptureMode(unsigned mode) {
  std::swap(mode, threadCaptureMode);
  return mode;
}

Status checkUnsafeCall() {
  if (threadCaptureMode == kModeRelaxed) return Status::success();
  std::vector<CaptureStatePtr> prohibiting;
  {
    ActiveCaptures& a = activeCaptures();
    std::lock_guard lock(a.mutex);
    for (const auto& weak : a.captures) {
      CaptureStatePtr capture = weak.lock();
      if (!capture || capture->mode == kModeRelaxed) continue;
      bool own = capture->thread == support::currentThread().serial;
      bool global = capture->mode == kModeGlobal && threadCaptureMode == kModeGlobal;
      if (own || global) prohibiting.push_back(std::move(capture));
    }
  }
  if (prohibiting.empty()) return Status::success();
  for (const CaptureStatePtr& capture : prohibiting) capture->invalidated = true;
  return makeError(ErrorCode::StreamCaptureUnsupported,
                   "operation not permitted when stream is capturing");
}

}  // namespace rocuda::core
