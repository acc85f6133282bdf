// CUDA graphs: a graph is a DAG of nodes (kernel launches, copies, fills, host calls, child
// graphs, event record/wait, memory alloc/free, conditionals owning body graphs), built explicitly
// or recorded by stream capture.
// Each executable node carries the very closure the immediate path would have queued (arguments
// captured by value) plus an opaque copy of the API's parameters for the *GetParams queries.
// An executable graph is an instantiated deep copy, launched as one stream command that runs its
// nodes in a topological order (nodes without a dependency relation may run in any order).
//
// Thread safety: CUDA does not allow concurrent use of one graph; a single process-wide mutex
// (graphMutex()) still serialises every structural change and read, so that captures from
// several threads into one graph and launches during updates are safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/device_backend.h"
#include "core/object.h"
#include "support/result.h"

namespace rocuda::core {

class Completion;
class Context;
class Device;
class Event;
class Graph;
class Stream;
class UserObject;

// The values of CUgraphNodeType.
enum class GraphNodeType : uint8_t {
  Kernel = 0,
  Memcpy = 1,
  Memset = 2,
  Host = 3,
  Graph = 4,
  Empty = 5,
  WaitEvent = 6,
  EventRecord = 7,
  ExtSemasSignal = 8,
  ExtSemasWait = 9,
  MemAlloc = 10,
  MemFree = 11,
  BatchMemOp = 12,
  Conditional = 13
};
const char* graphNodeTypeName(GraphNodeType type);

// A device allocation made for a memory-allocation node; freed when the last node (or clone)
// that refers to it goes.
struct GraphAllocation {
  GraphAllocation(Context& context, void* address, size_t bytes);
  ~GraphAllocation();
  Context& context;
  void* address;
  size_t bytes;
  bool inUse = false;  // allocated by a launch and not yet freed by a free node
  // In call order (the host's view): a launch allocated it and no free node of that launch, no
  // later free node, cuMemFree or cuMemFreeAsync has freed it yet. A graph relaunched while its
  // allocation is outstanding fails unless it frees on launch (CUDA_GRAPH_INSTANTIATE_FLAG_
  // AUTO_FREE_ON_LAUNCH).
  bool outstanding = false;
  // Its pages are physical memory (RESERVED_MEM_CURRENT counts it): false once
  // cuDeviceGraphMemTrim gave them back, until a launch allocates it again.
  bool backed = true;
  // A launch has used its pages since they were last backed (USED_MEM_CURRENT counts it): memory
  // a free node released stays associated with the graph, for its next launch, until trimmed.
  bool counted = false;
};

// cuMemFree / cuMemFreeAsync of a graph allocation, at the call: no longer outstanding (the
// host's view; its use ends in the stream's order with markGraphAllocationUse(false)). It is
// released, not freed: its memory stays with the allocation node, which allocates the same
// address at every launch.
void releaseGraphAllocation(GraphAllocation& allocation);

// The values of CUgraphConditionalNodeType.
enum class ConditionalType : uint8_t { If = 0, While = 1, Switch = 2 };

// cuGraphConditionalHandleCreate: a condition variable of a graph. The handle value is unique in
// the process (clones keep it, so kernels that received it as an argument still name it).
struct ConditionalHandle {
  uint64_t id = 0;
  uint32_t defaultValue = 0;
  bool assignDefault = false;  // CU_GRAPH_COND_ASSIGN_DEFAULT: reset at every launch
  Context* context = nullptr;
};

// A device-updatable kernel node's launch (CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE): the
// parameter buffer, grid and enabled state that kernels change through the device runtime
// (backends::DeviceNodeUpdates) and that the node's launch reads each time it runs, so that an
// update reaches the node's next run, in this graph launch or a later one. The host's parameter
// calls set it again. Its address is the CUgraphDeviceNode handle; the node, its clones and
// executable copies share it.
class DeviceUpdatableKernel {
 public:
  struct State {
    std::vector<uint8_t> params;
    std::array<uint32_t, 3> grid{1, 1, 1};
    bool enabled = true;
  };
  DeviceUpdatableKernel();
  ~DeviceUpdatableKernel();
  DeviceUpdatableKernel(const DeviceUpdatableKernel&) = delete;
  DeviceUpdatableKernel& operator=(const DeviceUpdatableKernel&) = delete;

  uint64_t handle() const { return reinterpret_cast<uintptr_t>(this); }
  State state() const;
  void reset(State state);
  // cudaError_t answers: 1 (invalid value) for bytes past the buffer or an impossible grid.
  uint32_t setParam(uint64_t offset, const void* value, uint64_t size);
  void setEnabled(bool enabled);
  uint32_t setGridDim(const std::array<uint32_t, 3>& grid);

 private:
  mutable std::mutex mutex_;
  State state_;
};
// A new node state, known by its handle while it lives.
std::shared_ptr<DeviceUpdatableKernel> makeDeviceUpdatableKernel();
// The live node of that handle, or null (never dereferences an unknown value).
std::shared_ptr<DeviceUpdatableKernel> lookupDeviceUpdatableKernel(uint64_t handle);
// The core's answers to device code's node updates (LaunchConfig::nodeUpdates).
const backends::DeviceNodeUpdates& deviceNodeUpdates();

// What a node is, apart from its edges: copied by clone and instantiation.
struct GraphNodeContent {
  std::string name;                    // for logs and DOT output
  std::function<Status()> work;        // kernel/memcpy/memset/host/captured work; empty: no-op
  std::shared_ptr<const void> params;  // the API layer's parameter copy (opaque here)
  Context* context = nullptr;          // where the work runs (kernel, memcpy, memset, alloc)
  Event* event = nullptr;              // event record / wait nodes
  std::shared_ptr<GraphAllocation> allocation;  // memory alloc nodes
  void* freeAddress = nullptr;                  // memory free nodes
  std::unique_ptr<Graph> child;                 // child-graph nodes own their graph
  bool enabled = true;                          // cuGraphNodeSetEnabled (executable graphs)
  // Conditional nodes: the handle whose value selects a body, the kind, and the bodies (owned).
  uint64_t conditionHandle = 0;
  ConditionalType conditionType = ConditionalType::If;
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<Graph*> bodyList;  // the bodies' handles (CUDA_CONDITIONAL_NODE_PARAMS::phGraph_out)
  // Memcpy and memset nodes made from parameters (not captured ones): what cuGraphExecUpdate may
  // not change, a copy's operand memory types (CUmemorytype, unified resolved), the contexts
  // its operands' memory belongs to (null: not Rocuda's), a memset destination's kind of
  // allocation and a 2D memset's shape (pitch included).
  struct TransferShape {
    uint8_t sourceType = 0, destinationType = 0;
    size_t width = 0, height = 0, elementSize = 0, pitch = 0;
    const void* sourceContext = nullptr;
    const void* destinationContext = nullptr;
  };
  std::optional<TransferShape> transfer;
  // Kernel nodes made device-updatable: what device code changes (shared by clones).
  std::shared_ptr<DeviceUpdatableKernel> deviceUpdatable;
  // Kernel nodes: the device runtime's calls their kernel makes (KernelInfo): grids launched
  // (dynamic parallelism), graphs launched, device-updatable nodes updated.
  struct DeviceRuntimeCalls {
    bool launchesGrids = false;
    bool launchesGraphs = false;
    bool updatesGraphNodes = false;
  };
  DeviceRuntimeCalls deviceCalls;
};

// Whether an executable graph's memcpy or memset node instantiated with `instantiated` may take
// `now` (cuGraphExecUpdate and the executable-node setters): a copy keeps its operands' memory
// types, a 2D memset its shape; only its addresses and value change.
bool transferMayChange(GraphNodeType type, const GraphNodeContent::TransferShape& instantiated,
                       const GraphNodeContent::TransferShape& now);

// What an edge carries besides its ends (CUgraphEdgeData): the upstream node's port that
// triggers it (0 full completion; kernel nodes also 1 programmatic, 2 launch order), the
// downstream port (always 0) and the dependency type (0 default, 1 programmatic). Rocuda runs
// every edge as a full dependency: a programmatic one only lets the downstream kernel start
// earlier on a GPU, and cudaGridDependencySynchronize then returns at once.
struct EdgeData {
  uint8_t fromPort = 0, toPort = 0, type = 0;
  bool isDefault() const { return fromPort == 0 && toPort == 0 && type == 0; }
  bool operator==(const EdgeData&) const = default;
};

class GraphNode {
 public:
  GraphNode(Graph& graph, GraphNodeType type) : graph_(&graph), type_(type) {}
  ~GraphNode();

