// Executable graphs: instantiation (a deep copy in topological order), launch as one stream
// command, graphs launched from the device inside it, and cuGraphExecUpdate's topology
// comparison.
#include <algorithm>
#include <deque>
#include <set>
#include <tuple>

#include "core/context.h"
#include "core/graph.h"
#include "core/ipc.h"
#include "core/stream.h"
#include "support/log.h"

namespace rocuda::core {

// What one launch runs, fixed when it is queued (later parameter changes affect later launches
// only, as in CUDA).
struct LaunchPlan {
  std::vector<std::function<Status()>> steps;
  std::vector<CompletionPtr> records;  // completed at the end even if a node fails
  // Records of interprocess events (core/ipc.h), likewise finished at the end.
  std::vector<std::pair<std::shared_ptr<InterprocessEvent>, uint64_t>> sharedRecords;
};

namespace {

// Every node of `graph` and of the child graphs and conditional bodies inside it.
template <class Visit>
void forEachNodeWithin(const Graph& graph, const Visit& visit) {
  for (const GraphNode* node : graph.nodes()) {
    visit(*node);
    if (node->content().child) forEachNodeWithin(*node->content().child, visit);
    for (const auto& body : node->content().bodies) forEachNodeWithin(*body, visit);
  }
}

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

thread_local backends::RunningGraph* activeGraph = nullptr;

// ---- Graphs launched from the device ----
//
// CUDA's model (programming guide, "Device Graph Launch"): a graph runs in an execution
// environment, which is complete once the graph and every graph it launched fire-and-forget are;
// its tail launches then run one after another, each replacing it as a child of its parent
// environment, the tail launches a tail graph queues before the rest of the list. A sibling
// launch is a fire-and-forget launch from the parent environment. A host launch's environment is
// the stream's, and the stream sees the launch complete when everything in it is.
//
// Here one host thread runs the whole tree inside the host launch's stream command: the graphs
// a kernel node launched fire-and-forget run once that node has finished, before the launching
// graph's next node (a schedule CUDA allows: nothing orders them against those nodes), and the
// tail launches after the environment.

// cudaGraphLaunch's device-side launch modes (cuda_device_runtime_api.h).
constexpr uint64_t kTailLaunch = 0x0100000000000000ull;
constexpr uint64_t kFireAndForget = 0x0200000000000000ull;
constexpr uint64_t kSiblingLaunch = 0x0300000000000000ull;
// "A graph can have up to 120 total fire-and-forget graphs during the course of its execution"
// and "up to 255 pending tail launches".
constexpr uint32_t kMaxFireAndForget = 120;
constexpr size_t kMaxPendingTails = 255;
// cudaError_t answers.
constexpr uint32_t kCudaInvalidValue = 1, kCudaLaunchPendingCountExceeded = 69,
                   kCudaInvalidResourceHandle = 400;

// One graph queued to run in an environment: what its upload fixed.
struct QueuedGraph {
  const GraphExec* exec = nullptr;
  std::shared_ptr<const LaunchPlan> plan;
};

// What a host launch shares with the graphs launched inside it: a device graph may not be
// launched again from the device while a launch of it runs or waits to run.
struct LaunchTree {
  std::mutex mutex;
  std::set<const GraphExec*> active;
};

class GraphEnvironment final : public backends::RunningGraph {
 public:
  // `exec` null: the stream environment of a host launch (it runs no kernels).
  GraphEnvironment(LaunchTree& tree, GraphEnvironment* parent, const GraphExec* exec,
                   ConditionTable* conditions)
      : tree_(tree), parent_(parent), exec_(exec), conditions_(conditions) {}

  bool setCondition(uint64_t handle, uint32_t value) override {
    return conditions_ != nullptr && conditions_->set(handle, value);
  }
  uint64_t currentGraphExec() const override {
    return exec_ != nullptr && exec_->deviceLaunchable() ? reinterpret_cast<uintptr_t>(exec_) : 0;
  }
  uint32_t launchGraph(uint64_t graphExec, uint64_t stream) override;

  LaunchTree& tree() { return tree_; }
  // The graphs launched into this environment since the last call.
  std::vector<QueuedGraph> takeChildren() {
    std::lock_guard lock(tree_.mutex);
    return std::exchange(children_, {});
  }
  std::vector<QueuedGraph> takeTails() {
    std::lock_guard lock(tree_.mutex);
    return std::exchange(tails_, {});
  }

 private:
  // Logs why a launch was refused (the first time in this environment) and answers `error`.
  uint32_t refuse(uint32_t error, const std::string& why) {
    if (!refusalLogged_.exchange(true))
      log::warning("cudaGraphLaunch from device code refused: " + why);
    return error;
  }

