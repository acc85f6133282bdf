#include "core/graph.h"

#include <unordered_map>

#include "core/context.h"
#include "core/stream.h"

namespace rocuda::core {
namespace {

// Owns every live graph and executable graph; a handle is valid while it is in here.
struct GraphRegistry {
  std::mutex mutex;
  std::unordered_map<const Object*, std::unique_ptr<Object>> live;
};

GraphRegistry& registry() {
  static GraphRegistry* instance = new GraphRegistry();  // never destroyed: outlives statics
  return *instance;
}

template <class T>
T* adopt(std::unique_ptr<T> object) {
  T* raw = object.get();
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.emplace(raw, std::move(object));
  return raw;
}

Status release(const Object* object) {
  std::unique_ptr<Object> owned;
  {
    GraphRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.live.find(object);
    if (it == r.live.end()) return makeError(ErrorCode::InvalidHandle, "unknown graph handle");
    owned = std::move(it->second);
    r.live.erase(it);
  }
  return Status::success();  // `owned` is destroyed outside the lock
}

std::atomic<uint64_t> captureIds{1};

}  // namespace

void Graph::append(std::string name, std::function<Status()> work) {
  std::lock_guard lock(mutex_);
  operations_.push_back(GraphOperation{std::move(name), std::move(work)});
}

size_t Graph::size() const {
  std::lock_guard lock(mutex_);
  return operations_.size();
}

GraphOperations Graph::operations() const {
  std::lock_guard lock(mutex_);
  return operations_;
}

GraphExec::GraphExec(GraphOperations operations)
    : Object(ObjectKind::GraphExec),
      operations_(std::make_shared<const GraphOperations>(std::move(operations))) {}

Status GraphExec::launch(Stream& stream) {
  // The operations share this launch's command: they run in order, after earlier work on the
  // stream, and the first failure stops the rest (as a failed node stops a CUDA graph).
  auto queued =
      stream.context().enqueue(stream, "graph launch", [operations = operations_]() -> Status {
        for (const GraphOperation& operation : *operations) {
          Status status = operation.work ? operation.work() : Status::success();
          if (!status.ok()) return status;
        }
        return Status::success();
      });
  if (!queued.ok()) return queued.error();
  return Status::success();
}

Graph* createGraph() { return adopt(std::make_unique<Graph>()); }

Status destroyGraph(Graph* graph) { return release(graph); }

GraphExec* instantiateGraph(const Graph& graph) {
  return adopt(std::make_unique<GraphExec>(graph.operations()));
}

Status destroyGraphExec(GraphExec* exec) { return release(exec); }

uint64_t nextCaptureId() { return captureIds++; }

}  // namespace rocuda::core
