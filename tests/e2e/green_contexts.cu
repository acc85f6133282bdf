// Green contexts as applications use them (PyTorch's and FlashInfer's green-context helpers make
// the same calls): the device's multiprocessors split into groups with the driver API, a green
// context per group and a stream per green context (cuGreenCtxStreamCreate), on which the
// runtime's launches, asynchronous copies and events run. Results against host references, a
// wait between two green contexts' streams, kernels on a green context's default stream while its
// CUcontext is current, and no green context's kernel holding more blocks at once than its
// multiprocessors can (the occupancy calculator's bound).
#include <cuda.h>

#include <vector>

#include "e2e_check.h"

#define CU_CHECK(call)                                                                  \
  do {                                                                                  \
    CUresult checkResult_ = (call);                                                     \
    if (checkResult_ != CUDA_SUCCESS) {                                                 \
      const char* name_ = nullptr;                                                      \
      cuGetErrorName(checkResult_, &name_);                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, name_); \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale(float* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= s;
}

// One thread per block: counters[0] counts the blocks running now, counters[1] the most at once.
__global__ void occupancy(unsigned* counters, long long spinCycles) {
  unsigned now = atomicAdd(&counters[0], 1u) + 1;
  atomicMax(&counters[1], now);
  long long start = clock64();
  while (clock64() - start < spinCycles) {
  }
  atomicSub(&counters[0], 1u);
}

struct Group {
  unsigned multiprocessors = 0;
  CUgreenCtx green = nullptr;
  cudaStream_t stream = nullptr;
};

int main() {
  Checker check("green_contexts");
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // the primary context, current from here on
  CUcontext primary = nullptr;
  CU_CHECK(cuCtxGetCurrent(&primary));

  // Two groups of the smallest partition the device allows (one where it has too few).
  CUdevResource all{};
  CU_CHECK(cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM));
  unsigned minimum = all.sm.minSmPartitionSize;
  CUdevResource parts[2] = {};
  unsigned made = 2;
  CU_CHECK(cuDevSmResourceSplitByCount(parts, &made, &all, nullptr, 0, minimum));
  check.expect(made >= 1 && made <= 2, "one or two groups made");
  std::vector<Group> groups(made);
  for (unsigned g = 0; g < made; ++g) {
    CUdevResourceDesc desc = nullptr;
    CU_CHECK(cuDevResourceGenerateDesc(&desc, &parts[g], 1));
    CU_CHECK(cuGreenCtxCreate(&groups[g].green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    CUdevResource held{};
    CU_CHECK(cuGreenCtxGetDevResource(groups[g].green, &held, CU_DEV_RESOURCE_TYPE_SM));
    groups[g].multiprocessors = held.sm.smCount;
    check.expect(held.sm.smCount >= minimum && held.sm.smCount <= all.sm.smCount,
                 "a group holds at least the minimum partition");
    CUstream stream = nullptr;
    CU_CHECK(cuGreenCtxStreamCreate(&stream, groups[g].green, CU_STREAM_NON_BLOCKING, 0));
    groups[g].stream = reinterpret_cast<cudaStream_t>(stream);
    CUgreenCtx ofStream = nullptr;
    CU_CHECK(cuStreamGetGreenCtx(stream, &ofStream));
    check.expect(ofStream == groups[g].green, "the stream names its green context");
  }

  // SAXPY on each group's stream, copies in and out on it too.
  const int n = 1 << 16;
  std::vector<std::vector<float>> x(made, std::vector<float>(n)), y(made, std::vector<float>(n));
  std::vector<float*> dx(made), dy(made);
  std::vector<std::vector<float>> out(made, std::vector<float>(n));
  for (unsigned g = 0; g < made; ++g) {
    for (int i = 0; i < n; ++i) {
      x[g][i] = static_cast<float>(i % 97) * 0.5f + static_cast<float>(g);
      y[g][i] = static_cast<float>(i % 13) - 6.0f;
    }
    CHECK(cudaMalloc(&dx[g], n * sizeof(float)));
    CHECK(cudaMalloc(&dy[g], n * sizeof(float)));
    CHECK(cudaMemcpyAsync(dx[g], x[g].data(), n * sizeof(float), cudaMemcpyHostToDevice,
                          groups[g].stream));
    CHECK(cudaMemcpyAsync(dy[g], y[g].data(), n * sizeof(float), cudaMemcpyHostToDevice,
                          groups[g].stream));
    saxpy<<<(n + 255) / 256, 256, 0, groups[g].stream>>>(2.0f + g, dx[g], dy[g], n);
    CHECK_LAUNCH();
  }
  // The last group scales the first group's result once that is done (an event between two
  // green contexts' streams), then every group copies its result back.
  cudaEvent_t firstDone, start, stop;
  CHECK(cudaEventCreate(&firstDone));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(firstDone, groups[0].stream));
  Group& last = groups[made - 1];
  CHECK(cudaStreamWaitEvent(last.stream, firstDone, 0));
  CHECK(cudaEventRecord(start, last.stream));
  scale<<<(n + 255) / 256, 256, 0, last.stream>>>(dy[0], 0.25f, n);
  CHECK_LAUNCH();
  CHECK(cudaEventRecord(stop, last.stream));
  CHECK(cudaMemcpyAsync(out[0].data(), dy[0], n * sizeof(float), cudaMemcpyDeviceToHost,
                        last.stream));
  for (unsigned g = 1; g < made; ++g)
    CHECK(cudaMemcpyAsync(out[g].data(), dy[g], n * sizeof(float), cudaMemcpyDeviceToHost,
                          groups[g].stream));
  for (Group& group : groups) CHECK(cudaStreamSynchronize(group.stream));
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  check.expect(ms >= 0.0f, "elapsed time between two records on a green stream");
  for (unsigned g = 0; g < made; ++g)
    for (int i = 0; i < n; ++i) {
      float want = (2.0f + g) * x[g][i] + y[g][i];
      if (g == 0) want *= 0.25f;
      check.near("saxpy", g * n + i, want, out[g][i], 1e-5, 1e-6);
    }

  // No green context's kernel holds more blocks at once than its multiprocessors can.
  int perMultiprocessor = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor, occupancy, 1, 0));
  unsigned* counters = nullptr;
  CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned)));
  for (Group& group : groups) {
    CHECK(cudaMemsetAsync(counters, 0, 2 * sizeof(unsigned), group.stream));
    occupancy<<<4 * all.sm.smCount, 1, 0, group.stream>>>(counters, 200000);
    CHECK_LAUNCH();
    unsigned got[2] = {};
    CHECK(cudaMemcpyAsync(got, counters, sizeof got, cudaMemcpyDeviceToHost, group.stream));
    CHECK(cudaStreamSynchronize(group.stream));
    check.eq("blocks running after the kernel", 0, 0u, got[0]);
    check.expect(got[1] >= 1 && got[1] <= group.multiprocessors * unsigned(perMultiprocessor),
                 "a green context's kernel within its multiprocessors' occupancy");
  }

  // With a green context's CUcontext current, the NULL stream is its default stream: the
  // runtime's launch there, and the device synchronisation, are the green context's.
  CUcontext view = nullptr;
  CU_CHECK(cuCtxFromGreenCtx(&view, groups[0].green));
  CU_CHECK(cuCtxSetCurrent(view));
  CUgreenCtx current = nullptr;
  CU_CHECK(cuStreamGetGreenCtx(nullptr, &current));
  check.expect(current == groups[0].green, "the NULL stream is the green context's");
  scale<<<(n + 255) / 256, 256>>>(dy[1 % made], 2.0f, n);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> doubled = download(dy[1 % made], n);
  for (int i = 0; i < n; ++i)
    check.near("scaled on the default stream", i, 2.0f * out[1 % made][i], doubled[i], 1e-5, 1e-6);
  CU_CHECK(cuCtxSetCurrent(primary));

  // The primary context still runs on the whole device.
  std::vector<float> before = download(dy[0], n);
  scale<<<(n + 255) / 256, 256>>>(dy[0], 4.0f, n);
  CHECK_LAUNCH();
  std::vector<float> primaryResult = download(dy[0], n);
  for (int i = 0; i < n; ++i)
    check.near("scaled by the primary context", i, 4.0f * before[i], primaryResult[i], 1e-5, 1e-6);

  CHECK(cudaFree(counters));
  for (unsigned g = 0; g < made; ++g) {
    CHECK(cudaFree(dx[g]));
    CHECK(cudaFree(dy[g]));
    CHECK(cudaStreamDestroy(groups[g].stream));
    CU_CHECK(cuGreenCtxDestroy(groups[g].green));
  }
  CHECK(cudaEventDestroy(firstDone));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return check.finish();
}
