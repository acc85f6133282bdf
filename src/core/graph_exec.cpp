// Executable graphs: instantiation (a deep copy in topological order), launch as one stream
// command, and cuGraphExecUpdate's topology comparison.
#include <algorithm>
#include <tuple>

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

void planGraph(const Graph& graph, const std::vector<GraphNode*>& order, LaunchPlan& plan,
               const ConditionTable* conditions);

Status runSteps(const std::vector<std::function<Status()>>& steps) {
  for (const auto& step : steps) ROCUDA_TRY(step());
  return Status::success();
}

// A conditional node: each body planned once, run (or repeated) by the condition's value when
// the node's turn comes in the launch's order.
void planConditional(const GraphNodeContent& content, LaunchPlan& plan,
                     const ConditionTable* conditions) {
  int slot = conditions != nullptr ? conditions->slotOf(content.conditionHandle) : -1;
  if (slot < 0) return;  // instantiation refuses such graphs
  auto bodies = std::make_shared<std::vector<std::vector<std::function<Status()>>>>();
  for (const auto& body : content.bodies) {
    LaunchPlan inner;  // bodies hold no event or memory nodes: only steps
    planGraph(*body, body->topologicalOrder(), inner, conditions);
    bodies->push_back(std::move(inner.steps));
  }
  ConditionalType type = content.conditionType;
  plan.steps.push_back([conditions, slot, type, bodies]() -> Status {
    uint32_t value = conditions->value(slot);
    switch (type) {
      case ConditionalType::If:
        if (value != 0) return runSteps((*bodies)[0]);
        return bodies->size() > 1 ? runSteps((*bodies)[1]) : Status::success();
      case ConditionalType::While:
        for (; value != 0; value = conditions->value(slot)) ROCUDA_TRY(runSteps((*bodies)[0]));
        return Status::success();
      case ConditionalType::Switch:
        return value < bodies->size() ? runSteps((*bodies)[value]) : Status::success();
    }
    return Status::success();
  });
}

void planNode(const GraphNode& node, LaunchPlan& plan, const ConditionTable* conditions) {
  const GraphNodeContent& content = node.content();
  if (!content.enabled) return;  // a disabled node runs as an empty node
  switch (node.type()) {
    case GraphNodeType::Graph:
      if (content.child)
        planGraph(*content.child, content.child->topologicalOrder(), plan, conditions);
      return;
    case GraphNodeType::Conditional:
      planConditional(content, plan, conditions);
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

void planGraph(const Graph&, const std::vector<GraphNode*>& order, LaunchPlan& plan,
               const ConditionTable* conditions) {
  for (const GraphNode* node : order) planNode(*node, plan, conditions);
}

thread_local backends::GraphConditions* activeConditions = nullptr;

// Whether `a` (of graph `ga`) and `b` (of `gb`) have the same type and dependencies, by
// creation index; children compared recursively.
GraphUpdateResult compareGraphs(const Graph& mine, const Graph& other, const GraphNode** errorNode,
                                const GraphNode** errorFrom, const NodeUpdateCheck& check) {
  std::vector<GraphNode*> a = mine.nodes(), b = other.nodes();
  if (a.size() != b.size()) return GraphUpdateResult::TopologyChanged;
  for (size_t i = 0; i < a.size(); ++i) {
    *errorNode = b[i];
    if (a[i]->type() != b[i]->type()) return GraphUpdateResult::NodeTypeChanged;
    // Dependencies by creation index, with their edges' data.
    auto byIndex = [](const Graph& graph, const GraphNode& node) {
      std::vector<std::tuple<size_t, uint8_t, uint8_t, uint8_t>> list;
      for (size_t k = 0; k < node.dependencies().size(); ++k) {
        const EdgeData& edge = node.dependencyEdges()[k];
        list.emplace_back(graph.indexOf(node.dependencies()[k]), edge.fromPort, edge.toPort,
                          edge.type);
      }
      std::sort(list.begin(), list.end());
      return list;
    };
    auto da = byIndex(mine, *a[i]), db = byIndex(other, *b[i]);
    if (da != db) {
      for (size_t k = 0; k < b[i]->dependencies().size(); ++k) {
        const GraphNode* d = b[i]->dependencies()[k];
        const EdgeData& e = b[i]->dependencyEdges()[k];
        if (!std::binary_search(da.begin(), da.end(),
                                std::make_tuple(other.indexOf(d), e.fromPort, e.toPort, e.type)))
          *errorFrom = d;
      }
      return GraphUpdateResult::TopologyChanged;
    }
    const GraphNodeContent &ca = a[i]->content(), &cb = b[i]->content();
    if (a[i]->type() == GraphNodeType::Graph && ca.child && cb.child) {
      const GraphNode *innerNode = nullptr, *innerFrom = nullptr;
      if (compareGraphs(*ca.child, *cb.child, &innerNode, &innerFrom, check) !=
          GraphUpdateResult::Success)
        return GraphUpdateResult::TopologyChanged;
    }
    if (a[i]->type() == GraphNodeType::Conditional) {
      // The handle may differ (every graph makes its own): the exec takes the new graph's.
      if (ca.conditionType != cb.conditionType || ca.bodies.size() != cb.bodies.size())
        return GraphUpdateResult::ParametersChanged;
      for (size_t k = 0; k < ca.bodies.size(); ++k) {
        const GraphNode *innerNode = nullptr, *innerFrom = nullptr;
        if (compareGraphs(*ca.bodies[k], *cb.bodies[k], &innerNode, &innerFrom, check) !=
            GraphUpdateResult::Success)
          return GraphUpdateResult::TopologyChanged;
      }
    }
    // Work cannot move to another context ("the owning context of the function cannot change").
    if (ca.context != cb.context && a[i]->type() == GraphNodeType::Kernel)
      return GraphUpdateResult::UnsupportedFunctionChange;
    if (ca.context != cb.context &&
        (a[i]->type() == GraphNodeType::Memcpy || a[i]->type() == GraphNodeType::Memset))
      return GraphUpdateResult::ParametersChanged;
    if (check)
      if (GraphUpdateResult checked = check(*a[i], *b[i]); checked != GraphUpdateResult::Success)
        return checked;
    if (ca.transfer && cb.transfer && !transferMayChange(a[i]->type(), *ca.transfer, *cb.transfer))
      return GraphUpdateResult::ParametersChanged;
    if ((a[i]->type() == GraphNodeType::MemAlloc && ca.allocation != cb.allocation) ||
        (a[i]->type() == GraphNodeType::MemFree && ca.freeAddress != cb.freeAddress))
      return GraphUpdateResult::ParametersChanged;  // memory nodes cannot be updated
  }
  *errorNode = nullptr;
  return GraphUpdateResult::Success;
}

}  // namespace

bool transferMayChange(GraphNodeType type, const GraphNodeContent::TransferShape& instantiated,
                       const GraphNodeContent::TransferShape& now) {
  // "The source and destination memory ... must be allocated from the same contexts as the
  // original"; a memset's destination "must be to the same kind of allocation"; "for 2d
  // memsets, all dimension changes are rejected".
  if (instantiated.destinationContext != now.destinationContext) return false;
  if (type == GraphNodeType::Memcpy)
    return instantiated.sourceType == now.sourceType &&
           instantiated.destinationType == now.destinationType &&
           instantiated.sourceContext == now.sourceContext;
  if (type == GraphNodeType::Memset) {
    if (instantiated.destinationType != now.destinationType) return false;
    if (instantiated.height > 1 || now.height > 1)
      return instantiated.width == now.width && instantiated.height == now.height &&
             instantiated.elementSize == now.elementSize && instantiated.pitch == now.pitch;
  }
  return true;
}

backends::GraphConditions*& activeGraphConditions() { return activeConditions; }

ConditionTable::ConditionTable(const Graph& graph) {
  collect(graph);
  values_ = std::make_unique<std::atomic<uint32_t>[]>(handles_.size());
  applyDefaults(true);
}

void ConditionTable::collect(const Graph& graph) {
  for (const ConditionalHandle& handle : graph.conditionalHandles())
    if (slotOf(handle.id) < 0) handles_.push_back(handle);
  for (const GraphNode* node : graph.nodes()) {
    if (node->content().child) collect(*node->content().child);
    for (const auto& body : node->content().bodies) collect(*body);
  }
}

int ConditionTable::slotOf(uint64_t handle) const {
  for (size_t i = 0; i < handles_.size(); ++i)
    if (handles_[i].id == handle) return static_cast<int>(i);
  return -1;
}

bool ConditionTable::set(uint64_t handle, uint32_t value) {
  int slot = slotOf(handle);
  if (slot < 0) return false;
  values_[slot].store(value, std::memory_order_release);
  return true;
}

void ConditionTable::applyDefaults(bool all) {
  for (size_t i = 0; i < handles_.size(); ++i)
    if (all || handles_[i].assignDefault)
      values_[i].store(handles_[i].defaultValue, std::memory_order_relaxed);
}

GraphExec::GraphExec(const Graph& graph, uint64_t flags)
    : Object(ObjectKind::GraphExec), flags_(flags) {
  graph_ = graph.clone(&fromOriginal_);
  graph_->setEmbedded(true);
  order_ = graph_->topologicalOrder();
  conditions_ = std::make_shared<ConditionTable>(*graph_);
  if (graph.hasMemoryNodes() || graph.hasConditionalNodes()) {
    sourceCount_ = graph.executableCount();
    ++*sourceCount_;
  }
}

GraphExec::~GraphExec() {
  if (sourceCount_) --*sourceCount_;
}

Status GraphExec::claimAllocations() {
  std::vector<GraphAllocation*> allocated;
  std::vector<const void*> freed;
  auto collect = [&](const Graph& graph, auto& self) -> void {
    for (const GraphNode* node : graph.nodes()) {
      const GraphNodeContent& content = node->content();
      if (node->type() == GraphNodeType::MemAlloc && content.allocation)
        allocated.push_back(content.allocation.get());
      if (node->type() == GraphNodeType::MemFree) freed.push_back(content.freeAddress);
      if (content.child) self(*content.child, self);
    }
  };
  collect(*graph_, collect);
  bool freeOnLaunch = (flags_ & 1u) != 0;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
  for (GraphAllocation* allocation : allocated)
    if (allocation->outstanding && !freeOnLaunch)
      return makeError(ErrorCode::InvalidValue,
                       "an allocation of this graph's previous launch is still unfreed (free it, "
                       "or instantiate with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)");
  for (GraphAllocation* allocation : allocated) {
    allocation->outstanding =
        std::find(freed.begin(), freed.end(), allocation->address) == freed.end();
    countGraphAllocationLaunch(*allocation);
  }
  for (const void* address : freed)
    if (std::shared_ptr<GraphAllocation> allocation = findGraphAllocation(address))
      if (std::find(allocated.begin(), allocated.end(), allocation.get()) == allocated.end())
        allocation->outstanding = false;  // another graph's allocation, freed here
  return Status::success();
}

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
  std::shared_ptr<ConditionTable> conditions = conditions_;
  std::shared_ptr<UserObjectReferences> userObjects;
  {
    std::lock_guard lock(graphMutex());
    ROCUDA_TRY(claimAllocations());
    planGraph(*graph_, order_, *plan, conditions.get());
    userObjects = std::make_shared<UserObjectReferences>(*graph_);
  }
  // The nodes share this launch's command: they run in a topological order, after earlier work
  // on the stream and after this graph's previous launch, and the first failure stops the rest
  // (as a failed node stops a CUDA graph).
  std::lock_guard launching(launchMutex_);
  std::vector<CompletionPtr> previous;
  if (lastLaunch_ && !lastLaunch_->done()) previous.push_back(lastLaunch_);
  auto queued = stream.context().enqueue(
      stream, "graph launch",
      // The launch holds the graph's user objects until it has run: an exec destroyed while
      // launched releases its references, and the last one runs the destructor, afterwards.
      [plan, conditions, userObjects]() mutable -> Status {
        conditions->applyDefaults(false);  // CU_GRAPH_COND_ASSIGN_DEFAULT, in stream order
        backends::GraphConditions* outer = activeConditions;
        // For cudaGraphSetConditional in this launch's kernels.
        activeConditions = conditions.get();
        Status result = Status::success();
        for (const auto& step : plan->steps) {
          result = step();
          if (!result.ok()) break;
        }
        activeConditions = outer;
        for (const CompletionPtr& record : plan->records)
          if (!record->done()) record->complete(Status::success());
        for (const auto& [shared, number] : plan->sharedRecords) shared->finishRecord(number);
        userObjects.reset();  // before the stream sees the launch complete
        return result;
      },
      /*runsAfterFailure=*/false, std::move(previous));
  if (!queued.ok()) {
    for (const CompletionPtr& record : plan->records) record->complete(queued.error());
    for (const auto& [shared, number] : plan->sharedRecords) shared->finishRecord(number);
    return queued.error();
  }
  lastLaunch_ = *queued;
  return Status::success();
}

