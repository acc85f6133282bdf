#include "core/graph.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::core {
namespace {

// Owns every live application-visible graph and executable graph; a handle is valid while it is
// in here. Live nodes and user objects are tracked for handle validation.
struct GraphRegistry {
  std::mutex mutex;
  std::unordered_map<const Object*, std::unique_ptr<Object>> live;
  std::unordered_set<const GraphNode*> nodes;
  std::unordered_set<const UserObject*> userObjects;
  // Graph allocations by address, and the figures per device.
  std::unordered_map<const void*, std::weak_ptr<GraphAllocation>> allocations;
  std::unordered_map<const Device*, GraphMemoryFigures> figures;
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

void trackNode(const GraphNode* node, bool live) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  if (live)
    r.nodes.insert(node);
  else
    r.nodes.erase(node);
}

std::atomic<uint64_t> captureIds{1};

Error invalid(const char* why) { return makeError(ErrorCode::InvalidValue, why); }

GraphNodeContent copyContent(const GraphNodeContent& from,
                             std::unordered_map<const GraphNode*, GraphNode*>* mapping) {
  GraphNodeContent to;
  to.name = from.name;
  to.work = from.work;
  to.params = from.params;
  to.context = from.context;
  to.event = from.event;
  to.allocation = from.allocation;
  to.freeAddress = from.freeAddress;
  to.enabled = from.enabled;
  to.transfer = from.transfer;
  to.deviceCalls = from.deviceCalls;
  if (from.child) {
    to.child = from.child->clone(mapping);
    to.child->setEmbedded(true);
  }
  to.conditionHandle = from.conditionHandle;
  to.conditionType = from.conditionType;
  for (const auto& body : from.bodies) {
    to.bodies.push_back(body->clone(mapping));
    to.bodies.back()->setEmbedded(true);
    to.bodyList.push_back(to.bodies.back().get());
  }
  return to;
}

std::atomic<uint64_t> conditionalHandleIds{1};

void releaseAll(std::map<UserObject*, unsigned>& objects) {
  for (auto& [object, count] : objects) (void)object->release(count);
  objects.clear();
}

}  // namespace

const char* graphNodeTypeName(GraphNodeType type) {
  static const char* const names[] = {
      "kernel",       "memcpy",       "memset",           "host",           "graph",     "empty",
      "wait_event",   "event_record", "ext_semas_signal", "ext_semas_wait", "mem_alloc", "mem_free",
      "batch_mem_op", "conditional"};
  auto index = static_cast<size_t>(type);
  return index < std::size(names) ? names[index] : "unknown";
}

std::recursive_mutex& graphMutex() {
  static std::recursive_mutex* mutex = new std::recursive_mutex();
  return *mutex;
}

GraphNode* lookupGraphNode(const void* handle) {
  if (handle == nullptr) return nullptr;
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.nodes.find(static_cast<const GraphNode*>(handle));
  return it == r.nodes.end() ? nullptr : const_cast<GraphNode*>(*it);
}

GraphNode::~GraphNode() { trackNode(this, false); }

// ---- Graph allocations ----

GraphAllocation::GraphAllocation(Context& owner, void* at, size_t size)
    : context(owner), address(at), bytes(size) {}

GraphAllocation::~GraphAllocation() {
  GraphRegistry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    r.allocations.erase(address);
    GraphMemoryFigures& f = r.figures[&context.device()];
    if (backed) f.reservedCurrent -= std::min<uint64_t>(f.reservedCurrent, bytes);
    if (counted) f.usedCurrent -= std::min<uint64_t>(f.usedCurrent, bytes);
  }
  (void)freeDevice(address);
}

Result<std::shared_ptr<GraphAllocation>> createGraphAllocation(Context& context, size_t bytes) {
  Result<void*> memory = allocateDevice(context, bytes);
  if (!memory) return memory.error();
  auto allocation = std::make_shared<GraphAllocation>(context, *memory, bytes);
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.allocations[*memory] = allocation;
  GraphMemoryFigures& f = r.figures[&context.device()];
  f.reservedCurrent += bytes;
  f.reservedHigh = std::max(f.reservedHigh, f.reservedCurrent);
  return allocation;
}

Status checkFreeNodeGraph(const Graph& graph, const void* address) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const GraphNode* other : r.nodes)
    if (other->type() == GraphNodeType::MemFree && other->content().freeAddress == address &&
        &other->graph() != &graph && !other->graph().embedded())
      return makeError(ErrorCode::InvalidValue, "the allocation is already freed in another graph");
  return Status::success();
}

std::shared_ptr<GraphAllocation> findGraphAllocation(const void* address) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.allocations.find(address);
  return it == r.allocations.end() ? nullptr : it->second.lock();
}

GraphMemoryFigures graphMemoryFigures(const Device& device) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.figures.find(&device);
  return it == r.figures.end() ? GraphMemoryFigures{} : it->second;
}

void resetGraphMemoryHigh(const Device& device, bool used, bool reserved) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  GraphMemoryFigures& f = r.figures[&device];
  if (used) f.usedHigh = f.usedCurrent;
  if (reserved) f.reservedHigh = f.reservedCurrent;
}

void releaseGraphAllocation(GraphAllocation& allocation) {
  std::lock_guard lock(graphMutex());
  allocation.outstanding = false;
}

namespace {
// A launch takes the allocation's memory: backed again if it was trimmed, and used by the graph
// (USED_MEM_CURRENT) until trimmed or destroyed, a free node's release included.
void countLaunchedLocked(GraphRegistry& r, GraphAllocation& allocation) {
  GraphMemoryFigures& f = r.figures[&allocation.context.device()];
  if (!allocation.backed) {
    allocation.backed = true;
    f.reservedCurrent += allocation.bytes;
    f.reservedHigh = std::max(f.reservedHigh, f.reservedCurrent);
  }
  if (!allocation.counted) {
    allocation.counted = true;
    f.usedCurrent += allocation.bytes;
    f.usedHigh = std::max(f.usedHigh, f.usedCurrent);
  }
}
}  // namespace

void countGraphAllocationLaunch(GraphAllocation& allocation) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  countLaunchedLocked(r, allocation);
}

// A launch marks the allocation used until a free node releases it (no trim takes it meanwhile).
void markGraphAllocationUse(GraphAllocation& allocation, bool use) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  allocation.inUse = use;
  if (use) countLaunchedLocked(r, allocation);  // again, should a trim have come in between
}

void trimGraphMemory(Device& device) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  GraphMemoryFigures& f = r.figures[&device];
  for (const auto& [address, weak] : r.allocations) {
    std::shared_ptr<GraphAllocation> allocation = weak.lock();
    if (!allocation || &allocation->context.device() != &device || allocation->inUse ||
        !allocation->backed)
      continue;
    if (!device.backend().discardPages(allocation->address, allocation->bytes)) continue;
    allocation->backed = false;
    f.reservedCurrent -= std::min<uint64_t>(f.reservedCurrent, allocation->bytes);
    if (allocation->counted) {
      allocation->counted = false;
      f.usedCurrent -= std::min<uint64_t>(f.usedCurrent, allocation->bytes);
    }
  }
}

// ---- Graph structure ----

Graph::~Graph() {
  releaseAll(userObjects_);
  nodes_.clear();
}

EdgeData GraphNode::edgeFrom(const GraphNode* dependency) const {
  for (size_t i = 0; i < dependencies_.size(); ++i)
    if (dependencies_[i] == dependency) return dependencyEdges_[i];
  return {};
}

Result<GraphNode*> Graph::addNode(GraphNodeType type, const std::vector<GraphNode*>& dependencies,
                                  GraphNodeContent content, const std::vector<EdgeData>& edges) {
  if (!edges.empty() && edges.size() != dependencies.size())
    return invalid("edge data for some dependencies only");
  for (size_t i = 0; i < dependencies.size(); ++i) {
    if (!owns(dependencies[i])) return invalid("a dependency is not a node of this graph");
    for (size_t j = 0; j < i; ++j)
      if (dependencies[j] == dependencies[i]) return invalid("duplicate dependency");
  }
  if (type == GraphNodeType::MemFree)
    for (const auto& other : nodes_)
      if (other->type_ == GraphNodeType::MemFree &&
          other->content_.freeAddress == content.freeAddress)
        return invalid("the allocation is already freed in this graph");
  auto node = std::make_unique<GraphNode>(*this, type);
  node->content_ = std::move(content);
  GraphNode* raw = node.get();
  for (size_t i = 0; i < dependencies.size(); ++i) {
    raw->dependencies_.push_back(dependencies[i]);
    raw->dependencyEdges_.push_back(edges.empty() ? EdgeData{} : edges[i]);
    dependencies[i]->dependents_.push_back(raw);
  }
  nodes_.push_back(std::move(node));
  trackNode(raw, true);
  return raw;
}

bool Graph::holdsNode(bool (*matches)(const GraphNode& node)) const {
  for (const auto& node : nodes_) {
    if (matches(*node)) return true;
    if (node->content_.child && node->content_.child->holdsNode(matches)) return true;
  }
  return false;
}

bool Graph::hasMemoryNodes() const {
  return holdsNode([](const GraphNode& node) {
    return node.type() == GraphNodeType::MemAlloc || node.type() == GraphNodeType::MemFree;
  });
}

bool Graph::hasConditionalNodes() const {
  return holdsNode([](const GraphNode& node) { return node.type() == GraphNodeType::Conditional; });
}

bool Graph::hasDeviceUpdatableNodes() const {
  return holdsNode([](const GraphNode& node) { return node.content().deviceUpdatable != nullptr; });
}

// ---- Device-updatable kernel nodes ----

namespace {

// The live nodes by handle, held weakly: a device-side update of a node whose graphs are gone
// finds nothing.
std::mutex deviceNodesMutex;
std::unordered_map<uint64_t, std::weak_ptr<DeviceUpdatableKernel>>& deviceNodes() {
  static auto* nodes = new std::unordered_map<uint64_t, std::weak_ptr<DeviceUpdatableKernel>>();
  return *nodes;
}

class CoreDeviceNodeUpdates final : public backends::DeviceNodeUpdates {
 public:
  static constexpr uint32_t kInvalidValue = 1;
  uint32_t setParam(uint64_t node, uint64_t offset, const void* value,
                    uint64_t size) const override {
    auto target = lookupDeviceUpdatableKernel(node);
    return target ? target->setParam(offset, value, size) : kInvalidValue;
  }
  uint32_t setEnabled(uint64_t node, bool enabled) const override {
    auto target = lookupDeviceUpdatableKernel(node);
    if (!target) return kInvalidValue;
    target->setEnabled(enabled);
    return 0;
  }
  uint32_t setGridDim(uint64_t node, const std::array<uint32_t, 3>& grid) const override {
    auto target = lookupDeviceUpdatableKernel(node);
    return target ? target->setGridDim(grid) : kInvalidValue;
  }
};

}  // namespace

DeviceUpdatableKernel::DeviceUpdatableKernel() = default;

DeviceUpdatableKernel::~DeviceUpdatableKernel() {
  std::lock_guard lock(deviceNodesMutex);
  deviceNodes().erase(handle());
}

std::shared_ptr<DeviceUpdatableKernel> makeDeviceUpdatableKernel() {
  auto node = std::make_shared<DeviceUpdatableKernel>();
  std::lock_guard lock(deviceNodesMutex);
  deviceNodes()[node->handle()] = node;
  return node;
}

std::shared_ptr<DeviceUpdatableKernel> lookupDeviceUpdatableKernel(uint64_t handle) {
  std::lock_guard lock(deviceNodesMutex);
  auto it = deviceNodes().find(handle);
  return it == deviceNodes().end() ? nullptr : it->second.lock();
}

DeviceUpdatableKernel::State DeviceUpdatableKernel::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

void DeviceUpdatableKernel::reset(State state) {
  std::lock_guard lock(mutex_);
  state_ = std::move(state);
}

uint32_t DeviceUpdatableKernel::setParam(uint64_t offset, const void* value, uint64_t size) {
  std::lock_guard lock(mutex_);
  if (offset > state_.params.size() || size > state_.params.size() - offset ||
      (size > 0 && value == nullptr))
    return CoreDeviceNodeUpdates::kInvalidValue;
  if (size > 0) std::memcpy(state_.params.data() + offset, value, size);
  return 0;
}

void DeviceUpdatableKernel::setEnabled(bool enabled) {
  std::lock_guard lock(mutex_);
  state_.enabled = enabled;
}

uint32_t DeviceUpdatableKernel::setGridDim(const std::array<uint32_t, 3>& grid) {
  // CUDA's grid limits: x below 2^31, y and z at most 65535, none 0.
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > 0x7fffffffu || grid[1] > 65535 ||
      grid[2] > 65535)
    return CoreDeviceNodeUpdates::kInvalidValue;
  std::lock_guard lock(mutex_);
  state_.grid = grid;
  return 0;
}

const backends::DeviceNodeUpdates& deviceNodeUpdates() {
  static const CoreDeviceNodeUpdates updates;
  return updates;
}

Status Graph::addEdge(GraphNode* from, GraphNode* to, EdgeData edge) {
  if (!owns(from) || !owns(to)) return invalid("edge between nodes of another graph");
  if (from == to) return invalid("a node cannot depend on itself");
  if (std::find(to->dependencies_.begin(), to->dependencies_.end(), from) !=
      to->dependencies_.end())
    return invalid("the dependency already exists");
  to->dependencies_.push_back(from);
  to->dependencyEdges_.push_back(edge);
  from->dependents_.push_back(to);
  return Status::success();
}

Status Graph::removeEdge(GraphNode* from, GraphNode* to, EdgeData edge) {
  if (!owns(from) || !owns(to)) return invalid("edge between nodes of another graph");
  auto it = std::find(to->dependencies_.begin(), to->dependencies_.end(), from);
  if (it == to->dependencies_.end()) return invalid("no such dependency");
  size_t index = static_cast<size_t>(it - to->dependencies_.begin());
  if (to->dependencyEdges_[index] != edge) return invalid("the dependency has other edge data");
  to->dependencies_.erase(it);
  to->dependencyEdges_.erase(to->dependencyEdges_.begin() + static_cast<ptrdiff_t>(index));
  std::erase(from->dependents_, to);
  return Status::success();
}

void Graph::setEdgeData(const GraphNode* from, GraphNode* to, EdgeData edge) {
  for (size_t i = 0; owns(to) && i < to->dependencies_.size(); ++i)
    if (to->dependencies_[i] == from) to->dependencyEdges_[i] = edge;
}

Status Graph::destroyNode(GraphNode* node) {
  if (!owns(node)) return invalid("not a node of this graph");
  // "Device-updatable nodes cannot be removed from their graph via cuGraphDestroyNode."
  if (node->content_.deviceUpdatable) return invalid("a device-updatable node cannot be removed");
  for (GraphNode* dependency : node->dependencies_) std::erase(dependency->dependents_, node);
  for (GraphNode* dependent : node->dependents_) {
    auto& deps = dependent->dependencies_;
    size_t index = static_cast<size_t>(std::find(deps.begin(), deps.end(), node) - deps.begin());
    if (index == deps.size()) continue;
    deps.erase(deps.begin() + static_cast<ptrdiff_t>(index));
    dependent->dependencyEdges_.erase(dependent->dependencyEdges_.begin() +
                                      static_cast<ptrdiff_t>(index));
  }
  std::erase_if(nodes_, [node](const auto& owned) { return owned.get() == node; });
  return Status::success();
}

std::vector<GraphNode*> Graph::nodes() const {
  std::vector<GraphNode*> all;
  for (const auto& node : nodes_) all.push_back(node.get());
  return all;
}

std::vector<GraphNode*> Graph::rootNodes() const {
  std::vector<GraphNode*> roots;
  for (const auto& node : nodes_)
    if (node->dependencies_.empty()) roots.push_back(node.get());
  return roots;
}

std::vector<std::pair<GraphNode*, GraphNode*>> Graph::edges() const {
  std::vector<std::pair<GraphNode*, GraphNode*>> all;
  for (const auto& node : nodes_)
    for (GraphNode* dependency : node->dependencies_) all.emplace_back(dependency, node.get());
  return all;
}

std::vector<EdgeData> Graph::edgeData() const {
  std::vector<EdgeData> all;
  for (const auto& node : nodes_)
    all.insert(all.end(), node->dependencyEdges_.begin(), node->dependencyEdges_.end());
  return all;
}

size_t Graph::indexOf(const GraphNode* node) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == node) return i;
  return nodes_.size();
}

bool Graph::reaches(const GraphNode* from, const GraphNode* to) const {
  std::vector<const GraphNode*> pending{from};
  std::unordered_set<const GraphNode*> seen;
  while (!pending.empty()) {
    const GraphNode* node = pending.back();
    pending.pop_back();
    if (node == to) return true;
    if (!seen.insert(node).second) continue;
    for (const GraphNode* next : node->dependents_) pending.push_back(next);
  }
  return false;
}

std::vector<GraphNode*> Graph::topologicalOrder() const {
  // Kahn's algorithm in creation order; a cycle leaves nodes out (callers compare sizes).
  std::unordered_map<const GraphNode*, size_t> waiting;
  std::vector<GraphNode*> ready, order;
  for (const auto& node : nodes_) {
    waiting[node.get()] = node->dependencies_.size();
    if (node->dependencies_.empty()) ready.push_back(node.get());
  }
  for (size_t next = 0; next < ready.size(); ++next) {
    GraphNode* node = ready[next];
    order.push_back(node);
    for (GraphNode* dependent : node->dependents_)
      if (--waiting[dependent] == 0) ready.push_back(dependent);
  }
  return order;
}

std::unique_ptr<Graph> Graph::clone(
    std::unordered_map<const GraphNode*, GraphNode*>* mapping) const {
  auto copy = std::make_unique<Graph>();
  std::unordered_map<const GraphNode*, GraphNode*> local;
  for (const auto& node : nodes_) {
    Result<GraphNode*> added = copy->addNode(node->type_, {}, copyContent(node->content_, mapping));
    local[node.get()] = *added;
    copy->cloneOf_[node.get()] = *added;
  }
  for (const auto& node : nodes_)
    for (size_t i = 0; i < node->dependencies_.size(); ++i) {
      GraphNode* to = local[node.get()];
      GraphNode* from = local[node->dependencies_[i]];
      to->dependencies_.push_back(from);
      to->dependencyEdges_.push_back(node->dependencyEdges_[i]);
      from->dependents_.push_back(to);
    }
  for (auto& [object, count] : userObjects_) {
    object->retain(count);
    copy->userObjects_[object] += count;
  }
  copy->handles_ = handles_;
  copy->parent_ = parent_;
  for (const auto& node : copy->nodes_)
    for (const auto& body : node->content_.bodies) body->parent_ = copy.get();
  if (mapping != nullptr) mapping->insert(local.begin(), local.end());
  return copy;
}

GraphNode* Graph::findInClone(const GraphNode* original) const {
  auto it = cloneOf_.find(original);
  if (it == cloneOf_.end() || !owns(it->second)) return nullptr;
  return it->second;
}

// ---- Conditional handles and nodes ----

uint64_t Graph::createConditionalHandle(Context& context, uint32_t defaultValue,
                                        bool assignDefault) {
  ConditionalHandle handle;
  handle.id = conditionalHandleIds++;
  handle.defaultValue = defaultValue;
  handle.assignDefault = assignDefault;
  handle.context = &context;
  handles_.push_back(handle);
  return handle.id;
}

const ConditionalHandle* Graph::findConditionalHandle(uint64_t id) const {
  for (const Graph* graph = this; graph != nullptr; graph = graph->parent_)
    for (const ConditionalHandle& handle : graph->handles_)
      if (handle.id == id) return &handle;
  return nullptr;
}

Result<GraphNode*> addConditionalNode(Graph& graph, const std::vector<GraphNode*>& dependencies,
                                      uint64_t handle, ConditionalType type, unsigned count) {
  if (graph.findConditionalHandle(handle) == nullptr)
    return invalid("the conditional handle was not created on this graph or one enclosing it");
  bool sizeOk = (type == ConditionalType::While && count == 1) ||
                (type == ConditionalType::If && (count == 1 || count == 2)) ||
                (type == ConditionalType::Switch && count > 0);
  if (!sizeOk) return invalid("invalid number of conditional bodies for this node type");
  if (type != ConditionalType::If && type != ConditionalType::While &&
      type != ConditionalType::Switch)
    return invalid("unknown conditional node type");
  GraphNodeContent content;
  content.name = type == ConditionalType::If      ? "if"
                 : type == ConditionalType::While ? "while"
                                                  : "switch";
  content.conditionHandle = handle;
  content.conditionType = type;
  for (unsigned i = 0; i < count; ++i) {
    content.bodies.push_back(std::make_unique<Graph>());
    content.bodies.back()->setEmbedded(true);
    content.bodies.back()->setParent(&graph);
    content.bodyList.push_back(content.bodies.back().get());
  }
  return graph.addNode(GraphNodeType::Conditional, dependencies, std::move(content));
}

// ---- User objects ----

Status UserObject::release(unsigned count) {
  uint64_t held = references_.load();
  do {
    if (count > held) return invalid("more references released than held");
  } while (!references_.compare_exchange_weak(held, held - count));
  if (held - count != 0) return Status::success();
  {
    GraphRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    r.userObjects.erase(this);
  }
  if (destroy_ != nullptr) destroy_(pointer_);
  delete this;
  return Status::success();
}

UserObjectReferences::UserObjectReferences(const Graph& graph) {
  auto collect = [&](const Graph& g, auto& self) -> void {
    for (const auto& [object, count] : g.userObjects()) {
      object->retain(1);
      objects_.push_back(object);
    }
    for (const GraphNode* node : g.nodes()) {
      const GraphNodeContent& content = node->content();
      if (content.child) self(*content.child, self);
      for (const auto& body : content.bodies) self(*body, self);
    }
  };
  collect(graph, collect);
}

UserObjectReferences::~UserObjectReferences() {
  for (UserObject* object : objects_) (void)object->release(1);
}

UserObject* createUserObject(void* pointer, void (*destroy)(void*), unsigned references) {
  auto* object = new UserObject(pointer, destroy, references);
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.userObjects.insert(object);
  return object;
}

UserObject* lookupUserObject(const void* handle) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.userObjects.find(static_cast<const UserObject*>(handle));
  return it == r.userObjects.end() ? nullptr : const_cast<UserObject*>(*it);
}

// ---- Registry of application graphs ----

Graph* createGraph() { return adopt(std::make_unique<Graph>()); }

Graph* adoptGraph(std::unique_ptr<Graph> graph) { return adopt(std::move(graph)); }

std::unique_ptr<Graph> disownGraph(Graph* graph) {
  GraphRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.live.find(graph);
  if (it == r.live.end()) return nullptr;
  std::unique_ptr<Object> owned = std::move(it->second);
  r.live.erase(it);
  return std::unique_ptr<Graph>(static_cast<Graph*>(owned.release()));
}

Status destroyGraph(Graph* graph) {
  std::lock_guard lock(graphMutex());
  return release(graph);
}

namespace {

// Conditional nodes need a handle of the graph being instantiated, and their bodies (and graphs
// nested in them) hold only kernel, empty, child-graph, memset, memcpy and conditional nodes.
// Returns the offending node, if any.
const GraphNode* checkConditionals(const Graph& graph, bool inBody, const ConditionTable& table,
                                   std::string* why) {
  if (graph.topologicalOrder().size() != graph.size()) {
    *why = "a nested graph has a cycle";
    return graph.nodes().front();
  }
  for (const GraphNode* node : graph.nodes()) {
    GraphNodeType type = node->type();
    if (inBody && type != GraphNodeType::Kernel && type != GraphNodeType::Empty &&
        type != GraphNodeType::Graph && type != GraphNodeType::Memset &&
        type != GraphNodeType::Memcpy && type != GraphNodeType::Conditional) {
      *why = std::string("a conditional body cannot hold a ") + graphNodeTypeName(type) + " node";
      return node;
    }
    if (type == GraphNodeType::Conditional && table.slotOf(node->content().conditionHandle) < 0) {
      *why = "a conditional node's handle does not belong to the graph";
      return node;
    }
    if (node->content().child)
      if (const GraphNode* bad = checkConditionals(*node->content().child, inBody, table, why))
        return bad;
    for (const auto& body : node->content().bodies)
      if (const GraphNode* bad = checkConditionals(*body, true, table, why)) return bad;
  }
  return nullptr;
}

// The rules for graphs instantiated for device launch (cuGraphInstantiate): kernel, memcpy,
// memset and child-graph nodes only, copies between device memory and page-locked host memory
// (not CUDA arrays, not pageable memory), every node of one context. Returns the offending
// node, if any; counts the kernel, memcpy and memset nodes.
const GraphNode* checkDeviceLaunchable(const Graph& graph, const Context** context,
                                       size_t* workNodes, InstantiateFailure* failure,
                                       std::string* why) {
  constexpr uint8_t kArrayMemory = 3;  // CU_MEMORYTYPE_ARRAY
  constexpr uint8_t kHostMemory = 1;   // CU_MEMORYTYPE_HOST: without an owning context, pageable
  for (const GraphNode* node : graph.nodes()) {
    GraphNodeType type = node->type();
    const GraphNodeContent& content = node->content();
    if (type == GraphNodeType::Graph) {
      // A node inside names no handle the application holds: the child-graph node stands for it.
      if (content.child &&
          checkDeviceLaunchable(*content.child, context, workNodes, failure, why) != nullptr)
        return node;
      continue;
    }
    if (type != GraphNodeType::Kernel && type != GraphNodeType::Memcpy &&
        type != GraphNodeType::Memset) {
      *failure = InstantiateFailure::NodeOperationNotSupported;
      *why = std::string("a graph launched from the device cannot hold a ") +
             graphNodeTypeName(type) + " node";
      return node;
    }
    if (type == GraphNodeType::Kernel && content.deviceCalls.launchesGrids) {
      *failure = InstantiateFailure::NodeOperationNotSupported;
      *why =
          "a graph launched from the device cannot hold a kernel that launches grids itself "
          "(dynamic parallelism)";
      return node;
    }
    if (type == GraphNodeType::Memcpy && content.transfer &&
        (content.transfer->sourceType == kArrayMemory ||
         content.transfer->destinationType == kArrayMemory)) {
      *failure = InstantiateFailure::NodeOperationNotSupported;
      *why = "a graph launched from the device cannot copy to or from a CUDA array";
      return node;
    }
    if (type == GraphNodeType::Memcpy && content.transfer &&
        ((content.transfer->sourceType == kHostMemory &&
          content.transfer->sourceContext == nullptr) ||
         (content.transfer->destinationType == kHostMemory &&
          content.transfer->destinationContext == nullptr))) {
      *failure = InstantiateFailure::NodeOperationNotSupported;
      *why = "a graph launched from the device cannot copy to or from pageable host memory";
      return node;
    }
    if (content.context != nullptr) {
      if (*context != nullptr && *context != content.context) {
        *failure = InstantiateFailure::MultipleContexts;
        *why = "the nodes of a graph launched from the device must all be of one context";
        return node;
      }
      *context = content.context;
    }
    ++*workNodes;
  }
  return nullptr;
}

}  // namespace

