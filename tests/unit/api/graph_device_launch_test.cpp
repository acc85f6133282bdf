// Graphs launched from device code through libcuda.so.1 (dlopen, cuGetProcAddress): device-side
// cudaGraphLaunch's answers (launch modes, graphs not instantiated for device launch or not
// uploaded, unknown handles, kernels outside a graph, a graph launched while it runs, CUDA's limits
// of 120 fire-and-forget and 255 pending tail launches), what an upload fixes,
// %current_graph_exec, and the instantiation rules for device graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "api/cuda/graph_abi.h"
#include "libcuda_harness.h"

namespace rocuda::cuda {
namespace {

using testing::library;
using testing::proc;

// add_value: data[i] += value; launch_each: thread i launches graphs[i] into `stream` and
// stores the answer in answers[i]; current: *out = %current_graph_exec.
constexpr const char* kPtx = R"(
.version 8.0
.target sm_50
.address_size 64

.extern .func (.param .b32 r) cudaGraphLaunch(.param .b64 g, .param .b64 s);
.extern .func (.param .b32 r) cudaGraphKernelNodeSetParam(.param .b64 n, .param .b64 o,
  .param .b64 v, .param .b64 s);
.extern .func (.param .b32 r) cudaGraphKernelNodeSetEnabled(.param .b64 n, .param .b32 e);

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

.visible .entry launch_each(.param .u64 graphs, .param .u64 stream, .param .u64 answers,
                            .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [graphs];
  ld.param.u64 %rd2, [stream];
  ld.param.u64 %rd3, [answers];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd4, %r2, 8;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u64 %rd6, [%rd5];
  {
  .param .b64 g;
  st.param.b64 [g], %rd6;
  .param .b64 s;
  st.param.b64 [s], %rd2;
  .param .b32 r;
  call.uni (r), cudaGraphLaunch, (g, s);
  ld.param.b32 %r3, [r];
  }
  mul.wide.u32 %rd7, %r2, 4;
  add.s64 %rd8, %rd3, %rd7;
  st.global.u32 [%rd8], %r3;
DONE:
  ret;
}

.visible .entry update_node(.param .u64 node, .param .u64 value, .param .u32 enable,
                            .param .u64 answers)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [node];
  ld.param.u64 %rd2, [value];
  ld.param.u32 %r1, [enable];
  ld.param.u64 %rd3, [answers];
  {
  .param .b64 n;
  st.param.b64 [n], %rd1;
  .param .b64 o;
  st.param.b64 [o], 8;
  .param .b64 v;
  st.param.b64 [v], %rd2;
  .param .b64 s;
  st.param.b64 [s], 4;
  .param .b32 r;
  call.uni (r), cudaGraphKernelNodeSetParam, (n, o, v, s);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd3], %r2;
  {
  .param .b64 n;
  st.param.b64 [n], %rd1;
  .param .b32 e;
  st.param.b32 [e], %r1;
  .param .b32 r;
  call.uni (r), cudaGraphKernelNodeSetEnabled, (n, e);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd3+4], %r2;
  {
  .param .b64 n;
  st.param.b64 [n], %rd1;
  .param .b64 o;
  st.param.b64 [o], 16;
  .param .b64 v;
  st.param.b64 [v], %rd2;
  .param .b64 s;
  st.param.b64 [s], 4;
  .param .b32 r;
  call.uni (r), cudaGraphKernelNodeSetParam, (n, o, v, s);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd3+8], %r2;
  {
  .param .b64 n;
  st.param.b64 [n], 4660;
  .param .b32 e;
  st.param.b32 [e], 1;
  .param .b32 r;
  call.uni (r), cudaGraphKernelNodeSetEnabled, (n, e);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd3+12], %r2;
  ret;
}

.extern .func (.param .b32 r) __cudaCDP2LaunchDeviceV2(.param .b64 b, .param .b64 s);
// A kernel with dynamic parallelism: launches whatever parameter buffer it is given (never run).
.visible .entry launches_grids(.param .u64 buffer)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [buffer];
  {
  .param .b64 b;
  st.param.b64 [b], %rd1;
  .param .b64 s;
  st.param.b64 [s], 0;
  .param .b32 r;
  call.uni (r), __cudaCDP2LaunchDeviceV2, (b, s);
  }
  ret;
}

.visible .entry current(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, %current_graph_exec;
  st.global.u64 [%rd1], %rd2;
  ret;
}
)";

constexpr uint32_t kN = 64;
// cudaGraphLaunch's device-side launch modes.
constexpr uint64_t kTailLaunch = 0x0100000000000000ull;
constexpr uint64_t kFireAndForget = 0x0200000000000000ull;
constexpr uint64_t kSiblingLaunch = 0x0300000000000000ull;
// cudaError_t answers.
constexpr uint32_t kInvalidValue = 1, kPendingCountExceeded = 69, kInvalidResourceHandle = 400,
                   kNotPermitted = 800;
// CUgraphInstantiateResult values.
constexpr int kInstantiateSuccess = 0, kNodeOperationNotSupported = 3;

class LibCudaDeviceGraphs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU13(cuInit, unsigned)(0), CUDA_SUCCESS);
  }
  void SetUp() override {
    ASSERT_EQ(CU13(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuModuleLoadData, CUmodule*, const void*)(&module_, kPtx), CUDA_SUCCESS);
    auto get = CU13(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
    ASSERT_EQ(get(&add_, module_, "add_value"), CUDA_SUCCESS);
    ASSERT_EQ(get(&launchEach_, module_, "launch_each"), CUDA_SUCCESS);
    ASSERT_EQ(get(&current_, module_, "current"), CUDA_SUCCESS);
    ASSERT_EQ(get(&updateNode_, module_, "update_node"), CUDA_SUCCESS);
    ASSERT_EQ(get(&launchesGrids_, module_, "launches_grids"), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuMemAlloc, CUdeviceptr*, size_t)(&data_, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuMemAlloc, CUdeviceptr*, size_t)(&graphs_, 1024 * 8), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuMemAlloc, CUdeviceptr*, size_t)(&answers_, 1024 * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    ASSERT_EQ(CU13(cuStreamCreate, CUstream*, unsigned)(&stream_, 1), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUgraphExec exec : execs_)
      EXPECT_EQ(CU13(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
    for (CUgraph graph : graphs) EXPECT_EQ(CU13(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
    EXPECT_EQ(CU13(cuStreamDestroy, CUstream)(stream_), CUDA_SUCCESS);
    for (CUdeviceptr p : {data_, graphs_, answers_})
      EXPECT_EQ(CU13(cuMemFree, CUdeviceptr)(p), CUDA_SUCCESS);
    EXPECT_EQ(CU13(cuModuleUnload, CUmodule)(module_), CUDA_SUCCESS);
  }

  CUgraph newGraph() {
    CUgraph graph = nullptr;
    EXPECT_EQ(CU13(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    graphs.push_back(graph);
    return graph;
  }
  CUgraphNode kernel(CUgraph graph, CUfunction f, void** params, unsigned threads) {
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    p.kernel = {f, 1, 1, 1, threads, 1, 1, 0, params, nullptr, nullptr, nullptr};
    CUgraphNode node = nullptr;
    EXPECT_EQ(addNode(&node, graph, nullptr, 0, &p), CUDA_SUCCESS);
    return node;
  }
  CUgraphNode add(CUgraph graph, uint32_t value) {
    uint32_t n = kN;
    void* params[] = {&data_, &value, &n};
    return kernel(graph, add_, params, kN);
  }
  CUgraphExec instantiate(CUgraph graph, unsigned long long flags) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(CU13(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(
                  &exec, graph, flags),
              CUDA_SUCCESS);
    execs_.push_back(exec);
    return exec;
  }
  // A device graph adding `value` to data_, uploaded unless told otherwise.
  CUgraphExec deviceAdder(uint32_t value, bool upload = true, CUgraphNode* node = nullptr) {
    CUgraph graph = newGraph();
    CUgraphNode added = add(graph, value);
    if (node != nullptr) *node = added;
    CUgraphExec exec = instantiate(graph, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
    if (upload) {
      EXPECT_EQ(CU13(cuGraphUpload, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
    }
    return exec;
  }
  // A host graph whose kernel's threads launch `targets` (one each) into `mode`; launched once
  // and synchronized. The answers come back.
  std::vector<uint32_t> launchFromGraph(const std::vector<uint64_t>& targets, uint64_t mode) {
    EXPECT_EQ(CU13(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(graphs_, targets.data(),
                                                                   targets.size() * 8),
              CUDA_SUCCESS);
    uint32_t n = static_cast<uint32_t>(targets.size());
    void* params[] = {&graphs_, &mode, &answers_, &n};
    CUgraph graph = newGraph();
    kernel(graph, launchEach_, params, n);
    CUgraphExec exec = instantiate(graph, 0);
    EXPECT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
    EXPECT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
    std::vector<uint32_t> answers(n);
    EXPECT_EQ(CU13(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(answers.data(), answers_,
                                                             answers.size() * 4),
              CUDA_SUCCESS);
    return answers;
  }
  uint32_t data() {
    std::vector<uint32_t> out(kN);
    EXPECT_EQ(CU13(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), data_, kN * 4),
              CUDA_SUCCESS);
    for (uint32_t i = 1; i < kN; ++i) EXPECT_EQ(out[i], out[0]) << "element " << i;
    return out[0];
  }
  static uint64_t handleOf(CUgraphExec exec) { return reinterpret_cast<uintptr_t>(exec); }

  using AddNodeFn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                 CUgraphNodeParams*);
  AddNodeFn addNode = proc<AddNodeFn>("cuGraphAddNode", 12020);
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction add_ = nullptr, launchEach_ = nullptr, current_ = nullptr, updateNode_ = nullptr,
             launchesGrids_ = nullptr;
  CUdeviceptr data_ = 0, graphs_ = 0, answers_ = 0;
  CUstream stream_ = nullptr;
  std::vector<CUgraph> graphs;
  std::vector<CUgraphExec> execs_;
};

TEST_F(LibCudaDeviceGraphs, EachLaunchModeRunsTheGraph) {
  CUgraphExec adder = deviceAdder(1);
  for (uint64_t mode : {kFireAndForget, kTailLaunch, kSiblingLaunch})
    EXPECT_EQ(launchFromGraph({handleOf(adder)}, mode), std::vector<uint32_t>{0}) << mode;
  EXPECT_EQ(data(), 3u);
}

// What device-side cudaGraphLaunch refuses (nothing runs): another stream, a graph not
// instantiated for device launch or not uploaded, a handle that is no executable graph, and any
// launch from a kernel that does not run in a graph.
TEST_F(LibCudaDeviceGraphs, RefusedLaunchesRunNothing) {
  CUgraphExec adder = deviceAdder(1);
  EXPECT_EQ(launchFromGraph({handleOf(adder)}, 0), std::vector<uint32_t>{kInvalidValue});
  CUgraph hostGraph = newGraph();
  add(hostGraph, 1);
  CUgraphExec hostExec = instantiate(hostGraph, 0);
  EXPECT_EQ(launchFromGraph({handleOf(hostExec)}, kFireAndForget),
            std::vector<uint32_t>{kInvalidValue});
  CUgraphExec notUploaded = deviceAdder(1, false);
  EXPECT_EQ(launchFromGraph({handleOf(notUploaded)}, kTailLaunch),
            std::vector<uint32_t>{kInvalidValue});
  EXPECT_EQ(launchFromGraph({0x1234}, kFireAndForget),
            std::vector<uint32_t>{kInvalidResourceHandle});
  EXPECT_EQ(data(), 0u);
  // A host launch uploads the graph: the device may launch it afterwards.
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(notUploaded, stream_), CUDA_SUCCESS);
  EXPECT_EQ(launchFromGraph({handleOf(notUploaded)}, kTailLaunch), std::vector<uint32_t>{0});
  EXPECT_EQ(data(), 2u);
  // Outside a graph: cuLaunchKernel of the launching kernel.
  uint64_t target = handleOf(adder), mode = kFireAndForget;
  uint32_t n = 1;
  ASSERT_EQ(CU13(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(graphs_, &target, 8),
            CUDA_SUCCESS);
  void* params[] = {&graphs_, &mode, &answers_, &n};
  ASSERT_EQ(proc<testing::Launch>("cuLaunchKernel")(launchEach_, 1, 1, 1, 1, 1, 1, 0, stream_,
                                                    params, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  uint32_t answer = 0;
  ASSERT_EQ(CU13(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&answer, answers_, 4), CUDA_SUCCESS);
  EXPECT_EQ(answer, kNotPermitted);
  EXPECT_EQ(data(), 2u);
}

// "Launching a device graph from the device while a previous launch of the graph is running will
// result in an error, returning cudaErrorInvalidValue": two threads launch one graph
// fire-and-forget, one is refused. Tail launches of another graph may repeat.
TEST_F(LibCudaDeviceGraphs, AGraphRunsOnceAtATimeFromTheDevice) {
  CUgraphExec adder = deviceAdder(1);
  std::vector<uint32_t> answers =
      launchFromGraph({handleOf(adder), handleOf(adder)}, kFireAndForget);
  std::sort(answers.begin(), answers.end());
  EXPECT_EQ(answers, (std::vector<uint32_t>{0, kInvalidValue}));
  EXPECT_EQ(data(), 1u);
  EXPECT_EQ(launchFromGraph({handleOf(adder), handleOf(adder)}, kTailLaunch),
            (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(data(), 3u);
}

// "A graph can have up to 120 total fire-and-forget graphs during the course of its execution"
// and "up to 255 pending tail launches": the launch past each is refused with
// cudaErrorLaunchPendingCountExceeded.
TEST_F(LibCudaDeviceGraphs, FireAndForgetAndTailLaunchesHaveTheirLimits) {
  std::vector<uint64_t> targets;
  for (int i = 0; i < 121; ++i) targets.push_back(handleOf(deviceAdder(1)));
  std::vector<uint32_t> answers = launchFromGraph(targets, kFireAndForget);
  EXPECT_EQ(std::count(answers.begin(), answers.end(), 0u), 120);
  EXPECT_EQ(std::count(answers.begin(), answers.end(), kPendingCountExceeded), 1);
  EXPECT_EQ(data(), 120u);
  // The count starts again at the next launch of the launching graph.
  answers = launchFromGraph(std::vector<uint64_t>(256, targets[0]), kTailLaunch);
  EXPECT_EQ(std::count(answers.begin(), answers.end(), 0u), 255);
  EXPECT_EQ(std::count(answers.begin(), answers.end(), kPendingCountExceeded), 1);
  EXPECT_EQ(data(), 375u);
}

// Device graphs "must be re-uploaded to the device upon executable graph update in order for the
// changes to take effect": the device runs the uploaded parameters; the host launch the new ones.
TEST_F(LibCudaDeviceGraphs, AnUpdateTakesEffectOnTheDeviceAtTheNextUpload) {
  CUgraphNode node = nullptr;
  CUgraphExec adder = deviceAdder(1, true, &node);
  uint32_t ten = 10, n = kN;
  void* params[] = {&data_, &ten, &n};
  CUDA_KERNEL_NODE_PARAMS_v2 p{add_, 1, 1, 1, kN, 1, 1, 0, params, nullptr, nullptr, nullptr};
  ASSERT_EQ(CU13(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
                 const CUDA_KERNEL_NODE_PARAMS_v2*)(adder, node, &p),
            CUDA_SUCCESS);
  EXPECT_EQ(launchFromGraph({handleOf(adder)}, kFireAndForget), std::vector<uint32_t>{0});
  EXPECT_EQ(data(), 1u);
  ASSERT_EQ(CU13(cuGraphUpload, CUgraphExec, CUstream)(adder, stream_), CUDA_SUCCESS);
  EXPECT_EQ(launchFromGraph({handleOf(adder)}, kFireAndForget), std::vector<uint32_t>{0});
  EXPECT_EQ(data(), 11u);
}

// %current_graph_exec: the device graph running the kernel, whether the host or the device
// launched it; NULL in a host graph's kernel and outside graphs.
TEST_F(LibCudaDeviceGraphs, CurrentGraphExecNamesTheRunningDeviceGraph) {
  CUdeviceptr out = 0;
  ASSERT_EQ(CU13(cuMemAlloc, CUdeviceptr*, size_t)(&out, 8), CUDA_SUCCESS);
  void* params[] = {&out};
  auto read = [&] {
    uint64_t value = 0;
    EXPECT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
    EXPECT_EQ(CU13(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, out, 8), CUDA_SUCCESS);
    EXPECT_EQ(CU13(cuMemsetD32, CUdeviceptr, unsigned, size_t)(out, 0xffffffffu, 2), CUDA_SUCCESS);
    return value;
  };
  CUgraph deviceGraph = newGraph();
  kernel(deviceGraph, current_, params, 1);
  CUgraphExec device = instantiate(deviceGraph, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(device, stream_), CUDA_SUCCESS);
  EXPECT_EQ(read(), handleOf(device));
  EXPECT_EQ(launchFromGraph({handleOf(device)}, kFireAndForget), std::vector<uint32_t>{0});
  EXPECT_EQ(read(), handleOf(device));
  CUgraph hostGraph = newGraph();
  kernel(hostGraph, current_, params, 1);
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(instantiate(hostGraph, 0), stream_),
            CUDA_SUCCESS);
  EXPECT_EQ(read(), 0u);
  ASSERT_EQ(proc<testing::Launch>("cuLaunchKernel")(current_, 1, 1, 1, 1, 1, 1, 0, stream_, params,
                                                    nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(read(), 0u);
  EXPECT_EQ(CU13(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
}

// cuGraphInstantiate's rules for device launch: kernel, memcpy, memset and child-graph nodes only
// (the result CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED names the node), no kernel using
// dynamic parallelism, no copy of pageable host memory, not empty, not with AUTO_FREE_ON_LAUNCH;
// the exec's flags keep DEVICE_LAUNCH.
TEST_F(LibCudaDeviceGraphs, InstantiationFollowsTheRulesForDeviceGraphs) {
  auto withParams =
      CU13(cuGraphInstantiateWithParams, CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*);
  CUgraph graph = newGraph();
  CUgraphExec exec = nullptr;
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
  EXPECT_EQ(withParams(&exec, graph, &params), CUDA_ERROR_INVALID_VALUE);  // empty
  EXPECT_EQ(params.result_out, kNodeOperationNotSupported);
  CUgraphNode empty = nullptr;
  ASSERT_EQ(CU13(cuGraphAddEmptyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t)(
                &empty, graph, nullptr, 0),
            CUDA_SUCCESS);
  add(graph, 1);
  EXPECT_EQ(withParams(&exec, graph, &params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(params.result_out, kNodeOperationNotSupported);
  EXPECT_EQ(params.hErrNode_out, empty);
  ASSERT_EQ(CU13(cuGraphDestroyNode, CUgraphNode)(empty), CUDA_SUCCESS);
  // In a child graph too: the child-graph node is named.
  CUgraph child = newGraph();
  ASSERT_EQ(CU13(cuGraphAddEmptyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t)(
                &empty, child, nullptr, 0),
            CUDA_SUCCESS);
  CUgraphNode childNode = nullptr;
  ASSERT_EQ(CU13(cuGraphAddChildGraphNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                 CUgraph)(&childNode, graph, nullptr, 0, child),
            CUDA_SUCCESS);
  EXPECT_EQ(withParams(&exec, graph, &params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(params.hErrNode_out, childNode);
  ASSERT_EQ(CU13(cuGraphDestroyNode, CUgraphNode)(childNode), CUDA_SUCCESS);
  // A kernel that launches grids itself (dynamic parallelism), added or captured.
  void* buffer = nullptr;
  void* cdpParams[] = {&buffer};
  CUgraph cdpGraph = newGraph();
  CUgraphNode cdpNode = kernel(cdpGraph, launchesGrids_, cdpParams, 1);
  EXPECT_EQ(withParams(&exec, cdpGraph, &params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(params.result_out, kNodeOperationNotSupported);
  EXPECT_EQ(params.hErrNode_out, cdpNode);
  CUgraph captured = nullptr;
  ASSERT_EQ(CU13(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(
                stream_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(proc<testing::Launch>("cuLaunchKernel")(launchesGrids_, 1, 1, 1, 1, 1, 1, 0, stream_,
                                                    cdpParams, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured), CUDA_SUCCESS);
  EXPECT_EQ(withParams(&exec, captured, &params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(params.result_out, kNodeOperationNotSupported);
  ASSERT_EQ(CU13(cuGraphDestroy, CUgraph)(captured), CUDA_SUCCESS);
  // Copies between device memory and page-locked host memory only: not pageable memory.
  auto addCopy = [&](CUgraph into, const void* host) {
    CUDA_MEMCPY3D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = host;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = data_;
    copy.WidthInBytes = 16;
    copy.Height = copy.Depth = 1;
    CUgraphNode node = nullptr;
    EXPECT_EQ(CU13(cuGraphAddMemcpyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                   const CUDA_MEMCPY3D*, CUcontext)(&node, into, nullptr, 0, &copy, context_),
              CUDA_SUCCESS);
    return node;
  };
  std::vector<uint32_t> pageable(4, 7);
  CUgraph pageableGraph = newGraph();
  CUgraphNode pageableCopy = addCopy(pageableGraph, pageable.data());
  EXPECT_EQ(withParams(&exec, pageableGraph, &params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(params.result_out, kNodeOperationNotSupported);
  EXPECT_EQ(params.hErrNode_out, pageableCopy);
  void* pinned = nullptr;
  ASSERT_EQ(CU13(cuMemAllocHost, void**, size_t)(&pinned, 16), CUDA_SUCCESS);
  CUgraph pinnedGraph = newGraph();
  addCopy(pinnedGraph, pinned);
  ASSERT_EQ(withParams(&exec, pinnedGraph, &params), CUDA_SUCCESS);
  EXPECT_EQ(params.result_out, kInstantiateSuccess);
  EXPECT_EQ(CU13(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU13(cuMemFreeHost, void*)(pinned), CUDA_SUCCESS);
  params.flags |= CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
  EXPECT_EQ(withParams(&exec, graph, &params), CUDA_ERROR_INVALID_VALUE);
  // Instantiated with UPLOAD: launchable from the device at once.
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  params.hUploadStream = stream_;
  ASSERT_EQ(withParams(&exec, graph, &params), CUDA_SUCCESS);
  execs_.push_back(exec);
  EXPECT_EQ(params.result_out, kInstantiateSuccess);
  cuuint64_t flags = 0;
  ASSERT_EQ(CU13(cuGraphExecGetFlags, CUgraphExec, cuuint64_t*)(exec, &flags), CUDA_SUCCESS);
  EXPECT_EQ(flags, uint64_t{CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH});
  EXPECT_EQ(launchFromGraph({handleOf(exec)}, kFireAndForget), std::vector<uint32_t>{0});
  EXPECT_EQ(data(), 1u);
}

// A kernel node does not take up the device runtime's calls once instantiated (the executable
// node's setter, cuGraphExecUpdate): dynamic parallelism and node updates never; device-side
// graph launches only in a graph instantiated for device launch or in a context whose kernels
// launched graphs when it was instantiated. A graph's node given a CDP kernel is refused for
// device launch.
TEST_F(LibCudaDeviceGraphs, KernelNodesDoNotTakeUpDeviceRuntimeCallsLater) {
  void* buffer = nullptr;
  void* cdpParams[] = {&buffer};
  CUgraphDeviceNode noNode = nullptr;
  uint64_t value = 0;
  uint32_t enable = 1, n = 0;
  void* updateParams[] = {&noNode, &value, &enable, &answers_};
  CUstream noStream = nullptr;
  void* launchParams[] = {&graphs_, &noStream, &answers_, &n};
  auto params = [](CUfunction f, void** arguments) {
    return CUDA_KERNEL_NODE_PARAMS_v2{f, 1, 1, 1, 1, 1, 1, 0, arguments, nullptr, nullptr, nullptr};
  };
  CUDA_KERNEL_NODE_PARAMS_v2 cdp = params(launchesGrids_, cdpParams),
                             updates = params(updateNode_, updateParams),
                             launches = params(launchEach_, launchParams);
  auto execSet = CU13(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
                      const CUDA_KERNEL_NODE_PARAMS_v2*);
  CUgraph graph = newGraph();
  CUgraphNode node = add(graph, 1);
  CUgraphExec exec = instantiate(graph, 0);
  EXPECT_EQ(execSet(exec, node, &cdp), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(execSet(exec, node, &updates), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(execSet(exec, node, &launches), CUDA_ERROR_INVALID_VALUE);  // no graph launches
  for (CUfunction f : {launchesGrids_, updateNode_}) {
    CUgraph other = newGraph();
    kernel(other, f, f == launchesGrids_ ? cdpParams : updateParams, 1);
    CUgraphExecUpdateResultInfo info{};
    EXPECT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(
                  exec, other, &info),
              CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);
  }
  // The executable graph still adds.
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  EXPECT_EQ(data(), 1u);
  // Graph launches: where a kernel of the context launched graphs at instantiation, or in a
  // graph instantiated for device launch.
  CUgraph withLauncher = newGraph();
  CUgraphNode plain = add(withLauncher, 1);
  kernel(withLauncher, launchEach_, launchParams, 1);
  EXPECT_EQ(execSet(instantiate(withLauncher, 0), plain, &launches), CUDA_SUCCESS);
  CUgraphNode deviceNode = nullptr;
  CUgraphExec deviceExec = deviceAdder(1, false, &deviceNode);
  EXPECT_EQ(execSet(deviceExec, deviceNode, &launches), CUDA_SUCCESS);
  EXPECT_EQ(execSet(deviceExec, deviceNode, &updates), CUDA_ERROR_INVALID_VALUE);
  // "Originally": a node instantiated with a CDP kernel may take a plain one and then CDP again.
  CUgraph cdpGraph = newGraph();
  CUgraphNode cdpNode = kernel(cdpGraph, launchesGrids_, cdpParams, 1);
  CUgraphExec cdpExec = instantiate(cdpGraph, 0);
  uint32_t one = 1, elements = 1;
  void* addParams[] = {&data_, &one, &elements};
  CUDA_KERNEL_NODE_PARAMS_v2 plainAdd = params(add_, addParams);
  EXPECT_EQ(execSet(cdpExec, cdpNode, &plainAdd), CUDA_SUCCESS);
  EXPECT_EQ(execSet(cdpExec, cdpNode, &cdp), CUDA_SUCCESS);
  EXPECT_EQ(execSet(cdpExec, cdpNode, &updates), CUDA_ERROR_INVALID_VALUE);
  // The graph's own node given the CDP kernel: no longer launchable from the device.
  ASSERT_EQ(
      CU13(cuGraphKernelNodeSetParams, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2*)(node, &cdp),
      CUDA_SUCCESS);
  CUDA_GRAPH_INSTANTIATE_PARAMS instantiation{};
  instantiation.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
  CUgraphExec refused = nullptr;
  EXPECT_EQ(CU13(cuGraphInstantiateWithParams, CUgraphExec*, CUgraph,
                 CUDA_GRAPH_INSTANTIATE_PARAMS*)(&refused, graph, &instantiation),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(instantiation.result_out, kNodeOperationNotSupported);
  EXPECT_EQ(instantiation.hErrNode_out, node);
}

// A device-updatable kernel node (CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE): a kernel
// before it in the graph sets its `value` parameter and its enabled state; bytes past its
// parameters and an unknown node are refused. Such a node cannot opt out or be destroyed, its
// graph has one executable graph at a time, and the attribute is for captured launches only.
TEST_F(LibCudaDeviceGraphs, KernelsUpdateADeviceUpdatableNodeBeforeItRuns) {
  CUgraph graph = newGraph();
  CUgraphNode target = add(graph, 1);
  auto setAttribute = CU13(cuGraphKernelNodeSetAttribute, CUgraphNode, CUkernelNodeAttrID,
                           const CUlaunchAttributeValue*);
  auto getAttribute =
      CU13(cuGraphKernelNodeGetAttribute, CUgraphNode, CUkernelNodeAttrID, CUlaunchAttributeValue*);
  const auto kUpdatable =
      static_cast<CUkernelNodeAttrID>(CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE);
  CUlaunchAttributeValue value{};
  value.deviceUpdatableKernelNode.deviceUpdatable = 2;
  EXPECT_EQ(setAttribute(target, kUpdatable, &value), CUDA_ERROR_INVALID_VALUE);
  value.deviceUpdatableKernelNode.deviceUpdatable = 1;
  ASSERT_EQ(setAttribute(target, kUpdatable, &value), CUDA_SUCCESS);
  CUlaunchAttributeValue read{};
  ASSERT_EQ(getAttribute(target, kUpdatable, &read), CUDA_SUCCESS);
  CUgraphDeviceNode node = read.deviceUpdatableKernelNode.devNode;
  EXPECT_EQ(read.deviceUpdatableKernelNode.deviceUpdatable, 1);
  ASSERT_NE(node, nullptr);
  // The updater, then the node.
  CUdeviceptr seven = 0;
  ASSERT_EQ(CU13(cuMemAlloc, CUdeviceptr*, size_t)(&seven, 4), CUDA_SUCCESS);
  uint32_t sevenValue = 7, enable = 1;
  ASSERT_EQ(CU13(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(seven, &sevenValue, 4),
            CUDA_SUCCESS);
  void* params[] = {&node, &seven, &enable, &answers_};
  CUgraphNode updater = kernel(graph, updateNode_, params, 1);
  ASSERT_EQ(CU13(cuGraphAddDependencies, CUgraph, const CUgraphNode*, const CUgraphNode*,
                 const CUgraphEdgeData*, size_t)(graph, &updater, &target, nullptr, 1),
            CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph, 0);
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  EXPECT_EQ(data(), 7u);
  uint32_t answers[4] = {};
  ASSERT_EQ(CU13(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(answers, answers_, sizeof answers),
            CUDA_SUCCESS);
  EXPECT_EQ(answers[0], 0u);
  EXPECT_EQ(answers[1], 0u);
  EXPECT_EQ(answers[2], kInvalidValue);  // past the 16 parameter bytes
  EXPECT_EQ(answers[3], kInvalidValue);  // not a node
  // Disabled by the updater: the node does nothing at the next launch.
  CUgraphExec second = nullptr;
  EXPECT_EQ(CU13(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&second,
                                                                                         graph, 0),
            CUDA_ERROR_INVALID_VALUE);
  enable = 0;
  CUDA_KERNEL_NODE_PARAMS_v2 p{updateNode_, 1, 1, 1, 1, 1, 1, 0, params, nullptr, nullptr, nullptr};
  ASSERT_EQ(CU13(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
                 const CUDA_KERNEL_NODE_PARAMS_v2*)(exec, updater, &p),
            CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU13(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  EXPECT_EQ(data(), 7u);
  value.deviceUpdatableKernelNode.deviceUpdatable = 0;
  EXPECT_EQ(setAttribute(target, kUpdatable, &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU13(cuGraphDestroyNode, CUgraphNode)(target), CUDA_ERROR_INVALID_VALUE);
  // "Cannot have their attributes copied to/from another kernel node", and "neither the graph
  // nor its instantiated version can be passed to cuGraphExecUpdate".
  CUgraph other = newGraph();
  CUgraphNode plain = add(other, 1);
  auto copyAttributes = CU13(cuGraphKernelNodeCopyAttributes, CUgraphNode, CUgraphNode);
  EXPECT_EQ(copyAttributes(plain, target), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(copyAttributes(target, plain), CUDA_ERROR_INVALID_VALUE);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(exec, graph,
                                                                                        &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
  // Launched with the attribute: only into a capture, which hands the node back.
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
  attribute.value.deviceUpdatableKernelNode.deviceUpdatable = 1;
  uint32_t one = 1, n = kN;
  void* addParams[] = {&data_, &one, &n};
  CUlaunchConfig config{1, 1, 1, kN, 1, 1, 0, stream_, &attribute, 1};
  auto launchEx = CU13(cuLaunchKernelEx, const CUlaunchConfig*, CUfunction, void**, void**);
  EXPECT_EQ(launchEx(&config, add_, addParams, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU13(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(
                stream_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(launchEx(&config, add_, addParams, nullptr), CUDA_SUCCESS);
  CUgraph captured = nullptr;
  ASSERT_EQ(CU13(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured), CUDA_SUCCESS);
  graphs.push_back(captured);
  EXPECT_NE(attribute.value.deviceUpdatableKernelNode.devNode, nullptr);
  CUgraphNode capturedNode = nullptr;
  size_t count = 1;
  ASSERT_EQ(CU13(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(captured, &capturedNode, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(capturedNode, kUpdatable, &read), CUDA_SUCCESS);
  EXPECT_EQ(read.deviceUpdatableKernelNode.devNode,
            attribute.value.deviceUpdatableKernelNode.devNode);
  EXPECT_EQ(CU13(cuMemFree, CUdeviceptr)(seven), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda
