// Warp-specialised code with named barriers (PTX bar.sync / bar.arrive with an id and a thread
// count, as CUTLASS's NamedBarrier writes them): in each block, warp 0 produces tiles into a
// double buffer and warp 1 consumes them, handing each buffer back and forth through a "full"
// and an "empty" barrier per buffer with bar.arrive (the side that arrives does not wait);
// warps 2 and 3 meanwhile run their own exchange rounds on barrier 5. Checked against the host.
#include <vector>

#include "e2e_check.h"

constexpr int kTiles = 24;  // tiles per block, through a double buffer
constexpr int kRounds = 10;
constexpr int kFull = 1, kEmpty = 3, kRing = 5;  // barrier ids: full/empty + buffer, the ring

__device__ void namedSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ void namedArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__host__ __device__ int tileValue(int block, int tile, int lane) {
  return block * 1000 + tile * 37 + lane * 3;
}

// sums[block * kTiles + tile]: the consumer's sum of tile `tile`; ring[block * 64 + t]: warps 2-3.
__global__ void specialised(int* sums, int* ring) {
  __shared__ int buffer[2][32];
  __shared__ int exchange[64];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) {  // producer: fill buffer tile % 2 once the consumer has released it
    for (int tile = 0; tile < kTiles; ++tile) {
      int b = tile % 2;
      if (tile >= 2) namedSync(kEmpty + b, 64);  // until the consumer is done with the buffer
      buffer[b][lane] = tileValue(blockIdx.x, tile, lane);
      namedArrive(kFull + b, 64);  // tile ready: go on without waiting for the consumer
    }
  } else if (warp == 1) {  // consumer
    for (int tile = 0; tile < kTiles; ++tile) {
      int b = tile % 2;
      namedSync(kFull + b, 64);
      int v = buffer[b][lane];
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
      if (lane == 0) sums[blockIdx.x * kTiles + tile] = v;
      if (tile + 2 < kTiles) namedArrive(kEmpty + b, 64);  // the buffer is free for tile + 2
    }
  } else {  // warps 2 and 3: rounds of rotating values through shared memory
    int t = threadIdx.x - 64;
    int value = t;
    for (int r = 0; r < kRounds; ++r) {
      exchange[t] = value;
      namedSync(kRing, 64);
      value = exchange[(t + 1) % 64] + r;
      namedSync(kRing, 64);
    }
    ring[blockIdx.x * 64 + t] = value;
  }
}

int main() {
  Checker check("named_barriers");
  const int blocks = 5;
  int *sums, *ring;
  CHECK(cudaMalloc(&sums, blocks * kTiles * sizeof(int)));
  CHECK(cudaMalloc(&ring, blocks * 64 * sizeof(int)));
  specialised<<<blocks, 128>>>(sums, ring);
  CHECK_LAUNCH();
  std::vector<int> gotSums = download(sums, blocks * kTiles), gotRing = download(ring, blocks * 64);
  for (int b = 0; b < blocks; ++b) {
    for (int tile = 0; tile < kTiles; ++tile) {
      int want = 0;
      for (int lane = 0; lane < 32; ++lane) want += tileValue(b, tile, lane);
      check.eq("tile sum", b * kTiles + tile, want, gotSums[b * kTiles + tile]);
    }
    std::vector<int> values(64);
    for (int t = 0; t < 64; ++t) values[t] = t;
    for (int r = 0; r < kRounds; ++r) {
      std::vector<int> next(64);
      for (int t = 0; t < 64; ++t) next[t] = values[(t + 1) % 64] + r;
      values = next;
    }
    for (int t = 0; t < 64; ++t) check.eq("ring", b * 64 + t, values[t], gotRing[b * 64 + t]);
  }
  CHECK(cudaFree(sums));
  CHECK(cudaFree(ring));
  return check.finish();
}
