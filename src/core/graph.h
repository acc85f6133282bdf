// CUDA graphs, first slice: a graph is the ordered list of operations recorded by stream capture
// (each the very closure the immediate path would have queued, arguments captured by value); an
// executable graph is an instantiated copy that can be launched on any stream, any number of
// times. Nodes have no explicit dependencies yet: a captured single stream is a chain.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/object.h"
#include "support/result.h"

namespace rocuda::core {

class Stream;

struct GraphOperation {
  std::string name;
  std::function<Status()> work;
};
using GraphOperations = std::vector<GraphOperation>;

class Graph : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Graph;
  Graph() : Object(ObjectKind::Graph) {}

  void append(std::string name, std::function<Status()> work);
  size_t size() const;
  GraphOperations operations() const;  // a copy
  // An opaque CUgraphNode-style handle for node `index` (never dereferenced).
  uintptr_t nodeHandle(size_t index) const { return reinterpret_cast<uintptr_t>(this) + 1 + index; }

 private:
  mutable std::mutex mutex_;
  GraphOperations operations_;
};

class GraphExec : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::GraphExec;
  explicit GraphExec(GraphOperations operations);

  size_t size() const { return operations_->size(); }
  // Queue every operation, in order, on `stream` (one command; runs asynchronously).
  Status launch(Stream& stream);

 private:
  std::shared_ptr<const GraphOperations> operations_;
};

// Graphs and executable graphs live until destroyed (cuGraphDestroy / cuGraphExecDestroy).
Graph* createGraph();
Status destroyGraph(Graph* graph);
GraphExec* instantiateGraph(const Graph& graph);
Status destroyGraphExec(GraphExec* exec);

// The state of one stream capture, shared by the capturing stream and the completions it hands
// out (a host wait on a captured operation is a synchronous call: it invalidates the capture).
struct CaptureState {
  Graph* graph = nullptr;
  unsigned mode = 0;  // CUstreamCaptureMode
  uint64_t id = 0;
  std::atomic<bool> invalidated{false};
};
using CaptureStatePtr = std::shared_ptr<CaptureState>;

uint64_t nextCaptureId();

}  // namespace rocuda::core