// Edges may close a cycle (cuGraphAddDependencies allows it, as NVIDIA's does); instantiation
// refuses it, in the graph or any graph embedded in it. The result is a node of the graph on a
// cycle (or holding a graph with one), nullptr when there is none.
const GraphNode* nodeOnCycle(const Graph& graph) {
  std::vector<GraphNode*> order = graph.topologicalOrder();
  if (order.size() != graph.size()) {
    // Every node left out waits for another left out; walking back along such dependencies must
    // come round to a node seen before, which lies on a cycle.
    std::unordered_set<const GraphNode*> ordered(order.begin(), order.end()), seen;
    const GraphNode* node = nullptr;
    for (const GraphNode* candidate : graph.nodes())
      if (!ordered.count(candidate)) {
        node = candidate;
        break;
      }
    while (seen.insert(node).second) {
      for (const GraphNode* dependency : node->dependencies())
        if (!ordered.count(dependency)) {
          node = dependency;
          break;
        }
    }
    return node;
  }
  for (const GraphNode* node : graph.nodes()) {
    if (node->content().child && nodeOnCycle(*node->content().child)) return node;
    for (const auto& body : node->content().bodies)
      if (nodeOnCycle(*body)) return node;
  }
  return nullptr;
}

Result<GraphExec*> instantiateGraph(const Graph& graph, uint64_t flags, const GraphNode** errorNode,
                                    InstantiateFailure* failure) {
  std::lock_guard lock(graphMutex());
  InstantiateFailure ignored;
  if (failure == nullptr) failure = &ignored;
  *failure = InstantiateFailure::Error;
  if (const GraphNode* onCycle = nodeOnCycle(graph)) {
    if (errorNode != nullptr) *errorNode = onCycle;
    *failure = InstantiateFailure::InvalidStructure;
    return makeError(ErrorCode::InvalidValue, "the graph has a cycle");
  }
  if ((flags & 4u) != 0) {  // CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
    const Context* context = nullptr;
    size_t workNodes = 0;
    std::string why;
    if (const GraphNode* bad = checkDeviceLaunchable(graph, &context, &workNodes, failure, &why)) {
      if (errorNode != nullptr) *errorNode = bad;
      return makeError(ErrorCode::InvalidValue, why);
    }
    if (workNodes == 0) {
      *failure = InstantiateFailure::NodeOperationNotSupported;
      return makeError(ErrorCode::InvalidValue,
                       "a graph launched from the device needs a kernel, memcpy or memset node");
    }
  }
  // "Only one instantiation of the graph may exist at any point in time" (graphs with memory,
  // conditional or device-updatable nodes; cuGraphInstantiate documents
  // CUDA_ERROR_INVALID_VALUE).
  if ((graph.hasMemoryNodes() || graph.hasConditionalNodes() || graph.hasDeviceUpdatableNodes()) &&
      *graph.executableCount() > 0)
    return makeError(ErrorCode::InvalidValue,
                     "a graph with memory, conditional or device-updatable nodes has one "
                     "executable graph at a time");
  std::string why;
  if (const GraphNode* bad = checkConditionals(graph, false, ConditionTable(graph), &why)) {
    if (errorNode != nullptr) *errorNode = bad;
    return makeError(ErrorCode::InvalidValue, why);
  }
  return adopt(std::make_unique<GraphExec>(graph, flags));
}

Status destroyGraphExec(GraphExec* exec) {
  std::lock_guard lock(graphMutex());
  return release(exec);
}

uint64_t nextCaptureId() { return captureIds++; }

}  // namespace rocuda::core
