// CUDA graph conditional nodes with the runtime API: a WHILE node whose body kernel adds to an
// array and decrements a counter, ending the loop with cudaGraphSetConditional when the counter
// reaches zero; an IF/ELSE node after it chosen by a kernel. The graph is launched twice (the
// loop condition reset by cudaGraphCondAssignDefault) and every result is checked against a
// host reference.
#include <vector>

#include "e2e_check.h"

__global__ void addStep(int* data, int step, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += step * (i % 7 + 1);
}

// One thread: count down and keep looping while the counter is positive.
__global__ void countDown(int* counter, cudaGraphConditionalHandle loop) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    int left = --*counter;
    cudaGraphSetConditional(loop, left > 0 ? 1u : 0u);
  }
}

// Chooses the IF (odd data[0]) or the ELSE body.
__global__ void chooseBranch(const int* data, cudaGraphConditionalHandle branch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) cudaGraphSetConditional(branch, data[0] & 1);
}

__global__ void scale(int* data, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

namespace {

const int kN = 1000;
const int kThreads = 128;
const int kBlocks = (kN + kThreads - 1) / kThreads;

cudaGraphNode_t addKernel(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                          void* func, void** args, int blocks, int threads) {
  cudaGraphNodeParams p = {};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = func;
  p.kernel.gridDim = dim3(blocks);
  p.kernel.blockDim = dim3(threads);
  p.kernel.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, graph, deps.data(), nullptr, deps.size(), &p));
  return node;
}

cudaGraphNode_t addConditional(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                               cudaGraphConditionalHandle handle, cudaGraphConditionalNodeType type,
                               unsigned size, std::vector<cudaGraph_t>* bodies) {
  cudaGraphNodeParams p = {};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = handle;
  p.conditional.type = type;
  p.conditional.size = size;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, graph, deps.data(), nullptr, deps.size(), &p));
  bodies->assign(p.conditional.phGraph_out, p.conditional.phGraph_out + size);
  return node;
}

// The host reference of one launch: `iterations` loop steps, then x3 (odd) or x2 (even).
void reference(std::vector<int>& data, int iterations) {
  for (int it = 0; it < iterations; ++it)
    for (int i = 0; i < kN; ++i) data[i] += 5 * (i % 7 + 1);
  int factor = (data[0] & 1) ? 3 : 2;
  for (int& x : data) x *= factor;
}

}  // namespace

int main() {
  Checker check("graph_conditional");
  int *data = nullptr, *counter = nullptr;
  CHECK(cudaMalloc(&data, kN * sizeof(int)));
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(data, 0, kN * sizeof(int)));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle loop, branch;
  CHECK(cudaGraphConditionalHandleCreate(&loop, graph, 1, cudaGraphCondAssignDefault));
  CHECK(cudaGraphConditionalHandleCreate(&branch, graph, 0, 0));

  std::vector<cudaGraph_t> loopBody, branchBodies;
  cudaGraphNode_t whileNode =
      addConditional(graph, {}, loop, cudaGraphCondTypeWhile, 1, &loopBody);
  int n = kN, step = 5;
  void* addArgs[] = {&data, &step, &n};
  cudaGraphNode_t add = addKernel(loopBody[0], {}, (void*)addStep, addArgs, kBlocks, kThreads);
  void* countArgs[] = {&counter, &loop};
  addKernel(loopBody[0], {add}, (void*)countDown, countArgs, 1, 32);

  void* chooseArgs[] = {&data, &branch};
  cudaGraphNode_t choose = addKernel(graph, {whileNode}, (void*)chooseBranch, chooseArgs, 1, 32);
  addConditional(graph, {choose}, branch, cudaGraphCondTypeIf, 2, &branchBodies);
  int three = 3, two = 2;
  void* oddArgs[] = {&data, &three, &n};
  void* evenArgs[] = {&data, &two, &n};
  addKernel(branchBodies[0], {}, (void*)scale, oddArgs, kBlocks, kThreads);
  addKernel(branchBodies[1], {}, (void*)scale, evenArgs, kBlocks, kThreads);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  std::vector<int> expected(kN, 0), got(kN);
  for (int iterations : {3, 4}) {
    CHECK(cudaMemcpyAsync(counter, &iterations, sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    reference(expected, iterations);
    CHECK(cudaMemcpy(got.data(), data, kN * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < kN; ++i) check.eq("data", i, expected[i], got[i]);
    int left = -1;
    CHECK(cudaMemcpy(&left, counter, sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("counter", iterations, 0, left);
  }

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(data));
  CHECK(cudaFree(counter));
  return check.finish();
}