GraphUpdateResult GraphExec::update(const Graph& graph, const GraphNode** errorNode,
                                    const GraphNode** errorFrom, const NodeUpdateCheck& check) {
  std::lock_guard lock(graphMutex());
  *errorNode = nullptr;
  *errorFrom = nullptr;
  GraphUpdateResult result = compareGraphs(*graph_, graph, errorNode, errorFrom, check);
  if (result != GraphUpdateResult::Success) return result;
  std::vector<GraphNode*> mine = graph_->nodes(), theirs = graph.nodes();
  for (size_t i = 0; i < mine.size(); ++i) {
    GraphNodeContent& target = mine[i]->content();
    const GraphNodeContent& source = theirs[i]->content();
    target.name = source.name;
    target.work = source.work;
    target.params = source.params;
    target.transfer = source.transfer;
    target.event = source.event;
    if (source.child) {
      target.child = source.child->clone(&fromOriginal_);
      target.child->setEmbedded(true);
    }
    if (mine[i]->type() == GraphNodeType::Conditional) {
      target.conditionHandle = source.conditionHandle;
      target.bodies.clear();
      target.bodyList.clear();
      for (const auto& body : source.bodies) {
        target.bodies.push_back(body->clone(&fromOriginal_));
        target.bodies.back()->setEmbedded(true);
        target.bodyList.push_back(target.bodies.back().get());
      }
    }
    fromOriginal_[theirs[i]] = mine[i];
  }
  // The new graph's handles and defaults; values start again from the defaults.
  graph_->setConditionalHandles(graph.conditionalHandles());
  conditions_ = std::make_shared<ConditionTable>(*graph_);
  return GraphUpdateResult::Success;
}

}  // namespace rocuda::core
