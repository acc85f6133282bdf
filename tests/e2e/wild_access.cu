// Kernels that read or write memory no allocation covers (a stray pointer, a NULL one) fail with
// cudaErrorIllegalAddress, which stays until cudaDeviceReset, without ending the process; the
// device then runs kernels again. On the CPU device this holds without memcheck too.
#include <cstdint>
#include <vector>

#include "e2e_check.h"

// One thread of the grid writes through `target`; the others do ordinary work.
__global__ void strayWrite(int* target, int culprit, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t == culprit) *target = 1;
  out[t] = t;
}

// The same after a barrier, with a read (a kernel the CPU device may run with threads as fibers).
__global__ void strayReadAfterBarrier(const int* source, int culprit, int* out) {
  __shared__ int staged[128];
  staged[threadIdx.x] = threadIdx.x;
  __syncthreads();
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int value = staged[blockDim.x - 1 - threadIdx.x];
  if (t == culprit) value += *source;
  out[t] = value;
}

// Recursion far deeper than any stack: the thread's stack overflows.
__device__ int descend(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  return depth == 0 ? 0 : descend(depth - 1) + frame[0];
}
__global__ void overflowStack(int* out, int depth) { out[threadIdx.x] = descend(depth); }

__global__ void fill(int* out, int value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }

int main() {
  Checker check("wild_access");
  const int blocks = 8, threads = 128, n = blocks * threads;
  int* const addresses[] = {reinterpret_cast<int*>(uintptr_t{0x10}),
                            reinterpret_cast<int*>(uintptr_t{1} << 46)};
  int round = 0;
  for (int* address : addresses) {
    for (bool afterBarrier : {false, true}) {
      int* out = nullptr;
      CHECK(cudaMalloc(&out, n * sizeof(int)));
      if (afterBarrier)
        strayReadAfterBarrier<<<blocks, threads>>>(address, 5 * threads + 17, out);
      else
        strayWrite<<<blocks, threads>>>(address, 3 * threads + 9, out);
      check.eq("launch accepted", round, static_cast<int>(cudaSuccess),
               static_cast<int>(cudaGetLastError()));
      check.eq("synchronize reports the invalid access", round,
               static_cast<int>(cudaErrorIllegalAddress),
               static_cast<int>(cudaDeviceSynchronize()));
      // Sticky: later work on the device reports it too.
      int* more = nullptr;
      check.eq("sticky", round, static_cast<int>(cudaErrorIllegalAddress),
               static_cast<int>(cudaMalloc(&more, 64)));
      CHECK(cudaDeviceReset());
      cudaGetLastError();  // the runtime's last error is the thread's, not the device's: clear it
      // The reset device runs kernels again.
      CHECK(cudaMalloc(&out, n * sizeof(int)));
      fill<<<blocks, threads>>>(out, 40 + round);
      CHECK_LAUNCH();
      std::vector<int> got = download(out, n);
      for (int i = 0; i < n; ++i) check.eq("after the reset", i, 40 + round, got[i]);
      CHECK(cudaFree(out));
      ++round;
    }
  }
  // A stack overflow is an invalid access too.
  int* out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  overflowStack<<<1, 32>>>(out, 1 << 28);
  check.eq("stack overflow", 0, static_cast<int>(cudaErrorIllegalAddress),
           static_cast<int>(cudaDeviceSynchronize()));
  CHECK(cudaDeviceReset());
  cudaGetLastError();
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  overflowStack<<<1, 32>>>(out, 3);
  CHECK_LAUNCH();
  std::vector<int> shallow = download(out, 32);
  for (int i = 0; i < 32; ++i) check.eq("shallow recursion", i, 6, shallow[i]);
  CHECK(cudaFree(out));
  return check.finish();
}