  Graph& graph() const { return *graph_; }
  GraphNodeType type() const { return type_; }
  GraphNodeContent& content() { return content_; }
  const GraphNodeContent& content() const { return content_; }
  const std::vector<GraphNode*>& dependencies() const { return dependencies_; }
  const std::vector<GraphNode*>& dependents() const { return dependents_; }
  // The data of each edge from dependencies()[i].
  const std::vector<EdgeData>& dependencyEdges() const { return dependencyEdges_; }
  // The data of the edge from `dependency` (default when there is none).
  EdgeData edgeFrom(const GraphNode* dependency) const;

 private:
  friend class Graph;
  Graph* graph_;
  GraphNodeType type_;
  GraphNodeContent content_;
  std::vector<GraphNode*> dependencies_;
  std::vector<EdgeData> dependencyEdges_;  // parallel to dependencies_
  std::vector<GraphNode*> dependents_;
};

// The live node at `handle`, or nullptr (never dereferences an unknown pointer).
GraphNode* lookupGraphNode(const void* handle);
std::recursive_mutex& graphMutex();

class Graph : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Graph;
  Graph() : Object(ObjectKind::Graph) {}
  ~Graph() override;

  // A node depending on `dependencies` (each a node of this graph, no duplicates), over edges
  // with `edges` (parallel to `dependencies`; empty: all default).
  Result<GraphNode*> addNode(GraphNodeType type, const std::vector<GraphNode*>& dependencies,
                             GraphNodeContent content = {},
                             const std::vector<EdgeData>& edges = {});

  // Edges. InvalidValue for nodes of another graph, a self edge, an existing edge (add), a
  // missing edge or one with other data (remove). An edge may close a cycle: instantiation
  // refuses the graph then.
  Status addEdge(GraphNode* from, GraphNode* to, EdgeData edge = {});
  Status removeEdge(GraphNode* from, GraphNode* to, EdgeData edge = {});
  // The data of the existing edge from `from` to `to` (a captured programmatic launch's).
  void setEdgeData(const GraphNode* from, GraphNode* to, EdgeData edge);
  Status destroyNode(GraphNode* node);

  size_t size() const { return nodes_.size(); }
  std::vector<GraphNode*> nodes() const;  // in creation order
  std::vector<GraphNode*> rootNodes() const;
  std::vector<std::pair<GraphNode*, GraphNode*>> edges() const;  // with edgeData()'s order
  std::vector<EdgeData> edgeData() const;
  // Handle of node `index` in creation order (0 when out of range).
  uintptr_t nodeHandle(size_t index) const {
    return index < nodes_.size() ? reinterpret_cast<uintptr_t>(nodes_[index].get()) : 0;
  }
  bool owns(const GraphNode* node) const { return node != nullptr && &node->graph() == this; }
  // Creation index of `node` (its position in nodes()).
  size_t indexOf(const GraphNode* node) const;
  bool reaches(const GraphNode* from, const GraphNode* to) const;
  // Nodes in an order where every node follows its dependencies.
  std::vector<GraphNode*> topologicalOrder() const;

  // A deep copy; `mapping` (optional) receives original -> copy for every node, children
  // included. The copy remembers its origin for findInClone.
  std::unique_ptr<Graph> clone(std::unordered_map<const GraphNode*, GraphNode*>* mapping) const;
  GraphNode* findInClone(const GraphNode* original) const;

