// Thread block clusters (sm_90) of one block, the size Rocuda's devices run: cooperative
// groups' cluster handle (block rank, block count, map_shared_rank through mapa, sync through
// barrier.cluster), a kernel declared with __cluster_dims__ and one launched with a cluster
// dimension attribute, and an mbarrier arrival through its cluster address; checked against
// host references.
#include <cooperative_groups.h>

#include <cuda/ptx>
#include <vector>

#include "e2e_check.h"

namespace cg = cooperative_groups;

constexpr int kThreads = 128;

// Each thread writes its value into shared memory, the cluster synchronises, and each thread
// reads its neighbour's value through the cluster's view of rank 0's shared memory (this
// block's own).
__device__ void exchange(int* out) {
  __shared__ int values[kThreads];
  cg::cluster_group cluster = cg::this_cluster();
  int t = threadIdx.x;
  values[t] = blockIdx.x * 1000 + t;
  cluster.sync();
  int* neighbours = cluster.map_shared_rank(values, 0);
  int got = neighbours[(t + 1) % kThreads];
  cluster.sync();
  out[blockIdx.x * kThreads * 3 + t * 3] = got;
  out[blockIdx.x * kThreads * 3 + t * 3 + 1] = static_cast<int>(cluster.block_rank());
  out[blockIdx.x * kThreads * 3 + t * 3 + 2] = static_cast<int>(cluster.num_blocks());
}

__global__ void __cluster_dims__(1, 1, 1) declaredCluster(int* out) { exchange(out); }

__global__ void attributeCluster(int* out) { exchange(out); }

// A kernel compiled for clusters of four blocks: each records its rank and cluster size.
__global__ void __cluster_dims__(4, 1, 1) fourBlockCluster(int* out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = static_cast<int>(cluster.block_rank());
    out[2 * blockIdx.x + 1] = static_cast<int>(cluster.num_blocks());
  }
}

// Every thread arrives on an mbarrier through its shared::cluster address (as a block of a
// larger cluster would on another block's barrier); thread 0 waits for the phase.
__global__ void clusterArrivals(int* out) {
  __shared__ alignas(8) uint64_t mbarrier;
  if (threadIdx.x == 0) cuda::ptx::mbarrier_init(&mbarrier, kThreads);
  __syncthreads();
  cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster,
                             cuda::ptx::space_cluster, &mbarrier);
  if (threadIdx.x == 0) {
    while (!cuda::ptx::mbarrier_try_wait_parity(&mbarrier, 0)) {
    }
    out[blockIdx.x] = 1;
  }
}

void checkExchange(Checker& check, const char* what, const std::vector<int>& got, int blocks) {
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < kThreads; ++t) {
      int i = (b * kThreads + t) * 3;
      check.eq(what, i, b * 1000 + (t + 1) % kThreads, got[i]);
      check.eq("block rank", i, 0, got[i + 1]);
      check.eq("blocks in the cluster", i, 1, got[i + 2]);
    }
}

int main() {
  Checker check("thread_block_clusters");
  const int blocks = 12;
  int* out = nullptr;
  CHECK(cudaMalloc(&out, blocks * kThreads * 3 * sizeof(int)));

  declaredCluster<<<blocks, kThreads>>>(out);
  CHECK_LAUNCH();
  checkExchange(check, "__cluster_dims__ exchange", download(out, blocks * kThreads * 3), blocks);

  CHECK(cudaMemset(out, 0, blocks * kThreads * 3 * sizeof(int)));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kThreads);
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 1;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, attributeCluster, out));
  CHECK(cudaDeviceSynchronize());
  checkExchange(check, "cluster attribute exchange", download(out, blocks * kThreads * 3), blocks);

  CHECK(cudaMemset(out, 0, blocks * sizeof(int)));
  clusterArrivals<<<blocks, kThreads>>>(out);
  CHECK_LAUNCH();
  std::vector<int> arrived = download(out, blocks);
  for (int b = 0; b < blocks; ++b)
    check.eq("mbarrier arrivals through the cluster", b, 1, arrived[b]);

  // Clusters of several blocks: where the device cannot launch them (cudaDevAttrClusterLaunch
  // 0, Rocuda's devices) the launch of a __cluster_dims__(4) kernel fails as unsupported rather
  // than running with clusters of one; where it can, the ranks are the blocks' places in them.
  int clusterLaunch = 0;
  CHECK(cudaDeviceGetAttribute(&clusterLaunch, cudaDevAttrClusterLaunch, 0));
  CHECK(cudaMemset(out, 0xff, 2 * 8 * sizeof(int)));
  fourBlockCluster<<<8, 32>>>(out);
  cudaError_t launched = cudaGetLastError();
  if (clusterLaunch == 0) {
    check.expect(launched == cudaErrorNotSupported,
                 "a four-block cluster kernel is refused where clusters cannot be launched");
  } else {
    CHECK(launched);
    std::vector<int> ranks = download(out, 2 * 8);
    for (int b = 0; b < 8; ++b) {
      check.eq("rank in a four-block cluster", b, b % 4, ranks[2 * b]);
      check.eq("blocks in a four-block cluster", b, 4, ranks[2 * b + 1]);
    }
  }

  CHECK(cudaFree(out));
  std::printf("thread_block_clusters: %d clusters of one block of %d threads\n", blocks, kThreads);
  return check.finish();
}
