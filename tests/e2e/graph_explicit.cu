// CUDA graphs built explicitly with the runtime API: a memset, kernels forming a diamond, a
// child graph, a copy back to the host and a host node; launched several times with new kernel
// arguments (cudaGraphExecKernelNodeSetParams), updated from a second graph of the same
// topology (cudaGraphExecUpdate), and refused an update from a different topology. Every result
// is checked against a host reference.
#include <vector>

#include "e2e_check.h"

__global__ void addScalar(int* data, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}

__global__ void mulScalar(int* data, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

__global__ void combine(int* out, const int* a, const int* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i] + i;
}

struct HostCounter {
  int calls = 0;
};

void CUDART_CB countCall(void* userData) { ++static_cast<HostCounter*>(userData)->calls; }

namespace {

const int kN = 3000;
const int kThreads = 128;
const int kBlocks = (kN + kThreads - 1) / kThreads;

cudaGraphNode_t addKernel(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                          void* func, void** args) {
  cudaKernelNodeParams p = {};
  p.func = func;
  p.gridDim = dim3(kBlocks);
  p.blockDim = dim3(kThreads);
  p.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, graph, deps.data(), deps.size(), &p));
  return node;
}

// a = fill; a += addA (kernel); b = a * mul (child graph: copy a->b then multiply);
// out = a + b + i; out copied to host; host node counts.
struct Built {
  cudaGraph_t graph;
  cudaGraphNode_t addNode;
};

Built build(int* a, int* b, int* out, int* host, int fill, int addA, int mul,
            HostCounter* counter) {
  int n = kN;
  cudaGraph_t graph, child;
  CHECK(cudaGraphCreate(&graph, 0));
  CHECK(cudaGraphCreate(&child, 0));
  cudaMemsetParams ms = {};
  ms.dst = a;
  ms.value = 0;
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  cudaGraphNode_t memset;
  CHECK(cudaGraphAddMemsetNode(&memset, graph, nullptr, 0, &ms));
  void* fillArgs[] = {&a, &fill, &n};
  cudaGraphNode_t fillNode = addKernel(graph, {memset}, (void*)addScalar, fillArgs);
  void* addArgs[] = {&a, &addA, &n};
  cudaGraphNode_t addNode = addKernel(graph, {fillNode}, (void*)addScalar, addArgs);

  cudaGraphNode_t copyInChild;
  CHECK(cudaGraphAddMemcpyNode1D(&copyInChild, child, nullptr, 0, b, a, kN * sizeof(int),
                                 cudaMemcpyDeviceToDevice));
  void* mulArgs[] = {&b, &mul, &n};
  addKernel(child, {copyInChild}, (void*)mulScalar, mulArgs);
  cudaGraphNode_t childNode;
  CHECK(cudaGraphAddChildGraphNode(&childNode, graph, &addNode, 1, child));
  CHECK(cudaGraphDestroy(child));  // the node holds its own copy

  void* combineArgs[] = {&out, &a, &b, &n};
  cudaGraphNode_t joinDeps[] = {childNode, addNode};
  cudaKernelNodeParams p = {};
  p.func = (void*)combine;
  p.gridDim = dim3(kBlocks);
  p.blockDim = dim3(kThreads);
  p.kernelParams = combineArgs;
  cudaGraphNode_t combineNode;
  CHECK(cudaGraphAddKernelNode(&combineNode, graph, joinDeps, 2, &p));
  cudaGraphNode_t copyOut;
  CHECK(cudaGraphAddMemcpyNode1D(&copyOut, graph, &combineNode, 1, host, out, kN * sizeof(int),
                                 cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp = {};
  hp.fn = countCall;
  hp.userData = counter;
  cudaGraphNode_t hostNode;
  CHECK(cudaGraphAddHostNode(&hostNode, graph, &copyOut, 1, &hp));
  return {graph, addNode};
}

void checkResult(Checker& check, const char* what, const int* host, int fill, int addA,
                 int mul) {
  for (int i = 0; i < kN; ++i) {
    int a = fill + addA;
    check.eq(what, i, a + a * mul + i, host[i]);
  }
}

}  // namespace

int main() {
  Checker check("graph_explicit");
  int *a, *b, *out, *host;
  CHECK(cudaMalloc(&a, kN * sizeof(int)));
  CHECK(cudaMalloc(&b, kN * sizeof(int)));
  CHECK(cudaMalloc(&out, kN * sizeof(int)));
  CHECK(cudaMallocHost(&host, kN * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  HostCounter counter;

  Built first = build(a, b, out, host, 5, 2, 3, &counter);
  size_t nodes = 0, edges = 0;
  CHECK(cudaGraphGetNodes(first.graph, nullptr, &nodes));
  CHECK(cudaGraphGetEdges(first.graph, nullptr, nullptr, nullptr, &edges));
  check.eq("nodes", 0, size_t{7}, nodes);
  check.eq("edges", 0, size_t{7}, edges);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, first.graph, 0));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  checkResult(check, "first launch", host, 5, 2, 3);
  check.eq("host node calls", 0, 1, counter.calls);

  // New arguments for one kernel node of the executable graph.
  int n = kN, addA = 40;
  void* addArgs[] = {&a, &addA, &n};
  cudaKernelNodeParams p = {};
  p.func = (void*)addScalar;
  p.gridDim = dim3(kBlocks);
  p.blockDim = dim3(kThreads);
  p.kernelParams = addArgs;
  CHECK(cudaGraphExecKernelNodeSetParams(exec, first.addNode, &p));
  for (int launch = 0; launch < 2; ++launch) {
    for (int i = 0; i < kN; ++i) host[i] = -1;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    checkResult(check, "after exec set params", host, 5, 40, 3);
  }
  check.eq("host node calls", 0, 3, counter.calls);

  // The same topology with other values: the executable graph takes them.
  Built second = build(a, b, out, host, 7, 1, 4, &counter);
  cudaGraphExecUpdateResultInfo info;
  CHECK(cudaGraphExecUpdate(exec, second.graph, &info));
  check.expect(info.result == cudaGraphExecUpdateSuccess, "the update succeeds");
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  checkResult(check, "after update", host, 7, 1, 4);

  // Another topology is refused and leaves the executable graph as it was.
  cudaGraph_t other;
  CHECK(cudaGraphCreate(&other, 0));
  cudaGraphNode_t lone;
  CHECK(cudaGraphAddEmptyNode(&lone, other, nullptr, 0));
  cudaError_t refused = cudaGraphExecUpdate(exec, other, &info);
  check.expect(refused == cudaErrorGraphExecUpdateFailure, "a different topology is refused");
  check.expect(info.result != cudaGraphExecUpdateSuccess, "the update result says why");
  (void)cudaGetLastError();
  for (int i = 0; i < kN; ++i) host[i] = -1;
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  checkResult(check, "after refused update", host, 7, 1, 4);

  // A clone instantiates and runs like the original.
  cudaGraph_t clone;
  CHECK(cudaGraphClone(&clone, first.graph));
  cudaGraphExec_t cloneExec;
  CHECK(cudaGraphInstantiate(&cloneExec, clone, 0));
  CHECK(cudaGraphLaunch(cloneExec, s));
  CHECK(cudaStreamSynchronize(s));
  checkResult(check, "clone", host, 5, 2, 3);

  CHECK(cudaGraphExecDestroy(cloneExec));
  CHECK(cudaGraphExecDestroy(exec));
  for (cudaGraph_t g : {first.graph, second.graph, other, clone}) CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(out));
  CHECK(cudaFree(b));
  CHECK(cudaFree(a));
  std::printf("graph_explicit: %zu nodes, %d host-node calls\n", nodes, counter.calls);
  return check.finish();
}
