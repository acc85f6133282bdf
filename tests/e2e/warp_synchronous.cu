// Implicit warp-synchronous code, as written for GPUs before Volta: the lanes of a warp exchange
// values through memory with no __syncwarp, relying on every lane executing each statement
// together (formally undefined since Volta, yet NVIDIA's GPUs give these results and old code and
// libraries depend on them). The CPU device makes volatile accesses that may reach shared memory
// and block-scope fences lockstep points of the warp; `--global` runs a warp-synchronous sort on
// global memory as well (CuPy's partition kernel does this), which needs
// ROCUDA_WARP_LOCKSTEP=memory.
#include <algorithm>
#include <cstring>
#include <vector>

#include "e2e_check.h"

// The classic reduction's tail (CUDA samples' reduction #6): one warp, volatile shared memory.
__device__ void warpReduce(volatile int* s, unsigned tid) {
  s[tid] += s[tid + 32];
  s[tid] += s[tid + 16];
  s[tid] += s[tid + 8];
  s[tid] += s[tid + 4];
  s[tid] += s[tid + 2];
  s[tid] += s[tid + 1];
}

__global__ void reduceLegacy(const int* in, int* out) {
  __shared__ int s[256];
  unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * 512 + tid] + in[blockIdx.x * 512 + tid + 256];
  __syncthreads();
  for (unsigned half = 128; half > 32; half >>= 1) {
    if (tid < half) s[tid] += s[tid + half];
    __syncthreads();
  }
  if (tid < 32) warpReduce(s, tid);
  if (tid == 0) out[blockIdx.x] = s[0];
}

// The same tail in a function kept out of line: its volatile pointer stays generic.
__device__ __noinline__ void warpReduceOutOfLine(volatile int* s, unsigned tid) {
  s[tid] += s[tid + 32];
  s[tid] += s[tid + 16];
  s[tid] += s[tid + 8];
  s[tid] += s[tid + 4];
  s[tid] += s[tid + 2];
  s[tid] += s[tid + 1];
}