  // User objects owned by the graph (cuGraphRetainUserObject): object -> references held.
  std::map<UserObject*, unsigned>& userObjects() { return userObjects_; }
  const std::map<UserObject*, unsigned>& userObjects() const { return userObjects_; }
  // The graph is embedded in a node (child graph): it cannot be destroyed on its own.
  bool embedded() const { return embedded_; }
  void setEmbedded(bool embedded) { embedded_ = embedded; }
  // Moved into a parent (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE): it cannot be instantiated, added
  // to another parent or used to update an executable graph on its own.
  bool moved() const { return moved_; }
  void setMoved() { moved_ = embedded_ = true; }
  // Whether the graph (or a graph embedded in it) holds memory allocation or free nodes: such a
  // graph cannot be cloned, lose nodes or edges, or have two executable graphs at once.
  bool hasMemoryNodes() const;
  // Whether it (or a graph embedded in it) holds conditional nodes: it cannot be cloned or
  // become a child graph.
  bool hasConditionalNodes() const;
  // Whether it (or a graph embedded in it) holds device-updatable kernel nodes: it has one
  // executable graph at a time.
  bool hasDeviceUpdatableNodes() const;
  // How many executable graphs instantiated from this graph exist (counted for graphs with
  // memory, conditional or device-updatable nodes only); shared so that an executable graph may
  // outlive its graph.
  const std::shared_ptr<int>& executableCount() const { return executableCount_; }

  // Conditional handles created on this graph; a conditional body knows its enclosing graph.
  uint64_t createConditionalHandle(Context& context, uint32_t defaultValue, bool assignDefault);
  const std::vector<ConditionalHandle>& conditionalHandles() const { return handles_; }
  void setConditionalHandles(std::vector<ConditionalHandle> handles) {
    handles_ = std::move(handles);
  }
  const Graph* parent() const { return parent_; }
  void setParent(const Graph* parent) { parent_ = parent; }
  // The handle `id` of this graph or of a graph enclosing it (nullptr when none).
  const ConditionalHandle* findConditionalHandle(uint64_t id) const;

 private:
  // Whether a node of the graph, or of a graph embedded in it, `matches` (the has*Nodes queries).
  bool holdsNode(bool (*matches)(const GraphNode& node)) const;

  std::vector<std::unique_ptr<GraphNode>> nodes_;
  std::unordered_map<const GraphNode*, GraphNode*> cloneOf_;  // original -> node of this graph
  std::map<UserObject*, unsigned> userObjects_;
  bool embedded_ = false;
  bool moved_ = false;
  std::shared_ptr<int> executableCount_ = std::make_shared<int>(0);
  std::vector<ConditionalHandle> handles_;
  const Graph* parent_ = nullptr;
};

// A conditional node with `count` empty bodies (InvalidValue for a bad size or a handle that is
// not `graph`'s or an enclosing graph's).
Result<GraphNode*> addConditionalNode(Graph& graph, const std::vector<GraphNode*>& dependencies,
                                      uint64_t handle, ConditionalType type, unsigned count);

// The condition values of one executable graph (every handle of the graph and its bodies and
// children). cudaGraphSetConditional reaches them through the launch that runs the kernel.
class ConditionTable {
 public:
  explicit ConditionTable(const Graph& graph);
  // False when `handle` is not a condition of the graph.
  bool set(uint64_t handle, uint32_t value);
  // The slot of `handle`, or -1.
  int slotOf(uint64_t handle) const;
  uint32_t value(int slot) const { return values_[slot].load(std::memory_order_acquire); }
  void applyDefaults(bool all);  // all: every handle (instantiation), else ASSIGN_DEFAULT ones

 private:
  void collect(const Graph& graph);
  std::vector<ConditionalHandle> handles_;
  std::unique_ptr<std::atomic<uint32_t>[]> values_;
};
// The graph launch running on this thread (null outside graph launches): kernel nodes hand it
// to their kernels (backends::LaunchConfig::graph).
backends::RunningGraph*& activeRunningGraph();

