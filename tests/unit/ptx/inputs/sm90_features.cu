// Hopper/Blackwell-only features: async copies with mbarriers, fences, clusters, redux, fp8.
#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include <cuda/barrier>
namespace cg = cooperative_groups;

// The documented pattern for a block-scope barrier in shared memory.
#pragma nv_diag_suppress 20054

__global__ void asyncCopy(const int4* in, int4* out) {
  __shared__ int4 buffer[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(buffer + threadIdx.x, in + threadIdx.x, sizeof(int4), bar);
  bar.arrive_and_wait();
  out[threadIdx.x] = buffer[threadIdx.x];
}

__global__ void fp8(const float* in, __nv_fp8_e4m3* a, __nv_fp8_e5m2* b, unsigned* red) {
  float v = in[threadIdx.x];
  a[threadIdx.x] = __nv_fp8_e4m3(v);
  b[threadIdx.x] = __nv_fp8_e5m2(v * 2);
  unsigned x = __reduce_add_sync(0xffffffff, (unsigned)v);
  unsigned y = __reduce_max_sync(0xffffffff, (unsigned)v);
  red[threadIdx.x] = x ^ y;
}

__global__ void clusterInfo(unsigned* out) {
  cg::cluster_group cluster = cg::this_cluster();
  out[0] = cluster.block_rank() + cluster.num_blocks() + cluster.dim_blocks().x;
  cluster.sync();
}
