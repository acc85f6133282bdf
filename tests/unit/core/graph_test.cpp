// Core graphs: DAG structure and its errors, clone, instantiation and launch in dependency
// order, exec update, user objects, graph allocations, multi-stream capture and capture modes.
#include "core/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/stream.h"
#include "core_test_support.h"

namespace rocuda::core {
namespace {

// A node whose work appends `id` to `log`.
GraphNodeContent logging(std::vector<int>& log, std::mutex& mutex, int id) {
  GraphNodeContent content;
  content.name = "log " + std::to_string(id);
  content.work = [&log, &mutex, id] {
    std::lock_guard lock(mutex);
    log.push_back(id);
    return Status::success();
  };
  return content;
}

size_t position(const std::vector<int>& log, int id) {
  return static_cast<size_t>(std::find(log.begin(), log.end(), id) - log.begin());
}

TEST(Graph, EdgesRootsAndErrors) {
  Graph graph, other;
  GraphNode* a = *graph.addNode(GraphNodeType::Empty, {});
  GraphNode* b = *graph.addNode(GraphNodeType::Empty, {a});
  GraphNode* c = *graph.addNode(GraphNodeType::Empty, {});
  GraphNode* foreign = *other.addNode(GraphNodeType::Empty, {});
  EXPECT_EQ(graph.rootNodes(), (std::vector<GraphNode*>{a, c}));
  EXPECT_EQ(graph.edges().size(), 1u);
  EXPECT_EQ(lookupGraphNode(b), b);
  EXPECT_EQ(lookupGraphNode(reinterpret_cast<char*>(b) + 1), nullptr);

  // Dependencies from another graph and duplicates are refused.
  EXPECT_EQ(graph.addNode(GraphNodeType::Empty, {foreign}).error().code, ErrorCode::InvalidValue);
  EXPECT_FALSE(graph.addNode(GraphNodeType::Empty, {a, a}).ok());
  EXPECT_FALSE(graph.addEdge(a, foreign).ok());
  EXPECT_FALSE(graph.addEdge(a, a).ok());
  EXPECT_FALSE(graph.addEdge(a, b).ok());  // exists already
  ASSERT_TRUE(graph.addEdge(b, c).ok());
  EXPECT_TRUE(graph.reaches(a, c));
  // A cycle may be built; instantiation refuses it.
  ASSERT_TRUE(graph.addEdge(c, a).ok());
  InstantiateFailure failure = InstantiateFailure::Error;
  Result<GraphExec*> cyclic = instantiateGraph(graph, 0, nullptr, &failure);
  ASSERT_FALSE(cyclic.ok());
  EXPECT_EQ(failure, InstantiateFailure::InvalidStructure);
  ASSERT_TRUE(graph.removeEdge(c, a).ok());
  EXPECT_FALSE(graph.removeEdge(c, a).ok());
  ASSERT_TRUE(graph.removeEdge(b, c).ok());
  EXPECT_FALSE(graph.reaches(a, c));

  ASSERT_TRUE(graph.destroyNode(a).ok());
  EXPECT_EQ(lookupGraphNode(a), nullptr);
  EXPECT_TRUE(b->dependencies().empty());
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_FALSE(graph.destroyNode(foreign).ok());
}

TEST(Graph, CloneKeepsStructureAndFindsNodes) {
  Graph graph;
  GraphNode* a = *graph.addNode(GraphNodeType::Host, {});
  GraphNode* b = *graph.addNode(GraphNodeType::Empty, {a});
  auto child = std::make_unique<Graph>();
  (void)child->addNode(GraphNodeType::Empty, {});
  GraphNodeContent content;
  content.child = std::move(child);
  GraphNode* nested = *graph.addNode(GraphNodeType::Graph, {b}, std::move(content));

  auto copy = graph.clone(nullptr);
  ASSERT_EQ(copy->size(), 3u);
  GraphNode* b2 = copy->findInClone(b);
  ASSERT_NE(b2, nullptr);
  EXPECT_NE(b2, b);
  EXPECT_EQ(b2->type(), GraphNodeType::Empty);
  ASSERT_EQ(b2->dependencies().size(), 1u);
  EXPECT_EQ(b2->dependencies()[0], copy->findInClone(a));
  GraphNode* nested2 = copy->findInClone(nested);
  ASSERT_NE(nested2, nullptr);
  EXPECT_NE(nested2->content().child.get(), nested->content().child.get());
  EXPECT_EQ(nested2->content().child->size(), 1u);
  EXPECT_EQ(graph.findInClone(a), nullptr);  // not a clone
}

TEST(Graph, LaunchRunsNodesInDependencyOrder) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  std::vector<int> log;
  std::mutex mutex;
  Graph* graph = createGraph();
  // Created out of order: 1 must run before 2 and 3, 3 after 2; 4 is independent.
  GraphNode* n2 = *graph->addNode(GraphNodeType::Host, {}, logging(log, mutex, 2));
  GraphNode* n3 = *graph->addNode(GraphNodeType::Host, {n2}, logging(log, mutex, 3));
  (void)graph->addNode(GraphNodeType::Host, {}, logging(log, mutex, 4));
  GraphNode* n1 = *graph->addNode(GraphNodeType::Host, {}, logging(log, mutex, 1));
  ASSERT_TRUE(graph->addEdge(n1, n2).ok());
  ASSERT_TRUE(graph->addEdge(n1, n3).ok());
  Result<GraphExec*> exec = instantiateGraph(*graph);
  ASSERT_TRUE(exec.ok());
  for (int launch = 0; launch < 3; ++launch) ASSERT_TRUE((*exec)->launch(**stream).ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  ASSERT_EQ(log.size(), 12u);
  std::vector<int> first(log.begin(), log.begin() + 4);
  EXPECT_LT(position(first, 1), position(first, 2));
  EXPECT_LT(position(first, 2), position(first, 3));
  // A disabled node is skipped by later launches.
  exec.value()->execNode(n2)->content().enabled = false;
  log.clear();
  ASSERT_TRUE((*exec)->launch(**stream).ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(std::count(log.begin(), log.end(), 2), 0);
  EXPECT_EQ(log.size(), 3u);
  EXPECT_TRUE(destroyGraphExec(*exec).ok());
  EXPECT_FALSE(destroyGraphExec(*exec).ok());
  EXPECT_TRUE(destroyGraph(graph).ok());
  ASSERT_TRUE(context.destroyStream(*stream).ok());
}

TEST(Graph, UpdateNeedsTheSameTopology) {
  std::vector<int> log;
  std::mutex mutex;
  Graph graph;
  GraphNode* a = *graph.addNode(GraphNodeType::Host, {}, logging(log, mutex, 1));
  (void)graph.addNode(GraphNodeType::Host, {a}, logging(log, mutex, 2));
  GraphExec exec(graph, 0);

  Graph same;
  GraphNode* a2 = *same.addNode(GraphNodeType::Host, {}, logging(log, mutex, 10));
  GraphNode* b2 = *same.addNode(GraphNodeType::Host, {a2}, logging(log, mutex, 20));
  const GraphNode *errorNode = nullptr, *errorFrom = nullptr;
  EXPECT_EQ(exec.update(same, &errorNode, &errorFrom), GraphUpdateResult::Success);
  EXPECT_EQ(exec.execNode(b2)->content().name, "log 20");

  Graph typeChanged;
  GraphNode* t = *typeChanged.addNode(GraphNodeType::Host, {});
  GraphNode* t2 = *typeChanged.addNode(GraphNodeType::Empty, {t});
  EXPECT_EQ(exec.update(typeChanged, &errorNode, &errorFrom), GraphUpdateResult::NodeTypeChanged);
  EXPECT_EQ(errorNode, t2);

  Graph unlinked;
  (void)unlinked.addNode(GraphNodeType::Host, {});
  GraphNode* u2 = *unlinked.addNode(GraphNodeType::Host, {});
  EXPECT_EQ(exec.update(unlinked, &errorNode, &errorFrom), GraphUpdateResult::TopologyChanged);
  EXPECT_EQ(errorNode, u2);

  Graph smaller;
  (void)smaller.addNode(GraphNodeType::Host, {});
  EXPECT_EQ(exec.update(smaller, &errorNode, &errorFrom), GraphUpdateResult::TopologyChanged);
  EXPECT_EQ(exec.execNode(b2)->content().name, "log 20");  // unchanged by failed updates
}

int destroyed = 0;
void countDestroy(void* p) { destroyed += *static_cast<int*>(p); }

TEST(Graph, UserObjectsDieWithTheirLastReference) {
  destroyed = 0;
  int weight = 1;
  UserObject* object = createUserObject(&weight, countDestroy, 1);
  ASSERT_EQ(lookupUserObject(object), object);
  Graph* graph = createGraph();
  object->retain(1);
  graph->userObjects()[object] = 1;
  Result<GraphExec*> exec = instantiateGraph(*graph);  // takes its own reference
  ASSERT_TRUE(exec.ok());
  EXPECT_TRUE(object->release(1).ok());  // the application's
  EXPECT_TRUE(destroyGraph(graph).ok());
  EXPECT_EQ(destroyed, 0);
  EXPECT_TRUE(destroyGraphExec(*exec).ok());
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(lookupUserObject(object), nullptr);

  UserObject* two = createUserObject(&weight, countDestroy, 2);
  EXPECT_FALSE(two->release(3).ok());  // more than held
  EXPECT_TRUE(two->release(2).ok());
  EXPECT_EQ(destroyed, 2);
}

TEST(Graph, AllocationNodesReportFigures) {
  Context& context = testing::primaryContext();
  const Device& device = context.device();
  GraphMemoryFigures before = graphMemoryFigures(device);
  auto stream = context.createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  Graph* graph = createGraph();
  {
    auto allocation = createGraphAllocation(context, 4096);
    ASSERT_TRUE(allocation.ok());
    EXPECT_EQ(findGraphAllocation((*allocation)->address), *allocation);
    GraphNodeContent alloc;
    alloc.allocation = *allocation;
    GraphNode* a = *graph->addNode(GraphNodeType::MemAlloc, {}, std::move(alloc));
    GraphNodeContent release;
    release.freeAddress = (*allocation)->address;
    (void)graph->addNode(GraphNodeType::MemFree, {a}, std::move(release));
  }
  EXPECT_EQ(graphMemoryFigures(device).reservedCurrent, before.reservedCurrent + 4096);
  Result<GraphExec*> exec = instantiateGraph(*graph);
  ASSERT_TRUE((*exec)->launch(**stream).ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  GraphMemoryFigures after = graphMemoryFigures(device);
  // Allocated, then freed by the free node: released to the graph, whose memory it stays (for
  // its next launch) until trimmed or destroyed.
  EXPECT_EQ(after.usedCurrent, before.usedCurrent + 4096);
  EXPECT_GE(after.usedHigh, before.usedCurrent + 4096);
  trimGraphMemory(context.device());
  EXPECT_EQ(graphMemoryFigures(device).usedCurrent, before.usedCurrent);
  resetGraphMemoryHigh(device, true, false);
  EXPECT_EQ(graphMemoryFigures(device).usedHigh, graphMemoryFigures(device).usedCurrent);
  EXPECT_TRUE(destroyGraphExec(*exec).ok());
  EXPECT_TRUE(destroyGraph(graph).ok());
  // The stream's worker may still hold the finished launch's plan for a moment.
  for (int i = 0; i < 200 && graphMemoryFigures(device).reservedCurrent != before.reservedCurrent;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(graphMemoryFigures(device).reservedCurrent, before.reservedCurrent);
  ASSERT_TRUE(context.destroyStream(*stream).ok());
}

TEST(GraphCapture, ForkAndJoinThroughEvents) {
  Context& context = testing::primaryContext();
  Stream* origin = *context.createStream(1, 0);
  Stream* side = *context.createStream(1, 0);
  Event* fork = *context.createEvent(0);
  Event* join = *context.createEvent(0);
  auto noop = [] { return Status::success(); };
  ASSERT_EQ(beginCapture(*origin, 0, nullptr, {}), CaptureFailure::None);
  EXPECT_EQ(beginCapture(*origin, 0, nullptr, {}), CaptureFailure::AlreadyCapturing);
  ASSERT_TRUE(context.enqueue(*origin, "kernel first", noop).ok());
  ASSERT_TRUE(fork->record(*origin).ok());
  bool joined = false;
  ASSERT_EQ(joinCaptureThroughEvent(*side, *fork, &joined), CaptureFailure::None);
  EXPECT_TRUE(joined);
  ASSERT_NE(side->capture(), nullptr);
  ASSERT_TRUE(context.enqueue(*side, "memset side", noop).ok());
  ASSERT_TRUE(context.enqueue(*origin, "kernel main", noop).ok());
  // Ending on the side stream is unmatched; without the join the capture is unjoined.
  Graph* graph = nullptr;
  ASSERT_TRUE(join->record(*side).ok());
  ASSERT_EQ(joinCaptureThroughEvent(*origin, *join, &joined), CaptureFailure::None);
  EXPECT_EQ(origin->captureDependencies().size(), 2u);
  ASSERT_TRUE(context.enqueue(*origin, "kernel last", noop).ok());
  ASSERT_EQ(endCapture(*origin, &graph), CaptureFailure::None);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(side->capture(), nullptr);
  ASSERT_EQ(graph->size(), 4u);
  std::vector<GraphNode*> nodes = graph->nodes();
  EXPECT_EQ(nodes[0]->type(), GraphNodeType::Kernel);
  EXPECT_EQ(nodes[1]->type(), GraphNodeType::Memset);
  EXPECT_EQ(nodes[1]->dependencies(), std::vector<GraphNode*>{nodes[0]});
  EXPECT_EQ(nodes[2]->dependencies(), std::vector<GraphNode*>{nodes[0]});
  EXPECT_EQ(nodes[3]->dependencies().size(), 2u);  // the join
  EXPECT_TRUE(destroyGraph(graph).ok());

  // A fork that never joins back.
  ASSERT_EQ(beginCapture(*origin, 0, nullptr, {}), CaptureFailure::None);
  ASSERT_TRUE(fork->record(*origin).ok());
  ASSERT_EQ(joinCaptureThroughEvent(*side, *fork, &joined), CaptureFailure::None);
  ASSERT_TRUE(context.enqueue(*side, "kernel lost", noop).ok());
  EXPECT_EQ(endCapture(*side, &graph), CaptureFailure::Unmatched);
  EXPECT_EQ(endCapture(*origin, &graph), CaptureFailure::Unjoined);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(side->capture(), nullptr);
  EXPECT_EQ(endCapture(*origin, &graph), CaptureFailure::NotCapturing);
  ASSERT_TRUE(context.destroyEvent(fork).ok());
  ASSERT_TRUE(context.destroyEvent(join).ok());
  ASSERT_TRUE(context.destroyStream(origin).ok());
  ASSERT_TRUE(context.destroyStream(side).ok());
}

TEST(GraphCapture, CaptureIntoAGraphAndUpdateDependencies) {
  Context& context = testing::primaryContext();
  Stream* stream = *context.createStream(1, 0);
  Graph* graph = createGraph();
  GraphNode* start = *graph->addNode(GraphNodeType::Empty, {});
  GraphNode* other = *graph->addNode(GraphNodeType::Empty, {});
  ASSERT_EQ(beginCapture(*stream, 0, graph, {start}), CaptureFailure::None);
  ASSERT_TRUE(context.enqueue(*stream, "kernel k", [] { return Status::success(); }).ok());
  GraphNode* captured = graph->nodes().back();
  EXPECT_EQ(captured->dependencies(), std::vector<GraphNode*>{start});
  ASSERT_EQ(updateCaptureDependencies(*stream, {other}, false), CaptureFailure::None);
  EXPECT_EQ(stream->captureDependencies(), (std::vector<GraphNode*>{captured, other}));
  ASSERT_EQ(updateCaptureDependencies(*stream, {start}, true), CaptureFailure::None);
  EXPECT_EQ(stream->captureDependencies(), std::vector<GraphNode*>{start});
  Graph* result = nullptr;
  ASSERT_EQ(endCapture(*stream, &result), CaptureFailure::None);
  EXPECT_EQ(result, graph);
  EXPECT_EQ(updateCaptureDependencies(*stream, {}, true), CaptureFailure::NotCapturing);
  EXPECT_TRUE(destroyGraph(graph).ok());
  ASSERT_TRUE(context.destroyStream(stream).ok());
}

TEST(GraphCapture, OnlyTheCapturingThreadEndsANonRelaxedCapture) {
  Context& context = testing::primaryContext();
  Stream* stream = *context.createStream(1, 0);
  Graph* graph = nullptr;
  CaptureFailure fromOther = CaptureFailure::None;
  ASSERT_EQ(beginCapture(*stream, 1, nullptr, {}), CaptureFailure::None);
  std::thread([&] { fromOther = endCapture(*stream, &graph); }).join();
  EXPECT_EQ(fromOther, CaptureFailure::WrongThread);
  ASSERT_EQ(endCapture(*stream, &graph), CaptureFailure::None);
  EXPECT_TRUE(destroyGraph(graph).ok());
  ASSERT_EQ(beginCapture(*stream, 2, nullptr, {}), CaptureFailure::None);  // relaxed
  std::thread([&] { fromOther = endCapture(*stream, &graph); }).join();
  EXPECT_EQ(fromOther, CaptureFailure::None);
  EXPECT_TRUE(destroyGraph(graph).ok());
  ASSERT_TRUE(context.destroyStream(stream).ok());
}

TEST(GraphCapture, ModesDecideWhichUnsafeCallsFail) {
  Context& context = testing::primaryContext();
  Stream* stream = *context.createStream(1, 0);
  EXPECT_TRUE(checkUnsafeCall().ok());
  // A global capture by this thread prohibits unsafe calls and is invalidated by one.
  ASSERT_EQ(beginCapture(*stream, 0, nullptr, {}), CaptureFailure::None);
  EXPECT_EQ(checkUnsafeCall().error().code, ErrorCode::StreamCaptureUnsupported);
  EXPECT_TRUE(stream->capture()->invalidated);
  Graph* graph = nullptr;
  EXPECT_EQ(endCapture(*stream, &graph), CaptureFailure::Invalidated);
  // A relaxed capture prohibits nothing.
  ASSERT_EQ(beginCapture(*stream, 2, nullptr, {}), CaptureFailure::None);
  EXPECT_TRUE(checkUnsafeCall().ok());
  ASSERT_EQ(endCapture(*stream, &graph), CaptureFailure::None);
  EXPECT_TRUE(destroyGraph(graph).ok());
  // A thread-local capture of this thread prohibits this thread only; a global capture of
  // another thread prohibits this thread unless it is relaxed.
  ASSERT_EQ(beginCapture(*stream, 1, nullptr, {}), CaptureFailure::None);
  bool otherOk = false;
  std::thread([&] { otherOk = checkUnsafeCall().ok(); }).join();
  EXPECT_TRUE(otherOk);
  EXPECT_FALSE(checkUnsafeCall().ok());
  EXPECT_EQ(endCapture(*stream, &graph), CaptureFailure::Invalidated);
  ASSERT_EQ(beginCapture(*stream, 0, nullptr, {}), CaptureFailure::None);
  bool relaxedOk = false;
  std::thread([&] {
    otherOk = checkUnsafeCall().ok();
    unsigned previous = exchangeThreadCaptureMode(2);
    relaxedOk = checkUnsafeCall().ok();
    exchangeThreadCaptureMode(previous);
  }).join();
  EXPECT_FALSE(otherOk);
  EXPECT_TRUE(relaxedOk);
  EXPECT_EQ(endCapture(*stream, &graph), CaptureFailure::Invalidated);
  ASSERT_TRUE(context.destroyStream(stream).ok());
}

}  // namespace
}  // namespace rocuda::core
