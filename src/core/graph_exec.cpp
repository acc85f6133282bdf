// Executable graphs: instantiation (a deep copy in topological order), launch as one stream
// command, and cuGraphExecUpdate's topology comparison.
#include <algorithm>

#include "core/context.h"
#include "core/graph.h"
#include "core/ipc.h"
#include "core/stream.h"

namespace rocuda::core {
namespace {

// What one launch runs, fixed when it is queued (later parameter changes affect later launches
// only, as in CUDA).
struct LaunchPlan {
  std::vector<std::function<Status()>> steps;
  std::vector<CompletionPtr> records;  // completed at the end even if a node fails
  // Records of interprocess events (core/ipc.h), likewise finished at the end.
  std::vector<std::pair<std::shared_ptr<InterprocessEvent>, uint64_t>> sharedRecords;
};

// An interprocess event's shared state, or null for other events (and if it cannot be made).
std::shared_ptr<InterprocessEvent> sharedStateOf(Event& event) {
  if ((event.flags() & 4u) == 0) return nullptr;  // CU_EVENT_INTERPROCESS
  auto state = event.interprocessState();
  return state.ok() ? *state : nullptr;
}

void planGraph(const Graph& graph, const std::vector<GraphNode*>& order, LaunchPlan& plan);

void planNode(const GraphNode& node, LaunchPlan& plan) {
  const GraphNodeContent& content = node.content();
  if (!content.enabled) return;  // a disabled node runs as an empty node
  switch (node.type()) {
    case GraphNodeType::Graph:
      if (content.child) planGraph(*content.child, content.child->topologicalOrder(), plan);
      return;
    case GraphNodeType::EventRecord: {
      if (content.event == nullptr) return;
      auto completion = std::make_shared<Completion>();
      content.event->recordCompletion(completion);
      plan.records.push_back(completion);
      std::shared_ptr<InterprocessEvent> shared = sharedStateOf(*content.event);
      uint64_t number = shared ? shared->beginRecord() : 0;
      if (shared) plan.sharedRecords.emplace_back(shared, number);
      plan.steps.push_back([completion, shared, number] {
        completion->complete(Status::success());
        if (shared) shared->finishRecord(number);
        return Status::success();
      });
      return;
    }
    case GraphNodeType::WaitEvent: {
      // An interprocess event's latest record may be another process's.
      if (auto shared = content.event ? content.event->interprocess() : nullptr) {
        uint64_t number = shared->latestRecord();
        plan.steps.push_back([shared, number] {
          shared->wait(number);
          return Status::success();
        });
        return;
      }
      CompletionPtr completion = content.event ? content.event->completion() : nullptr;
      if (completion)
        plan.steps.push_back([completion] {
          completion->wait();
          return Status::success();
        });
      return;
    }
    case GraphNodeType::MemAlloc: {
      std::shared_ptr<GraphAllocation> allocation = content.allocation;
      if (allocation)
        plan.steps.push_back([allocation] {
          markGraphAllocationUse(*allocation, true);
          return Status::success();
        });
      return;
    }
    case GraphNodeType::MemFree: {
      std::shared_ptr<GraphAllocation> allocation = findGraphAllocation(content.freeAddress);
      if (allocation)
        plan.steps.push_back([allocation] {
          markGraphAllocationUse(*allocation, false);
          return Status::success();
        });
      return;
    }
    default:
      if (content.work) plan.steps.push_back(content.work);
      return;
  }
}

void planGraph(const Graph&, const std::vector<GraphNode*>& order, LaunchPlan& plan) {
  for (const GraphNode* node : order) planNode(*node, plan);
}

// Whether `a` (of graph `ga`) and `b` (of `gb`) have the same type and dependencies, by
// creation index; children compared recursively.
GraphUpdateResult compareGraphs(const Graph& mine, const Graph& other, const GraphNode** errorNode,
                                const GraphNode** errorFrom) {
  std::vector<GraphNode*> a = mine.nodes(), b = other.nodes();
  if (a.size() != b.size()) return GraphUpdateResult::TopologyChanged;
  for (size_t i = 0; i < a.size(); ++i) {
    *errorNode = b[i];
    if (a[i]->type() != b[i]->type()) return GraphUpdateResult::NodeTypeChanged;
    std::vector<size_t> da, db;
    for (const GraphNode* d : a[i]->dependencies()) da.push_back(mine.indexOf(d));
    for (const GraphNode* d : b[i]->dependencies()) db.push_back(other.indexOf(d));
    std::sort(da.begin(), da.end());
    std::sort(db.begin(), db.end());
    if (da != db) {
      for (const GraphNode* d : b[i]->dependencies())
        if (!std::binary_search(da.begin(), da.end(), other.indexOf(d))) *errorFrom = d;
      return GraphUpdateResult::TopologyChanged;
    }
    const GraphNodeContent &ca = a[i]->content(), &cb = b[i]->content();
    if (a[i]->type() == GraphNodeType::Graph && ca.child && cb.child) {
      const GraphNode *innerNode = nullptr, *innerFrom = nullptr;
      if (compareGraphs(*ca.child, *cb.child, &innerNode, &innerFrom) != GraphUpdateResult::Success)
        return GraphUpdateResult::TopologyChanged;
    }
    if (ca.context != cb.context &&
        (a[i]->type() == GraphNodeType::Kernel || a[i]->type() == GraphNodeType::Memcpy ||
         a[i]->type() == GraphNodeType::Memset))
      return GraphUpdateResult::ParametersChanged;  // work cannot move to another context
    if ((a[i]->type() == GraphNodeType::MemAlloc && ca.allocation != cb.allocation) ||
        (a[i]->type() == GraphNodeType::MemFree && ca.freeAddress != cb.freeAddress))
      return GraphUpdateResult::ParametersChanged;  // memory nodes cannot be updated
  }
  *errorNode = nullptr;
  return GraphUpdateResult::Success;
}

}  // namespace

GraphExec::GraphExec(const Graph& graph, uint64_t flags)
    : Object(ObjectKind::GraphExec), flags_(flags) {
  graph_ = graph.clone(&fromOriginal_);
  graph_->setEmbedded(true);
  order_ = graph_->topologicalOrder();
}

GraphExec::~GraphExec() = default;

GraphNode* GraphExec::execNode(const GraphNode* node) const {
  auto it = fromOriginal_.find(node);
  return it == fromOriginal_.end() ? nullptr : it->second;
}

Status GraphExec::launch(Stream& stream) {
  if (CaptureStatePtr capture = stream.capture()) {
    // Launching into a capture embeds the graph as a child-graph node, as CUDA does.
    std::lock_guard lock(graphMutex());
    GraphNodeContent content;
    content.name = "graph";
    content.child = graph_->clone(nullptr);
    content.child->setEmbedded(true);
    Result<GraphNode*> node = capture->graph->addNode(
        GraphNodeType::Graph, stream.captureDependencies(), std::move(content));
    if (!node.ok()) return node.error();
    stream.setCaptureDependencies({*node});
    return Status::success();
  }
  auto plan = std::make_shared<LaunchPlan>();
  {
    std::lock_guard lock(graphMutex());
    planGraph(*graph_, order_, *plan);
  }
  // The nodes share this launch's command: they run in a topological order, after earlier work
  // on the stream, and the first failure stops the rest (as a failed node stops a CUDA graph).
  auto queued = stream.context().enqueue(stream, "graph launch", [plan]() -> Status {
    Status result = Status::success();
    for (const auto& step : plan->steps) {
      result = step();
      if (!result.ok()) break;
    }
    for (const CompletionPtr& record : plan->records)
      if (!record->done()) record->complete(Status::success());
    for (const auto& [shared, number] : plan->sharedRecords) shared->finishRecord(number);
    return result;
  });
  if (!queued.ok()) {
    for (const CompletionPtr& record : plan->records) record->complete(queued.error());
    for (const auto& [shared, number] : plan->sharedRecords) shared->finishRecord(number);
    return queued.error();
  }
  return Status::success();
}

GraphUpdateResult GraphExec::update(const Graph& graph, const GraphNode** errorNode,
                                    const GraphNode** errorFrom) {
  std::lock_guard lock(graphMutex());
  *errorNode = nullptr;
  *errorFrom = nullptr;
  GraphUpdateResult result = compareGraphs(*graph_, graph, errorNode, errorFrom);
  if (result != GraphUpdateResult::Success) return result;
  std::vector<GraphNode*> mine = graph_->nodes(), theirs = graph.nodes();
  for (size_t i = 0; i < mine.size(); ++i) {
    GraphNodeContent& target = mine[i]->content();
    const GraphNodeContent& source = theirs[i]->content();
    target.name = source.name;
    target.work = source.work;
    target.params = source.params;
    target.event = source.event;
    if (source.child) {
      target.child = source.child->clone(&fromOriginal_);
      target.child->setEmbedded(true);
    }
    fromOriginal_[theirs[i]] = mine[i];
  }
  return GraphUpdateResult::Success;
}

}  // namespace rocuda::core