// cuUserObjectCreate: a reference-counted object whose destructor runs when the last reference
// (the application's or a graph's) goes.
class UserObject {
 public:
  UserObject(void* pointer, void (*destroy)(void*), unsigned references)
      : pointer_(pointer), destroy_(destroy), references_(references) {}
  void retain(unsigned count) { references_ += count; }
  // Drops `count` references; runs the destructor and deletes the object at zero.
  // InvalidValue when more references are released than held.
  Status release(unsigned count);

 private:
  void* pointer_;
  void (*destroy_)(void*);
  std::atomic<uint64_t> references_;
};
UserObject* createUserObject(void* pointer, void (*destroy)(void*), unsigned references);
// One reference to each user object of a graph and of its child graphs, held from construction
// to destruction (a graph launch's, so that the objects outlive the work that uses them).
class UserObjectReferences {
 public:
  explicit UserObjectReferences(const Graph& graph);
  ~UserObjectReferences();
  UserObjectReferences(const UserObjectReferences&) = delete;
  UserObjectReferences& operator=(const UserObjectReferences&) = delete;

 private:
  std::vector<UserObject*> objects_;
};
UserObject* lookupUserObject(const void* handle);

// Instantiation result of a node that cannot run (reported through hErrNode_out).
struct InstantiateError {
  Error error;
  const GraphNode* node = nullptr;
};

// Why instantiation failed, as CUgraphInstantiateResult numbers it.
enum class InstantiateFailure : uint8_t {
  Error = 1,
  InvalidStructure = 2,           // a cycle
  NodeOperationNotSupported = 3,  // for device launch
  MultipleContexts = 4,           // for device launch
};

// The values of CUgraphExecUpdateResult.
enum class GraphUpdateResult : uint8_t {
  Success = 0,
  Error = 1,
  TopologyChanged = 2,
  NodeTypeChanged = 3,
  FunctionChanged = 4,
  ParametersChanged = 5,
  NotSupported = 6,
  UnsupportedFunctionChange = 7,  // e.g. a kernel of another context
  AttributesChanged = 8,
};

// What the API layer checks of two corresponding nodes beyond the core's view (kernel launch
// attributes it keeps with the parameters): Success, or why the update is refused.
using NodeUpdateCheck =
    std::function<GraphUpdateResult(const GraphNode& instantiated, const GraphNode& now)>;

// What one launch of an executable graph runs (graph_exec.cpp).
struct LaunchPlan;

