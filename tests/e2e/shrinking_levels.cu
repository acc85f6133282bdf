// Loop values that live across barriers and only shrink (`s >>= 1`, `k = (k + 2) / 3`,
// `m &= m - 1`) or only grow (`d *= 2`), as block reductions and scans write them: the CPU
// device keeps each in a block-uniform slot and gives its reloads the range of its start
// (compiler/host_block_forms.cpp, demotedRanges). Blocks of 1 to 1,024 threads, powers of two
// or not; every block's sums, scan and mask walk checked against the host.
#include <vector>

#include "e2e_check.h"

constexpr int kBlocks = 5;

__global__ void levels(const int* in, int* sums, int* scans) {
  extern __shared__ int s[];
  unsigned tid = threadIdx.x, n = blockDim.x;
  const int* mine = in + blockIdx.x * n;
  // A tree halving its level: blockDim.x need not be a power of two.
  s[tid] = mine[tid];
  __syncthreads();
  for (unsigned width = n; width > 1;) {
    unsigned half = (width + 1) >> 1;
    if (tid < width - half) s[tid] += s[tid + half];
    __syncthreads();
    width = half;
  }
  if (tid == 0) sums[blockIdx.x * 3] = s[0];
  __syncthreads();
  // A tree of thirds: the level shrinks by a division.
  s[tid] = mine[tid];
  __syncthreads();
  for (unsigned k = n; k > 1; k = (k + 2) / 3) {
    unsigned third = (k + 2) / 3;
    int v = 0;
    if (tid < third) {
      v = s[tid];
      if (tid + third < k) v += s[tid + third];
      if (tid + 2 * third < k) v += s[tid + 2 * third];
    }
    __syncthreads();
    if (tid < third) s[tid] = v;
    __syncthreads();
  }
  if (tid == 0) sums[blockIdx.x * 3 + 1] = s[0];
  __syncthreads();
  // A mask losing its lowest bit each round.
  if (tid == 0) s[0] = 0;
  __syncthreads();
  for (unsigned m = 0xffffffffu >> __clz(n); m != 0; m &= m - 1) {
    if (tid == (m & 0xff) % n) s[0] += static_cast<int>(m);
    __syncthreads();
  }
  if (tid == 0) sums[blockIdx.x * 3 + 2] = s[0];
  __syncthreads();
  // An inclusive scan whose distance doubles: a loop value that grows.
  s[tid] = mine[tid];
  __syncthreads();
  for (unsigned d = 1; d < n; d *= 2) {
    int v = tid >= d ? s[tid - d] : 0;
    __syncthreads();
    s[tid] += v;
    __syncthreads();
  }
  scans[blockIdx.x * n + tid] = s[tid];
}

int main() {
  bool ok = true;
  for (int n : {1, 2, 3, 37, 100, 255, 256, 513, 1024}) {
    std::vector<int> in(kBlocks * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>((i * 7919) % 201) - 100;
    int *din, *dsums, *dscans;
    CHECK(cudaMalloc(&din, in.size() * sizeof(int)));
    CHECK(cudaMalloc(&dsums, kBlocks * 3 * sizeof(int)));
    CHECK(cudaMalloc(&dscans, in.size() * sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice));
    levels<<<kBlocks, n, n * sizeof(int)>>>(din, dsums, dscans);
    CHECK_LAUNCH();
    std::vector<int> sums(kBlocks * 3), scans(in.size());
    CHECK(cudaMemcpy(sums.data(), dsums, sums.size() * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(scans.data(), dscans, scans.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < kBlocks; ++b) {
      int sum = 0, walk = 0;
      for (int t = 0; t < n; ++t) {
        sum += in[b * n + t];
        if (scans[b * n + t] != sum && ok) {
          std::fprintf(stderr, "n=%d block %d: scan[%d] = %d, expected %d\n", n, b, t,
                       scans[b * n + t], sum);
          ok = false;
        }
      }
      for (unsigned m = 0xffffffffu >> __builtin_clz(static_cast<unsigned>(n)); m != 0;
           m &= m - 1)
        walk += static_cast<int>(m);
      int want[3] = {sum, sum, walk};
      for (int k = 0; k < 3; ++k)
        if (sums[b * 3 + k] != want[k]) {
          std::fprintf(stderr, "n=%d block %d: result %d = %d, expected %d\n", n, b, k,
                       sums[b * 3 + k], want[k]);
          ok = false;
        }
    }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dsums));
    CHECK(cudaFree(dscans));
  }
  std::printf(ok ? "shrinking_levels: ok\n" : "shrinking_levels: FAILED\n");
  return ok ? 0 : 1;
}