// Variants of the 64-element tail: 0 out of line, 1 after a warp vote (which orders nothing
// else of the warp), 2 plain shared memory with __threadfence_block() between the steps.
__global__ void reduceTails(const int* in, int* out, int variant) {
  __shared__ int s[64];
  unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * 64 + tid];
  __syncthreads();
  if (tid < 32) {
    if (variant == 0) {
      warpReduceOutOfLine(s, tid);
    } else if (variant == 1) {
      if (__ballot_sync(0xffffffffu, s[tid] >= 0) != 0) warpReduce(s, tid);
    } else {
      s[tid] += s[tid + 32];
      __threadfence_block();
      s[tid] += s[tid + 16];
      __threadfence_block();
      s[tid] += s[tid + 8];
      __threadfence_block();
      s[tid] += s[tid + 4];
      __threadfence_block();
      s[tid] += s[tid + 2];
      __threadfence_block();
      s[tid] += s[tid + 1];
    }
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// The shared-memory histogram of GPUs before shared atomics: each lane writes its tag and the
// incremented count, and re-reads until its own write survived (one write per address wins).
__device__ void addTagged(volatile unsigned* bins, unsigned bin, unsigned tag) {
  unsigned count;
  do {
    count = bins[bin] & 0x07FFFFFFu;
    count = tag | (count + 1);
    bins[bin] = count;
  } while (bins[bin] != count);
}

__global__ void taggedHistogram(const unsigned* in, unsigned* out, int rounds) {
  __shared__ unsigned bins[4];
  unsigned lane = threadIdx.x;
  if (lane < 4) bins[lane] = 0;
  __syncthreads();
  for (int r = 0; r < rounds; ++r) addTagged(bins, in[r * 32 + lane], lane << 27);
  __syncthreads();
  if (lane < 4) out[lane] = bins[lane] & 0x07FFFFFFu;
}

// An inclusive scan of one warp's 32 values (Sengupta, Harris and Garland's warp scan): lanes
// diverge at every step, those below the offset keep their value while the others add.
__device__ int warpScan(volatile int* s, unsigned i) {
  unsigned lane = i & 31;
  if (lane >= 1) s[i] = s[i - 1] + s[i];
  if (lane >= 2) s[i] = s[i - 2] + s[i];
  if (lane >= 4) s[i] = s[i - 4] + s[i];
  if (lane >= 8) s[i] = s[i - 8] + s[i];
  if (lane >= 16) s[i] = s[i - 16] + s[i];
  return s[i];
}

// A block's inclusive scan from warp scans: each warp scans its part, warp 0 scans the warps'
// totals, every thread adds the totals of the warps before its own.
__global__ void scanBlocks(const int* in, int* out) {
  __shared__ int values[256];
  __shared__ int totals[32];
  unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  values[tid] = in[blockIdx.x * blockDim.x + tid];
  int mine = warpScan(values, tid);
  __syncthreads();
  if (lane == 31) totals[warp] = mine;
  __syncthreads();
  if (warp == 0 && lane < blockDim.x / 32) warpScan(totals, lane);
  __syncthreads();
  if (warp > 0) mine += totals[warp - 1];
  out[blockIdx.x * blockDim.x + tid] = mine;
}

// A bitonic sort of `n` values in global memory by the 32 lanes of one warp, each compare and
// swap step read by all lanes before any writes (CuPy's partition kernel sorts this way).
__device__ void bitonicStep(float* a, int n, int lane, int size, int stride) {
  for (int j = lane; j < n / 2; j += 32) {
    int i = j + (j & -stride);
    float v = a[i], u = a[i + stride];
    if ((i & size) ? v < u : v > u) {
      a[i] = u;
      a[i + stride] = v;
    }
  }
}

__global__ void bitonicSortWarp(float* data, int n) {
  float* a = data + blockIdx.x * n;
  for (int size = 2; size <= n; size *= 2)
    for (int stride = size / 2; stride >= 1; stride /= 2)
      bitonicStep(a, n, threadIdx.x, size, stride);
}

int main(int argc, char** argv) {
  bool global = argc > 1 && std::strcmp(argv[1], "--global") == 0;
  Checker check("warp_synchronous");

  const int blocks = 48;
  std::vector<int> input(blocks * 512);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int>((i * 131 + 7) % 97) - 40;
  int* in = upload(input);
  int* sums = nullptr;
  CHECK(cudaMalloc(&sums, blocks * sizeof(int)));
  reduceLegacy<<<blocks, 256>>>(in, sums);
  CHECK_LAUNCH();
  std::vector<int> got = download(sums, blocks);
  for (int b = 0; b < blocks; ++b) {
    int expected = 0;
    for (int i = 0; i < 512; ++i) expected += input[b * 512 + i];
    check.eq("reduceLegacy", b, expected, got[b]);
  }

  int* scanned = nullptr;
  CHECK(cudaMalloc(&scanned, input.size() * sizeof(int)));
  for (int threads : {256, 96}) {  // eight full warps; three (a block scan of three totals)
    int scanBlocksCount = static_cast<int>(input.size()) / threads;
    scanBlocks<<<scanBlocksCount, threads>>>(in, scanned);
    CHECK_LAUNCH();
    got = download(scanned, input.size());
    for (int b = 0; b < scanBlocksCount; ++b) {
      int running = 0;
      for (int t = 0; t < threads; ++t) {
        running += input[b * threads + t];
        check.eq(threads == 256 ? "scanBlocks(256)" : "scanBlocks(96)", b * threads + t, running,
                 got[b * threads + t]);
      }
    }
  }

  for (int variant = 0; variant < 3; ++variant) {
    reduceTails<<<blocks, 64>>>(in, sums, variant);
    CHECK_LAUNCH();
    got = download(sums, blocks);
    const char* names[] = {"tail out of line", "tail after a vote", "fenced tail"};
    for (int b = 0; b < blocks; ++b) {
      int expected = 0;
      for (int i = 0; i < 64; ++i) expected += input[b * 64 + i];
      check.eq(names[variant], b, expected, got[b]);
    }
  }

  const int rounds = 9;
  std::vector<unsigned> keys(rounds * 32);
  unsigned histogram[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = static_cast<unsigned>((i * 7 + i / 5) % 4);
    ++histogram[keys[i]];
  }
  unsigned* keysOnDevice = upload(keys);
  unsigned* bins = nullptr;
  CHECK(cudaMalloc(&bins, 4 * sizeof(unsigned)));
  taggedHistogram<<<1, 32>>>(keysOnDevice, bins, rounds);
  CHECK_LAUNCH();
  std::vector<unsigned> counted = download(bins, 4);
  for (int b = 0; b < 4; ++b) check.eq("taggedHistogram", b, histogram[b], counted[b]);
  CHECK(cudaFree(keysOnDevice));
  CHECK(cudaFree(bins));

  if (global) {
    const int n = 512, rows = 6;
    std::vector<float> values(n * rows);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>((i * 7919 + 13) % 1009) * 0.5f;
    float* data = upload(values);
    bitonicSortWarp<<<rows, 32>>>(data, n);
    CHECK_LAUNCH();
    std::vector<float> sorted = download(data, values.size());
    for (int r = 0; r < rows; ++r) {
      std::sort(values.begin() + r * n, values.begin() + (r + 1) * n);
      for (int i = 0; i < n; ++i)
        check.eq("bitonicSortWarp", r * n + i, values[r * n + i], sorted[r * n + i]);
    }
    CHECK(cudaFree(data));
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(sums));
  CHECK(cudaFree(scanned));
  return check.finish();
}