  LaunchTree& tree_;
  GraphEnvironment* parent_;
  const GraphExec* exec_;
  ConditionTable* conditions_;
  std::vector<QueuedGraph> children_, tails_;  // under tree_.mutex
  uint32_t fireAndForgetLaunches_ = 0;
  bool selfTailQueued_ = false;
  std::atomic<bool> refusalLogged_{false};
};

uint32_t GraphEnvironment::launchGraph(uint64_t graphExec, uint64_t stream) {
  if (stream != kTailLaunch && stream != kFireAndForget && stream != kSiblingLaunch)
    return refuse(kCudaInvalidValue,
                  "a device graph is launched into cudaStreamGraphFireAndForget, "
                  "cudaStreamGraphTailLaunch or cudaStreamGraphFireAndForgetAsSibling only");
  const void* handle = reinterpret_cast<const void*>(static_cast<uintptr_t>(graphExec));
  const GraphExec* target = lookupHandle<GraphExec>(handle);
  if (target == nullptr) return refuse(kCudaInvalidResourceHandle, "not an executable graph");
  if (!target->deviceLaunchable())
    return refuse(kCudaInvalidValue,
                  "the graph was not instantiated with cudaGraphInstantiateFlagDeviceLaunch");
  std::shared_ptr<const LaunchPlan> plan = target->uploadedPlan();
  if (!plan)
    return refuse(kCudaInvalidValue,
                  "the graph was not uploaded (cudaGraphUpload, or a launch from the host)");
  std::lock_guard lock(tree_.mutex);
  if (stream == kTailLaunch) {
    if (tails_.size() >= kMaxPendingTails)
      return refuse(kCudaLaunchPendingCountExceeded, "more than 255 pending tail launches");
    // "A given graph can only have one self-launch enqueued at a time."
    if (target == exec_ && std::exchange(selfTailQueued_, true))
      return refuse(kCudaInvalidValue, "the graph already queued its own tail launch");
    tails_.push_back({target, std::move(plan)});
    return 0;
  }
  GraphEnvironment* into = stream == kSiblingLaunch && parent_ != nullptr ? parent_ : this;
  if (tree_.active.count(target) != 0)
    return refuse(kCudaInvalidValue, "a launch of the graph is running or waiting to run");
  if (into->fireAndForgetLaunches_ >= kMaxFireAndForget)
    return refuse(kCudaLaunchPendingCountExceeded,
                  "more than 120 fire-and-forget launches in one graph's execution");
  ++into->fireAndForgetLaunches_;
  tree_.active.insert(target);
  into->children_.push_back({target, std::move(plan)});
  return 0;
}

Status runEnvironment(LaunchTree& tree, GraphEnvironment* parent, QueuedGraph first,
                      ConditionTable* conditions);

// The graphs launched fire-and-forget into `env`, each in its own environment, until none is
// left (those graphs' sibling launches join the list).
Status runChildren(GraphEnvironment& env) {
  for (std::vector<QueuedGraph> children = env.takeChildren(); !children.empty();
       children = env.takeChildren())
    for (QueuedGraph& child : children)
      ROCUDA_TRY(runEnvironment(env.tree(), &env, std::move(child), nullptr));
  return Status::success();
}

// Runs `first` in an environment under `parent`, the graphs it launches fire-and-forget after
// the node that launched them, then its tail launches in order, depth first.
Status runEnvironment(LaunchTree& tree, GraphEnvironment* parent, QueuedGraph first,
                      ConditionTable* conditions) {
  std::deque<QueuedGraph> pending;
  pending.push_back(std::move(first));
  for (; !pending.empty(); conditions = nullptr) {  // only the host-launched graph has conditions
    QueuedGraph graph = std::move(pending.front());
    pending.pop_front();
    GraphEnvironment env(tree, parent, graph.exec, conditions);
    backends::RunningGraph* outer = std::exchange(activeGraph, &env);
    Status result = Status::success();
    for (const auto& step : graph.plan->steps) {
      result = step();
      if (result.ok()) result = runChildren(env);
      if (!result.ok()) break;
    }
    activeGraph = outer;
    {
      std::lock_guard lock(tree.mutex);
      tree.active.erase(graph.exec);
    }
    ROCUDA_TRY(result);
    std::vector<QueuedGraph> tails = env.takeTails();
    pending.insert(pending.begin(), std::make_move_iterator(tails.begin()),
                   std::make_move_iterator(tails.end()));
  }
  return Status::success();
}

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

backends::RunningGraph*& activeRunningGraph() { return activeGraph; }

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
  if (graph.hasMemoryNodes() || graph.hasConditionalNodes() || graph.hasDeviceUpdatableNodes()) {
    sourceCount_ = graph.executableCount();
    ++*sourceCount_;
  }
  forEachNodeWithin(*graph_, [&](const GraphNode& node) {
    const GraphNodeContent& content = node.content();
    if (node.type() != GraphNodeType::Kernel) return;
    instantiatedCalls_[&node] = content.deviceCalls;
    if (content.deviceCalls.launchesGraphs &&
        std::find(graphLaunchContexts_.begin(), graphLaunchContexts_.end(), content.context) ==
            graphLaunchContexts_.end())
      graphLaunchContexts_.push_back(content.context);
  });
}

void GraphExec::forgetInstantiatedCalls(const Graph& graph) {
  forEachNodeWithin(graph, [&](const GraphNode& node) { instantiatedCalls_.erase(&node); });
}

GraphUpdateResult GraphExec::kernelMayBecome(const GraphNode& node,
                                             const GraphNodeContent& now) const {
  // Nodes of a child graph an update brought in were not there at instantiation: as they are.
  auto original = instantiatedCalls_.find(&node);
  const GraphNodeContent::DeviceRuntimeCalls& was =
      original != instantiatedCalls_.end() ? original->second : node.content().deviceCalls;
  const GraphNodeContent::DeviceRuntimeCalls& will = now.deviceCalls;
  if ((!was.launchesGrids && will.launchesGrids) ||
      (!was.updatesGraphNodes && will.updatesGraphNodes))
    return GraphUpdateResult::UnsupportedFunctionChange;
  if (!was.launchesGraphs && will.launchesGraphs && !deviceLaunchable() &&
      std::find(graphLaunchContexts_.begin(), graphLaunchContexts_.end(), now.context) ==
          graphLaunchContexts_.end())
    return GraphUpdateResult::UnsupportedFunctionChange;
  return GraphUpdateResult::Success;
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
  if (deviceLaunchable()) {  // a host launch uploads the graph
    std::lock_guard lock(uploadMutex_);
    uploaded_ = plan;
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
      [plan, conditions, userObjects, self = this]() mutable -> Status {
        conditions->applyDefaults(false);  // CU_GRAPH_COND_ASSIGN_DEFAULT, in stream order
        // The graph runs in an environment under the stream's, with the graphs its kernels
        // launch from the device (the graph itself is one of those that may not be launched
        // again from the device while it runs).
        LaunchTree tree;
        tree.active.insert(self);
        GraphEnvironment stream(tree, nullptr, nullptr, nullptr);
        Status result = runEnvironment(tree, &stream, {self, plan}, conditions.get());
        if (result.ok()) result = runChildren(stream);
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

void GraphExec::upload() {
  if (!deviceLaunchable()) return;
  auto plan = std::make_shared<LaunchPlan>();
  {
    std::lock_guard lock(graphMutex());
    planGraph(*graph_, order_, *plan, conditions_.get());
  }
  std::lock_guard lock(uploadMutex_);
  uploaded_ = std::move(plan);
}

std::shared_ptr<const LaunchPlan> GraphExec::uploadedPlan() const {
  std::lock_guard lock(uploadMutex_);
  return uploaded_;
}

GraphUpdateResult GraphExec::update(const Graph& graph, const GraphNode** errorNode,
                                    const GraphNode** errorFrom, const NodeUpdateCheck& check) {
  std::lock_guard lock(graphMutex());
  *errorNode = nullptr;
  *errorFrom = nullptr;
  // "Neither hGraph nor hGraphExec may contain device-updatable kernel nodes."
  if (graph_->hasDeviceUpdatableNodes() || graph.hasDeviceUpdatableNodes())
    return GraphUpdateResult::NotSupported;
  NodeUpdateCheck rules = [&](const GraphNode& instantiated, const GraphNode& now) {
    if (instantiated.type() == GraphNodeType::Kernel)
      if (GraphUpdateResult kept = kernelMayBecome(instantiated, now.content());
          kept != GraphUpdateResult::Success)
        return kept;
    return check ? check(instantiated, now) : GraphUpdateResult::Success;
  };
  GraphUpdateResult result = compareGraphs(*graph_, graph, errorNode, errorFrom, rules);
  if (result != GraphUpdateResult::Success) return result;
  std::vector<GraphNode*> mine = graph_->nodes(), theirs = graph.nodes();
  for (size_t i = 0; i < mine.size(); ++i) {
    GraphNodeContent& target = mine[i]->content();
    const GraphNodeContent& source = theirs[i]->content();
    target.name = source.name;
    target.work = source.work;
    target.params = source.params;
    target.transfer = source.transfer;
    target.deviceCalls = source.deviceCalls;
    target.event = source.event;
    if (source.child) {
      if (target.child) forgetInstantiatedCalls(*target.child);
      target.child = source.child->clone(&fromOriginal_);
      target.child->setEmbedded(true);
    }
    if (mine[i]->type() == GraphNodeType::Conditional) {
      target.conditionHandle = source.conditionHandle;
      for (const auto& body : target.bodies) forgetInstantiatedCalls(*body);
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