class GraphExec : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::GraphExec;
  GraphExec(const Graph& graph, uint64_t flags);
  ~GraphExec() override;

  size_t size() const { return order_.size(); }
  uint64_t flags() const { return flags_; }
  // Instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH: kernels may launch it.
  bool deviceLaunchable() const { return (flags_ & 4u) != 0; }
  // Queue the graph on `stream` (one command; runs asynchronously). Graphs that its kernels
  // launch from the device run inside the same command.
  Status launch(Stream& stream);
  // cuGraphUpload (and a host launch, implicitly): what a launch from the device runs from now
  // on is the graph as it is now (a later cuGraphExecUpdate takes effect there at the next
  // upload, as CUDA documents). Nothing to do for graphs not launchable from the device.
  void upload();
  // The uploaded graph (null before the first upload).
  std::shared_ptr<const LaunchPlan> uploadedPlan() const;
  // The executable copy of `node`, a node of the graph this was instantiated (or updated) from.
  GraphNode* execNode(const GraphNode* node) const;
  // cuGraphExecUpdate: take the parameters of `graph`, which must have this graph's topology.
  // On failure the exec is unchanged and `errorNode`/`errorFrom` name the culprit.
  GraphUpdateResult update(const Graph& graph, const GraphNode** errorNode,
                           const GraphNode** errorFrom, const NodeUpdateCheck& check = {});
  // Whether this graph's kernel node `node` may take `now`'s kernel (cuGraphExecUpdate and the
  // executable node setters), judged by its kernel at instantiation ("originally"): one that did
  // not use dynamic parallelism or update device-updatable nodes may not start to; one that did
  // not launch graphs from the device may start to only in a graph instantiated for device
  // launch or in a context whose kernels launched graphs at instantiation. Success or
  // UnsupportedFunctionChange.
  GraphUpdateResult kernelMayBecome(const GraphNode& node, const GraphNodeContent& now) const;

 private:
  // Host-side bookkeeping of the graph's allocations at a launch (GraphAllocation::outstanding).
  Status claimAllocations();
  // The nodes of `graph` (a child graph or body an update replaces) leave instantiatedCalls_.
  void forgetInstantiatedCalls(const Graph& graph);

  std::unique_ptr<Graph> graph_;
  std::unordered_map<const GraphNode*, GraphNode*> fromOriginal_;
  std::vector<GraphNode*> order_;
  uint64_t flags_;
  std::shared_ptr<ConditionTable> conditions_;
  std::shared_ptr<int> sourceCount_;  // the source graph's executableCount (hasMemoryNodes...)
  // The contexts of the kernel nodes that launched graphs from the device at instantiation, and
  // each kernel node's device runtime calls then (kernelMayBecome).
  std::vector<const Context*> graphLaunchContexts_;
  std::unordered_map<const GraphNode*, GraphNodeContent::DeviceRuntimeCalls> instantiatedCalls_;
  // "Only one instance of hGraphExec may be executing at a time": each launch, on whatever
  // stream, waits for the one before it.
  std::mutex launchMutex_;
  std::shared_ptr<Completion> lastLaunch_;
  mutable std::mutex uploadMutex_;
  std::shared_ptr<const LaunchPlan> uploaded_;
};

// Graphs and executable graphs live until destroyed (cuGraphDestroy / cuGraphExecDestroy).
Graph* createGraph();
Status destroyGraph(Graph* graph);
Graph* adoptGraph(std::unique_ptr<Graph> graph);  // a clone handed to the application
// The application's graph, taken over by a child-graph node (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE):
// its handle stays valid, owned by the node from now on. Null when `graph` is not registered.
std::unique_ptr<Graph> disownGraph(Graph* graph);
// Whether an ongoing stream capture records into `graph` (it may not be destroyed or lose nodes
// meanwhile).
bool graphBeingCaptured(const Graph* graph);
// Fails (with the node at fault and why) when the graph has a cycle or a node that cannot run,
// and, for device launch (flag 4), when it breaks one of the rules for device graphs: only
// kernel, memcpy (no CUDA arrays), memset and child-graph nodes, at least one of the first three,
// all of one context.
Result<GraphExec*> instantiateGraph(const Graph& graph, uint64_t flags = 0,
                                    const GraphNode** errorNode = nullptr,
                                    InstantiateFailure* failure = nullptr);
Status destroyGraphExec(GraphExec* exec);

// Memory of memory-allocation nodes on one device, of all its contexts
// (cuDeviceGetGraphMemAttribute).
struct GraphMemoryFigures {
  uint64_t usedCurrent = 0, usedHigh = 0, reservedCurrent = 0, reservedHigh = 0;
};
GraphMemoryFigures graphMemoryFigures(const Device& device);
void resetGraphMemoryHigh(const Device& device, bool used, bool reserved);
// The graph allocation that starts at `address` (nullptr when none).
std::shared_ptr<GraphAllocation> findGraphAllocation(const void* address);
// cuGraphAddMemFreeNode: "If the allocation is freed in the same graph, a free node cannot be
// added to another graph. If the allocation is freed in another graph, a free node can no longer
// be added to the owning graph": InvalidValue when one of the application's graphs other than
// `graph` (not a clone or child embedded in a node) frees `address` already.
Status checkFreeNodeGraph(const Graph& graph, const void* address);
Result<std::shared_ptr<GraphAllocation>> createGraphAllocation(Context& context, size_t bytes);
void markGraphAllocationUse(GraphAllocation& allocation, bool use);
// At cuGraphLaunch (the host's order): the launch's allocation nodes take their memory, which the
// graph memory attributes report at once.
void countGraphAllocationLaunch(GraphAllocation& allocation);
// cuDeviceGraphMemTrim: the pages of the device's graph allocations that no launch holds go back
// to the system (where the backend can give them back), their addresses kept for the next launch.
void trimGraphMemory(Device& device);

// ---- Stream capture ----

// One capture, shared by every stream taking part (the origin and the streams it forked into
// through events) and by the completions it hands out (a host wait on a captured operation is
// a synchronous call: it invalidates the capture).
struct CaptureState {
  Graph* graph = nullptr;
  bool ownsGraph = true;  // false for cuStreamBeginCaptureToGraph
  unsigned mode = 0;      // CUstreamCaptureMode
  uint64_t id = 0;
  Stream* origin = nullptr;
  uint64_t thread = 0;  // support::currentThread().serial of the thread that began it
  std::atomic<bool> invalidated{false};
  std::vector<Stream*> joined;  // streams other than the origin that joined
  // The last nodes of joined streams destroyed during the capture (checked as joined ones are).
  std::vector<std::vector<GraphNode*>> departed;
};
using CaptureStatePtr = std::shared_ptr<CaptureState>;

uint64_t nextCaptureId();

// Record `work` as a node of the capture of `stream` after the stream's capture dependencies;
// the node becomes the stream's only dependency.
Result<GraphNode*> recordCapturedNode(Stream& stream, const CaptureStatePtr& capture,
                                      std::string name, std::function<Status()> work);

// The same for a node whose content the caller built (memory alloc/free nodes of stream-ordered
// allocation in a capture). The caller holds graphMutex().
Result<GraphNode*> appendCapturedNode(Stream& stream, const CaptureStatePtr& capture,
                                      GraphNodeType type, GraphNodeContent content);

// Capture failures with no ErrorCode of their own (the API maps them to CUresult).
enum class CaptureFailure : uint8_t {
  None,
  NotCapturing,
  AlreadyCapturing,
  Unmatched,
  Unjoined,
  Invalidated,
  Isolation,
  Implicit,
  Unsupported,
  WrongThread
};

// Begin a capture on `stream` (into `graph`, or a new graph when null, after `dependencies`,
// nodes of `graph`).
CaptureFailure beginCapture(Stream& stream, unsigned mode, Graph* graph,
                            const std::vector<GraphNode*>& dependencies);
// End the capture begun on `stream`: the graph, or Unmatched (not the origin stream), Unjoined
// (a forked stream did not join back), Invalidated (the graph is then destroyed, if owned),
// WrongThread (a capture not begun in relaxed mode ended by another thread).
CaptureFailure endCapture(Stream& stream, Graph** graph);
// cuStreamDestroy of a stream in a capture: it leaves it (a destroyed origin invalidates and
// stops the capture; a joined stream's work must still join the origin before the end).
void leaveCapture(Stream& stream);
// cuStreamWaitEvent during capture: joins `stream` to the capture recorded in `event`, or adds
// the event's nodes to its dependencies. `joined` is false when the event was not recorded in a
// capture (the ordinary wait applies).
CaptureFailure joinCaptureThroughEvent(Stream& stream, Event& event, bool* joined);
// cuStreamUpdateCaptureDependencies: flags 0 adds, 1 replaces.
CaptureFailure updateCaptureDependencies(Stream& stream, const std::vector<GraphNode*>& nodes,
                                         bool replace);

// Capture modes: whether a potentially unsafe call (cuMemAlloc, synchronous copies...) made by
// the calling thread is prohibited by an active capture (global captures of any thread, this
// thread's own non-relaxed captures); such a call fails with StreamCaptureUnsupported and
// invalidates that capture.
unsigned exchangeThreadCaptureMode(unsigned mode);
Status checkUnsafeCall();

}  // namespace rocuda::core
