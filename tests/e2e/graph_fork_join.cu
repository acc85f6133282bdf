// Multi-stream capture: the origin stream forks into two other streams through events
// (cudaEventRecord on the capturing stream + cudaStreamWaitEvent), each branch works on its own
// half of the data, and the origin joins both back before copying the result out. The captured
// graph has the diamond's dependencies and gives the host reference's result on every launch.
// A fork that is never joined makes cudaStreamEndCapture fail with cudaErrorStreamCaptureUnjoined.
#include <vector>

#include "e2e_check.h"

__global__ void affine(int* data, int mul, int add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * mul + add;
}

__global__ void sumHalves(int* out, const int* left, const int* right, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = left[i] + right[i];
}

int main() {
  Checker check("graph_fork_join");
  const int n = 4096;
  const int blocks = (n + 255) / 256;
  const size_t bytes = n * sizeof(int);
  int *in, *left, *right, *out, *host;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&left, bytes));
  CHECK(cudaMalloc(&right, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMallocHost(&host, bytes));
  cudaStream_t origin, a, b;
  CHECK(cudaStreamCreate(&origin));
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  cudaEvent_t fork, joinA, joinB;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joinA, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joinB, cudaEventDisableTiming));

  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK(cudaEventRecord(fork, origin));
  CHECK(cudaStreamWaitEvent(a, fork, 0));
  CHECK(cudaStreamWaitEvent(b, fork, 0));
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(a, &status));
  check.expect(status == cudaStreamCaptureStatusActive, "the forked stream joins the capture");
  CHECK(cudaMemcpyAsync(left, in, bytes, cudaMemcpyDeviceToDevice, a));
  affine<<<blocks, 256, 0, a>>>(left, 3, 1, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(right, in, bytes, cudaMemcpyDeviceToDevice, b));
  affine<<<blocks, 256, 0, b>>>(right, -2, 7, n);
  CHECK_LAUNCH();
  CHECK(cudaEventRecord(joinA, a));
  CHECK(cudaEventRecord(joinB, b));
  CHECK(cudaStreamWaitEvent(origin, joinA, 0));
  CHECK(cudaStreamWaitEvent(origin, joinB, 0));
  sumHalves<<<blocks, 256, 0, origin>>>(out, left, right, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(host, out, bytes, cudaMemcpyDeviceToHost, origin));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(origin, &graph));
  CHECK(cudaStreamIsCapturing(a, &status));
  check.expect(status == cudaStreamCaptureStatusNone, "the forked stream left the capture");

  size_t nodes = 0, roots = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  CHECK(cudaGraphGetRootNodes(graph, nullptr, &roots));
  check.eq("captured nodes", 0, size_t{6}, nodes);
  check.eq("root nodes (the two branches)", 0, size_t{2}, roots);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int> input(n);
  for (int launch = 0; launch < 3; ++launch) {
    for (int i = 0; i < n; ++i) input[i] = (i * 7 + launch * 13) % 1001 - 500;
    CHECK(cudaMemcpy(in, input.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaGraphLaunch(exec, origin));
    CHECK(cudaStreamSynchronize(origin));
    for (int i = 0; i < n; ++i)
      check.eq("fork/join result", i, (input[i] * 3 + 1) + (input[i] * -2 + 7), host[i]);
  }

  // A fork that never joins back.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK(cudaEventRecord(fork, origin));
  CHECK(cudaStreamWaitEvent(a, fork, 0));
  affine<<<blocks, 256, 0, a>>>(left, 1, 1, n);
  CHECK_LAUNCH();
  cudaGraph_t unjoined = nullptr;
  check.expect(cudaStreamEndCapture(origin, &unjoined) == cudaErrorStreamCaptureUnjoined,
               "an unjoined fork is reported");
  check.expect(unjoined == nullptr, "an unjoined capture returns no graph");
  (void)cudaGetLastError();

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  for (cudaEvent_t e : {fork, joinA, joinB}) CHECK(cudaEventDestroy(e));
  for (cudaStream_t s : {origin, a, b}) CHECK(cudaStreamDestroy(s));
  for (int* p : {in, left, right, out}) CHECK(cudaFree(p));
  CHECK(cudaFreeHost(host));
  std::printf("graph_fork_join: %zu nodes, 3 launches of %d ints\n", nodes, n);
  return check.finish();
}
