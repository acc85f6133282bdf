// Single-pass reduction with the "last block" pattern: every block writes its partial sum,
// issues __threadfence(), and takes a ticket with atomicInc; the block that draws the last
// ticket sums all partials. Relies on fences making partials visible across blocks.
#include <vector>

#include "e2e_check.h"

constexpr int kBlock = 128;

__device__ unsigned ticket = 0;

__global__ void sumLastBlock(const int* in, int n, volatile long long* partial, long long* result,
                             int* lastBlockId) {
  __shared__ long long sh[kBlock];
  __shared__ bool isLast;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  sh[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sh[0];
    __threadfence();
    unsigned t = atomicInc(&ticket, gridDim.x);
    isLast = (t == gridDim.x - 1);
  }
  __syncthreads();
  if (!isLast) return;
  long long acc = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) acc += partial[b];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *result = sh[0];
    *lastBlockId = blockIdx.x;
    ticket = 0;  // ready for the next launch
  }
}

int main() {
  Checker check("threadfence_lastblock");
  const int n = (1 << 16) + 5;
  const int grid = (n + kBlock - 1) / kBlock;
  std::vector<int> in(n);
  long long expected = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = (i % 2001) - 1000 + (i & 7);
    expected += in[i];
  }
  int *dIn, *dLast;
  long long *dPartial, *dResult;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dPartial, grid * sizeof(long long)));
  CHECK(cudaMalloc(&dResult, sizeof(long long)));
  CHECK(cudaMalloc(&dLast, sizeof(int)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  // Two launches: the second checks that the ticket counter was reset by the last block.
  for (int round = 0; round < 2; ++round) {
    CHECK(cudaMemset(dResult, 0, sizeof(long long)));
    CHECK(cudaMemset(dLast, 0xFF, sizeof(int)));
    sumLastBlock<<<grid, kBlock>>>(dIn, n, dPartial, dResult, dLast);
    CHECK_LAUNCH();
    long long result = 0;
    int last = -1;
    CHECK(cudaMemcpy(&result, dResult, sizeof result, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&last, dLast, sizeof last, cudaMemcpyDeviceToHost));
    check.eq("sum", round, expected, result);
    check.expect(last >= 0 && last < grid, "some block drew the last ticket");
  }
  unsigned finalTicket = 1;
  CHECK(cudaMemcpyFromSymbol(&finalTicket, ticket, sizeof finalTicket));
  check.eq("ticket reset", 0, 0u, finalTicket);
  std::printf("threadfence_lastblock: n=%d over %d blocks, sum=%lld\n", n, grid, expected);
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dPartial));
  CHECK(cudaFree(dResult));
  CHECK(cudaFree(dLast));
  return check.finish();
}
