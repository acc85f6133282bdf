// `exit` inside device functions (PTX exit in a .func): the calling thread ends wherever it is,
// however deep in calls, and every other thread runs on: through the rest of the kernel, through
// __syncthreads() (exited threads no longer count at a barrier, as on sm_70 and later), and
// through functions returning values. Checked against host references.
#include <vector>

#include "e2e_check.h"

// Ends the thread when `v` is odd; never inlined, so the exit stays in a .func.
__device__ __noinline__ void leaveIfOdd(int v) {
  if (v & 1) asm volatile("exit;");
}

// Two levels of calls above the exit, with a value returned on the way back.
__device__ __noinline__ int doubledUnlessOdd(int v, int* visited) {
  visited[v] = 1;
  leaveIfOdd(v);
  return v * 2;
}

__device__ __noinline__ int quadrupledUnlessOdd(int v, int* visited) {
  return doubledUnlessOdd(v, visited) * 2;
}

__global__ void calls(int* out, int* visited, unsigned* finished) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int r = quadrupledUnlessOdd(t, visited);
  out[t] = r;
  atomicAdd(finished, 1u);
}

// Odd threads leave before the barrier; the even ones meet there and read each other's values.
__global__ void barrierAfterExit(int* out) {
  __shared__ int values[256];
  int t = threadIdx.x;
  values[t] = 10 * t;
  leaveIfOdd(t);
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = values[(t + 2) % blockDim.x] + 1;
}

int main() {
  Checker check("device_exit");
  const int blocks = 4, threads = 128, total = blocks * threads;
  int *out = nullptr, *visited = nullptr;
  unsigned* finished = nullptr;
  CHECK(cudaMalloc(&out, total * sizeof(int)));
  CHECK(cudaMalloc(&visited, total * sizeof(int)));
  CHECK(cudaMalloc(&finished, sizeof(unsigned)));
  CHECK(cudaMemset(out, 0xff, total * sizeof(int)));
  CHECK(cudaMemset(visited, 0, total * sizeof(int)));
  CHECK(cudaMemset(finished, 0, sizeof(unsigned)));
  calls<<<blocks, threads>>>(out, visited, finished);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, total), seen = download(visited, total);
  for (int t = 0; t < total; ++t) {
    check.eq("calls: result (-1: the thread ended)", t, t % 2 ? -1 : 4 * t, got[t]);
    check.eq("calls: every thread reached the innermost function", t, 1, seen[t]);
  }
  std::vector<unsigned> count = download(finished, 1);
  check.eq("calls: threads that finished the kernel", 0, static_cast<unsigned>(total / 2),
           count[0]);

  CHECK(cudaMemset(out, 0xff, total * sizeof(int)));
  barrierAfterExit<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, total);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      check.eq("barrierAfterExit", b * threads + t, t % 2 ? -1 : 10 * ((t + 2) % threads) + 1,
               got[b * threads + t]);

  CHECK(cudaFree(out));
  CHECK(cudaFree(visited));
  CHECK(cudaFree(finished));
  std::printf("device_exit: exit in device functions, %d threads\n", total);
  return check.finish();
}
