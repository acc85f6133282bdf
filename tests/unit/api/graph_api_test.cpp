// The graph entry points of libcuda.so.1 (loaded with dlopen, reached through cuGetProcAddress):
// explicit construction of every node kind, structure queries, clone, instantiation and launch
// with results checked, exec updates, user objects, graph memory, capture with fork/join, and
// the documented errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
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

// The forms a CUDA 11.8 runtime sees (the first-generation graph structures), and CUDA 13's.
#define CU(name, ...) proc<CUresult (*)(__VA_ARGS__)>(#name, 11080)
#define CU13(name, ...) proc<CUresult (*)(__VA_ARGS__)>(#name, 13000)

constexpr const char* kPtx = R"(
.version 7.0
.target sm_50
.address_size 64

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
)";

constexpr uint32_t kN = 256;

class LibCudaGraph : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
  }
  void SetUp() override {
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module_, kPtx), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function_, module_,
                                                                          "add_value"),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data_, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream_, 1), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module_), CUDA_SUCCESS);
  }

  // A kernel node adding `value` to every element of data_.
  CUgraphNode addKernel(CUgraph graph, std::vector<CUgraphNode> deps, uint32_t value) {
    uint32_t n = kN;
    void* params[] = {&data_, &value, &n};
    CUDA_KERNEL_NODE_PARAMS_v1 p{function_, 2, 1, 1, 128, 1, 1, 0, params, nullptr};
    CUgraphNode node = nullptr;
    EXPECT_EQ(CU(cuGraphAddKernelNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                 const CUDA_KERNEL_NODE_PARAMS_v1*)(&node, graph, deps.data(), deps.size(), &p),
              CUDA_SUCCESS);
    return node;
  }
  std::vector<uint32_t> readBack() {
    std::vector<uint32_t> out(kN);
    EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), data_, kN * 4),
              CUDA_SUCCESS);
    return out;
  }
  void launchAndWait(CUgraphExec exec) {
    ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  }

  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr data_ = 0;
  CUstream stream_ = nullptr;
};

using AddNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t);
using Memset = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                            const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext);

int hostCalls = 0;
void countCall(void* p) { hostCalls += *static_cast<int*>(p); }

