// __syncthreads_count / _and / _or (PTX bar.red) inside a loop, over blocks whose threads vote
// differently each iteration; checked against the same votes counted on the host.
#include <vector>

#include "e2e_check.h"

__device__ __host__ inline bool vote(int block, int thread, int round) {
  return ((block * 7 + thread * 13 + round * 5) % 11) < 4;
}

__global__ void countVotes(int* counts, int* alls, int* anys, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    bool v = vote(blockIdx.x, threadIdx.x, r);
    int count = __syncthreads_count(v);
    int all = __syncthreads_and(v || r % 3 == 0);  // every third round all threads vote true
    int any = __syncthreads_or(v && threadIdx.x == 0);
    if (threadIdx.x == blockDim.x - 1) {
      int slot = blockIdx.x * rounds + r;
      counts[slot] = count;
      alls[slot] = all;
      anys[slot] = any;
    }
  }
}

int main() {
  Checker check("barrier_reduce");
  const int blocks = 37, threads = 96, rounds = 9;
  const int slots = blocks * rounds;
  int *counts, *alls, *anys;
  CHECK(cudaMalloc(&counts, slots * sizeof(int)));
  CHECK(cudaMalloc(&alls, slots * sizeof(int)));
  CHECK(cudaMalloc(&anys, slots * sizeof(int)));
  countVotes<<<blocks, threads>>>(counts, alls, anys, rounds);
  CHECK_LAUNCH();
  std::vector<int> hCounts(slots), hAlls(slots), hAnys(slots);
  CHECK(cudaMemcpy(hCounts.data(), counts, slots * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hAlls.data(), alls, slots * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hAnys.data(), anys, slots * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    for (int r = 0; r < rounds; ++r) {
      int count = 0;
      bool all = true;
      for (int t = 0; t < threads; ++t) {
        count += vote(b, t, r) ? 1 : 0;
        all = all && (vote(b, t, r) || r % 3 == 0);
      }
      bool any = vote(b, 0, r);
      int slot = b * rounds + r;
      check.eq("count", slot, count, hCounts[slot]);
      check.eq("and", slot, all ? 1 : 0, hAlls[slot] != 0 ? 1 : 0);
      check.eq("or", slot, any ? 1 : 0, hAnys[slot] != 0 ? 1 : 0);
    }
  }
  CHECK(cudaFree(counts));
  CHECK(cudaFree(alls));
  CHECK(cudaFree(anys));
  std::printf("barrier_reduce: %d blocks x %d threads, %d rounds of count/and/or\n", blocks,
              threads, rounds);
  return check.finish();
}
