// Two-pass sum reduction: each block reduces a grid-strided slice in shared memory (tree with
// __syncthreads in a loop) to one partial; a second single-block pass reduces the partials.
// Integer data, so the result is exact whatever the order of additions.
#include <vector>

#include "e2e_check.h"

constexpr int kBlock = 256;

template <typename T>
__global__ void blockSum(const T* in, long long* partial, int n) {
  __shared__ long long sh[kBlock];
  long long acc = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc += in[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

int main() {
  const int n = (1 << 20) - 3;
  const int grid = 300;  // more than kBlock and not a power of two: pass two strides
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<int>((i * 2654435761u) >> 20) - 2000;

  // Host reference for both passes, with the same grid-stride assignment of elements to blocks.
  std::vector<long long> expectedPartial(grid, 0);
  long long expectedTotal = 0;
  for (int i = 0; i < n; ++i) {
    expectedPartial[(i / kBlock) % grid] += in[i];
    expectedTotal += in[i];
  }

  int* dIn;
  long long *dPartial, *dTotal;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dPartial, grid * sizeof(long long)));
  CHECK(cudaMalloc(&dTotal, sizeof(long long)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  blockSum<int><<<grid, kBlock>>>(dIn, dPartial, n);
  CHECK_LAUNCH();
  // Second pass: one block strides over the partials (grid > kBlock).
  blockSum<long long><<<1, kBlock>>>(dPartial, dTotal, grid);
  CHECK_LAUNCH();

  std::vector<long long> partial(grid);
  long long total = 0;
  CHECK(cudaMemcpy(partial.data(), dPartial, grid * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&total, dTotal, sizeof total, cudaMemcpyDeviceToHost));

  Checker check("reduction_shared");
  for (int b = 0; b < grid; ++b) check.eq("partial", b, expectedPartial[b], partial[b]);
  check.eq("total", 0, expectedTotal, total);
  std::printf("reduction_shared: n=%d, %d partials, sum=%lld\n", n, grid, total);
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dPartial));
  CHECK(cudaFree(dTotal));
  return check.finish();
}
