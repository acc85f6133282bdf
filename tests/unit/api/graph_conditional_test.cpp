// Conditional graph nodes through libcuda.so.1 (dlopen, cuGetProcAddress): IF, IF/ELSE, WHILE
// and SWITCH bodies chosen by values that kernels set with cudaGraphSetConditional, nested
// conditionals, CU_GRAPH_COND_ASSIGN_DEFAULT, per-exec condition state, clone, and the errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/cuda/graph_abi.h"
#include "rocuda/cuda_abi.h"

namespace rocuda::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

void* library() {
  static void* handle = dlopen(ROCUDA_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F proc(const char* name, int version) {
  static auto getProc = reinterpret_cast<GetProcAddress>(dlsym(library(), "cuGetProcAddress_v2"));
  void* pfn = nullptr;
  CUresult result = getProc(name, &pfn, version, 0, nullptr);
  EXPECT_EQ(result, CUDA_SUCCESS) << name;
  return reinterpret_cast<F>(pfn);
}

#define CU(name, ...) proc<CUresult (*)(__VA_ARGS__)>(#name, 13000)

// add_value: data[i] += value; set_cond: the condition := value; count_down: --*counter and the
// condition := (*counter != 0).
constexpr const char* kPtx = R"(
.version 8.0
.target sm_50
.address_size 64

.extern .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value);

.visible .entry add_value(.param .u64 data, .param .u32 value, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<9>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r8, [value];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  add.s32 %r7, %r6, %r8;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}

.visible .entry set_cond(.param .u64 handle, .param .u32 value)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [handle];
  ld.param.u32 %r1, [value];
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd1;
  .param .b32 param1;
  st.param.b32 [param1], %r1;
  call.uni cudaGraphSetConditional, (param0, param1);
  }
  ret;
}

.visible .entry count_down(.param .u64 counter, .param .u64 handle)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [counter];
  ld.param.u64 %rd2, [handle];
  cvta.to.global.u64 %rd3, %rd1;
  ld.global.u32 %r1, [%rd3];
  sub.s32 %r2, %r1, 1;
  st.global.u32 [%rd3], %r2;
  setp.ne.s32 %p1, %r2, 0;
  selp.u32 %r3, 1, 0, %p1;
  {
  .param .b64 param0;
  st.param.b64 [param0], %rd2;
  .param .b32 param1;
  st.param.b32 [param1], %r3;
  call.uni cudaGraphSetConditional, (param0, param1);
  }
  ret;
}
)";

constexpr uint32_t kN = 64;

