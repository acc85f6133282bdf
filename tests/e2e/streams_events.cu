// Streams and events: per-stream async copy / kernel / copy pipelines on pinned memory, a
// cross-stream dependency through cudaEventRecord + cudaStreamWaitEvent, timing events, and
// polling with cudaStreamQuery / cudaEventQuery until the work is done.
#include <chrono>
#include <thread>
#include <vector>

#include "e2e_check.h"

constexpr int kStreams = 4;

// Enough arithmetic per element that a missing dependency would likely be observable.
__global__ void transform(const int* in, int* out, int n, int mul, int add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  for (int k = 0; k < 16; ++k) v = (v * 3 + k) % 1000003;
  out[i] = v * mul + add;
}

static int hostTransform(int v, int mul, int add) {
  for (int k = 0; k < 16; ++k) v = (v * 3 + k) % 1000003;
  return v * mul + add;
}

// Polls until `query` stops reporting cudaErrorNotReady; returns its final status.
template <typename Query>
static cudaError_t pollUntilDone(Query query) {
  for (int tries = 0; tries < 30000; ++tries) {
    cudaError_t status = query();
    if (status != cudaErrorNotReady) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cudaErrorNotReady;
}

int main() {
  const int chunk = 1 << 16;
  const int n = chunk * kStreams;
  Checker check("streams_events");

  int *hIn, *hOut, *hCross;
  CHECK(cudaMallocHost(&hIn, n * sizeof(int)));
  CHECK(cudaMallocHost(&hOut, n * sizeof(int)));
  CHECK(cudaMallocHost(&hCross, chunk * sizeof(int)));
  for (int i = 0; i < n; ++i) hIn[i] = (i * 7919) % 100000;
  int *dIn, *dOut, *dCross;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK(cudaMalloc(&dCross, chunk * sizeof(int)));

  cudaStream_t streams[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    if (s % 2 == 0) {
      CHECK(cudaStreamCreate(&streams[s]));
    } else {
      CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    }
  }
  cudaEvent_t start, stop, chunkDone[kStreams];
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int s = 0; s < kStreams; ++s)
    CHECK(cudaEventCreateWithFlags(&chunkDone[s], cudaEventDisableTiming));

  CHECK(cudaEventRecord(start, streams[0]));
  const int block = 256;
  for (int s = 0; s < kStreams; ++s) {
    const size_t off = static_cast<size_t>(s) * chunk;
    CHECK(cudaMemcpyAsync(dIn + off, hIn + off, chunk * sizeof(int), cudaMemcpyHostToDevice,
                          streams[s]));
    transform<<<chunk / block, block, 0, streams[s]>>>(dIn + off, dOut + off, chunk, 2, s);
    CHECK_LAUNCH();
    CHECK(cudaEventRecord(chunkDone[s], streams[s]));
    CHECK(cudaMemcpyAsync(hOut + off, dOut + off, chunk * sizeof(int), cudaMemcpyDeviceToHost,
                          streams[s]));
  }
  // Stream 0 consumes the output of the last stream's chunk: it must wait for that event.
  const size_t lastOff = static_cast<size_t>(kStreams - 1) * chunk;
  CHECK(cudaStreamWaitEvent(streams[0], chunkDone[kStreams - 1], 0));
  transform<<<chunk / block, block, 0, streams[0]>>>(dOut + lastOff, dCross, chunk, 1, 5);
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(hCross, dCross, chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaEventRecord(stop, streams[0]));

  for (int s = 1; s < kStreams; ++s) {
    cudaStream_t st = streams[s];
    check.eq("cudaStreamQuery eventually", s, static_cast<int>(cudaSuccess),
             static_cast<int>(pollUntilDone([st] { return cudaStreamQuery(st); })));
  }
  check.eq("cudaEventQuery(stop) eventually", 0, static_cast<int>(cudaSuccess),
           static_cast<int>(pollUntilDone([stop] { return cudaEventQuery(stop); })));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaStreamSynchronize(streams[0]));
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  check.expect(ms >= 0.0f, "cudaEventElapsedTime >= 0");
  // Timing is disabled on chunkDone: asking for its elapsed time is an error.
  float unused = 0.0f;
  check.expect(cudaEventElapsedTime(&unused, start, chunkDone[0]) != cudaSuccess,
               "cudaEventElapsedTime on a cudaEventDisableTiming event fails");
  (void)cudaGetLastError();

  for (int i = 0; i < n; ++i) check.eq("out", i, hostTransform(hIn[i], 2, i / chunk), hOut[i]);
  for (int i = 0; i < chunk; ++i)
    check.eq("cross", i, hostTransform(hostTransform(hIn[lastOff + i], 2, kStreams - 1), 1, 5),
             hCross[i]);
  std::printf("streams_events: %d streams x %d elements, %.3f ms\n", kStreams, chunk, ms);

  for (int s = 0; s < kStreams; ++s) {
    CHECK(cudaEventDestroy(chunkDone[s]));
    CHECK(cudaStreamDestroy(streams[s]));
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  CHECK(cudaFree(dCross));
  CHECK(cudaFreeHost(hIn));
  CHECK(cudaFreeHost(hOut));
  CHECK(cudaFreeHost(hCross));
  return check.finish();
}
