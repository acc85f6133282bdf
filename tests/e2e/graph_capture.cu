// CUDA graphs through stream capture: a memset, two kernels and a copy back into pinned memory
// are captured on a created stream, instantiated once and launched several times with new input;
// the capture status queries; and a synchronous copy during a capture, which CUDA refuses and
// which invalidates the capture (cudaStreamEndCapture then returns no graph).
#include <vector>

#include "e2e_check.h"

__global__ void scaleInto(int* work, const int* in, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) work[i] += in[i] * factor;
}

__global__ void addIndex(int* work, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) work[i] += i;
}

int main() {
  Checker check("graph_capture");
  const int n = 5000;
  const int blocks = (n + 255) / 256;
  const size_t bytes = n * sizeof(int);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int *in, *work, *out;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&work, bytes));
  CHECK(cudaMallocHost(&out, bytes));
  for (int i = 0; i < n; ++i) out[i] = -1;
  CHECK(cudaMemset(work, 0x7f, bytes));  // stale contents the captured memset must clear

  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusNone, "not capturing before the capture");

  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusActive, "capturing after cudaStreamBeginCapture");
  unsigned long long captureId = 0;
  CHECK(cudaStreamGetCaptureInfo(s, &status, &captureId));
  check.expect(status == cudaStreamCaptureStatusActive, "capture info reports the capture");
  check.expect(captureId != 0, "the capture has an id");
  // Asking about the legacy stream while a blocking stream captures is an error that does not
  // invalidate the capture.
  check.expect(cudaStreamIsCapturing(0, &status) == cudaErrorStreamCaptureImplicit,
               "the legacy stream reports the implicit dependency");
  (void)cudaGetLastError();
  CHECK(cudaMemsetAsync(work, 0, bytes, s));
  scaleInto<<<blocks, 256, 0, s>>>(work, in, 3, n);
  CHECK_LAUNCH();
  addIndex<<<blocks, 256, 0, s>>>(work, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(out, work, bytes, cudaMemcpyDeviceToHost, s));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s, &graph));
  check.expect(graph != nullptr, "cudaStreamEndCapture returns a graph");
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusNone, "not capturing after the capture");

  // Captured work is recorded, not run.
  CHECK(cudaStreamSynchronize(s));
  check.eq("out untouched by the capture", 0, -1, out[0]);
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  check.eq("captured nodes", 0, size_t{4}, nodes);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int> input(n);
  for (int launch = 0; launch < 3; ++launch) {
    for (int i = 0; i < n; ++i) input[i] = (i % 97) * (launch + 1) - 7 * launch;
    CHECK(cudaMemcpy(in, input.data(), bytes, cudaMemcpyHostToDevice));
    for (int i = 0; i < n; ++i) out[i] = -1;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) check.eq("graph result", i, input[i] * 3 + i, out[i]);
  }

  // A captured kernel node keeps its parameters: cudaGraphKernelNodeGetParams reads them (the
  // host function and the argument values), and the executable graph's copy takes new ones.
  std::vector<cudaGraphNode_t> captured(nodes);
  CHECK(cudaGraphGetNodes(graph, captured.data(), &nodes));
  int kernels = 0;
  for (cudaGraphNode_t node : captured) {
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params{};
    CHECK(cudaGraphKernelNodeGetParams(node, &params));
    ++kernels;
    if (params.func != reinterpret_cast<void*>(scaleInto)) continue;
    check.eq("captured grid", 0, unsigned(blocks), params.gridDim.x);
    check.eq("captured factor", 0, 3, *static_cast<int*>(params.kernelParams[2]));
    int factor = 5;
    void* args[] = {&work, &in, &factor, const_cast<int*>(&n)};
    params.kernelParams = args;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &params));
  }
  check.eq("captured kernel nodes", 0, 2, kernels);
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) check.eq("updated graph result", i, input[i] * 5 + i, out[i]);
  for (cudaGraphNode_t node : captured) {  // back to the captured factor for what follows
    cudaKernelNodeParams params{};
    if (cudaGraphKernelNodeGetParams(node, &params) != cudaSuccess ||
        params.func != reinterpret_cast<void*>(scaleInto))
      continue;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &params));
  }
  (void)cudaGetLastError();  // the memcpy and memset nodes are not kernel nodes

  // A synchronous copy while a blocking stream captures (global mode) is refused and invalidates
  // the capture; ending it then reports the invalidation and returns no graph.
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  addIndex<<<blocks, 256, 0, s>>>(work, n);
  CHECK_LAUNCH();
  cudaError_t copied = cudaMemcpy(in, input.data(), bytes, cudaMemcpyHostToDevice);
  check.expect(copied != cudaSuccess, "cudaMemcpy during a capture fails");
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusInvalidated, "the capture is invalidated");
  cudaGraph_t invalid = nullptr;
  cudaError_t ended = cudaStreamEndCapture(s, &invalid);
  check.expect(ended == cudaErrorStreamCaptureInvalidated, "EndCapture reports the invalidation");
  check.expect(invalid == nullptr, "an invalidated capture returns no graph");
  (void)cudaGetLastError();
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusNone, "not capturing after the failed capture");

  // An asynchronous operation on the legacy stream while a blocking stream captures would make
  // the legacy stream depend on the capture: it is refused, and the capture is invalidated.
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  addIndex<<<blocks, 256, 0, s>>>(work, n);
  CHECK_LAUNCH();
  cudaError_t legacy = cudaMemsetAsync(in, 0, bytes, 0);
  check.expect(legacy == cudaErrorStreamCaptureImplicit,
               "legacy-stream work during a capture reports cudaErrorStreamCaptureImplicit");
  CHECK(cudaStreamIsCapturing(s, &status));
  check.expect(status == cudaStreamCaptureStatusInvalidated, "the capture is invalidated");
  invalid = nullptr;
  check.expect(cudaStreamEndCapture(s, &invalid) == cudaErrorStreamCaptureInvalidated,
               "EndCapture reports the invalidation");
  (void)cudaGetLastError();

  // The executable graph still works after the failed captures.
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  check.eq("relaunch", n - 1, input[n - 1] * 3 + n - 1, out[n - 1]);
  // ...and on the legacy default stream.
  out[0] = -1;
  CHECK(cudaGraphLaunch(exec, 0));
  CHECK(cudaDeviceSynchronize());
  check.eq("legacy-stream launch", 0, input[0] * 3, out[0]);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeHost(out));
  CHECK(cudaFree(work));
  CHECK(cudaFree(in));
  CHECK(cudaStreamDestroy(s));
  std::printf("graph_capture: 4 captured operations, 3 launches of %d ints\n", n);
  // An empty graph instantiates and launches as a no-op.
  cudaGraph_t empty = nullptr;
  CHECK(cudaGraphCreate(&empty, 0));
  cudaGraphExec_t emptyExec = nullptr;
  CHECK(cudaGraphInstantiate(&emptyExec, empty, 0));
  CHECK(cudaGraphLaunch(emptyExec, 0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGraphExecDestroy(emptyExec));
  CHECK(cudaGraphDestroy(empty));
  return check.finish();
}
