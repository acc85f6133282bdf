// alloca() in device code (PTX alloca, ISA 7.3): per-thread stack buffers whose size is known
// only at run time, in a kernel without barriers (run as a work-item loop) and in one that keeps
// its buffer across __syncthreads() (the CPU device's slow path: a thread per fiber, since a
// dynamic allocation cannot move to a fixed per-thread frame). Checked against host sums.
// (On AMD GPUs such a function's allocations share a 1 KiB buffer of its frame, CUDA's default
// stack size: docs/amd.md.)
#include <vector>

#include "e2e_check.h"

__global__ void sumOfMultiples(long long* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int* buf = static_cast<int*>(alloca(n * sizeof(int)));
  for (int i = 0; i < n; ++i) buf[i] = i * (t + 1);
  long long s = 0;
  for (int i = n - 1; i >= 0; --i) s += buf[i];
  out[t] = s;
}

// Each thread fills its own buffer, then after a barrier reads its neighbour's value through
// shared memory and its own buffer again: the buffer lives across the wait.
__global__ void acrossBarrier(long long* out, int n) {
  __shared__ long long firsts[256];
  int t = threadIdx.x;
  long long* buf = static_cast<long long*>(alloca(n * sizeof(long long)));
  for (int i = 0; i < n; ++i) buf[i] = 1000LL * t + i;
  firsts[t] = buf[0];
  __syncthreads();
  long long s = firsts[(t + 1) % blockDim.x];
  for (int i = 0; i < n; ++i) s += buf[i];
  out[blockIdx.x * blockDim.x + t] = s;
}

int main() {
  Checker check("device_alloca");
  const int blocks = 8, threads = 128;
  const int total = blocks * threads;
  long long* d = nullptr;
  CHECK(cudaMalloc(&d, total * sizeof(long long)));
  for (int n : {1, 7, 100}) {
    sumOfMultiples<<<blocks, threads>>>(d, n);
    CHECK_LAUNCH();
    std::vector<long long> got = download(d, total);
    for (int t = 0; t < total; ++t)
      check.eq("sumOfMultiples", t, static_cast<long long>(t + 1) * n * (n - 1) / 2, got[t]);

    acrossBarrier<<<blocks, threads>>>(d, n);
    CHECK_LAUNCH();
    got = download(d, total);
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t) {
        long long want = 1000LL * ((t + 1) % threads);
        for (int i = 0; i < n; ++i) want += 1000LL * t + i;
        check.eq("acrossBarrier", b * threads + t, want, got[b * threads + t]);
      }
  }
  CHECK(cudaFree(d));
  std::printf("device_alloca: run-time-sized stack buffers in %d threads\n", total);
  return check.finish();
}
