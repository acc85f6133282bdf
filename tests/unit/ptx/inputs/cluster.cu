// Thread block clusters and distributed shared memory (sm_90+).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) clusterKernel(int* out) {
  __shared__ int smem[32];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  smem[threadIdx.x] = rank * 100 + threadIdx.x;
  cluster.sync();
  int* remote = cluster.map_shared_rank(smem, rank ^ 1);
  out[blockIdx.x * 32 + threadIdx.x] = remote[threadIdx.x];
  cluster.sync();
}
