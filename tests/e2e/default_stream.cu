// Legacy default-stream semantics: a kernel on stream 0 followed by cudaMemcpy sees the kernel's
// results without explicit synchronisation; work on a created (blocking) stream is ordered with
// stream 0 work in both directions; cudaDeviceSynchronize waits for everything.
#include <vector>

#include "e2e_check.h"

// Deliberately slow per element so that a missing dependency would usually be observed.
__global__ void slowFill(int* out, int n, int salt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = i;
  for (int k = 0; k < 200; ++k) v = (v * 1103 + salt + k) % 65521;
  out[i] = v;
}

__global__ void combine(const int* a, const int* b, int* out, int n, int mul) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * mul + b[i];
}

static int hostSlow(int i, int salt) {
  int v = i;
  for (int k = 0; k < 200; ++k) v = (v * 1103 + salt + k) % 65521;
  return v;
}

int main() {
  Checker check("default_stream");
  const int n = 1 << 16;
  const int block = 256, grid = n / block;
  int *dA, *dB, *dC, *dD;
  CHECK(cudaMalloc(&dA, n * sizeof(int)));
  CHECK(cudaMalloc(&dB, n * sizeof(int)));
  CHECK(cudaMalloc(&dC, n * sizeof(int)));
  CHECK(cudaMalloc(&dD, n * sizeof(int)));
  std::vector<int> out(n);

  // 1. Kernel on the default stream, then a blocking cudaMemcpy: no explicit sync needed.
  slowFill<<<grid, block>>>(dA, n, 1);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(out.data(), dA, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) check.eq("kernel then cudaMemcpy", i, hostSlow(i, 1), out[i]);

  // 2. Blocking stream -> stream 0 -> blocking stream: each step depends on the previous one.
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  slowFill<<<grid, block, 0, s>>>(dB, n, 2);  // B on s
  CHECK_LAUNCH();
  combine<<<grid, block>>>(dB, dA, dC, n, 3);  // C = 3B + A on stream 0 waits for s
  CHECK_LAUNCH();
  combine<<<grid, block, 0, s>>>(dC, dB, dD, n, 2);  // D = 2C + B on s waits for stream 0
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(out.data(), dD, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) {
    int b = hostSlow(i, 2), c = 3 * b + hostSlow(i, 1);
    check.eq("s -> 0 -> s chain", i, 2 * c + b, out[i]);
  }

  // 3. Async copy on stream 0 of data produced on s, then cudaDeviceSynchronize.
  slowFill<<<grid, block, 0, s>>>(dB, n, 3);
  CHECK_LAUNCH();
  std::vector<int> out2(n, -1);
  CHECK(cudaMemcpyAsync(out2.data(), dB, n * sizeof(int), cudaMemcpyDeviceToHost, 0));
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) check.eq("s -> stream 0 copy", i, hostSlow(i, 3), out2[i]);

  // 4. cudaStreamPerThread is not the legacy stream but still orders its own work.
  slowFill<<<grid, block, 0, cudaStreamPerThread>>>(dD, n, 4);
  CHECK_LAUNCH();
  CHECK(cudaMemcpyAsync(out.data(), dD, n * sizeof(int), cudaMemcpyDeviceToHost,
                        cudaStreamPerThread));
  CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  for (int i = 0; i < n; ++i) check.eq("per-thread stream", i, hostSlow(i, 4), out[i]);

  std::printf("default_stream: %d elements, 4 ordering scenarios\n", n);
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  CHECK(cudaFree(dD));
  return check.finish();
}
