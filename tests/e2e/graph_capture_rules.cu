// The rules of stream capture a program meets when it gets them wrong: which thread may end a
// capture (the one that began it, unless the mode is relaxed), which stream ends it (the origin,
// not a stream that joined it), which calls a capture forbids (cudaMalloc in global mode but not
// in relaxed mode, a query of the capturing stream, which also invalidates the capture) and that
// the legacy stream cannot be captured. Each broken capture is then cleaned up and a correct
// one still gives the host reference's result.
#include <thread>

#include "e2e_check.h"

__global__ void addTo(int* data, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}

// Ends whatever capture `stream` is in (from this thread) and forgets its errors.
void abandonCapture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

int main() {
  Checker check("graph_capture_rules");
  const int n = 1024;
  int* data;
  CHECK(cudaMalloc(&data, n * sizeof(int)));
  cudaStream_t origin, other;
  CHECK(cudaStreamCreateWithFlags(&origin, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaStreamCaptureStatus status;

  check.expect(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal) != cudaSuccess,
               "the legacy stream cannot be captured");
  (void)cudaGetLastError();

  // Global mode: another thread may not end the capture.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  addTo<<<n / 256, 256, 0, origin>>>(data, 1, n);
  CHECK_LAUNCH();
  cudaError_t endedElsewhere = cudaSuccess;
  cudaGraph_t graph = nullptr;
  std::thread([&] { endedElsewhere = cudaStreamEndCapture(origin, &graph); }).join();
  check.expect(endedElsewhere == cudaErrorStreamCaptureWrongThread,
               "another thread ending a global-mode capture: cudaErrorStreamCaptureWrongThread");
  abandonCapture(origin);
  CHECK(cudaStreamIsCapturing(origin, &status));
  check.expect(status == cudaStreamCaptureStatusNone, "the capture ended by its own thread");

  // Relaxed mode: it may, and cudaMalloc is allowed during the capture.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
  void* scratch = nullptr;
  check.expect(cudaMalloc(&scratch, 256) == cudaSuccess, "cudaMalloc during a relaxed capture");
  addTo<<<n / 256, 256, 0, origin>>>(data, 1, n);
  CHECK_LAUNCH();
  graph = nullptr;
  std::thread([&] { endedElsewhere = cudaStreamEndCapture(origin, &graph); }).join();
  check.expect(endedElsewhere == cudaSuccess && graph != nullptr,
               "another thread ends a relaxed-mode capture");
  if (graph != nullptr) CHECK(cudaGraphDestroy(graph));
  if (scratch != nullptr) CHECK(cudaFree(scratch));

  // Global mode: cudaMalloc in the capturing thread is refused.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  scratch = nullptr;
  check.expect(cudaMalloc(&scratch, 256) == cudaErrorStreamCaptureUnsupported,
               "cudaMalloc during a global capture: cudaErrorStreamCaptureUnsupported");
  abandonCapture(origin);
  if (scratch != nullptr) CHECK(cudaFree(scratch));

  // A stream that joined the capture cannot end it.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK(cudaEventRecord(fork, origin));
  CHECK(cudaStreamWaitEvent(other, fork, 0));
  addTo<<<n / 256, 256, 0, other>>>(data, 1, n);
  CHECK_LAUNCH();
  CHECK(cudaEventRecord(join, other));
  CHECK(cudaStreamWaitEvent(origin, join, 0));
  graph = nullptr;
  check.expect(cudaStreamEndCapture(other, &graph) == cudaErrorStreamCaptureUnmatched,
               "ending a capture on a joined stream: cudaErrorStreamCaptureUnmatched");
  (void)cudaGetLastError();
  abandonCapture(origin);

  // Querying the capturing stream is refused and invalidates the capture.
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  addTo<<<n / 256, 256, 0, origin>>>(data, 1, n);
  CHECK_LAUNCH();
  check.expect(cudaStreamQuery(origin) == cudaErrorStreamCaptureUnsupported,
               "cudaStreamQuery of a capturing stream: cudaErrorStreamCaptureUnsupported");
  graph = nullptr;
  check.expect(cudaStreamEndCapture(origin, &graph) == cudaErrorStreamCaptureInvalidated,
               "the queried capture ends invalidated");
  check.expect(graph == nullptr, "an invalidated capture gives no graph");
  (void)cudaGetLastError();

  // A correct capture still works after the broken ones.
  CHECK(cudaMemset(data, 0, n * sizeof(int)));
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  addTo<<<n / 256, 256, 0, origin>>>(data, 5, n);
  CHECK_LAUNCH();
  CHECK(cudaStreamEndCapture(origin, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) CHECK(cudaGraphLaunch(exec, origin));
  CHECK(cudaStreamSynchronize(origin));
  std::vector<int> result = download(data, n);
  for (int i = 0; i < n; ++i) check.eq("two launches of the captured kernel", i, 10, result[i]);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  for (cudaEvent_t e : {fork, join}) CHECK(cudaEventDestroy(e));
  for (cudaStream_t s : {origin, other}) CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(data));
  std::printf("graph_capture_rules: six broken captures refused, one correct\n");
  return check.finish();
}
