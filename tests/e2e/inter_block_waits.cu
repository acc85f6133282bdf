// Blocks of an ordinary launch that wait for other blocks, as programs do when the grid fits
// the GPU (every block resident at once): every block but the last spins on a flag the last one
// raises; and a hand-rolled grid barrier (an arrival counter and a generation word, used twice)
// between phases that read what other blocks wrote in the phase before. Checked against host
// references.
#include <vector>

#include "e2e_check.h"

__global__ void waitForLastBlock(volatile int* flag, int* out) {
  if (blockIdx.x == gridDim.x - 1) {
    if (threadIdx.x == 0) {
      __threadfence();
      *flag = 42;
    }
  } else {
    while (*flag == 0) {
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = *flag + blockIdx.x;
}

// Thread 0 of each block arrives; the last to arrive resets the count and opens the next
// generation, for which the others wait.
__device__ void gridBarrier(unsigned* count, volatile unsigned* generation) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned seen = *generation;
    __threadfence();
    if (atomicAdd(count, 1) == gridDim.x - 1) {
      *count = 0;
      __threadfence();
      *generation = seen + 1;
    } else {
      while (*generation == seen) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// Phase 1 writes a[i]; phase 2 reads its neighbour block's a; phase 3 reads b of the block two
// further on.
__global__ void phases(int* a, int* b, int* c, unsigned* count, unsigned* generation) {
  int n = gridDim.x * blockDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = i * 3 + 1;
  gridBarrier(count, generation);
  b[i] = a[(i + blockDim.x) % n] + 1;
  gridBarrier(count, generation);
  c[i] = b[(i + 2 * blockDim.x) % n] * 2;
}

int main() {
  Checker check("inter_block_waits");
  constexpr int kBlocks = 8, kThreads = 64, kN = kBlocks * kThreads;
  int *flag, *out, *a, *b, *c;
  unsigned *count, *generation;
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMalloc(&out, kN * sizeof(int)));
  CHECK(cudaMalloc(&a, kN * sizeof(int)));
  CHECK(cudaMalloc(&b, kN * sizeof(int)));
  CHECK(cudaMalloc(&c, kN * sizeof(int)));
  CHECK(cudaMalloc(&count, sizeof(unsigned)));
  CHECK(cudaMalloc(&generation, sizeof(unsigned)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  CHECK(cudaMemset(count, 0, sizeof(unsigned)));
  CHECK(cudaMemset(generation, 0, sizeof(unsigned)));

  waitForLastBlock<<<kBlocks, kThreads>>>(flag, out);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, kN);
  for (int i = 0; i < kN; ++i) check.eq("waiting for the last block", i, 42 + i / kThreads, got[i]);

  phases<<<kBlocks, kThreads>>>(a, b, c, count, generation);
  CHECK_LAUNCH();
  got = download(c, kN);
  for (int i = 0; i < kN; ++i) {
    int j = (i + 2 * kThreads) % kN;
    int bj = ((j + kThreads) % kN) * 3 + 1 + 1;
    check.eq("phases across a grid barrier", i, bj * 2, got[i]);
  }
  unsigned generations = 0;
  CHECK(cudaMemcpy(&generations, generation, sizeof generations, cudaMemcpyDeviceToHost));
  check.eq("barrier generations", 0, 2u, generations);

  for (void* p :
       {(void*)flag, (void*)out, (void*)a, (void*)b, (void*)c, (void*)count, (void*)generation})
    CHECK(cudaFree(p));
  std::printf("inter_block_waits: %d blocks waiting for a later block and at a grid barrier\n",
              kBlocks);
  return check.finish();
}