TEST_F(LibCudaGraph, ExplicitNodesRunInDependencyOrder) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  // memset 5 -> kernel +3 -> copy to host -> host node; a kernel +10 after the memset too.
  CUDA_MEMSET_NODE_PARAMS_v1 fill{data_, 0, 5, 4, kN, 1};
  CUgraphNode memset = nullptr;
  ASSERT_EQ(
      CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
         const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext)(&memset, graph, nullptr, 0, &fill, context_),
      CUDA_SUCCESS);
  CUgraphNode k3 = addKernel(graph, {memset}, 3);
  CUgraphNode k10 = addKernel(graph, {k3}, 10);
  std::vector<uint32_t> host(kN, 0);
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = data_;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = host.data();
  copy.WidthInBytes = kN * 4;
  copy.Height = 1;
  copy.Depth = 1;
  CUgraphNode memcpy = nullptr;
  ASSERT_EQ(CU(cuGraphAddMemcpyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_MEMCPY3D*, CUcontext)(&memcpy, graph, &k10, 1, &copy, context_),
            CUDA_SUCCESS);
  int weight = 1;
  CUDA_HOST_NODE_PARAMS hostParams{countCall, &weight};
  CUgraphNode hostNode = nullptr;
  ASSERT_EQ(CU(cuGraphAddHostNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_HOST_NODE_PARAMS*)(&hostNode, graph, &memcpy, 1, &hostParams),
            CUDA_SUCCESS);

  CUgraphNodeType type{};
  ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(memcpy, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMCPY);
  // cuGraphDebugDotPrint: the copy's direction by default; sizes and handles when verbose.
  auto dotOf = [&](unsigned flags) {
    std::string path = ::testing::TempDir() + "graph_labels_" + std::to_string(::getpid()) + ".dot";
    EXPECT_EQ(CU(cuGraphDebugDotPrint, CUgraph, const char*, unsigned)(graph, path.c_str(), flags),
              CUDA_SUCCESS);
    std::stringstream dot;
    dot << std::ifstream(path).rdbuf();
    std::remove(path.c_str());
    return dot.str();
  };
  std::string plain = dotOf(0), verbose = dotOf(1u << 0);
  EXPECT_NE(plain.find("DtoH"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("width"), std::string::npos);
  EXPECT_NE(verbose.find("width " + std::to_string(kN * 4) + " height 1"), std::string::npos);
  EXPECT_NE(verbose.find("node 0x"), std::string::npos) << verbose;
  // Kernel launches ("Adds CUDA_KERNEL_NODE_PARAMS values") and function handles.
  EXPECT_NE(verbose.find("grid (2,1,1) block (128,1,1) shared 0"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("function 0x"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find(" value 5 pitch"), std::string::npos) << verbose;  // the memset
  std::string kernels = dotOf(1u << 2);
  EXPECT_NE(kernels.find("grid (2,1,1)"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("function 0x"), std::string::npos) << kernels;
  CUDA_KERNEL_NODE_PARAMS_v1 readParams{};
  ASSERT_EQ(
      CU(cuGraphKernelNodeGetParams, CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1*)(k3, &readParams),
      CUDA_SUCCESS);
  EXPECT_EQ(readParams.func, function_);
  EXPECT_EQ(readParams.gridDimX, 2u);
  EXPECT_EQ(*static_cast<uint32_t*>(readParams.kernelParams[1]), 3u);  // a copy of the value

  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  hostCalls = 0;
  launchAndWait(exec);
  for (uint32_t v : host) ASSERT_EQ(v, 18u);
  EXPECT_EQ(hostCalls, 1);

  // Changing the graph's node does not change the instantiated graph; the exec's own does.
  uint32_t value = 100, n = kN;
  void* params[] = {&data_, &value, &n};
  CUDA_KERNEL_NODE_PARAMS_v1 changed{function_, 2, 1, 1, 128, 1, 1, 0, params, nullptr};
  ASSERT_EQ(
      CU(cuGraphKernelNodeSetParams, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1*)(k10, &changed),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : host) ASSERT_EQ(v, 18u);
  ASSERT_EQ(CU(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_KERNEL_NODE_PARAMS_v1*)(exec, k10, &changed),
            CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : host) ASSERT_EQ(v, 108u);
  // Disabled kernel nodes are skipped.
  ASSERT_EQ(CU(cuGraphNodeSetEnabled, CUgraphExec, CUgraphNode, unsigned)(exec, k3, 0),
            CUDA_SUCCESS);
  unsigned enabled = 1;
  ASSERT_EQ(CU(cuGraphNodeGetEnabled, CUgraphExec, CUgraphNode, unsigned*)(exec, k3, &enabled),
            CUDA_SUCCESS);
  EXPECT_EQ(enabled, 0u);
  EXPECT_EQ(CU(cuGraphNodeSetEnabled, CUgraphExec, CUgraphNode, unsigned)(exec, hostNode, 0),
            CUDA_ERROR_INVALID_VALUE);
  launchAndWait(exec);
  for (uint32_t v : host) ASSERT_EQ(v, 105u);
  EXPECT_EQ(hostCalls, 4);

  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

TEST_F(LibCudaGraph, StructureQueriesAndErrors) {
  CUgraph graph = nullptr, other = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&other, 0), CUDA_SUCCESS);
  auto empty = CU(cuGraphAddEmptyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t);
  CUgraphNode a = nullptr, b = nullptr, c = nullptr, foreign = nullptr;
  ASSERT_EQ(empty(&a, graph, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(empty(&b, graph, &a, 1), CUDA_SUCCESS);
  ASSERT_EQ(empty(&c, graph, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(empty(&foreign, other, nullptr, 0), CUDA_SUCCESS);
  EXPECT_EQ(empty(nullptr, graph, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(empty(&a, nullptr, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(empty(&a, graph, nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  CUgraphNode bogus = reinterpret_cast<CUgraphNode>(0x1234);
  CUgraphNode x = nullptr;
  EXPECT_EQ(empty(&x, graph, &bogus, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(empty(&x, graph, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
  CUgraphNode twice[] = {a, a};
  EXPECT_EQ(empty(&x, graph, twice, 2), CUDA_ERROR_INVALID_VALUE);

  size_t count = 0;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nullptr, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);
  CUgraphNode roots[4] = {};
  count = 4;
  ASSERT_EQ(CU(cuGraphGetRootNodes, CUgraph, CUgraphNode*, size_t*)(graph, roots, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(roots[0], a);
  EXPECT_EQ(roots[1], c);
  EXPECT_EQ(roots[2], nullptr);

  auto addDeps =
      CU(cuGraphAddDependencies, CUgraph, const CUgraphNode*, const CUgraphNode*, size_t);
  auto removeDeps =
      CU(cuGraphRemoveDependencies, CUgraph, const CUgraphNode*, const CUgraphNode*, size_t);
  ASSERT_EQ(addDeps(graph, &b, &c, 1), CUDA_SUCCESS);
  // A cycle may be built (as with NVIDIA's driver); instantiating it fails.
  ASSERT_EQ(addDeps(graph, &c, &a, 1), CUDA_SUCCESS);
  CUgraphExec cyclic = nullptr;
  CUDA_GRAPH_INSTANTIATE_PARAMS instantiateParams{};
  EXPECT_EQ(CU13(cuGraphInstantiateWithParams, CUgraphExec*, CUgraph,
                 CUDA_GRAPH_INSTANTIATE_PARAMS*)(&cyclic, graph, &instantiateParams),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(instantiateParams.result_out, 2);  // CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE
  // "hErrNode_out will be set to one of the offending nodes": a node on the cycle a->b->c->a.
  EXPECT_TRUE(instantiateParams.hErrNode_out == a || instantiateParams.hErrNode_out == b ||
              instantiateParams.hErrNode_out == c);
  ASSERT_EQ(removeDeps(graph, &c, &a, 1), CUDA_SUCCESS);
  EXPECT_EQ(addDeps(graph, &a, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(removeDeps(graph, &c, &a, 1), CUDA_ERROR_INVALID_VALUE);  // no such edge
  CUgraphNode from[4] = {}, to[4] = {};
  count = 4;
  ASSERT_EQ(
      CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, from, to, &count),
      CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, from, nullptr,
                                                                              &count),
            CUDA_ERROR_INVALID_VALUE);
  CUgraphNode deps[2] = {};
  count = 2;
  ASSERT_EQ(CU(cuGraphNodeGetDependencies, CUgraphNode, CUgraphNode*, size_t*)(c, deps, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(deps[0], b);
  count = 2;
  ASSERT_EQ(CU(cuGraphNodeGetDependentNodes, CUgraphNode, CUgraphNode*, size_t*)(a, deps, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(deps[0], b);

  // Clone and find; the DOT file.
  CUgraph clone = nullptr;
  ASSERT_EQ(CU(cuGraphClone, CUgraph*, CUgraph)(&clone, graph), CUDA_SUCCESS);
  CUgraphNode cloned = nullptr;
  ASSERT_EQ(CU(cuGraphNodeFindInClone, CUgraphNode*, CUgraphNode, CUgraph)(&cloned, b, clone),
            CUDA_SUCCESS);
  EXPECT_NE(cloned, b);
  EXPECT_EQ(CU(cuGraphNodeFindInClone, CUgraphNode*, CUgraphNode, CUgraph)(&cloned, b, other),
            CUDA_ERROR_INVALID_VALUE);
  std::string path = "/tmp/rocuda_graph_test_" + std::to_string(getpid()) + ".dot";
  ASSERT_EQ(CU(cuGraphDebugDotPrint, CUgraph, const char*, unsigned)(graph, path.c_str(), 0),
            CUDA_SUCCESS);
  std::stringstream dot;
  dot << std::ifstream(path).rdbuf();
  std::remove(path.c_str());
  EXPECT_EQ(dot.str().rfind("digraph", 0), 0u);
  EXPECT_NE(dot.str().find("\"n0\" -> \"n1\""), std::string::npos);
  EXPECT_NE(dot.str().find("\"n1\" -> \"n2\""), std::string::npos);

  // Destroying a node removes its edges.
  ASSERT_EQ(CU(cuGraphDestroyNode, CUgraphNode)(b), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroyNode, CUgraphNode)(b), CUDA_ERROR_INVALID_VALUE);
  count = 0;
  ASSERT_EQ(CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, nullptr,
                                                                              nullptr, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 0u);
  // Type-specific queries refuse other node kinds.
  CUDA_HOST_NODE_PARAMS host{};
  EXPECT_EQ(CU(cuGraphHostNodeGetParams, CUgraphNode, CUDA_HOST_NODE_PARAMS*)(a, &host),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphHostNodeGetParams, CUgraphNode, CUDA_HOST_NODE_PARAMS*)(a, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_HOST_NODE_PARAMS nullFn{nullptr, nullptr};
  EXPECT_EQ(CU(cuGraphAddHostNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_HOST_NODE_PARAMS*)(&x, graph, nullptr, 0, &nullFn),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMSET_NODE_PARAMS_v1 badFill{data_, 0, 0, 3, kN, 1};
  EXPECT_EQ(
      CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
         const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext)(&x, graph, nullptr, 0, &badFill, context_),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(clone), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(other), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(LibCudaGraph, ChildGraphsAndExecUpdate) {
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
  CUgraph child = nullptr, parent = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&child, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&parent, 0), CUDA_SUCCESS);
  addKernel(child, {}, 1);
  CUgraphNode first = addKernel(parent, {}, 2);
  CUgraphNode childNode = nullptr;
  ASSERT_EQ(CU(cuGraphAddChildGraphNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUgraph)(&childNode, parent, &first, 1, child),
            CUDA_SUCCESS);
  CUgraph embedded = nullptr;
  ASSERT_EQ(CU(cuGraphChildGraphNodeGetGraph, CUgraphNode, CUgraph*)(childNode, &embedded),
            CUDA_SUCCESS);
  EXPECT_NE(embedded, child);  // a clone
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(embedded), CUDA_ERROR_INVALID_VALUE);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, parent, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 3u);

  // The same topology with other values updates in place.
  CUgraph same = nullptr, innerSame = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&same, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&innerSame, 0), CUDA_SUCCESS);
  addKernel(innerSame, {}, 10);
  CUgraphNode first2 = addKernel(same, {}, 20);
  CUgraphNode child2 = nullptr;
  ASSERT_EQ(CU(cuGraphAddChildGraphNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUgraph)(&child2, same, &first2, 1, innerSame),
            CUDA_SUCCESS);
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(exec, same,
                                                                                        &info),
            CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 33u);

  // Another topology is refused, naming the node.
  CUgraph different = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&different, 0), CUDA_SUCCESS);
  addKernel(different, {}, 1);
  CUgraphNode loose = addKernel(different, {}, 1);
  EXPECT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(
                exec, different, &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  EXPECT_EQ(info.errorNode, loose);
  EXPECT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(
                exec, different, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  launchAndWait(exec);  // unchanged by the failed update
  for (uint32_t v : readBack()) ASSERT_EQ(v, 63u);

  cuuint64_t flags = 7;
  ASSERT_EQ(CU13(cuGraphExecGetFlags, CUgraphExec, cuuint64_t*)(exec, &flags), CUDA_SUCCESS);
  EXPECT_EQ(flags, 0u);
  // A node of another graph is not part of the exec.
  uint32_t value = 1, n = kN;
  void* params[] = {&data_, &value, &n};
  CUDA_KERNEL_NODE_PARAMS_v1 p{function_, 2, 1, 1, 128, 1, 1, 0, params, nullptr};
  EXPECT_EQ(CU(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_KERNEL_NODE_PARAMS_v1*)(exec, loose, &p),
            CUDA_ERROR_INVALID_VALUE);
  for (CUgraph g : {child, parent, same, innerSame, different})
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(g), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
}

int destroyedObjects = 0;
void destroyObject(void*) { ++destroyedObjects; }

TEST_F(LibCudaGraph, UserObjectsAndMemoryNodes) {
  destroyedObjects = 0;
  CUuserObject object = nullptr;
  EXPECT_EQ(CU(cuUserObjectCreate, CUuserObject*, void*, CUhostFn, unsigned, unsigned)(
                &object, nullptr, destroyObject, 1, 0),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuUserObjectCreate, CUuserObject*, void*, CUhostFn, unsigned, unsigned)(
                &object, nullptr, destroyObject, 1, 1),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(
      CU(cuGraphRetainUserObject, CUgraph, CUuserObject, unsigned, unsigned)(graph, object, 1, 1),
      CUDA_SUCCESS);  // moves the caller's reference
  EXPECT_EQ(CU(cuGraphReleaseUserObject, CUgraph, CUuserObject, unsigned)(graph, object, 2),
            CUDA_ERROR_INVALID_VALUE);

  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = kN * 4;
  CUgraphNode allocNode = nullptr, kernel = nullptr, freeNode = nullptr;
  auto addAlloc = CU(cuGraphAddMemAllocNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                     CUDA_MEM_ALLOC_NODE_PARAMS*);
  ASSERT_EQ(addAlloc(&allocNode, graph, nullptr, 0, &alloc), CUDA_SUCCESS);
  EXPECT_NE(alloc.dptr, 0u);
  CUDA_MEM_ALLOC_NODE_PARAMS zero = alloc;
  zero.bytesize = 0;
  EXPECT_EQ(addAlloc(&kernel, graph, nullptr, 0, &zero), CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMSET_NODE_PARAMS_v1 fill{alloc.dptr, 0, 9, 4, kN, 1};
  ASSERT_EQ(CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_MEMSET_NODE_PARAMS_v1*,
               CUcontext)(&kernel, graph, &allocNode, 1, &fill, context_),
            CUDA_SUCCESS);
  auto addFree =
      CU(cuGraphAddMemFreeNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr);
  EXPECT_EQ(addFree(&freeNode, graph, &kernel, 1, data_), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(addFree(&freeNode, graph, &kernel, 1, alloc.dptr), CUDA_SUCCESS);
  CUdeviceptr freed = 0;
  ASSERT_EQ(CU(cuGraphMemFreeNodeGetParams, CUgraphNode, CUdeviceptr*)(freeNode, &freed),
            CUDA_SUCCESS);
  EXPECT_EQ(freed, alloc.dptr);
  CUDA_MEM_ALLOC_NODE_PARAMS readAlloc{};
  ASSERT_EQ(CU(cuGraphMemAllocNodeGetParams, CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*)(allocNode,
                                                                                       &readAlloc),
            CUDA_SUCCESS);
  EXPECT_EQ(readAlloc.bytesize, kN * 4u);
  cuuint64_t reserved = 0;
  auto getAttr = CU(cuDeviceGetGraphMemAttribute, CUdevice, CUgraphMem_attribute, void*);
  ASSERT_EQ(getAttr(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
  EXPECT_GE(reserved, kN * 4u);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  cuuint64_t usedHigh = 0;
  ASSERT_EQ(getAttr(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &usedHigh), CUDA_SUCCESS);
  EXPECT_GE(usedHigh, kN * 4u);
  cuuint64_t one = 1, zeroValue = 0;
  auto setAttr = CU(cuDeviceSetGraphMemAttribute, CUdevice, CUgraphMem_attribute, void*);
  EXPECT_EQ(setAttr(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setAttr(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zeroValue), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setAttr(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zeroValue), CUDA_SUCCESS);
  // Trimming gives back what no launch holds (the launch has freed its allocation); the next
  // launch takes it again at the same address.
  cuuint64_t beforeTrim = 0, afterTrim = 0, relaunched = 0;
  ASSERT_EQ(getAttr(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &beforeTrim), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuDeviceGraphMemTrim, CUdevice)(0), CUDA_SUCCESS);
  ASSERT_EQ(getAttr(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &afterTrim), CUDA_SUCCESS);
  EXPECT_LE(afterTrim + kN * 4, beforeTrim);
  launchAndWait(exec);
  ASSERT_EQ(getAttr(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &relaunched), CUDA_SUCCESS);
  EXPECT_GE(relaunched, afterTrim + kN * 4);

  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(destroyedObjects, 0);  // the exec still holds a reference
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(destroyedObjects, 1);
  EXPECT_EQ(CU(cuUserObjectRelease, CUuserObject, unsigned)(object, 1), CUDA_ERROR_INVALID_HANDLE);
}

// List queries fill at most the count given ("if numNodes is higher than the actual number of
// nodes, the remaining entries will be set to NULL, and the number of nodes actually obtained
// will be returned"): a smaller count stays. An exec's flags leave out UPLOAD ("will not be
// returned by this API"). cuStreamAddCallback "is not supported with cuStreamBeginCapture".
void noCallback(CUstream, CUresult, void*) {}

TEST_F(LibCudaGraph, ListQueriesUploadFlagAndCallbacksInCapture) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  auto addEmpty = CU(cuGraphAddEmptyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t);
  CUgraphNode a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(addEmpty(&a, graph, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(addEmpty(&b, graph, &a, 1), CUDA_SUCCESS);
  ASSERT_EQ(addEmpty(&c, graph, &a, 1), CUDA_SUCCESS);
  auto getNodes = CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*);
  CUgraphNode nodes[5] = {};
  size_t count = 2;
  ASSERT_EQ(getNodes(graph, nodes, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_NE(nodes[1], nullptr);
  EXPECT_EQ(nodes[2], nullptr);  // not written
  count = 5;
  ASSERT_EQ(getNodes(graph, nodes, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(nodes[3], nullptr);
  count = 0;
  ASSERT_EQ(getNodes(graph, nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);
  CUgraphNode from[2] = {}, to[2] = {};
  count = 1;
  ASSERT_EQ(
      CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, from, to, &count),
      CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(from[0], a);
  CUgraphNode dependents[1] = {};
  count = 1;
  ASSERT_EQ(
      CU(cuGraphNodeGetDependentNodes, CUgraphNode, CUgraphNode*, size_t*)(a, dependents, &count),
      CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);

  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  params.hUploadStream = stream_;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(CU13(cuGraphInstantiateWithParams, CUgraphExec*, CUgraph,
                 CUDA_GRAPH_INSTANTIATE_PARAMS*)(&exec, graph, &params),
            CUDA_SUCCESS);
  cuuint64_t flags = 99;
  ASSERT_EQ(CU13(cuGraphExecGetFlags, CUgraphExec, cuuint64_t*)(exec, &flags), CUDA_SUCCESS);
  EXPECT_EQ(flags, 0u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);

  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamAddCallback, CUstream, CUstreamCallback, void*, unsigned)(
                stream_, noCallback, nullptr, 0),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph captured = nullptr;
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(captured, nullptr);
  // Freeing, even a null pointer (otherwise a no-op), is unsafe during a capture of this thread.
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(
                stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(
                stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(nullptr), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(nullptr), CUDA_SUCCESS);
}

// cuGraphAddMemAllocNode: "If the allocation is freed in the same graph, a free node cannot be
// added to another graph. If the allocation is freed in another graph, a free node can no
// longer be added to the owning graph."
TEST_F(LibCudaGraph, OneGraphFreesAGraphAllocation) {
  auto create = [] {
    CUgraph graph = nullptr;
    EXPECT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    return graph;
  };
  auto allocate = [](CUgraph graph) {
    CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
    alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    alloc.poolProps.location.id = 0;
    alloc.bytesize = 4096;
    CUgraphNode node = nullptr;
    EXPECT_EQ(CU(cuGraphAddMemAllocNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                 CUDA_MEM_ALLOC_NODE_PARAMS*)(&node, graph, nullptr, 0, &alloc),
              CUDA_SUCCESS);
    return std::make_pair(node, alloc.dptr);
  };
  auto addFree =
      CU(cuGraphAddMemFreeNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr);
  CUgraph owner = create(), other = create();
  auto [allocNode, address] = allocate(owner);
  CUgraphNode freeNode = nullptr;
  ASSERT_EQ(addFree(&freeNode, owner, &allocNode, 1, address), CUDA_SUCCESS);
  EXPECT_EQ(addFree(&freeNode, other, nullptr, 0, address), CUDA_ERROR_INVALID_VALUE);

  CUgraph second = create(), freer = create();
  auto [secondAlloc, secondAddress] = allocate(second);
  ASSERT_EQ(addFree(&freeNode, freer, nullptr, 0, secondAddress), CUDA_SUCCESS);
  EXPECT_EQ(addFree(&freeNode, second, &secondAlloc, 1, secondAddress), CUDA_ERROR_INVALID_VALUE);
  for (CUgraph graph : {owner, other, second, freer})
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// Captured memsets, 1D copies and host functions keep their parameters, which the node calls
// read back as for added nodes (a program captures, then inspects or patches its nodes).
void capturedHostFunction(void*) {}

TEST_F(LibCudaGraph, CapturedNodesKeepTheirParameters) {
  std::vector<uint32_t> host(kN, 3);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(data_, 7, kN, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyHtoDAsync, CUdeviceptr, const void*, size_t, CUstream)(data_, host.data(),
                                                                              kN * 4, stream_),
            CUDA_SUCCESS);
  int marker = 0;
  ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(stream_, capturedHostFunction, &marker),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  CUgraphNode nodes[3] = {};
  size_t count = 3;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nodes, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 3u);
  int seen = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(node, &type), CUDA_SUCCESS);
    if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
      CUDA_MEMSET_NODE_PARAMS_v1 memset{};
      ASSERT_EQ(
          CU(cuGraphMemsetNodeGetParams, CUgraphNode, CUDA_MEMSET_NODE_PARAMS_v1*)(node, &memset),
          CUDA_SUCCESS);
      EXPECT_EQ(memset.dst, data_);
      EXPECT_EQ(memset.value, 7u);
      EXPECT_EQ(memset.elementSize, 4u);
      EXPECT_EQ(memset.width, size_t{kN});
      EXPECT_EQ(memset.height, 1u);
      seen |= 1;
    } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY) {
      CUDA_MEMCPY3D copy{};
      ASSERT_EQ(CU(cuGraphMemcpyNodeGetParams, CUgraphNode, CUDA_MEMCPY3D*)(node, &copy),
                CUDA_SUCCESS);
      EXPECT_EQ(copy.dstMemoryType, CU_MEMORYTYPE_DEVICE);
      EXPECT_EQ(copy.dstDevice, data_);
      EXPECT_EQ(copy.srcMemoryType, CU_MEMORYTYPE_HOST);
      EXPECT_EQ(copy.srcHost, host.data());
      EXPECT_EQ(copy.WidthInBytes, kN * 4u);
      seen |= 2;
    } else if (type == CU_GRAPH_NODE_TYPE_HOST) {
      CUDA_HOST_NODE_PARAMS params{};
      ASSERT_EQ(CU(cuGraphHostNodeGetParams, CUgraphNode, CUDA_HOST_NODE_PARAMS*)(node, &params),
                CUDA_SUCCESS);
      EXPECT_EQ(params.fn, capturedHostFunction);
      EXPECT_EQ(params.userData, &marker);
      seen |= 4;
    }
  }
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// Captured 2D and 3D copies keep their descriptors (a 2D copy as a 3D copy one slice deep), and
// the graph runs them.
TEST_F(LibCudaGraph, CapturedMultidimensionalCopiesKeepTheirParameters) {
  std::vector<uint32_t> host(kN);
  for (uint32_t i = 0; i < kN; ++i) host[i] = i;
  ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(data_, host.data(), kN * 4),
            CUDA_SUCCESS);
  CUDA_MEMCPY2D rows{};  // 4 rows of 16 bytes, 64 bytes apart, from the start to the middle
  rows.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  rows.srcDevice = data_;
  rows.srcPitch = 64;
  rows.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  rows.dstDevice = data_ + kN * 2;
  rows.dstPitch = 64;
  rows.dstXInBytes = 8;
  rows.WidthInBytes = 16;
  rows.Height = 4;
  CUDA_MEMCPY3D slices{};  // 2 slices of 2 rows of 8 bytes from byte 8, back to the start
  slices.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  slices.srcDevice = data_ + kN * 2;
  slices.srcXInBytes = 8;
  slices.srcPitch = 64;
  slices.srcHeight = 2;
  slices.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  slices.dstDevice = data_;
  slices.dstPitch = 32;
  slices.dstHeight = 2;
  slices.WidthInBytes = 8;
  slices.Height = 2;
  slices.Depth = 2;
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpy2DAsync, const CUDA_MEMCPY2D*, CUstream)(&rows, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpy3DAsync, const CUDA_MEMCPY3D*, CUstream)(&slices, stream_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  CUgraphNode nodes[2] = {};
  size_t count = 2;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nodes, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  CUDA_MEMCPY3D first{}, second{};
  ASSERT_EQ(CU(cuGraphMemcpyNodeGetParams, CUgraphNode, CUDA_MEMCPY3D*)(nodes[0], &first),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphMemcpyNodeGetParams, CUgraphNode, CUDA_MEMCPY3D*)(nodes[1], &second),
            CUDA_SUCCESS);
  EXPECT_EQ(first.srcDevice, data_);
  EXPECT_EQ(first.dstDevice, data_ + kN * 2);
  EXPECT_EQ(first.dstXInBytes, 8u);
  EXPECT_EQ(first.srcPitch, 64u);
  EXPECT_EQ(first.WidthInBytes, 16u);
  EXPECT_EQ(first.Height, 4u);
  EXPECT_EQ(first.Depth, 1u);
  EXPECT_EQ(second.dstDevice, data_);
  EXPECT_EQ(second.dstPitch, 32u);
  EXPECT_EQ(second.srcHeight, 2u);
  EXPECT_EQ(second.Depth, 2u);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), data_, kN * 4), CUDA_SUCCESS);
  // Slice z, row y of the result: words 2 and 3 of middle row 2z + y, where the 2D copy put
  // words 0 and 1 of the start's row 2z + y.
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 2; ++y)
      for (uint32_t w = 0; w < 2; ++w)
        EXPECT_EQ(host[(z * 2 + y) * 8 + w], 16 * (2 * z + y) + w) << z << " " << y << " " << w;
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// A cluster dimension (of one block) on a kernel node, set as a node attribute or kept from a
// captured cluster launch, makes the node's launch an explicit cluster launch, as the kernel
// sees (%is_explicit_cluster); the captured node reports the dimension.
TEST_F(LibCudaGraph, ClusterDimensionOfKernelNodes) {
  const char* ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry explicitFlag(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.pred %p1, %is_explicit_cluster;
  selp.u32 %r1, 1, 2, %p1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx), CUDA_SUCCESS);
  CUfunction flag = nullptr;
  ASSERT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&flag, module, "explicitFlag"),
      CUDA_SUCCESS);
  auto readFlag = [&] {
    uint32_t value = 0;
    EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&value, data_, 4), CUDA_SUCCESS);
    return value;
  };
  void* args[] = {&data_};
  CUDA_KERNEL_NODE_PARAMS_v1 params{flag, 1, 1, 1, 1, 1, 1, 0, args, nullptr};
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  ASSERT_EQ(CU(cuGraphAddKernelNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_KERNEL_NODE_PARAMS_v1*)(&node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  CUlaunchAttributeValue cluster{};
  cluster.clusterDim = {1, 1, 1};
  ASSERT_EQ(CU(cuGraphKernelNodeSetAttribute, CUgraphNode, CUkernelNodeAttrID,
               const CUkernelNodeAttrValue*)(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &cluster),
            CUDA_SUCCESS);
  auto instantiate = CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(instantiate(&exec, graph, 0), CUDA_SUCCESS);
  launchAndWait(exec);
  EXPECT_EQ(readFlag(), 1u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);

  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof attribute);
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim = {1, 1, 1};
  CUlaunchConfig config{1, 1, 1, 1, 1, 1, 0, stream_, &attribute, 1};
  using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
  ASSERT_EQ(proc<LaunchEx>("cuLaunchKernelEx", 12090)(&config, flag, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  size_t count = 1;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, &node, &count),
            CUDA_SUCCESS);
  CUlaunchAttributeValue read{};
  ASSERT_EQ(CU(cuGraphKernelNodeGetAttribute, CUgraphNode, CUkernelNodeAttrID,
               CUkernelNodeAttrValue*)(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &read),
            CUDA_SUCCESS);
  EXPECT_EQ(read.clusterDim.x, 1u);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, 1), CUDA_SUCCESS);
  ASSERT_EQ(instantiate(&exec, graph, 0), CUDA_SUCCESS);
  launchAndWait(exec);
  EXPECT_EQ(readFlag(), 1u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// An executable graph destroyed while a launch of it is pending: the launch keeps the graph's
// user objects, whose destructor runs once it has completed (CUDA C++ Programming Guide, "CUDA
// User Objects": "the release will be deferred if needed").
std::atomic<bool> hostNodeMayFinish{false};
std::atomic<int> destroyedWhenHostNodeFinished{-1};
void waitingHostNode(void*) {
  while (!hostNodeMayFinish.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  destroyedWhenHostNodeFinished = destroyedObjects;
}

TEST_F(LibCudaGraph, UserObjectsOutliveAPendingLaunchOfADestroyedExec) {
  destroyedObjects = 0;
  hostNodeMayFinish = false;
  CUuserObject object = nullptr;
  ASSERT_EQ(CU(cuUserObjectCreate, CUuserObject*, void*, CUhostFn, unsigned, unsigned)(
                &object, nullptr, destroyObject, 1, 1),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(
      CU(cuGraphRetainUserObject, CUgraph, CUuserObject, unsigned, unsigned)(graph, object, 1, 1),
      CUDA_SUCCESS);
  CUDA_HOST_NODE_PARAMS host{waitingHostNode, nullptr};
  CUgraphNode node = nullptr;
  ASSERT_EQ(CU(cuGraphAddHostNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_HOST_NODE_PARAMS*)(&node, graph, nullptr, 0, &host),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(destroyedObjects, 0);  // the launch still holds the object
  hostNodeMayFinish = true;
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(destroyedWhenHostNodeFinished.load(), 0);
  EXPECT_EQ(destroyedObjects, 1);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

// The restrictions of graphs holding memory nodes (cuGraphAddMemFreeNode's documentation): an
// allocation is freed at most once per graph; no clone, no deleted node or edge, one executable
// graph at a time; and cuGraphLaunch refuses a relaunch while the previous launch's allocation
// is unfreed, unless the graph frees on launch. cudaFree of the allocation releases it (the
// memory stays with the node, at the same address for the next launch).
TEST_F(LibCudaGraph, MemoryNodeRestrictionsAndUnfreedAllocations) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.bytesize = kN * 4;
  CUgraphNode allocNode = nullptr, fill = nullptr, freeNode = nullptr, again = nullptr;
  ASSERT_EQ(CU(cuGraphAddMemAllocNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUDA_MEM_ALLOC_NODE_PARAMS*)(&allocNode, graph, nullptr, 0, &alloc),
            CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS_v1 memset{alloc.dptr, 0, 5, 4, kN, 1};
  ASSERT_EQ(CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_MEMSET_NODE_PARAMS_v1*,
               CUcontext)(&fill, graph, &allocNode, 1, &memset, context_),
            CUDA_SUCCESS);
  CUgraph clone = nullptr;
  EXPECT_EQ(CU(cuGraphClone, CUgraph*, CUgraph)(&clone, graph), CUDA_ERROR_NOT_SUPPORTED);
  // Documented as CUDA_ERROR_INVALID_VALUE (cuGraphDestroyNode, cuGraphRemoveDependencies).
  EXPECT_EQ(CU(cuGraphDestroyNode, CUgraphNode)(fill), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphRemoveDependencies, CUgraph, const CUgraphNode*, const CUgraphNode*, size_t)(
                graph, &allocNode, &fill, 1),
            CUDA_ERROR_INVALID_VALUE);
  // "Modifying parameters is not supported for node types CU_GRAPH_NODE_TYPE_MEM_ALLOC".
  CUgraphNodeParams allocParams{};
  allocParams.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  allocParams.alloc.poolProps = alloc.poolProps;
  allocParams.alloc.bytesize = alloc.bytesize;
  EXPECT_EQ(CU13(cuGraphNodeSetParams, CUgraphNode, CUgraphNodeParams*)(allocNode, &allocParams),
            CUDA_ERROR_NOT_SUPPORTED);

  // Not freed in the graph: each launch leaves the allocation to the program.
  auto instantiate = CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long);
  CUgraphExec exec = nullptr, second = nullptr;
  ASSERT_EQ(instantiate(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(instantiate(&second, graph, 0), CUDA_ERROR_INVALID_VALUE);
  launchAndWait(exec);
  std::vector<uint32_t> out(kN);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), alloc.dptr, kN * 4),
            CUDA_SUCCESS);
  for (uint32_t v : out) ASSERT_EQ(v, 5u);
  EXPECT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(alloc.dptr, stream_), CUDA_SUCCESS);
  launchAndWait(exec);  // the same address again
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), alloc.dptr, kN * 4),
            CUDA_SUCCESS);
  for (uint32_t v : out) ASSERT_EQ(v, 5u);
  ASSERT_EQ(CU(cuMemFree, CUdeviceptr)(alloc.dptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  // Freeing on launch makes relaunches legal.
  constexpr unsigned long long kAutoFreeOnLaunch = 1;  // CUDA_GRAPH_INSTANTIATE_FLAG_...
  ASSERT_EQ(instantiate(&exec, graph, kAutoFreeOnLaunch), CUDA_SUCCESS);
  launchAndWait(exec);
  launchAndWait(exec);
  ASSERT_EQ(CU(cuMemFree, CUdeviceptr)(alloc.dptr), CUDA_SUCCESS);  // the last launch's
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);

  // Freed in the graph: at most once.
  auto addFree =
      CU(cuGraphAddMemFreeNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr);
  ASSERT_EQ(addFree(&freeNode, graph, &fill, 1, alloc.dptr), CUDA_SUCCESS);
  EXPECT_EQ(addFree(&again, graph, &freeNode, 1, alloc.dptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(instantiate(&exec, graph, 0), CUDA_SUCCESS);
  launchAndWait(exec);
  launchAndWait(exec);  // nothing left unfreed
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// cuGraphExecUpdate and the exec setters keep what NVIDIA's cannot change: a copy's memory types,
// multidimensional copies, a 2D memset's dimensions.
TEST_F(LibCudaGraph, ExecUpdateKeepsCopyKindsAndMemsetShapes) {
  std::vector<uint32_t> host(kN, 0);
  auto build = [&](bool toHost, size_t memsetWidth, CUgraphNode* copyNode, CUgraphNode* setNode) {
    CUgraph graph = nullptr;
    EXPECT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    CUDA_MEMCPY3D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = data_;
    copy.dstMemoryType = toHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    if (toHost)
      copy.dstHost = host.data();
    else
      copy.dstDevice = data_ + kN * 2;
    copy.WidthInBytes = 16;
    copy.Height = 1;
    copy.Depth = 1;
    EXPECT_EQ(CU(cuGraphAddMemcpyNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                 const CUDA_MEMCPY3D*, CUcontext)(copyNode, graph, nullptr, 0, &copy, context_),
              CUDA_SUCCESS);
    CUDA_MEMSET_NODE_PARAMS_v1 memset{data_, 64, 7, 4, memsetWidth, 4};  // 2D: 4 rows
    EXPECT_EQ(CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                 const CUDA_MEMSET_NODE_PARAMS_v1*,
                 CUcontext)(setNode, graph, copyNode, 1, &memset, context_),
              CUDA_SUCCESS);
    return graph;
  };
  CUgraphNode copyA = nullptr, setA = nullptr, copyB = nullptr, setB = nullptr;
  CUgraph original = build(false, 8, &copyA, &setA);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec,
                                                                                       original, 0),
            CUDA_SUCCESS);
  auto update = CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  CUgraphExecUpdateResultInfo info{};
  CUgraph toHost = build(true, 8, &copyB, &setB);
  EXPECT_EQ(update(exec, toHost, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  EXPECT_EQ(info.errorNode, copyB);
  CUgraph wider = build(false, 12, &copyB, &setB);
  EXPECT_EQ(update(exec, wider, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.errorNode, setB);
  CUgraph same = build(false, 8, &copyB, &setB);
  EXPECT_EQ(update(exec, same, &info), CUDA_SUCCESS);

  CUDA_MEMSET_NODE_PARAMS_v1 resized{data_, 64, 7, 4, 10, 4};
  auto setMemset = CU(cuGraphExecMemsetNodeSetParams, CUgraphExec, CUgraphNode,
                      const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext);
  EXPECT_EQ(setMemset(exec, setA, &resized, context_), CUDA_ERROR_INVALID_VALUE);
  // "for 2d memsets, all dimension changes are rejected" (the pitch too), and the destination
  // stays "the same kind of allocation" with "the same context association".
  CUDA_MEMSET_NODE_PARAMS_v1 repitched{data_, 128, 7, 4, 8, 4};
  EXPECT_EQ(setMemset(exec, setA, &repitched, context_), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr managed = 0;
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 4096, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS_v1 toManaged{managed, 64, 7, 4, 8, 4};
  EXPECT_EQ(setMemset(exec, setA, &toManaged, context_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);
  CUDA_MEMCPY3D rows{};
  rows.srcMemoryType = rows.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  rows.srcDevice = data_;
  rows.dstDevice = data_ + kN * 2;
  rows.WidthInBytes = 16;
  rows.srcPitch = rows.dstPitch = 64;
  rows.Height = 2;
  rows.Depth = 1;
  auto setCopy =
      CU(cuGraphExecMemcpyNodeSetParams, CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext);
  EXPECT_EQ(setCopy(exec, copyA, &rows, context_), CUDA_ERROR_INVALID_VALUE);
  // What may change does: a 2D memset's value and a one-dimensional copy's addresses (the
  // setters once compared with empty parameters and refused every change).
  CUDA_MEMSET_NODE_PARAMS_v1 revalued{data_, 64, 9, 4, 8, 4};
  EXPECT_EQ(CU(cuGraphExecMemsetNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext)(exec, setA, &revalued, context_),
            CUDA_SUCCESS);
  CUDA_MEMCPY3D moved{};
  moved.srcMemoryType = moved.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  moved.srcDevice = data_ + 4;
  moved.dstDevice = data_ + kN * 3;
  moved.WidthInBytes = 16;
  moved.Height = 1;
  moved.Depth = 1;
  EXPECT_EQ(setCopy(exec, copyA, &moved, context_), CUDA_SUCCESS);
  // "Zero-length operations are not supported."
  CUDA_MEMCPY3D empty = moved;
  empty.WidthInBytes = 0;
  EXPECT_EQ(setCopy(exec, copyA, &empty, context_), CUDA_ERROR_INVALID_VALUE);
  std::vector<uint32_t> before(kN);
  for (size_t i = 0; i < kN; ++i) before[i] = static_cast<uint32_t>(i * 3 + 1);
  ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(data_, before.data(), kN * 4),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  std::vector<uint32_t> after(kN);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(after.data(), data_, kN * 4),
            CUDA_SUCCESS);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(after[kN * 3 / 4 + i], before[1 + i]);  // the copy
  EXPECT_EQ(after[0], 9u);                                                         // the memset
  EXPECT_EQ(after[16 * 3 + 7], 9u);  // row 3 of the 2D memset (pitch 16 words), last column
  moved.dstMemoryType = CU_MEMORYTYPE_HOST;
  moved.dstHost = host.data();
  EXPECT_EQ(setCopy(exec, copyA, &moved, context_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  for (CUgraph g : {original, toHost, wider, same})
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(g), CUDA_SUCCESS);
}

// Captured copies and memsets obey cuGraphExecUpdate's rules as nodes made explicitly do: a
// copy keeps its operands' memory types (pinned host memory is host memory), a 2D memset its
// shape.
TEST_F(LibCudaGraph, ExecUpdateKeepsCapturedCopyKindsAndMemsetShapes) {
  void* pinned = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(&pinned, 4096), CUDA_SUCCESS);
  auto capture = [&](bool toPinned, size_t memsetWidth) {
    EXPECT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(
                  stream_, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    CUdeviceptr target = toPinned ? reinterpret_cast<CUdeviceptr>(pinned) : data_ + kN * 2;
    EXPECT_EQ(
        CU(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)(target, data_, 64, stream_),
        CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemsetD2D8Async, CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream)(
                  data_, 64, 5, memsetWidth, 4, stream_),
              CUDA_SUCCESS);
    CUgraph graph = nullptr;
    EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
    return graph;
  };
  CUgraph original = capture(false, 16);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec,
                                                                                       original, 0),
            CUDA_SUCCESS);
  auto update = CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  CUgraphExecUpdateResultInfo info{};
  CUgraph toPinned = capture(true, 16);
  EXPECT_EQ(update(exec, toPinned, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  CUgraph wider = capture(false, 32);
  EXPECT_EQ(update(exec, wider, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  CUgraph same = capture(false, 16);
  EXPECT_EQ(update(exec, same, &info), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  for (CUgraph g : {original, toPinned, wider, same})
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(g), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeHost, void*)(pinned), CUDA_SUCCESS);
}

TEST_F(LibCudaGraph, CaptureForkJoinAndEventNodes) {
  CUstream side = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&side, 1), CUDA_SUCCESS);
  CUevent fork = nullptr, join = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&fork, 2), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&join, 2), CUDA_SUCCESS);
  auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  auto captureInfo = CU(cuStreamGetCaptureInfo, CUstream, CUstreamCaptureStatus*, cuuint64_t*,
                        CUgraph*, const CUgraphNode**, size_t*);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(data_, 1, kN, stream_),
            CUDA_SUCCESS);
  CUresult forked = CU(cuEventRecord, CUevent, CUstream)(fork, stream_);
  if (forked != CUDA_SUCCESS) {
    // The capture-aware cuEventRecord/cuStreamWaitEvent live in api/cuda/stream.cpp.
    CUgraph none = nullptr;
    (void)CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &none);
    GTEST_SKIP() << "cuEventRecord does not fork captures yet";
  }
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(side, fork, 0), CUDA_SUCCESS);
  CUstreamCaptureStatus status{};
  ASSERT_EQ(CU(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*)(side, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  uint32_t ten = 10, hundred = 100, n = kN;
  void* sideArgs[] = {&data_, &ten, &n};
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, side, sideArgs, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(join, side), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(stream_, join, 0), CUDA_SUCCESS);
  const CUgraphNode* deps = nullptr;
  size_t numDeps = 0;
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  ASSERT_EQ(captureInfo(stream_, &status, &id, &capturing, &deps, &numDeps), CUDA_SUCCESS);
  EXPECT_EQ(numDeps, 2u);  // the memset and the side stream's kernel
  // The v3 query gives each dependency its (default) edge data, an array parallel to deps.
  auto captureInfo3 = CU13(cuStreamGetCaptureInfo, CUstream, CUstreamCaptureStatus*, cuuint64_t*,
                           CUgraph*, const CUgraphNode**, const CUgraphEdgeData**, size_t*);
  const CUgraphEdgeData* edgeData = nullptr;
  ASSERT_EQ(captureInfo3(stream_, &status, &id, &capturing, &deps, &edgeData, &numDeps),
            CUDA_SUCCESS);
  ASSERT_EQ(numDeps, 2u);
  ASSERT_NE(edgeData, nullptr);
  for (size_t i = 0; i < numDeps; ++i) {
    EXPECT_EQ(edgeData[i].type, 0);  // CU_GRAPH_DEPENDENCY_TYPE_DEFAULT
    EXPECT_EQ(edgeData[i].from_port, 0);
    EXPECT_EQ(edgeData[i].to_port, 0);
  }
  EXPECT_EQ(captureInfo3(stream_, &status, &id, &capturing, nullptr, &edgeData, &numDeps),
            CUDA_ERROR_INVALID_VALUE);  // edgeData_out needs dependencies_out
  void* mainArgs[] = {&data_, &hundred, &n};
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, stream_, mainArgs, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(captureInfo(stream_, &status, &id, &capturing, &deps, &numDeps), CUDA_SUCCESS);
  EXPECT_EQ(numDeps, 1u);
  CUgraph graph = nullptr;
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(side, &graph),
            CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);  // the unmatched end invalidated it
  ASSERT_EQ(graph, nullptr);

  // Again, ended properly: memset -> side kernel -> main kernel.
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(data_, 1, kN, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(side, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, side, sideArgs, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(join, side), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(stream_, join, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, stream_, mainArgs, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  ASSERT_NE(graph, nullptr);
  size_t edges = 0;
  ASSERT_EQ(CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, nullptr,
                                                                              nullptr, &edges),
            CUDA_SUCCESS);
  EXPECT_EQ(edges, 3u);  // memset->side, side->main, memset->main (not pruned, as in CUDA)
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 111u);

  // A fork that never joins back.
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)(side, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, side, sideArgs, nullptr), CUDA_SUCCESS);
  CUgraph unjoined = nullptr;
  EXPECT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &unjoined),
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(unjoined, nullptr);
  ASSERT_EQ(CU(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*)(side, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);

  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(side), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(fork), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(join), CUDA_SUCCESS);
}

// The rules of a capture in progress: an event last recorded in it cannot be waited for or
// queried (it stands for a node); after an error invalidated the capture, work for the stream is
// refused until cuStreamEndCapture; in relaxed mode cuMemFree is permitted and leaves the
// capture valid.
TEST_F(LibCudaGraph, CaptureRulesForEventsInvalidationAndRelaxedFrees) {
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, 0), CUDA_SUCCESS);
  auto begin = CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode);
  auto end = CU(cuStreamEndCapture, CUstream, CUgraph*);
  auto memset = CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream);
  ASSERT_EQ(begin(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(memset(data_, 1, kN, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream_), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(event), CUDA_ERROR_CAPTURED_EVENT);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_ERROR_CAPTURED_EVENT);
  // A synchronisation of the capturing stream invalidates the capture...
  EXPECT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureStatus status{};
  ASSERT_EQ(CU(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*)(stream_, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  // ...and what follows is refused, until the capture ends.
  EXPECT_EQ(memset(data_, 2, kN, stream_), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream_),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph graph = nullptr;
  EXPECT_EQ(end(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  ASSERT_EQ(CU(cuEventRecord, CUevent, CUstream)(event, stream_), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);

  // Relaxed mode: freeing memory during the capture is allowed and the capture stays valid.
  CUdeviceptr scratch = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&scratch, 256), CUDA_SUCCESS);
  ASSERT_EQ(begin(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(memset(data_, 3, kN, stream_), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(scratch), CUDA_SUCCESS);
  ASSERT_EQ(end(stream_, &graph), CUDA_SUCCESS);
  ASSERT_NE(graph, nullptr);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 3u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
}

// What a capture's graph, streams and moved child graphs may not undergo while in use: destroy
// or node removal of the graph being captured into (and instantiation before the capture ends),
// a destroyed stream that had joined the capture, a graph moved into a child node.
TEST_F(LibCudaGraph, CapturedGraphsJoinedStreamsAndMovedChildrenStayValid) {
  auto begin = CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode);
  auto end = CU(cuStreamEndCapture, CUstream, CUgraph*);
  auto memset = CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream);
  auto info = CU13(cuStreamGetCaptureInfo, CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                   const CUgraphNode**, const CUgraphEdgeData**, size_t*);
  auto instantiate = CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long);
  ASSERT_EQ(begin(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(memset(data_, 1, kN, stream_), CUDA_SUCCESS);
  CUstreamCaptureStatus status{};
  CUgraph capturing = nullptr;
  const CUgraphNode* last = nullptr;
  size_t count = 0;
  ASSERT_EQ(info(stream_, &status, nullptr, &capturing, &last, nullptr, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  // "All operations other than destroy and node removal are permitted on the graph while the
  // capture sequence is in progress"; it "is not instantiable until" the capture ends.
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(capturing), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(CU(cuGraphDestroyNode, CUgraphNode)(last[0]), CUDA_ERROR_NOT_PERMITTED);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(&exec, capturing, 0), CUDA_ERROR_NOT_PERMITTED);
  // A second stream joins the capture, adds work, joins back, and is destroyed before the end.
  CUstream forked = nullptr;
  CUevent fork = nullptr, join = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&forked, 1), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&join, 0), CUDA_SUCCESS);
  auto record = CU(cuEventRecord, CUevent, CUstream);
  auto wait = CU(cuStreamWaitEvent, CUstream, CUevent, unsigned);
  ASSERT_EQ(record(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(wait(forked, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(memset(data_, 2, kN, forked), CUDA_SUCCESS);
  ASSERT_EQ(record(join, forked), CUDA_SUCCESS);
  ASSERT_EQ(wait(stream_, join, 0), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(forked), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(end(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(graph, capturing);
  size_t nodes = 0;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nullptr, &nodes),
            CUDA_SUCCESS);
  EXPECT_EQ(nodes, 2u);
  ASSERT_EQ(instantiate(&exec, graph, 0), CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 2u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  // A forked stream destroyed before its work joined back: the end reports it unjoined.
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&forked, 1), CUDA_SUCCESS);
  ASSERT_EQ(begin(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(record(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(wait(forked, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(memset(data_, 3, kN, forked), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(forked), CUDA_SUCCESS);
  CUgraph unjoined = nullptr;
  EXPECT_EQ(end(stream_, &unjoined), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(unjoined, nullptr);

  // CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE: the parent owns the very graph (its handle) from now on.
  CUgraph parent = nullptr, child = nullptr, other = nullptr;
  auto create = CU(cuGraphCreate, CUgraph*, unsigned);
  ASSERT_EQ(create(&parent, 0), CUDA_SUCCESS);
  ASSERT_EQ(create(&child, 0), CUDA_SUCCESS);
  ASSERT_EQ(create(&other, 0), CUDA_SUCCESS);
  addKernel(child, {}, 5);
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_GRAPH;
  params.graph.graph = child;
  params.graph.ownership = 1;  // CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE
  auto addNode = CU13(cuGraphAddNode, CUgraphNode*, CUgraph, const CUgraphNode*,
                      const CUgraphEdgeData*, size_t, CUgraphNodeParams*);
  CUgraphNode node = nullptr;
  ASSERT_EQ(addNode(&node, parent, nullptr, nullptr, 0, &params), CUDA_SUCCESS);
  CUgraph embedded = nullptr;
  ASSERT_EQ(CU(cuGraphChildGraphNodeGetGraph, CUgraphNode, CUgraph*)(node, &embedded),
            CUDA_SUCCESS);
  EXPECT_EQ(embedded, child);
  // "Cannot be independently instantiated or destroyed; cannot be added as a child graph of a
  // separate parent graph".
  EXPECT_EQ(instantiate(&exec, child, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(child), CUDA_ERROR_INVALID_VALUE);
  CUgraphNode again = nullptr;
  EXPECT_EQ(addNode(&again, other, nullptr, nullptr, 0, &params), CUDA_ERROR_INVALID_VALUE);
  params.graph.graph = other;
  EXPECT_EQ(addNode(&again, other, nullptr, nullptr, 0, &params), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
  ASSERT_EQ(instantiate(&exec, parent, 0), CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 5u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(parent), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(other), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(fork), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(join), CUDA_SUCCESS);
}

// cuMemFreeAsync in a capture "must therefore be passed the address of a graph allocation";
// cuGraphChildGraphNodeGetGraph: "Allocation and free nodes cannot be added to the returned
// graph".
TEST_F(LibCudaGraph, MemoryNodesOnlyWhereDocumented) {
  CUdeviceptr ordinary = 0;
  ASSERT_EQ(CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream)(&ordinary, 4096, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  auto freeAsync = CU(cuMemFreeAsync, CUdeviceptr, CUstream);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(freeAsync(ordinary, stream_), CUDA_ERROR_INVALID_VALUE);
  CUgraph captured = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(captured), CUDA_SUCCESS);
  EXPECT_EQ(freeAsync(ordinary, stream_), CUDA_SUCCESS);  // still allocated: freed now
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);

  CUgraph parent = nullptr, child = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&parent, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&child, 0), CUDA_SUCCESS);
  addKernel(child, {}, 1);
  CUgraphNode node = nullptr;
  ASSERT_EQ(CU(cuGraphAddChildGraphNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUgraph)(&node, parent, nullptr, 0, child),
            CUDA_SUCCESS);
  CUgraph embedded = nullptr;
  ASSERT_EQ(CU(cuGraphChildGraphNodeGetGraph, CUgraphNode, CUgraph*)(node, &embedded),
            CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.bytesize = 4096;
  CUgraphNode allocNode = nullptr;
  auto addAlloc = CU(cuGraphAddMemAllocNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                     CUDA_MEM_ALLOC_NODE_PARAMS*);
  EXPECT_EQ(addAlloc(&allocNode, embedded, nullptr, 0, &alloc), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(addAlloc(&allocNode, child, nullptr, 0, &alloc), CUDA_SUCCESS);  // the original
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(parent), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(child), CUDA_SUCCESS);
}

TEST_F(LibCudaGraph, EventRecordAndWaitNodes) {
  CUevent event = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&event, 0), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUgraphNode k = addKernel(graph, {}, 1);
  CUgraphNode record = nullptr, wait = nullptr;
  ASSERT_EQ(CU(cuGraphAddEventRecordNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUevent)(&record, graph, &k, 1, event),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphAddEventRecordNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUevent)(&wait, graph, &k, 1, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(CU(cuGraphAddEventWaitNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUevent)(
                &wait, graph, &record, 1, event),
            CUDA_SUCCESS);
  CUevent read = nullptr;
  ASSERT_EQ(CU(cuGraphEventRecordNodeGetEvent, CUgraphNode, CUevent*)(record, &read), CUDA_SUCCESS);
  EXPECT_EQ(read, event);
  EXPECT_EQ(CU(cuGraphEventWaitNodeGetEvent, CUgraphNode, CUevent*)(record, &read),
            CUDA_ERROR_INVALID_VALUE);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventQuery, CUevent)(event), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
}

TEST_F(LibCudaGraph, CaptureToGraphAndExecSetters) {
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS_v1 fill{data_, 0, 2, 4, kN, 1};
  CUgraphNode memset = nullptr;
  ASSERT_EQ(
      CU(cuGraphAddMemsetNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
         const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext)(&memset, graph, nullptr, 0, &fill, context_),
      CUDA_SUCCESS);
  int weight = 1;
  CUDA_HOST_NODE_PARAMS hostParams{countCall, &weight};
  CUgraphNode host = nullptr;
  ASSERT_EQ(CU(cuGraphAddHostNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_HOST_NODE_PARAMS*)(&host, graph, nullptr, 0, &hostParams),
            CUDA_SUCCESS);
  // Capture a kernel into the existing graph after the memset.
  auto beginToGraph = CU13(cuStreamBeginCaptureToGraph, CUstream, CUgraph, const CUgraphNode*,
                           const CUgraphEdgeData*, size_t, CUstreamCaptureMode);
  CUgraph foreignGraph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&foreignGraph, 0), CUDA_SUCCESS);
  EXPECT_EQ(beginToGraph(stream_, foreignGraph, &memset, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_INVALID_VALUE);  // the dependency is not a node of that graph
  ASSERT_EQ(beginToGraph(stream_, graph, &memset, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(beginToGraph(stream_, graph, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_ILLEGAL_STATE);  // already capturing
  uint32_t five = 5, n = kN;
  void* args[] = {&data_, &five, &n};
  auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, stream_, args, nullptr), CUDA_SUCCESS);
  // The next captured work also waits for the host node.
  auto update = CU(cuStreamUpdateCaptureDependencies, CUstream, CUgraphNode*, size_t, unsigned);
  EXPECT_EQ(update(stream_, &host, 1, 7), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(update(stream_, &host, 1, 0), CUDA_SUCCESS);  // CU_STREAM_ADD_CAPTURE_DEPENDENCIES
  ASSERT_EQ(launch(function_, 2, 1, 1, 128, 1, 1, 0, stream_, args, nullptr), CUDA_SUCCESS);
  CUgraph captured = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &captured), CUDA_SUCCESS);
  EXPECT_EQ(captured, graph);
  EXPECT_EQ(update(stream_, &host, 1, 0), CUDA_ERROR_ILLEGAL_STATE);  // not capturing
  size_t count = 0;
  ASSERT_EQ(CU(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, size_t*)(graph, nullptr,
                                                                              nullptr, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);  // memset->k1, k1->k2, host->k2

  CUDA_GRAPH_INSTANTIATE_PARAMS instantiate{};
  instantiate.flags = 2;  // upload
  instantiate.hUploadStream = stream_;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(CU13(cuGraphInstantiateWithParams, CUgraphExec*, CUgraph,
                 CUDA_GRAPH_INSTANTIATE_PARAMS*)(&exec, graph, &instantiate),
            CUDA_SUCCESS);
  EXPECT_EQ(instantiate.result_out, 0);
  hostCalls = 0;
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 12u);
  EXPECT_EQ(hostCalls, 1);

  // Executable-graph setters: memset value, host argument.
  CUDA_MEMSET_NODE_PARAMS_v1 fill7{data_, 0, 7, 4, kN, 1};
  ASSERT_EQ(CU(cuGraphExecMemsetNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_MEMSET_NODE_PARAMS_v1*, CUcontext)(exec, memset, &fill7, context_),
            CUDA_SUCCESS);
  int heavier = 10;
  CUDA_HOST_NODE_PARAMS hostParams10{countCall, &heavier};
  ASSERT_EQ(CU(cuGraphExecHostNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_HOST_NODE_PARAMS*)(exec, host, &hostParams10),
            CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecHostNodeSetParams, CUgraphExec, CUgraphNode,
               const CUDA_HOST_NODE_PARAMS*)(exec, memset, &hostParams10),
            CUDA_ERROR_INVALID_VALUE);  // a memset node
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 17u);
  EXPECT_EQ(hostCalls, 11);
  // The graph's own nodes were not changed by the exec setters.
  CUDA_MEMSET_NODE_PARAMS_v1 read{};
  ASSERT_EQ(CU(cuGraphMemsetNodeGetParams, CUgraphNode, CUDA_MEMSET_NODE_PARAMS_v1*)(memset, &read),
            CUDA_SUCCESS);
  EXPECT_EQ(read.value, 2u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(foreignGraph), CUDA_SUCCESS);
}

// A kernel launched into a capturing stream keeps its parameters as an added node does: they can
// be read, its launch attributes queried, and an executable graph's copy updated.
TEST_F(LibCudaGraph, CapturedKernelNodesKeepTheirParameters) {
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 1, kN), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  uint32_t three = 3, n = kN;
  void* args[] = {&data_, &three, &n};
  CUlaunchAttribute priority{};
  priority.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  priority.value.priority = 0;
  CUlaunchConfig config{2, 1, 1, 128, 1, 1, 16, stream_, &priority, 1};
  ASSERT_EQ(CU(cuLaunchKernelEx, const CUlaunchConfig*, CUfunction, void**, void**)(
                &config, function_, args, nullptr),
            CUDA_SUCCESS);
  three = 99;  // the node holds a copy of the arguments
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  size_t count = 1;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, &node, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  auto getParams = CU13(cuGraphKernelNodeGetParams, CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*);
  CUDA_KERNEL_NODE_PARAMS_v2 read{};
  ASSERT_EQ(getParams(node, &read), CUDA_SUCCESS);
  EXPECT_EQ(read.func, function_);
  EXPECT_EQ(read.gridDimX, 2u);
  EXPECT_EQ(read.blockDimX, 128u);
  EXPECT_EQ(read.sharedMemBytes, 16u);
  ASSERT_NE(read.kernelParams, nullptr);
  EXPECT_EQ(*static_cast<CUdeviceptr*>(read.kernelParams[0]), data_);
  EXPECT_EQ(*static_cast<uint32_t*>(read.kernelParams[1]), 3u);
  CUkernelNodeAttrValue value{};
  ASSERT_EQ(CU(cuGraphKernelNodeGetAttribute, CUgraphNode, CUkernelNodeAttrID,
               CUkernelNodeAttrValue*)(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value),
            CUDA_SUCCESS);
  EXPECT_EQ(value.priority, 0);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 4u);
  uint32_t ten = 10;
  void* updated[] = {&data_, &ten, &n};
  CUDA_KERNEL_NODE_PARAMS_v2 change = read;
  change.kernelParams = updated;
  ASSERT_EQ(CU13(cuGraphExecKernelNodeSetParams, CUgraphExec, CUgraphNode,
                 const CUDA_KERNEL_NODE_PARAMS_v2*)(exec, node, &change),
            CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 14u);
  ASSERT_EQ(getParams(node, &read), CUDA_SUCCESS);  // the graph's node is unchanged
  EXPECT_EQ(*static_cast<uint32_t*>(read.kernelParams[1]), 3u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// A captured copy from pageable host memory is a node that reads the host buffer at each launch,
// as an explicit memcpy node does: not the contents at capture time. One into pageable memory
// is a node that writes it at each launch (NVIDIA's simpleCudaGraphs captures one; it was
// refused as a wait during the capture).
TEST_F(LibCudaGraph, CapturedCopiesFromPageableMemoryReadItAtLaunch) {
  std::vector<uint32_t> host(kN, 1), back(kN, 0);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyHtoDAsync, CUdeviceptr, const void*, size_t, CUstream)(
                data_, host.data(), kN * sizeof(uint32_t), stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)(
                reinterpret_cast<CUdeviceptr>(back.data()), data_, kN * sizeof(uint32_t), stream_),
            CUDA_SUCCESS);
  EXPECT_EQ(back[0], 0u);  // recorded, not run
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  for (uint32_t round : {42u, 43u}) {
    std::fill(host.begin(), host.end(), round);
    launchAndWait(exec);
    for (uint32_t v : readBack()) ASSERT_EQ(v, round);
    for (uint32_t v : back) ASSERT_EQ(v, round);
  }
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// The graph memory attributes are the device's, whatever context the graph allocates in (here a
// cuCtxCreate one), and count an allocation from its launch until a trim: a free node's release
// leaves it the graph's.
TEST_F(LibCudaGraph, GraphMemoryIsReportedPerDevice) {
  CUcontext own = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&own, 0, 0),
            CUDA_SUCCESS);
  auto attribute = CU(cuDeviceGetGraphMemAttribute, CUdevice, CUgraphMem_attribute, void*);
  auto figure = [&](CUgraphMem_attribute which) {
    cuuint64_t value = 0;
    EXPECT_EQ(attribute(0, which, &value), CUDA_SUCCESS);
    return value;
  };
  ASSERT_EQ(CU(cuDeviceGraphMemTrim, CUdevice)(0), CUDA_SUCCESS);
  cuuint64_t usedBefore = figure(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = 1 << 20;
  CUgraphNode allocNode = nullptr, freeNode = nullptr;
  ASSERT_EQ(CU(cuGraphAddMemAllocNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUDA_MEM_ALLOC_NODE_PARAMS*)(&allocNode, graph, nullptr, 0, &alloc),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphAddMemFreeNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               CUdeviceptr)(&freeNode, graph, &allocNode, 1, alloc.dptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream), CUDA_SUCCESS);
  // At once, in the host's order.
  EXPECT_EQ(figure(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), usedBefore + (1 << 20));
  EXPECT_GE(figure(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT),
            figure(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT));
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(figure(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), usedBefore + (1 << 20));
  ASSERT_EQ(CU(cuDeviceGraphMemTrim, CUdevice)(0), CUDA_SUCCESS);
  EXPECT_EQ(figure(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), usedBefore);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(own), CUDA_SUCCESS);
}

// Programmatic edges (programmatic dependent launch in a graph) between kernel nodes: kept with
// their data, which the edge queries return (a query without room for it is lossy), clones and
// updates compare, and run as full dependencies.
TEST_F(LibCudaGraph, ProgrammaticEdges) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  uint32_t value = 3, n = kN;
  void* args[] = {&data_, &value, &n};
  CUgraphNodeParams kernel{};
  kernel.type = CU_GRAPH_NODE_TYPE_KERNEL;
  kernel.kernel =
      CUDA_KERNEL_NODE_PARAMS_v2{function_, 2, 1, 1, 128, 1, 1, 0, args, nullptr, nullptr, nullptr};
  auto addNode = CU13(cuGraphAddNode, CUgraphNode*, CUgraph, const CUgraphNode*,
                      const CUgraphEdgeData*, size_t, CUgraphNodeParams*);
  CUgraphNode first = nullptr, second = nullptr, third = nullptr;
  ASSERT_EQ(addNode(&first, graph, nullptr, nullptr, 0, &kernel), CUDA_SUCCESS);
  CUgraphEdgeData programmatic{};
  programmatic.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  ASSERT_EQ(addNode(&second, graph, &first, &programmatic, 1, &kernel), CUDA_SUCCESS);
  CUgraphEdgeData launchOrder{};
  launchOrder.from_port = CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER;
  ASSERT_EQ(addNode(&third, graph, &second, &launchOrder, 1, &kernel), CUDA_SUCCESS);

  // A programmatic edge joins kernel nodes; only kernels have non-zero ports.
  CUgraphNodeParams memset{};
  memset.type = CU_GRAPH_NODE_TYPE_MEMSET;
  memset.memset.dst = data_;
  memset.memset.elementSize = 4;
  memset.memset.width = kN;
  memset.memset.height = 1;
  CUgraphNode refused = nullptr, fill = nullptr;
  EXPECT_EQ(addNode(&refused, graph, &first, &programmatic, 1, &memset), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(addNode(&fill, graph, nullptr, nullptr, 0, &memset), CUDA_SUCCESS);
  EXPECT_EQ(addNode(&refused, graph, &fill, &launchOrder, 1, &kernel), CUDA_ERROR_INVALID_VALUE);
  auto addEdges = CU13(cuGraphAddDependencies, CUgraph, const CUgraphNode*, const CUgraphNode*,
                       const CUgraphEdgeData*, size_t);
  EXPECT_EQ(addEdges(graph, &first, &fill, &programmatic, 1), CUDA_ERROR_INVALID_VALUE);

  // The queries return the data; without room for it they are lossy.
  auto getEdges =
      CU13(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, CUgraphEdgeData*, size_t*);
  CUgraphNode from[4] = {}, to[4] = {};
  CUgraphEdgeData data[4] = {};
  size_t count = 4;
  ASSERT_EQ(getEdges(graph, from, to, data, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(from[0], first);
  EXPECT_EQ(to[0], second);
  EXPECT_EQ(data[0].from_port, CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC);
  EXPECT_EQ(data[0].type, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  EXPECT_EQ(data[1].from_port, CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER);
  EXPECT_EQ(data[1].type, CU_GRAPH_DEPENDENCY_TYPE_DEFAULT);
  count = 4;
  EXPECT_EQ(getEdges(graph, from, to, nullptr, &count), CUDA_ERROR_LOSSY_QUERY);
  count = 0;
  EXPECT_EQ(getEdges(graph, nullptr, nullptr, nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);
  auto dependents =
      CU13(cuGraphNodeGetDependentNodes, CUgraphNode, CUgraphNode*, CUgraphEdgeData*, size_t*);
  CUgraphNode next = nullptr;
  CUgraphEdgeData nextData{};
  count = 1;
  ASSERT_EQ(dependents(first, &next, &nextData, &count), CUDA_SUCCESS);
  EXPECT_EQ(next, second);
  EXPECT_EQ(nextData.type, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  count = 1;
  EXPECT_EQ(dependents(first, &next, nullptr, &count), CUDA_ERROR_LOSSY_QUERY);
  auto dependencies =
      CU13(cuGraphNodeGetDependencies, CUgraphNode, CUgraphNode*, CUgraphEdgeData*, size_t*);
  count = 1;
  ASSERT_EQ(dependencies(third, &next, &nextData, &count), CUDA_SUCCESS);
  EXPECT_EQ(next, second);
  EXPECT_EQ(nextData.from_port, CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER);

  // They run as full dependencies: three additions of 3.
  CUgraph plain = nullptr;
  ASSERT_EQ(CU(cuGraphClone, CUgraph*, CUgraph)(&plain, graph), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphDestroyNode, CUgraphNode)(fill), CUDA_SUCCESS);
  std::vector<uint32_t> host(kN, 0);
  ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(data_, host.data(), kN * 4),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), data_, kN * 4), CUDA_SUCCESS);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(host[i], 9u) << i;

  // Removing an edge names its data; a clone keeps it.
  auto removeEdges = CU13(cuGraphRemoveDependencies, CUgraph, const CUgraphNode*,
                          const CUgraphNode*, const CUgraphEdgeData*, size_t);
  EXPECT_EQ(removeEdges(graph, &first, &second, nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(removeEdges(graph, &first, &second, &programmatic, 1), CUDA_SUCCESS);
  count = 4;
  ASSERT_EQ(getEdges(plain, from, to, data, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(data[0].type, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  // An update whose edge lost its data changes the topology.
  ASSERT_EQ(addEdges(graph, &first, &second, nullptr, 1), CUDA_SUCCESS);
  CUgraphExec fromPlain = nullptr;
  ASSERT_EQ(CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&fromPlain,
                                                                                       plain, 0),
            CUDA_SUCCESS);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)(
                fromPlain, graph, &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(fromPlain), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(plain), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// A launch that allows programmatic serialization, captured after a kernel, depends on it over a
// programmatic edge, as NVIDIA's capture records it; after a memset, over a default one.
TEST_F(LibCudaGraph, CapturedProgrammaticLaunchesGetProgrammaticEdges) {
  uint32_t value = 1, n = kN;
  void* args[] = {&data_, &value, &n};
  CUlaunchAttribute serialization{};
  serialization.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  serialization.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{2, 1, 1, 128, 1, 1, 0, stream_, &serialization, 1};
  auto launchEx = CU(cuLaunchKernelEx, const CUlaunchConfig*, CUfunction, void**, void**);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(data_, 0, kN, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(launchEx(&config, function_, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(launchEx(&config, function_, args, nullptr), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  CUgraphNode from[2] = {}, to[2] = {};
  CUgraphEdgeData data[2] = {};
  size_t count = 2;
  ASSERT_EQ(CU13(cuGraphGetEdges, CUgraph, CUgraphNode*, CUgraphNode*, CUgraphEdgeData*, size_t*)(
                graph, from, to, data, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(data[0].type, CU_GRAPH_DEPENDENCY_TYPE_DEFAULT);  // memset -> kernel
  EXPECT_EQ(data[1].from_port, CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC);
  EXPECT_EQ(data[1].type, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream_), CUDA_SUCCESS);
  std::vector<uint32_t> host(kN);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(host.data(), data_, kN * 4), CUDA_SUCCESS);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(host[i], 2u) << i;
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

TEST_F(LibCudaGraph, GenericAddNodeAndKernelAttributes) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  uint32_t value = 4, n = kN;
  void* args[] = {&data_, &value, &n};
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_KERNEL;
  params.kernel =
      CUDA_KERNEL_NODE_PARAMS_v2{function_, 2, 1, 1, 128, 1, 1, 0, args, nullptr, nullptr, nullptr};
  CUgraphNode node = nullptr;
  auto addNode = CU13(cuGraphAddNode, CUgraphNode*, CUgraph, const CUgraphNode*,
                      const CUgraphEdgeData*, size_t, CUgraphNodeParams*);
  ASSERT_EQ(addNode(&node, graph, nullptr, nullptr, 0, &params), CUDA_SUCCESS);
  // Edge data: malformed is INVALID_VALUE (ProgrammaticEdges has the valid kinds).
  CUgraphEdgeData edge{};
  edge.to_port = 1;
  CUgraphNode dependent = nullptr;
  EXPECT_EQ(addNode(&dependent, graph, &node, &edge, 1, &params), CUDA_ERROR_INVALID_VALUE);
  edge = CUgraphEdgeData{};
  edge.type = 9;
  EXPECT_EQ(addNode(&dependent, graph, &node, &edge, 1, &params), CUDA_ERROR_INVALID_VALUE);
  edge = CUgraphEdgeData{};
  edge.reserved[2] = 1;
  EXPECT_EQ(addNode(&dependent, graph, &node, &edge, 1, &params), CUDA_ERROR_INVALID_VALUE);
  edge = CUgraphEdgeData{};
  edge.from_port = 1;  // the programmatic port takes programmatic edges only
  EXPECT_EQ(addNode(&dependent, graph, &node, &edge, 1, &params), CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeParams unsupported{};
  unsupported.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
  CUgraphNode x = nullptr;
  EXPECT_EQ(addNode(&x, graph, nullptr, nullptr, 0, &unsupported), CUDA_ERROR_NOT_SUPPORTED);
  // A conditional node needs a handle of the graph (graph_conditional_test.cpp has the rest).
  CUgraphNodeParams conditional{};
  conditional.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  EXPECT_EQ(addNode(&x, graph, nullptr, nullptr, 0, &conditional), CUDA_ERROR_INVALID_VALUE);
  CUlaunchAttributeValue priority{};
  priority.priority = 3;
  auto setAttr = CU(cuGraphKernelNodeSetAttribute, CUgraphNode, CUkernelNodeAttrID,
                    const CUkernelNodeAttrValue*);
  auto getAttr =
      CU(cuGraphKernelNodeGetAttribute, CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue*);
  ASSERT_EQ(setAttr(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &priority), CUDA_SUCCESS);
  CUlaunchAttributeValue read{};
  ASSERT_EQ(getAttr(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &read), CUDA_SUCCESS);
  EXPECT_EQ(read.priority, 3);
  CUlaunchAttributeValue cooperative{};
  cooperative.cooperative = 1;
  // A cooperative node (its two blocks fit on any device) launches cooperatively.
  EXPECT_EQ(setAttr(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &cooperative), CUDA_SUCCESS);
  CUgraphNode second = nullptr;
  ASSERT_EQ(addNode(&second, graph, &node, nullptr, 1, &params), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphKernelNodeCopyAttributes, CUgraphNode, CUgraphNode)(second, node),
            CUDA_SUCCESS);
  ASSERT_EQ(getAttr(second, CU_LAUNCH_ATTRIBUTE_PRIORITY, &read), CUDA_SUCCESS);
  EXPECT_EQ(read.priority, 3);
  ASSERT_EQ(getAttr(second, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &read), CUDA_SUCCESS);
  EXPECT_EQ(read.cooperative, 1);
  // cuGraphNodeSetParams with the generic form; a type mismatch is refused.
  value = 6;
  ASSERT_EQ(CU13(cuGraphNodeSetParams, CUgraphNode, CUgraphNodeParams*)(second, &params),
            CUDA_SUCCESS);
  CUgraphNodeParams host{};
  host.type = CU_GRAPH_NODE_TYPE_HOST;
  host.host = CUDA_HOST_NODE_PARAMS{countCall, nullptr};
  EXPECT_EQ(CU13(cuGraphNodeSetParams, CUgraphNode, CUgraphNodeParams*)(second, &host),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  launchAndWait(exec);
  for (uint32_t v : readBack()) ASSERT_EQ(v, 10u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

// cuGraphExecUpdate's kernel-node rules: the cooperative attribute cannot change, nor the
// priority when instantiated with USE_NODE_PRIORITY (ATTRIBUTES_CHANGED); a kernel of another
// context is an unsupported function change. Device-launch instantiation flags are checked.
TEST_F(LibCudaGraph, ExecUpdateRefusesAttributeAndContextChanges) {
  auto setAttr = CU(cuGraphKernelNodeSetAttribute, CUgraphNode, CUkernelNodeAttrID,
                    const CUkernelNodeAttrValue*);
  auto update = CU13(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
  auto instantiate = CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long);
  auto makeGraph = [&](int priority, int cooperative, CUgraphNode* node) {
    CUgraph graph = nullptr;
    EXPECT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
    *node = addKernel(graph, {}, 1);
    CUlaunchAttributeValue value{};
    value.priority = priority;
    EXPECT_EQ(setAttr(*node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value), CUDA_SUCCESS);
    value = {};
    value.cooperative = cooperative;
    EXPECT_EQ(setAttr(*node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value), CUDA_SUCCESS);
    return graph;
  };
  CUgraphNode node = nullptr, changedNode = nullptr;
  CUgraph base = makeGraph(0, 0, &node);
  CUgraphExec plain = nullptr, prioritized = nullptr;
  ASSERT_EQ(instantiate(&plain, base, 0), CUDA_SUCCESS);
  ASSERT_EQ(instantiate(&prioritized, base, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY),
            CUDA_SUCCESS);
  CUgraphExecUpdateResultInfo info{};
  CUgraph otherPriority = makeGraph(3, 0, &changedNode);
  EXPECT_EQ(update(plain, otherPriority, &info), CUDA_SUCCESS);
  EXPECT_EQ(update(prioritized, otherPriority, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
  EXPECT_EQ(info.errorNode, changedNode);
  CUgraph cooperative = makeGraph(0, 1, &changedNode);
  EXPECT_EQ(update(plain, cooperative, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);

  // The same kernel loaded in a second context.
  CUcontext second = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020)(&second, 0, 0),
            CUDA_SUCCESS);
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kPtx), CUDA_SUCCESS);
  ASSERT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "add_value"),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  CUgraph foreign = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&foreign, 0), CUDA_SUCCESS);
  std::swap(function, function_);
  addKernel(foreign, {}, 1);
  std::swap(function, function_);
  EXPECT_EQ(update(plain, foreign, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);

  CUgraphExec device = nullptr;
  EXPECT_EQ(instantiate(&device, base,
                        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                            CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
            CUDA_ERROR_INVALID_VALUE);
  for (CUgraph graph : {base, otherPriority, cooperative, foreign})
    EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
  for (CUgraphExec exec : {plain, prioritized})
    EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxDestroy, CUcontext)(second), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// "Only one instance of hGraphExec may be executing at a time": launches of one executable graph
// on two streams run one after the other. The graph's host node checks that no other launch of it
// is inside it at the same time.
std::atomic<int> insideGraph{0};
std::atomic<int> overlaps{0};
void exclusiveHostNode(void*) {
  if (insideGraph.fetch_add(1) != 0) overlaps.fetch_add(1);
  usleep(2000);
  insideGraph.fetch_sub(1);
}

TEST_F(LibCudaGraph, LaunchesOfOneExecutableGraphDoNotOverlap) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUDA_HOST_NODE_PARAMS host{exclusiveHostNode, nullptr};
  CUgraphNode node = nullptr;
  ASSERT_EQ(CU(cuGraphAddHostNode, CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
               const CUDA_HOST_NODE_PARAMS*)(&node, graph, nullptr, 0, &host),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  CUstream other = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&other, 1), CUDA_SUCCESS);
  auto launch = CU(cuGraphLaunch, CUgraphExec, CUstream);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(launch(exec, stream_), CUDA_SUCCESS);
    ASSERT_EQ(launch(exec, other), CUDA_SUCCESS);
  }
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(other), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda

namespace rocuda::cuda {
namespace {

// Stream-ordered allocation inside a capture becomes memory alloc and free nodes, so the graph
// can be launched again and again (the memory is the graph's, not freed by the first launch).
TEST_F(LibCudaGraph, CapturedStreamOrderedAllocationBecomesMemoryNodes) {
  auto allocAsync = CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream);
  auto freeAsync = CU(cuMemFreeAsync, CUdeviceptr, CUstream);
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  CUdeviceptr scratch = 0;
  ASSERT_EQ(allocAsync(&scratch, kN * 4, stream_), CUDA_SUCCESS);
  ASSERT_NE(scratch, 0u);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(scratch, 7, kN, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemcpyDtoDAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)(data_, scratch,
                                                                              kN * 4, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(freeAsync(scratch, stream_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);

  size_t count = 0;
  auto getNodes = CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*);
  ASSERT_EQ(getNodes(graph, nullptr, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 4u);
  std::vector<CUgraphNode> nodes(count);
  ASSERT_EQ(getNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
  std::vector<CUgraphNodeType> types;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(node, &type), CUDA_SUCCESS);
    types.push_back(type);
  }
  EXPECT_EQ(std::count(types.begin(), types.end(), CU_GRAPH_NODE_TYPE_MEM_ALLOC), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), CU_GRAPH_NODE_TYPE_MEM_FREE), 1);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  for (int launch = 0; launch < 3; ++launch) {
    ASSERT_EQ(CU(cuMemsetD32, CUdeviceptr, unsigned, size_t)(data_, 0, kN), CUDA_SUCCESS);
    launchAndWait(exec);
    for (uint32_t v : readBack()) ASSERT_EQ(v, 7u) << "launch " << launch;
  }
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda
