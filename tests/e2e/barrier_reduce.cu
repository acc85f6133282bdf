// __syncthreads_count / _and / _or (PTX bar.red) inside a loop, over blocks whose threads vote
// differently each iteration; checked against the same votes counted on the host. Also one
// warp's collectives between the whole block's barriers, in a loop.
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

// Plain barriers between bar.reds: the CPU device's rounds complete plain barriers in compiled
// code (no bar.red bookkeeping) and return to the runtime for bar.red; its votes must still
// be counted afresh each round. Each round rotates the block's values by r % 3 places, one
// place per pair of barriers, then counts the threads that see the value they should.
__global__ void votesBetweenBarriers(int* counts, int rounds) {
  __shared__ int values[128];
  int t = threadIdx.x, n = blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    values[t] = vote(blockIdx.x, t, r) ? t : -1;
    __syncthreads();
    for (int k = 0; k < r % 3; ++k) {
      int next = values[(t + 1) % n];
      __syncthreads();
      values[t] = next;
      __syncthreads();
    }
    int count = __syncthreads_count(values[t] == (t + r % 3) % n);
    if (t == n - 1) counts[blockIdx.x * rounds + r] = count;
    __syncthreads();  // values[] is written again next round
  }
}

// Each round the first warp alone reduces through shuffles (the rest of the block waits at the
// barrier meanwhile), then the whole block adds the warp's sum into shared memory between
// barriers: the CPU device's threads part at the warp's collective and meet again at the
// barrier (its rounds resume there). 2-D blocks too, where the warp is the first 32 threads.
__global__ void warpThenBlock(int* out, int rounds) {
  __shared__ int total;
  __shared__ int warpSum;
  int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  if (tid == 0) total = 0;
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    if (tid < 32) {
      int v = vote(blockIdx.x, tid, r) ? tid + r : 1;
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
      if (tid == 0) warpSum = v;
    }
    __syncthreads();
    if (tid % 3 == r % 3) atomicAdd(&total, warpSum);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = total;
}

int expectedWarpThenBlock(int block, int threads, int rounds) {
  int total = 0;
  for (int r = 0; r < rounds; ++r) {
    int warpSum = 0;
    for (int t = 0; t < 32; ++t) warpSum += vote(block, t, r) ? t + r : 1;
    for (int t = 0; t < threads; ++t)
      if (t % 3 == r % 3) total += warpSum;
  }
  return total;
}

int main() {
  Checker check("barrier_reduce");
  {
    const int blocks = 23, rounds = 7;
    int* out;
    CHECK(cudaMalloc(&out, blocks * sizeof(int)));
    for (dim3 shape : {dim3(128, 1, 1), dim3(32, 3, 1), dim3(16, 4, 2)}) {
      warpThenBlock<<<blocks, shape>>>(out, rounds);
      CHECK_LAUNCH();
      std::vector<int> got(blocks);
      CHECK(cudaMemcpy(got.data(), out, blocks * sizeof(int), cudaMemcpyDeviceToHost));
      int threads = shape.x * shape.y * shape.z;
      for (int b = 0; b < blocks; ++b)
        check.eq("warpThenBlock", b, expectedWarpThenBlock(b, threads, rounds), got[b]);
    }
    CHECK(cudaFree(out));
  }
  {
    const int blocks = 29, rounds = 8;
    int* counts;
    CHECK(cudaMalloc(&counts, blocks * rounds * sizeof(int)));
    for (int threads : {96, 128}) {
      votesBetweenBarriers<<<blocks, threads>>>(counts, rounds);
      CHECK_LAUNCH();
      std::vector<int> got(blocks * rounds);
      CHECK(cudaMemcpy(got.data(), counts, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
      for (int b = 0; b < blocks; ++b)
        for (int r = 0; r < rounds; ++r) {
          int voters = 0;
          for (int t = 0; t < threads; ++t) voters += vote(b, t, r) ? 1 : 0;
          check.eq("votesBetweenBarriers", b * rounds + r, voters, got[b * rounds + r]);
        }
    }
    CHECK(cudaFree(counts));
  }
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
