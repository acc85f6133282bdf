// Thrust and CUB algorithms: large generated PTX with templates and many kernels.
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

__global__ void blockReduceScan(const int* in, int* sums, int* scanned) {
  using Reduce = cub::BlockReduce<int, 128>;
  using Scan = cub::BlockScan<int, 128>;
  __shared__ typename Reduce::TempStorage reduceStorage;
  __shared__ typename Scan::TempStorage scanStorage;
  int v = in[blockIdx.x * 128 + threadIdx.x];
  int total = Reduce(reduceStorage).Sum(v);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
  int prefix;
  Scan(scanStorage).ExclusiveSum(v, prefix);
  scanned[blockIdx.x * 128 + threadIdx.x] = prefix;
}

int hostAlgorithms(int n) {
  thrust::device_vector<int> keys(n);
  thrust::sort(keys.begin(), keys.end());
  thrust::inclusive_scan(keys.begin(), keys.end(), keys.begin());
  return thrust::reduce(keys.begin(), keys.end());
}