class LibCudaConditional : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
  }
  void SetUp() override {
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module_, kPtx), CUDA_SUCCESS);
    auto get = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
    ASSERT_EQ(get(&add_, module_, "add_value"), CUDA_SUCCESS);
    ASSERT_EQ(get(&setCond_, module_, "set_cond"), CUDA_SUCCESS);
    ASSERT_EQ(get(&countDown_, module_, "count_down"), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data_, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&counter_, 4), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream_, 1), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(counter_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module_), CUDA_SUCCESS);
  }

  CUgraph newGraph() {
    CUgraph graph = nullptr;
    EXPECT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    return graph;
  }
  CUgraphConditionalHandle handle(CUgraph graph, unsigned value, unsigned flags) {
    CUgraphConditionalHandle h = 0;
    EXPECT_EQ(CU(cuGraphConditionalHandleCreate, CUgraphConditionalHandle*, CUgraph, CUcontext,
                 unsigned, unsigned)(&h, graph, context_, value, flags),
              CUDA_SUCCESS);
    return h;
  }
  CUgraphNode kernel(CUgraph graph, std::vector<CUgraphNode> deps, CUfunction f, void** params,
                     unsigned threads) {
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    p.kernel = {f, 1, 1, 1, threads, 1, 1, 0, params, nullptr, nullptr, nullptr};
    CUgraphNode node = nullptr;
    EXPECT_EQ(addNode(&node, graph, deps.data(), deps.size(), &p), CUDA_SUCCESS);
    return node;
  }
  CUgraphNode add(CUgraph graph, std::vector<CUgraphNode> deps, uint32_t value) {
    uint32_t n = kN;
    void* params[] = {&data_, &value, &n};
    return kernel(graph, std::move(deps), add_, params, kN);
  }
  CUgraphNode setCond(CUgraph graph, std::vector<CUgraphNode> deps, CUgraphConditionalHandle h,
                      uint32_t value) {
    void* params[] = {&h, &value};
    return kernel(graph, std::move(deps), setCond_, params, 1);
  }
  CUgraphNode countDown(CUgraph graph, std::vector<CUgraphNode> deps,
                        CUgraphConditionalHandle h) {
    void* params[] = {&counter_, &h};
    return kernel(graph, std::move(deps), countDown_, params, 1);
  }
  // A conditional node; its bodies are returned in `bodies`.
  CUresult conditional(CUgraphNode* node, CUgraph graph, std::vector<CUgraphNode> deps,
                       CUgraphConditionalHandle h, CUgraphConditionalNodeType type, unsigned size,
                       std::vector<CUgraph>* bodies) {
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    p.conditional.ctx = context_;
    CUresult result = addNode(node, graph, deps.data(), deps.size(), &p);
    if (result == CUDA_SUCCESS && bodies != nullptr)
      bodies->assign(p.conditional.phGraph_out, p.conditional.phGraph_out + size);
    return result;
  }
  CUgraphExec instantiate(CUgraph graph) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(
                  &exec, graph, 0),
              CUDA_SUCCESS);
    return exec;
  }
  void launch(CUgraphExec exec) {
    ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  }
  void setCounter(uint32_t value) {
    ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(counter_, &value, 4),
              CUDA_SUCCESS);
  }
  uint32_t counter() {
    uint32_t value = 0;
    EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, counter_, 4), CUDA_SUCCESS);
    return value;
  }
  // Every element of data_ equals `expected`.
  void expectData(uint32_t expected) {
    std::vector<uint32_t> out(kN);
    ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), data_, kN * 4),
              CUDA_SUCCESS);
    for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], expected) << "element " << i;
  }
  void destroy(CUgraph graph, std::vector<CUgraphExec> execs) {
    for (CUgraphExec exec : execs)
      EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  }

  using AddNodeFn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                 CUgraphNodeParams*);
  // The CUDA 12.2 form (without edge data).
  AddNodeFn addNode = proc<AddNodeFn>("cuGraphAddNode", 12020);
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction add_ = nullptr, setCond_ = nullptr, countDown_ = nullptr;
  CUdeviceptr data_ = 0, counter_ = 0;
  CUstream stream_ = nullptr;
};

TEST_F(LibCudaConditional, IfRunsItsBodyOnlyForANonZeroCondition) {
  for (uint32_t value : {0u, 1u, 7u}) {
    CUgraph graph = newGraph();
    CUgraphConditionalHandle h = handle(graph, value, CU_GRAPH_COND_ASSIGN_DEFAULT);
    std::vector<CUgraph> bodies;
    CUgraphNode node = nullptr;
    ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_IF, 1, &bodies), CUDA_SUCCESS);
    ASSERT_EQ(bodies.size(), 1u);
    ASSERT_NE(bodies[0], nullptr);
    add(bodies[0], {}, 5);
    add(graph, {node}, 1);  // after the conditional, in any case
    ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    CUgraphExec exec = instantiate(graph);
    launch(exec);
    expectData(value != 0 ? 6 : 1);
    destroy(graph, {exec});
  }
}

TEST_F(LibCudaConditional, IfElseFollowsAValueSetByAKernel) {
  for (uint32_t value : {0u, 3u}) {
    CUgraph graph = newGraph();
    CUgraphConditionalHandle h = handle(graph, 1, 0);
    CUgraphNode set = setCond(graph, {}, h, value);
    std::vector<CUgraph> bodies;
    CUgraphNode node = nullptr;
    ASSERT_EQ(conditional(&node, graph, {set}, h, CU_GRAPH_COND_TYPE_IF, 2, &bodies),
              CUDA_SUCCESS);
    ASSERT_EQ(bodies.size(), 2u);
    ASSERT_NE(bodies[0], bodies[1]);
    add(bodies[0], {}, 1);
    add(bodies[1], {}, 100);
    ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    CUgraphExec exec = instantiate(graph);
    launch(exec);
    expectData(value != 0 ? 1 : 100);
    destroy(graph, {exec});
  }
}

TEST_F(LibCudaConditional, WhileLoopsUntilAKernelClearsTheCondition) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle h = handle(graph, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> bodies;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_WHILE, 1, &bodies), CUDA_SUCCESS);
  CUgraphNode step = add(bodies[0], {}, 1);
  countDown(bodies[0], {step}, h);
  CUgraphExec exec = instantiate(graph);
  setCounter(5);
  launch(exec);
  expectData(5);
  EXPECT_EQ(counter(), 0u);
  // The condition ended at 0; ASSIGN_DEFAULT sets it to 1 again for the next launch.
  setCounter(3);
  launch(exec);
  expectData(8);
  EXPECT_EQ(counter(), 0u);
  destroy(graph, {exec});
}

TEST_F(LibCudaConditional, WhileWithAZeroConditionRunsNoIteration) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle h = handle(graph, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> bodies;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_WHILE, 1, &bodies), CUDA_SUCCESS);
  add(bodies[0], {}, 1);
  CUgraphExec exec = instantiate(graph);
  launch(exec);
  expectData(0);
  destroy(graph, {exec});
}

TEST_F(LibCudaConditional, SwitchRunsTheBodyOfTheValue) {
  for (uint32_t value : {0u, 2u, 3u, 100u}) {
    CUgraph graph = newGraph();
    CUgraphConditionalHandle h = handle(graph, 0, 0);
    CUgraphNode set = setCond(graph, {}, h, value);
    std::vector<CUgraph> bodies;
    CUgraphNode node = nullptr;
    ASSERT_EQ(conditional(&node, graph, {set}, h, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies),
              CUDA_SUCCESS);
    ASSERT_EQ(bodies.size(), 3u);
    add(bodies[0], {}, 1);
    add(bodies[1], {}, 10);
    add(bodies[2], {}, 100);
    ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    CUgraphExec exec = instantiate(graph);
    launch(exec);
    expectData(value == 0 ? 1 : value == 2 ? 100 : 0);
    destroy(graph, {exec});
  }
}

TEST_F(LibCudaConditional, NestedIfInsideAWhileBody) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle loop = handle(graph, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> outer;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, loop, CU_GRAPH_COND_TYPE_WHILE, 1, &outer),
            CUDA_SUCCESS);
  // A handle created on the body graph itself, read by an IF inside it.
  CUgraphConditionalHandle inner = handle(outer[0], 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> innerBodies;
  CUgraphNode ifNode = nullptr;
  ASSERT_EQ(conditional(&ifNode, outer[0], {}, inner, CU_GRAPH_COND_TYPE_IF, 1, &innerBodies),
            CUDA_SUCCESS);
  add(innerBodies[0], {}, 2);
  countDown(outer[0], {ifNode}, loop);
  CUgraphExec exec = instantiate(graph);
  setCounter(4);
  launch(exec);
  expectData(8);
  EXPECT_EQ(counter(), 0u);
  destroy(graph, {exec});
}

TEST_F(LibCudaConditional, WithoutAssignDefaultTheValuePersistsPerExec) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle h = handle(graph, 1, 0);
  std::vector<CUgraph> bodies;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_IF, 1, &bodies), CUDA_SUCCESS);
  add(bodies[0], {}, 1);
  setCond(graph, {node}, h, 0);  // after the IF: later launches of this exec skip the body
  CUgraphExec first = instantiate(graph);
  launch(first);
  launch(first);
  expectData(1);
  // One instantiation at a time: the next one, after the first is destroyed, has its own
  // condition, at the default again.
  ASSERT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(first), CUDA_SUCCESS);
  CUgraphExec second = instantiate(graph);
  launch(second);
  expectData(2);
  launch(second);
  expectData(2);
  destroy(graph, {second});

  // The same graph with ASSIGN_DEFAULT runs the body at every launch.
  graph = newGraph();
  h = handle(graph, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_IF, 1, &bodies), CUDA_SUCCESS);
  add(bodies[0], {}, 1);
  setCond(graph, {node}, h, 0);
  CUgraphExec exec = instantiate(graph);
  launch(exec);
  launch(exec);
  expectData(4);
  destroy(graph, {exec});
}

// "Cloning is not supported for graphs which contain ... conditional nodes", and a child graph
// "must not contain conditional nodes"; the graph itself runs, and prints its bodies.
TEST_F(LibCudaConditional, GraphsWithConditionalsAreNeitherClonedNorChildren) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle h = handle(graph, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> bodies;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_WHILE, 1, &bodies), CUDA_SUCCESS);
  CUgraphNode step = add(bodies[0], {}, 3);
  countDown(bodies[0], {step}, h);
  CUgraph clone = nullptr;
  EXPECT_EQ(CU(cuGraphClone, CUgraph*, CUgraph)(&clone, graph), CUDA_ERROR_NOT_SUPPORTED);
  CUgraph parent = newGraph();
  CUgraphNode child = nullptr;
  EXPECT_EQ(CU(cuGraphAddChildGraphNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUgraph)(&child, parent, nullptr, 0, graph),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(parent), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph);
  // "Only one instantiation of the graph may exist at any point in time".
  CUgraphExec second = nullptr;
  EXPECT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&second, graph, 0),
      CUDA_ERROR_INVALID_VALUE);
  setCounter(2);
  launch(exec);
  expectData(6);
  // The DOT output shows the body as a cluster.
  std::string path = "/tmp/rocuda_conditional_" + std::to_string(getpid()) + ".dot";
  ASSERT_EQ(CU(cuGraphDebugDotPrint, CUgraph, const char*, unsigned)(graph, path.c_str(), 0),
            CUDA_SUCCESS);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("while body 0"), std::string::npos) << text.str();
  std::remove(path.c_str());
  destroy(graph, {exec});
}

TEST_F(LibCudaConditional, ExecUpdateTakesTheNewBodiesAndHandles) {
  auto build = [&](uint32_t step, CUgraphConditionalNodeType type) {
    CUgraph graph = newGraph();
    CUgraphConditionalHandle h = handle(graph, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
    std::vector<CUgraph> bodies;
    CUgraphNode node = nullptr;
    EXPECT_EQ(conditional(&node, graph, {}, h, type, 1, &bodies), CUDA_SUCCESS);
    CUgraphNode added = add(bodies[0], {}, step);
    countDown(bodies[0], {added}, h);
    return graph;
  };
  CUgraph first = build(1, CU_GRAPH_COND_TYPE_WHILE), second = build(10, CU_GRAPH_COND_TYPE_WHILE);
  CUgraph other = build(1, CU_GRAPH_COND_TYPE_IF);
  CUgraphExec exec = instantiate(first);
  auto update = CU(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(update(exec, second, &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  setCounter(3);
  launch(exec);
  expectData(30);  // the second graph's body, looping on the second graph's handle
  EXPECT_EQ(update(exec, other, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_NE(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  destroy(first, {exec});
  destroy(second, {});
  destroy(other, {});
}

TEST_F(LibCudaConditional, CapturesIntoABodyGraph) {
  CUgraph graph = newGraph();
  CUgraphConditionalHandle h = handle(graph, 2, CU_GRAPH_COND_ASSIGN_DEFAULT);
  std::vector<CUgraph> bodies;
  CUgraphNode node = nullptr;
  ASSERT_EQ(conditional(&node, graph, {}, h, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies),
            CUDA_SUCCESS);
  CUstream capture = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&capture, 1), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamBeginCaptureToGraph, CUstream, CUgraph, const CUgraphNode*,
               const CUgraphEdgeData*, size_t, int)(capture, bodies[2], nullptr, nullptr, 0, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(data_, 42, kN, capture),
            CUDA_SUCCESS);
  CUgraph captured = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(capture, &captured), CUDA_SUCCESS);
  EXPECT_EQ(captured, bodies[2]);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(capture), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph);
  launch(exec);
  expectData(42);
  destroy(graph, {exec});
}

TEST_F(LibCudaConditional, KernelOutsideAGraphIgnoresTheCall) {
  CUgraphConditionalHandle h = 12345;
  uint32_t value = 1;
  void* params[] = {&h, &value};
  ASSERT_EQ(CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
               unsigned, unsigned, CUstream, void**, void**)(setCond_, 1, 1, 1, 1, 1, 1, 0,
                                                             stream_, params, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
}

TEST_F(LibCudaConditional, DocumentedErrors) {
  auto create = CU(cuGraphConditionalHandleCreate, CUgraphConditionalHandle*, CUgraph, CUcontext,
                   unsigned, unsigned);
  CUgraph graph = newGraph(), other = newGraph();
  CUgraphConditionalHandle h = 0;
  EXPECT_EQ(create(nullptr, graph, context_, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(&h, graph, context_, 0, 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(&h, nullptr, context_, 0, 0), CUDA_ERROR_INVALID_VALUE);
  CUgraphConditionalHandle mine = handle(graph, 0, 0), foreign = handle(other, 0, 0);
  EXPECT_NE(mine, foreign);
  CUgraphNode node = nullptr;
  EXPECT_EQ(conditional(&node, graph, {}, foreign, CU_GRAPH_COND_TYPE_IF, 1, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(conditional(&node, graph, {}, mine, CU_GRAPH_COND_TYPE_WHILE, 2, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(conditional(&node, graph, {}, mine, CU_GRAPH_COND_TYPE_IF, 3, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(conditional(&node, graph, {}, mine, CU_GRAPH_COND_TYPE_SWITCH, 0, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(conditional(&node, graph, {}, mine, static_cast<CUgraphConditionalNodeType>(9), 1,
                        nullptr),
            CUDA_ERROR_INVALID_VALUE);
  // A body may not hold event, host or memory nodes: instantiation names the node.
  std::vector<CUgraph> bodies;
  ASSERT_EQ(conditional(&node, graph, {}, mine, CU_GRAPH_COND_TYPE_IF, 1, &bodies), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, 0), CUDA_SUCCESS);
  CUgraphNode record = nullptr;
  ASSERT_EQ(CU(cuGraphAddEventRecordNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUevent)(&record, bodies[0], nullptr, 0, event),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  CUgraphNode errorNode = nullptr;
  char log[256] = {};
  auto instantiateWithLog = proc<CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t)>(
      "cuGraphInstantiate", 11000);
  EXPECT_EQ(instantiateWithLog(&exec, graph, &errorNode, log, sizeof log),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(errorNode, record);
  EXPECT_NE(std::string(log).find("conditional body"), std::string::npos) << log;
  // Conditional parameters cannot be changed once made.
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = mine;
  p.conditional.size = 1;
  EXPECT_EQ(CU(cuGraphNodeSetParams, CUgraphNode, CUgraphNodeParams*)(node, &p),
            CUDA_ERROR_INVALID_VALUE);
  // A body graph belongs to its node.
  EXPECT_NE(CU(cuGraphDestroy, CUgraph)(bodies[0]), CUDA_SUCCESS);
  destroy(graph, {});
  destroy(other, {});
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda
